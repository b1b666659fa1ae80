package health_test

import (
	"testing"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/health"
)

func TestWorse(t *testing.T) {
	order := []navarchv1.HealthStatusCode{healthy, suspended, progressing, missing, degraded, unknown}
	for i, a := range order {
		for j, b := range order {
			if got, want := health.Worse(a, b), i > j; got != want {
				t.Errorf("Worse(%s, %s) = %t, want %t", a, b, got, want)
			}
		}
	}
	if !health.Worse("Sideways", degraded) || health.Worse("Sideways", unknown) {
		t.Errorf("an unrecognised code should rank as Unknown")
	}
}

func TestWorst(t *testing.T) {
	tests := []struct {
		name  string
		codes []navarchv1.HealthStatusCode
		want  navarchv1.HealthStatusCode
	}{
		{name: "none", want: healthy},
		{name: "all healthy", codes: []navarchv1.HealthStatusCode{healthy, healthy}, want: healthy},
		{name: "suspended beats healthy", codes: []navarchv1.HealthStatusCode{healthy, suspended}, want: suspended},
		{name: "progressing beats suspended", codes: []navarchv1.HealthStatusCode{suspended, progressing, healthy}, want: progressing},
		{name: "missing beats progressing", codes: []navarchv1.HealthStatusCode{progressing, missing}, want: missing},
		{name: "degraded beats missing", codes: []navarchv1.HealthStatusCode{missing, degraded, progressing}, want: degraded},
		{name: "unknown is worst", codes: []navarchv1.HealthStatusCode{degraded, unknown, healthy}, want: unknown},
		{name: "unrecognised code is unknown", codes: []navarchv1.HealthStatusCode{degraded, "Sideways"}, want: unknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := health.Worst(tc.codes...); got != tc.want {
				t.Errorf("Worst(%v) = %s, want %s", tc.codes, got, tc.want)
			}
		})
	}
}
