package engine

import (
	"maps"
	"testing"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func TestParseSyncOptions(t *testing.T) {
	tests := []struct {
		name  string
		lists [][]navarchv1.SyncOption
		want  syncOptions
	}{
		{name: "none", want: syncOptions{}},
		{name: "empty lists", lists: [][]navarchv1.SyncOption{nil, {}}, want: syncOptions{}},
		{
			name:  "one list",
			lists: [][]navarchv1.SyncOption{{"CreateNamespace=true", "PrunePropagationPolicy=orphan"}},
			want:  syncOptions{"CreateNamespace": "true", "PrunePropagationPolicy": "orphan"},
		},
		{
			name: "the operation's options override the Application's",
			lists: [][]navarchv1.SyncOption{
				{"Prune=false", "Validate=false", "ServerSideApply=true"},
				{"Prune=true", "Replace=true"},
			},
			want: syncOptions{"Prune": "true", "Validate": "false", "ServerSideApply": "true", "Replace": "true"},
		},
		{
			name:  "a later option in one list overrides an earlier one",
			lists: [][]navarchv1.SyncOption{{"Force=true", "Force=false"}},
			want:  syncOptions{"Force": "false"},
		},
		{
			name:  "nil list between others",
			lists: [][]navarchv1.SyncOption{{"Replace=true"}, nil, {"Replace=false"}},
			want:  syncOptions{"Replace": "false"},
		},
		{
			name:  "no value",
			lists: [][]navarchv1.SyncOption{{"ApplyOutOfSyncOnly"}},
			want:  syncOptions{"ApplyOutOfSyncOnly": ""},
		},
		{
			name:  "value holding =",
			lists: [][]navarchv1.SyncOption{{"Name=a=b"}},
			want:  syncOptions{"Name": "a=b"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseSyncOptions(tc.lists...); !maps.Equal(got, tc.want) {
				t.Errorf("parseSyncOptions(%q) = %v, want %v", tc.lists, got, tc.want)
			}
		})
	}
}

func TestWithAnnotation(t *testing.T) {
	base := func() syncOptions { return syncOptions{"Prune": "true", "CreateNamespace": "true"} }
	tests := []struct {
		name        string
		annotations map[string]string
		want        syncOptions
	}{
		{name: "no annotations", want: base()},
		{name: "unrelated annotation", annotations: map[string]string{"example.com/x": "Prune=false"}, want: base()},
		{name: "empty annotation", annotations: map[string]string{navarchv1.AnnotationSyncOptions: ""}, want: base()},
		{name: "blank annotation", annotations: map[string]string{navarchv1.AnnotationSyncOptions: "  \t"}, want: base()},
		{
			name:        "navarch annotation",
			annotations: map[string]string{navarchv1.AnnotationSyncOptions: "Prune=false,Delete=false"},
			want:        syncOptions{"Prune": "false", "Delete": "false", "CreateNamespace": "true"},
		},
		{
			name:        "argo annotation",
			annotations: map[string]string{navarchv1.ArgoAnnotationSyncOptions: "Replace=true"},
			want:        syncOptions{"Prune": "true", "CreateNamespace": "true", "Replace": "true"},
		},
		{
			name: "navarch annotation wins over argo",
			annotations: map[string]string{
				navarchv1.AnnotationSyncOptions:     "Prune=false",
				navarchv1.ArgoAnnotationSyncOptions: "Replace=true,Prune=true",
			},
			want: syncOptions{"Prune": "false", "CreateNamespace": "true"},
		},
		{
			name:        "whitespace around items and values",
			annotations: map[string]string{navarchv1.AnnotationSyncOptions: "  Prune=false ,\tDelete= false , Replace=true\n"},
			want:        syncOptions{"Prune": "false", "Delete": "false", "Replace": "true", "CreateNamespace": "true"},
		},
		{
			name:        "empty items are skipped",
			annotations: map[string]string{navarchv1.AnnotationSyncOptions: ",Prune=false,, ,=true,"},
			want:        syncOptions{"Prune": "false", "CreateNamespace": "true"},
		},
		{
			name:        "an item without a value clears the option",
			annotations: map[string]string{navarchv1.AnnotationSyncOptions: "CreateNamespace"},
			want:        syncOptions{"Prune": "true", "CreateNamespace": ""},
		},
		{
			name:        "later items override earlier ones",
			annotations: map[string]string{navarchv1.AnnotationSyncOptions: "Prune=false,Prune=true"},
			want:        syncOptions{"Prune": "true", "CreateNamespace": "true"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := base()
			got := opts.withAnnotation(object("v1", "ConfigMap", "default", "cm", tc.annotations))
			if !maps.Equal(got, tc.want) {
				t.Errorf("withAnnotation = %v, want %v", got, tc.want)
			}
			if !maps.Equal(opts, base()) {
				t.Errorf("withAnnotation changed its receiver to %v", opts)
			}
		})
	}

	t.Run("nil object", func(t *testing.T) {
		if got := base().withAnnotation(nil); !maps.Equal(got, base()) {
			t.Errorf("withAnnotation(nil) = %v, want %v", got, base())
		}
	})
	t.Run("nil options", func(t *testing.T) {
		var opts syncOptions
		got := opts.withAnnotation(object("v1", "ConfigMap", "default", "cm", map[string]string{navarchv1.AnnotationSyncOptions: "Prune=false"}))
		if want := (syncOptions{"Prune": "false"}); !maps.Equal(got, want) {
			t.Errorf("withAnnotation = %v, want %v", got, want)
		}
	})
}

func TestOnOff(t *testing.T) {
	opts := syncOptions{
		"Lower": "true", "Upper": "TRUE", "Mixed": "True",
		"LowerOff": "false", "UpperOff": "FALSE", "MixedOff": "fAlSe",
		"Empty": "", "Yes": "yes", "One": "1", "Zero": "0",
	}
	tests := []struct {
		name    string
		on, off bool
	}{
		{name: "Lower", on: true},
		{name: "Upper", on: true},
		{name: "Mixed", on: true},
		{name: "LowerOff", off: true},
		{name: "UpperOff", off: true},
		{name: "MixedOff", off: true},
		{name: "Empty"},
		{name: "Yes"},
		{name: "One"},
		{name: "Zero"},
		{name: "Missing"},
		{name: "lower"}, // option names are case-sensitive
	}
	for _, tc := range tests {
		if got := opts.on(tc.name); got != tc.on {
			t.Errorf("on(%q) with value %q = %t, want %t", tc.name, opts[tc.name], got, tc.on)
		}
		if got := opts.off(tc.name); got != tc.off {
			t.Errorf("off(%q) with value %q = %t, want %t", tc.name, opts[tc.name], got, tc.off)
		}
	}
	var none syncOptions
	if none.on("Prune") || none.off("Prune") {
		t.Errorf("nil options report Prune as set")
	}
}

func TestIsHook(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        bool
	}{
		{name: "no annotations"},
		{name: "navarch hook", annotations: map[string]string{navarchv1.AnnotationHook: "PreSync"}, want: true},
		{name: "argo hook", annotations: map[string]string{navarchv1.ArgoAnnotationHook: "PostSync"}, want: true},
		{name: "helm hook", annotations: map[string]string{"helm.sh/hook": "pre-install"}, want: true},
		{name: "several hook phases", annotations: map[string]string{navarchv1.AnnotationHook: "PreSync,PostSync"}, want: true},
		{name: "empty hook annotation", annotations: map[string]string{navarchv1.AnnotationHook: ""}},
		{name: "blank hook annotation", annotations: map[string]string{navarchv1.ArgoAnnotationHook: " "}},
		{name: "delete policy alone", annotations: map[string]string{navarchv1.AnnotationHookDeletePolicy: "HookSucceeded"}},
		{name: "helm delete policy alone", annotations: map[string]string{"helm.sh/hook-delete-policy": "hook-succeeded"}},
		{name: "sync wave alone", annotations: map[string]string{navarchv1.AnnotationSyncWave: "1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := isHook(object("batch/v1", "Job", "default", "job", tc.annotations)); got != tc.want {
				t.Errorf("isHook(%v) = %t, want %t", tc.annotations, got, tc.want)
			}
		})
	}
	if isHook(nil) {
		t.Errorf("isHook(nil) = true, want false")
	}
}
