package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

const commit = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"

var now = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }

func atp(d time.Duration) *metav1.Time { t := at(d); return &t }

// degradedApp is an Application as the controller leaves it after a failed sync that will be
// retried: OutOfSync, Degraded, one resource to prune.
func degradedApp() navarchv1.Application {
	return navarchv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "api-prod-eu", Namespace: "apps",
			Labels: map[string]string{navarchv1.LabelApplicationSet: "fleet"}},
		Spec: navarchv1.ApplicationSpec{
			Source:      navarchv1.ApplicationSource{RepoURL: "https://github.com/org/deploy.git", Path: "apps/api", TargetRevision: "main"},
			Destination: navarchv1.ApplicationDestination{Name: "prod-eu", Namespace: "api"},
			SyncPolicy: &navarchv1.SyncPolicy{Automated: &navarchv1.SyncPolicyAutomated{Prune: true, SelfHeal: true},
				Retry: &navarchv1.RetryStrategy{Limit: 5}},
		},
		Status: navarchv1.ApplicationStatus{
			Sync:         navarchv1.SyncStatus{Status: navarchv1.SyncStatusOutOfSync, Revision: commit},
			Health:       navarchv1.HealthStatus{Status: navarchv1.HealthDegraded, Message: "Deployment api: 0/2 replicas available"},
			ReconciledAt: atp(-30 * time.Second),
			Conditions: []metav1.Condition{{Type: navarchv1.ApplicationSyncError, Status: metav1.ConditionTrue, Reason: "SyncFailed",
				Message: "Deployment api: admission webhook denied", LastTransitionTime: at(-2 * time.Minute)}},
			Resources: []navarchv1.ResourceStatus{
				{ResourceRef: navarchv1.ResourceRef{Group: "apps", Kind: "Deployment", Namespace: "api", Name: "api"},
					Status: navarchv1.SyncStatusOutOfSync, Message: "spec.replicas: live 1, Git 2",
					Health: &navarchv1.HealthStatus{Status: navarchv1.HealthDegraded, Message: "0/2 replicas available"}},
				{ResourceRef: navarchv1.ResourceRef{Kind: "Service", Namespace: "api", Name: "api"},
					Status: navarchv1.SyncStatusSynced, Health: &navarchv1.HealthStatus{Status: navarchv1.HealthHealthy}},
				{ResourceRef: navarchv1.ResourceRef{Kind: "ConfigMap", Namespace: "api", Name: "old-settings"},
					Status: navarchv1.SyncStatusOutOfSync, RequiresPruning: true, Message: "not in Git"},
			},
			OperationState: &navarchv1.OperationState{
				Operation: navarchv1.Operation{Sync: &navarchv1.SyncOperation{Prune: true},
					InitiatedBy: navarchv1.OperationInitiator{Username: "alice"}},
				Phase:      navarchv1.OperationRunning,
				Message:    "retrying: Deployment api: admission webhook denied",
				StartedAt:  at(-2 * time.Minute),
				RetryCount: 2,
				NextRetryAt: func() *metav1.Time {
					t := metav1.NewTime(now.Add(20 * time.Second).Local())
					return &t
				}(),
				SyncResult: &navarchv1.SyncOperationResult{Revision: commit, Resources: []navarchv1.ResourceResult{
					{ResourceRef: navarchv1.ResourceRef{Kind: "Job", Namespace: "api", Name: "migrate"}, Status: navarchv1.ResultSynced,
						HookType: "PreSync", HookPhase: navarchv1.HookSucceeded, SyncPhase: navarchv1.SyncPhasePreSync, Message: "job completed"},
					{ResourceRef: navarchv1.ResourceRef{Group: "apps", Kind: "Deployment", Namespace: "api", Name: "api"},
						Status: navarchv1.ResultSyncFailed, SyncPhase: navarchv1.SyncPhaseSync, SyncWave: 1, Message: "admission webhook denied"},
				}},
			},
			History: []navarchv1.RevisionHistory{
				{ID: 1, Revision: "0f0e0d0c0b0a09080706050403020100ffeeddcc", DeployedAt: at(-48 * time.Hour),
					InitiatedBy: navarchv1.OperationInitiator{Automated: true},
					Source:      navarchv1.ApplicationSource{RepoURL: "https://github.com/org/deploy.git", Path: "apps/api", TargetRevision: "main"}},
				{ID: 2, Revision: commit, DeployedAt: at(-time.Hour), InitiatedBy: navarchv1.OperationInitiator{Username: "bob"},
					Source: navarchv1.ApplicationSource{RepoURL: "https://github.com/org/deploy.git", Path: "apps/api-v2", TargetRevision: "main"}},
			},
		},
	}
}

func syncedApp(name string) navarchv1.Application {
	return navarchv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps"},
		Spec: navarchv1.ApplicationSpec{
			Source:      navarchv1.ApplicationSource{RepoURL: "https://github.com/org/deploy.git", Path: "apps/" + name},
			Destination: navarchv1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: name},
		},
		Status: navarchv1.ApplicationStatus{
			Sync:         navarchv1.SyncStatus{Status: navarchv1.SyncStatusSynced, Revision: commit},
			Health:       navarchv1.HealthStatus{Status: navarchv1.HealthHealthy},
			ReconciledAt: atp(-10 * time.Second),
			OperationState: &navarchv1.OperationState{Phase: navarchv1.OperationSucceeded,
				StartedAt: at(-5*time.Minute - 12*time.Second), FinishedAt: atp(-5 * time.Minute)},
		},
	}
}

func TestAppListRows(t *testing.T) {
	apps := []navarchv1.Application{degradedApp(), syncedApp("web"), {ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "team"},
		Spec: navarchv1.ApplicationSpec{Destination: navarchv1.ApplicationDestination{Name: "dev-1"}}}}
	tests := []struct {
		name      string
		wide, all bool
		want      [][]string
	}{
		{
			name: "table",
			want: [][]string{
				{"NAME", "CLUSTER", "NAMESPACE", "SYNC", "HEALTH", "REVISION", "LAST-OP"},
				{"api-prod-eu", "prod-eu", "api", "OutOfSync", "Degraded", "1a2b3c4d", "Running 2m"},
				{"web", "https://kubernetes.default.svc", "web", "Synced", "Healthy", "1a2b3c4d", "Succeeded 5m ago"},
				{"new", "dev-1", "-", "-", "-", "-", "-"},
			},
		},
		{
			name: "wide, every namespace",
			wide: true, all: true,
			want: [][]string{
				{"NAME", "CLUSTER", "NAMESPACE", "SYNC", "HEALTH", "REVISION", "LAST-OP", "REPO", "PATH", "TARGET", "PROJECT"},
				{"apps/api-prod-eu", "prod-eu", "api", "OutOfSync", "Degraded", "1a2b3c4d", "Running 2m", "https://github.com/org/deploy.git", "apps/api", "main", "default"},
				{"apps/web", "https://kubernetes.default.svc", "web", "Synced", "Healthy", "1a2b3c4d", "Succeeded 5m ago", "https://github.com/org/deploy.git", "apps/web", "-", "default"},
				{"team/new", "dev-1", "-", "-", "-", "-", "-", "", "-", "-", "default"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := appListRows(apps, tt.wide, tt.all, now, palette{})
			if len(got) != len(tt.want) {
				t.Fatalf("got %d rows, want %d: %q", len(got), len(tt.want), got)
			}
			for i := range tt.want {
				if strings.Join(got[i], "|") != strings.Join(tt.want[i], "|") {
					t.Errorf("row %d:\n got %q\nwant %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestDescribeApplicationTellsWhatIsWrongAndWhatHappensNext(t *testing.T) {
	app := degradedApp()
	var b bytes.Buffer
	if err := describeApplication(&b, &app, now, palette{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Name:             apps/api-prod-eu\n",
		"ApplicationSet:   fleet\n",
		"Source:           https://github.com/org/deploy.git, path apps/api, revision main\n",
		"Destination:      cluster prod-eu, namespace api\n",
		"Sync policy:      automated (prune, self-heal); retry limit 5\n",
		"Sync:             OutOfSync with 1a2b3c4d (compared 30s ago)\n",
		"Health:           Degraded: Deployment api: 0/2 replicas available\n",
		"  SyncError   True     SyncFailed   2m    Deployment api: admission webhook denied\n",
		"Resources (3):\n",
		"  apps    Deployment   api         api            OutOfSync         Degraded   spec.replicas: live 1, Git 2; 0/2 replicas available\n",
		"  -       ConfigMap    api         old-settings   RequiresPruning   -          not in Git\n",
		"Last operation:   sync to 1a2b3c4d (prune), by alice, started 2m ago\n",
		"Phase:            Running\n",
		"Message:          retrying: Deployment api: admission webhook denied\n",
		"Retry:            2 retries so far (limit 5); next retry at ",
		" (in 20s)\n",
		"  PHASE     WAVE   KIND              NAMESPACE   NAME      STATUS       HOOK                MESSAGE\n",
		"  PreSync   0      Job               api         migrate   Synced       PreSync:Succeeded   job completed\n",
		"  Sync      1      Deployment.apps   api         api       SyncFailed   -                   admission webhook denied\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("description lacks %q:\n%s", want, out)
		}
	}
}

func TestPrintAppDiff(t *testing.T) {
	notCompared := syncedApp("new")
	notCompared.Status = navarchv1.ApplicationStatus{Sync: navarchv1.SyncStatus{Status: navarchv1.SyncStatusUnknown},
		Conditions: []metav1.Condition{{Type: navarchv1.ApplicationComparisonError, Status: metav1.ConditionTrue, Message: "fetch https://github.com/org/deploy.git: 404"}}}
	tests := []struct {
		name    string
		app     navarchv1.Application
		out     []string
		differs bool
		err     string
	}{
		{
			name: "synced",
			app:  syncedApp("web"),
			out:  []string{"Application apps/web is Synced with 1a2b3c4d: no differences (compared 10s ago).\n"},
		},
		{
			name: "out of sync",
			app:  degradedApp(),
			out: []string{
				"Application apps/api-prod-eu is OutOfSync with 1a2b3c4d (compared 30s ago); 2 resources differ from Git:\n",
				"GROUP   KIND         NAMESPACE   NAME           STATUS            MESSAGE\n",
				"apps    Deployment   api         api            OutOfSync         spec.replicas: live 1, Git 2\n",
				"-       ConfigMap    api         old-settings   RequiresPruning   not in Git\n",
			},
			differs: true,
			err:     "application apps/api-prod-eu differs from Git: 2 resources",
		},
		{
			name: "not compared",
			app:  notCompared,
			err:  "application apps/new has sync status Unknown: comparison failed: fetch https://github.com/org/deploy.git: 404",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			err := printAppDiff(&b, &tt.app, now, palette{})
			if errors.Is(err, errDiffers) != tt.differs || (err == nil) != (tt.err == "") || (err != nil && err.Error() != tt.err) {
				t.Errorf("err = %v, want %q", err, tt.err)
			}
			if strings.Count(b.String(), "\n") != len(tt.out) {
				t.Errorf("printed %d lines, want %d:\n%s", strings.Count(b.String(), "\n"), len(tt.out), b.String())
			}
			for _, want := range tt.out {
				if !strings.Contains(b.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, b.String())
				}
			}
		})
	}
}

func TestHistoryRows(t *testing.T) {
	app := degradedApp()
	got := historyRows(app.Status.History, false)
	want := [][]string{
		{"ID", "REVISION", "DEPLOYED-AT", "INITIATED-BY", "SOURCE-PATH"},
		{"1", "0f0e0d0c", now.Add(-48 * time.Hour).Local().Format(time.DateTime), "automated", "apps/api"},
		{"2", "1a2b3c4d", now.Add(-time.Hour).Local().Format(time.DateTime), "bob", "apps/api-v2"},
	}
	for i := range want {
		if strings.Join(got[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d:\n got %q\nwant %q", i, got[i], want[i])
		}
	}
}
