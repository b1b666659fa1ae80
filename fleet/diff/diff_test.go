package diff

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// object decodes a YAML manifest the way the API client does: integers become int64.
func object(t testing.TB, manifest string) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatalf("bad test YAML: %v", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatalf("bad test object: %v", err)
	}
	return u
}

// deployment is a Deployment with two containers; edit changes it before it is decoded.
func deployment(t testing.TB, edit func(string) string) *unstructured.Unstructured {
	t.Helper()
	manifest := `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: web:1.0
        ports: [{containerPort: 8080, protocol: TCP}]
      - name: envoy
        image: envoy:1.30
`
	if edit != nil {
		manifest = edit(manifest)
	}
	return object(t, manifest)
}

func replace(old, repl string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, repl, 1) }
}

// withNoise adds what the API server writes to a stored object.
func withNoise(t testing.TB, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	u = u.DeepCopy()
	u.SetResourceVersion("4711")
	u.SetUID("0b4c2c0e-9a7b-4d7e-8b1f-6c8d3f0a1e22")
	u.SetGeneration(3)
	u.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"kind":"Deployment"}`})
	if err := unstructured.SetNestedField(u.Object, "2024-05-01T10:00:00Z", "metadata", "creationTimestamp"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, map[string]any{"replicas": int64(2), "readyReplicas": int64(1)}, "status"); err != nil {
		t.Fatal(err)
	}
	return u
}

// managedFields is the managedFields of a live Deployment: kube-controller-manager owns the
// replica count and the web container's image, navarch the rest.
const managedFields = `
metadata:
  managedFields:
  - manager: navarch
    operation: Apply
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata: {f:labels: {f:app: {}}}
      f:spec:
        f:selector: {}
        f:template:
          f:metadata: {f:labels: {f:app: {}}}
          f:spec:
            f:containers:
              k:{"name":"envoy"}: {.: {}, f:image: {}, f:name: {}}
              k:{"name":"web"}:
                .: {}
                f:name: {}
                f:ports:
                  k:{"containerPort":8080,"protocol":"TCP"}: {.: {}, f:containerPort: {}, f:protocol: {}}
  - manager: kube-controller-manager
    operation: Update
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:replicas: {}
        f:template:
          f:spec:
            f:containers:
              k:{"name":"web"}: {f:image: {}}
  - manager: kube-controller-manager
    operation: Update
    apiVersion: apps/v1
    subresource: status
    fieldsType: FieldsV1
    fieldsV1:
      f:status: {f:replicas: {}, f:readyReplicas: {}}
`

// withManagedFields returns u with the managedFields above.
func withManagedFields(t testing.TB, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	u = u.DeepCopy()
	u.SetManagedFields(object(t, "kind: X\n"+managedFields).GetManagedFields())
	if len(u.GetManagedFields()) != 3 {
		t.Fatalf("test managedFields did not decode: %v", u.GetManagedFields())
	}
	return u
}

func compile(t testing.TB, rules ...navarchv1.ResourceIgnoreDifferences) *Ignore {
	t.Helper()
	ig, err := CompileIgnore(rules)
	if err != nil {
		t.Fatal(err)
	}
	return ig
}

func TestNormalize(t *testing.T) {
	live := withNoise(t, deployment(t, nil))
	live.SetManagedFields(withManagedFields(t, live).GetManagedFields())
	if err := unstructured.SetNestedField(live.Object, int64(30), "metadata", "deletionGracePeriodSeconds"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(live.Object, "/apis/apps/v1/namespaces/shop/deployments/web", "metadata", "selfLink"); err != nil {
		t.Fatal(err)
	}
	before := live.DeepCopy()

	got := Normalize(live)
	if want := deployment(t, nil); !reflect.DeepEqual(got.Object, want.Object) {
		t.Errorf("Normalize =\n%v\nwant\n%v", got.Object, want.Object)
	}
	if !reflect.DeepEqual(live, before) {
		t.Error("Normalize modified its argument")
	}

	tests := []struct {
		name string
		in   *unstructured.Unstructured
		want map[string]any
	}{
		{name: "nil", in: nil, want: map[string]any{}},
		{name: "empty annotations and labels are dropped",
			in:   object(t, "kind: ConfigMap\nmetadata: {name: c, labels: {}, annotations: {}}\ndata: {a: b}"),
			want: map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "c"}, "data": map[string]any{"a": "b"}}},
		{name: "annotations left empty by last-applied are dropped",
			in:   object(t, "kind: ConfigMap\nmetadata: {name: c, annotations: {kubectl.kubernetes.io/last-applied-configuration: '{}'}}"),
			want: map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}},
		{name: "other annotations stay",
			in:   object(t, "kind: ConfigMap\nmetadata: {name: c, annotations: {a: b, kubectl.kubernetes.io/last-applied-configuration: '{}'}}"),
			want: map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "c", "annotations": map[string]any{"a": "b"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Normalize(tt.in); !reflect.DeepEqual(got.Object, tt.want) {
				t.Errorf("Normalize = %v, want %v", got.Object, tt.want)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	const webImage = "/spec/template/spec/containers/0/image"
	replicasIgnored := navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}
	webImageJQ := navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment",
		JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "web") | .image`}}
	controllerManaged := navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment",
		ManagedFieldsManagers: []string{"kube-controller-manager"}}

	tests := []struct {
		name      string
		predicted *unstructured.Unstructured
		live      *unstructured.Unstructured
		ig        *Ignore
		want      []string
		truncated bool
	}{
		{name: "equal apart from server-set noise and status",
			predicted: deployment(t, nil), live: withNoise(t, deployment(t, nil))},
		{name: "image tag changed",
			predicted: deployment(t, nil), live: withNoise(t, deployment(t, replace("web:1.0", "web:1.1"))),
			want: []string{webImage}},
		{name: "numbers compare by value",
			predicted: deployment(t, nil),
			live: func() *unstructured.Unstructured {
				u := deployment(t, nil)
				u.Object["spec"].(map[string]any)["replicas"] = 2.0
				return u
			}()},
		{name: "a list of another length is reported as the list",
			predicted: deployment(t, nil),
			live:      deployment(t, replace("      - name: envoy\n        image: envoy:1.30\n", "")),
			want:      []string{"/spec/template/spec/containers"}},
		{name: "a field on one side only, with an escaped key",
			predicted: deployment(t, replace("labels: {app: web}", "labels: {app: web, app.kubernetes.io/name: web}")),
			live:      deployment(t, replace("replicas: 2", "replicas: 2\n  paused: true")),
			want:      []string{"/metadata/labels/app.kubernetes.io~1name", "/spec/paused"}},
		{name: "null and empty maps equal an absent field",
			predicted: deployment(t, replace("replicas: 2", "replicas: 2\n  strategy: {}\n  minReadySeconds: null")),
			live:      deployment(t, nil)},
		{name: "differences are sorted and truncated",
			predicted: object(t, "kind: ConfigMap\nmetadata: {name: c}\ndata: {"+manyKeys(25, "a")+"}"),
			live:      object(t, "kind: ConfigMap\nmetadata: {name: c}\ndata: {"+manyKeys(25, "b")+"}"),
			want: []string{"/data/k00", "/data/k01", "/data/k02", "/data/k03", "/data/k04", "/data/k05", "/data/k06",
				"/data/k07", "/data/k08", "/data/k09", "/data/k10", "/data/k11", "/data/k12", "/data/k13", "/data/k14",
				"/data/k15", "/data/k16", "/data/k17", "/data/k18", "/data/k19"},
			truncated: true},

		// jsonPointers: an HPA scales the Deployment, so Git's replica count is ignored.
		{name: "jsonPointer ignores replicas scaled by an HPA",
			predicted: deployment(t, nil), live: deployment(t, replace("replicas: 2", "replicas: 7")),
			ig: compile(t, replicasIgnored)},
		{name: "jsonPointer ignores only its field",
			predicted: deployment(t, nil), live: deployment(t, replace("replicas: 2", "replicas: 7")),
			ig:   compile(t, navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/paused"}}),
			want: []string{"/spec/replicas"}},
		{name: "jsonPointer into a list by index",
			predicted: deployment(t, nil), live: deployment(t, replace("web:1.0", "web:1.1")),
			ig: compile(t, navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment", JSONPointers: []string{webImage}})},
		{name: "the HPA's own minReplicas ignored",
			predicted: object(t, hpa), live: object(t, strings.Replace(hpa, "minReplicas: 2", "minReplicas: 4", 1)),
			ig: compile(t, navarchv1.ResourceIgnoreDifferences{Group: "autoscaling", Kind: "HorizontalPodAutoscaler", JSONPointers: []string{"/spec/minReplicas"}})},

		// jqPathExpressions select by content, evaluated on each object.
		{name: "jq ignores the web container's image",
			predicted: deployment(t, nil), live: deployment(t, replace("web:1.0", "web:1.1")),
			ig: compile(t, webImageJQ)},
		{name: "jq does not ignore the envoy container's image",
			predicted: deployment(t, nil), live: deployment(t, replace("envoy:1.30", "envoy:1.31")),
			ig:   compile(t, webImageJQ),
			want: []string{"/spec/template/spec/containers/1/image"}},
		{name: "jq removes a whole injected container on each side",
			predicted: deployment(t, nil),
			live:      deployment(t, replace("      - name: envoy", "      - name: istio-proxy\n        image: proxyv2\n      - name: envoy")),
			ig: compile(t, navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment",
				JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "istio-proxy")`}})},

		// managedFieldsManagers read live's managedFields.
		{name: "fields owned by kube-controller-manager are ignored",
			predicted: deployment(t, nil),
			live:      withManagedFields(t, withNoise(t, deployment(t, func(s string) string { return replace("replicas: 2", "replicas: 5")(replace("web:1.0", "web:1.1")(s)) }))),
			ig:        compile(t, controllerManaged)},
		{name: "fields owned by other managers still count",
			predicted: deployment(t, nil),
			live:      withManagedFields(t, deployment(t, replace("envoy:1.30", "envoy:1.31"))),
			ig:        compile(t, controllerManaged),
			want:      []string{"/spec/template/spec/containers/1/image"}},
		{name: "keyed list elements are found by key, not index",
			// web is the second container here: k:{"name":"web"} must resolve to index 1.
			predicted: object(t, swapped("web:1.0")),
			live:      withManagedFields(t, object(t, swapped("web:9.9"))),
			ig:        compile(t, controllerManaged)},
		{name: "a keyed element missing from one side",
			predicted: deployment(t, nil),
			live: withManagedFields(t, deployment(t, func(s string) string {
				return replace("      - name: web\n        image: web:1.0\n        ports: [{containerPort: 8080, protocol: TCP}]\n", "")(s)
			})),
			ig:   compile(t, controllerManaged),
			want: []string{"/spec/template/spec/containers"}},
		{name: "a manager not listed is not ignored",
			predicted: deployment(t, nil),
			live:      withManagedFields(t, deployment(t, replace("replicas: 2", "replicas: 5"))),
			ig:        compile(t, navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment", ManagedFieldsManagers: []string{"hpa-controller"}}),
			want:      []string{"/spec/replicas"}},

		// Rule selection.
		{name: "a rule for another kind does not apply",
			predicted: deployment(t, nil), live: deployment(t, replace("replicas: 2", "replicas: 7")),
			ig:   compile(t, navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "StatefulSet", JSONPointers: []string{"/spec/replicas"}}),
			want: []string{"/spec/replicas"}},
		{name: "a rule for another namespace does not apply",
			predicted: deployment(t, nil), live: deployment(t, replace("replicas: 2", "replicas: 7")),
			ig:   compile(t, navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment", Namespace: "other", JSONPointers: []string{"/spec/replicas"}}),
			want: []string{"/spec/replicas"}},
		{name: "a rule naming the object applies",
			predicted: deployment(t, nil), live: deployment(t, replace("replicas: 2", "replicas: 7")),
			ig: compile(t, navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment", Name: "web", Namespace: "shop", JSONPointers: []string{"/spec/replicas"}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			predicted, live := tt.predicted.DeepCopy(), tt.live.DeepCopy()
			got := Compare(tt.predicted, tt.live, tt.ig)
			if got.Equal != (len(tt.want) == 0) || !reflect.DeepEqual(got.Paths, tt.want) || got.Truncated != tt.truncated {
				t.Errorf("Compare = %+v, want paths %q truncated %v", got, tt.want, tt.truncated)
			}
			if !reflect.DeepEqual(predicted, tt.predicted) || !reflect.DeepEqual(live, tt.live) {
				t.Error("Compare modified its arguments")
			}
		})
	}
}

const hpa = `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
`

// swapped is the test Deployment with its containers in the other order and web's image set.
func swapped(image string) string {
	return `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: envoy
        image: envoy:1.30
      - name: web
        image: ` + image + `
        ports: [{containerPort: 8080, protocol: TCP}]
`
}

// manyKeys returns n YAML flow-map entries k00: value, k01: value, ….
func manyKeys(n int, value string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("k")
		b.WriteByte(byte('0' + i/10))
		b.WriteByte(byte('0' + i%10))
		b.WriteString(": " + value)
	}
	return b.String()
}

func TestMatches(t *testing.T) {
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	svc := schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	ig := compile(t,
		navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment", Namespace: "shop", JSONPointers: []string{"/spec/replicas"}},
		navarchv1.ResourceIgnoreDifferences{Kind: "Service", Name: "api", ManagedFieldsManagers: []string{"metallb"}},
	)
	tests := []struct {
		name            string
		ig              *Ignore
		gvk             schema.GroupVersionKind
		namespace, obj  string
		want, wantMgmtF bool
	}{
		{name: "group, kind and namespace", ig: ig, gvk: deploy, namespace: "shop", obj: "web", want: true},
		{name: "any version", ig: ig, gvk: schema.GroupVersionKind{Group: "apps", Version: "v1beta2", Kind: "Deployment"}, namespace: "shop", obj: "web", want: true},
		{name: "other namespace", ig: ig, gvk: deploy, namespace: "dev", obj: "web"},
		{name: "other group", ig: ig, gvk: schema.GroupVersionKind{Group: "extensions", Version: "v1beta1", Kind: "Deployment"}, namespace: "shop", obj: "web"},
		{name: "kind is case-sensitive", ig: ig, gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "deployment"}, namespace: "shop", obj: "web"},
		{name: "core group and name, any namespace", ig: ig, gvk: svc, namespace: "anywhere", obj: "api", want: true, wantMgmtF: true},
		{name: "other name", ig: ig, gvk: svc, namespace: "anywhere", obj: "db"},
		{name: "nil Ignore", ig: nil, gvk: deploy, namespace: "shop", obj: "web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.ig.Matches(tt.gvk, tt.namespace, tt.obj); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
			if got := tt.ig.NeedsManagedFields(tt.gvk, tt.namespace, tt.obj); got != tt.wantMgmtF {
				t.Errorf("NeedsManagedFields = %v, want %v", got, tt.wantMgmtF)
			}
		})
	}
}

func TestCompileIgnoreErrors(t *testing.T) {
	ok := navarchv1.ResourceIgnoreDifferences{Kind: "Service", JSONPointers: []string{"/spec/clusterIP"}}
	tests := []struct {
		name string
		rule navarchv1.ResourceIgnoreDifferences
		want string
	}{
		{name: "pointer without a slash", rule: navarchv1.ResourceIgnoreDifferences{Kind: "Service", JSONPointers: []string{"/spec/a", "spec/clusterIP"}},
			want: `spec.ignoreDifferences[1].jsonPointers[1]: "spec/clusterIP" is not a JSON pointer`},
		{name: "the whole object", rule: navarchv1.ResourceIgnoreDifferences{Kind: "Service", JSONPointers: []string{""}},
			want: "spec.ignoreDifferences[1].jsonPointers[0]: the empty pointer is the whole object"},
		{name: "jq syntax", rule: navarchv1.ResourceIgnoreDifferences{Kind: "Service", JQPathExpressions: []string{".spec[["}},
			want: `spec.ignoreDifferences[1].jqPathExpressions[0]: ".spec[["`},
		{name: "jq unknown function", rule: navarchv1.ResourceIgnoreDifferences{Kind: "Service", JQPathExpressions: []string{".a", "nosuch(.b)"}},
			want: `spec.ignoreDifferences[1].jqPathExpressions[1]: "nosuch(.b)"`},
		{name: "empty manager", rule: navarchv1.ResourceIgnoreDifferences{Kind: "Service", ManagedFieldsManagers: []string{""}},
			want: "spec.ignoreDifferences[1].managedFieldsManagers[0]: must not be empty"},
		{name: "no kind", rule: navarchv1.ResourceIgnoreDifferences{JSONPointers: []string{"/a"}},
			want: "spec.ignoreDifferences[1].kind: must be set"},
		{name: "nothing ignored", rule: navarchv1.ResourceIgnoreDifferences{Kind: "Service"},
			want: "spec.ignoreDifferences[1]: one of jsonPointers, jqPathExpressions or managedFieldsManagers must be set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ig, err := CompileIgnore([]navarchv1.ResourceIgnoreDifferences{ok, tt.rule})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CompileIgnore error = %v, want one containing %q", err, tt.want)
			}
			if ig != nil {
				t.Error("CompileIgnore returned rules along with an error")
			}
		})
	}
	if ig, err := CompileIgnore(nil); err != nil || ig.Matches(schema.GroupVersionKind{Kind: "Service"}, "", "") {
		t.Errorf("CompileIgnore(nil) = %v, %v; want rules that match nothing", ig, err)
	}
}

func TestRespectLive(t *testing.T) {
	tests := []struct {
		name    string
		rule    navarchv1.ResourceIgnoreDifferences
		desired *unstructured.Unstructured
		live    *unstructured.Unstructured
		want    *unstructured.Unstructured
	}{
		{name: "pointer copies live's value",
			rule:    navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}},
			desired: deployment(t, nil), live: withNoise(t, deployment(t, replace("replicas: 2", "replicas: 7"))),
			want: deployment(t, replace("replicas: 2", "replicas: 7"))},
		{name: "a field absent from live is removed",
			rule:    navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}},
			desired: deployment(t, nil), live: deployment(t, replace("  replicas: 2\n", "")),
			want: deployment(t, replace("  replicas: 2\n", ""))},
		{name: "jq copies the web image found by name",
			rule: navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment",
				JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "web") | .image`}},
			desired: deployment(t, replace("envoy:1.30", "envoy:1.31")), live: deployment(t, replace("web:1.0", "web:1.0-hotfix")),
			want: deployment(t, func(s string) string {
				return replace("envoy:1.30", "envoy:1.31")(replace("web:1.0", "web:1.0-hotfix")(s))
			})},
		{name: "missing maps are created in desired",
			rule:    navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/metadata/annotations/team~1owner"}},
			desired: deployment(t, nil), live: deployment(t, replace("labels: {app: web}", "labels: {app: web}\n  annotations: {team/owner: payments}")),
			want: deployment(t, replace("labels: {app: web}", "labels: {app: web}\n  annotations: {team/owner: payments}"))},
		{name: "a rule for another object changes nothing",
			rule:    navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment", Name: "api", JSONPointers: []string{"/spec/replicas"}},
			desired: deployment(t, nil), live: deployment(t, replace("replicas: 2", "replicas: 7")),
			want: deployment(t, nil)},
		{name: "no live object changes nothing",
			rule:    navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}},
			desired: deployment(t, nil), live: nil,
			want: deployment(t, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := compile(t, tt.rule).RespectLive(tt.desired, tt.live); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tt.desired.Object, tt.want.Object) {
				t.Errorf("desired =\n%v\nwant\n%v", tt.desired.Object, tt.want.Object)
			}
		})
	}

	t.Run("another object is an error", func(t *testing.T) {
		ig := compile(t, navarchv1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}})
		other := deployment(t, nil)
		other.SetName("api")
		if err := ig.RespectLive(deployment(t, nil), other); err == nil {
			t.Error("want an error for a live object with another name")
		}
	})
	t.Run("nil Ignore", func(t *testing.T) {
		desired := deployment(t, nil)
		if err := (*Ignore)(nil).RespectLive(desired, deployment(t, replace("replicas: 2", "replicas: 7"))); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(desired, deployment(t, nil)) {
			t.Error("a nil Ignore changed desired")
		}
	})
}

func TestHash(t *testing.T) {
	base := Hash(deployment(t, nil))
	reordered := object(t, `
kind: Deployment
spec:
  template:
    spec:
      containers:
      - image: web:1.0
        ports: [{protocol: TCP, containerPort: 8080}]
        name: web
      - image: envoy:1.30
        name: envoy
    metadata: {labels: {app: web}}
  selector: {matchLabels: {app: web}}
  replicas: 2
metadata:
  labels: {app: web}
  namespace: shop
  name: web
apiVersion: apps/v1
`)
	tests := []struct {
		name     string
		obj      *unstructured.Unstructured
		wantSame bool
	}{
		{name: "same object", obj: deployment(t, nil), wantSame: true},
		{name: "keys in another order", obj: reordered, wantSame: true},
		{name: "status and server-set metadata", obj: withManagedFields(t, withNoise(t, deployment(t, nil))), wantSame: true},
		{name: "float replicas", obj: func() *unstructured.Unstructured {
			u := deployment(t, nil)
			u.Object["spec"].(map[string]any)["replicas"] = 2.0
			return u
		}(), wantSame: true},
		{name: "spec change", obj: deployment(t, replace("web:1.0", "web:1.1"))},
		{name: "label change", obj: deployment(t, replace("labels: {app: web}", "labels: {app: api}"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Hash(tt.obj)
			if len(got) != 32 {
				t.Fatalf("Hash = %x, want the 32 bytes of a SHA-256", got)
			}
			if (got == base) != tt.wantSame {
				t.Errorf("Hash = %x, base %x; want same %v", got, base, tt.wantSame)
			}
		})
	}
}
