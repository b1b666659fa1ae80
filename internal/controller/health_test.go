package controller

import (
	"testing"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func TestApplicationSetHealthIsItsWorstApplication(t *testing.T) {
	gen := []*navarchv1.Application{labelledApp("a", nil), labelledApp("b", nil), labelledApp("c", nil)}
	live := func(code navarchv1.HealthStatusCode, msg string) *navarchv1.Application {
		app := labelledApp("x", nil)
		app.Status.Health = navarchv1.HealthStatus{Status: code, Message: msg}
		return app
	}
	tests := []struct {
		existing map[string]*navarchv1.Application
		want     navarchv1.HealthStatusCode
		message  string
	}{
		{map[string]*navarchv1.Application{"a": live(navarchv1.HealthHealthy, ""), "b": live(navarchv1.HealthHealthy, ""), "c": live(navarchv1.HealthHealthy, "")},
			navarchv1.HealthHealthy, ""},
		{map[string]*navarchv1.Application{"a": live(navarchv1.HealthHealthy, ""), "b": live(navarchv1.HealthProgressing, "rolling out")},
			navarchv1.HealthMissing, "1 of 3 Applications Healthy; c is Missing: not created yet"},
		{map[string]*navarchv1.Application{"a": live(navarchv1.HealthDegraded, "CrashLoopBackOff"), "b": live(navarchv1.HealthProgressing, ""), "c": live(navarchv1.HealthHealthy, "")},
			navarchv1.HealthDegraded, "1 of 3 Applications Healthy; a is Degraded: CrashLoopBackOff"},
	}
	for _, tt := range tests {
		got := setHealth(gen, tt.existing)
		if got.Status != tt.want || got.Message != tt.message {
			t.Errorf("health %s %q, want %s %q", got.Status, got.Message, tt.want, tt.message)
		}
	}
	if got := setHealth(nil, nil); got.Status != navarchv1.HealthHealthy {
		t.Errorf("an ApplicationSet that generates nothing is %s", got.Status)
	}
}
