package project

import (
	"testing"
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func TestWindowsSayWhetherEachIsOpenAndUntilWhen(t *testing.T) {
	p := compile(t, navarchv1.ProjectSpec{SyncWindows: []navarchv1.SyncWindow{
		{Kind: "deny", Schedule: "0 22 * * *", Duration: "8h", Namespaces: []string{"prod-*"}},
		{Kind: "allow", Schedule: "0 9 * * 1-5", Duration: "8h", Applications: []string{"*"}},
		{Kind: "deny", Schedule: "0 22 * * *", Duration: "1h", TimeZone: "Europe/Berlin", Clusters: []string{"east"}},
		{Kind: "deny", Schedule: "0 0 30 2 *", Duration: "1h", Applications: []string{"never"}},
	}})
	got := p.Windows(at("2026-12-01T23:00:00Z"))
	want := []struct {
		open   bool
		change string
	}{
		{true, "2026-12-02T06:00:00Z"},
		{false, "2026-12-02T09:00:00Z"},
		{false, "2026-12-02T21:00:00Z"}, // 22:00 in Berlin
		{false, ""},                     // 30 February
	}
	if len(got) != len(want) {
		t.Fatalf("%d windows, want %d", len(got), len(want))
	}
	for i, w := range want {
		var change time.Time
		if w.change != "" {
			change = at(w.change)
		}
		if got[i].Open != w.open || !got[i].Change.Equal(change) {
			t.Errorf("window %d (%s): open %v, change %v; want open %v, change %v", i, got[i].Window.Schedule, got[i].Open, got[i].Change, w.open, change)
		}
	}
	if got[2].Window.TimeZone != "Europe/Berlin" {
		t.Errorf("window 2 lost its spec: %+v", got[2].Window)
	}
}
