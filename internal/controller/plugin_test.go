package controller

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/plugin"
	"github.com/navarch-io/navarch/internal/plugin/pluginserver"
	"github.com/navarch-io/navarch/internal/testenv"
)

const pluginToken = "plugin-test-token"

// startPlugin starts a plugin that accepts pluginToken, and configures it as the ConfigMap
// "plugin-<ns>" of the system namespace, its token in the Secret of the same name (key
// plugin.token). It returns the server and the ConfigMap's name.
func startPlugin(t *testing.T, ns string) (*pluginserver.Server, string) {
	t.Helper()
	srv := pluginserver.Start(pluginToken)
	t.Cleanup(srv.Close)
	name := "plugin-" + ns
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: testenv.SystemNamespace, Name: name, Labels: map[string]string{plugin.LabelPartOf: plugin.PartOf}},
		StringData: map[string]string{"plugin.token": pluginToken},
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: testenv.SystemNamespace, Name: name},
		Data:       map[string]string{plugin.KeyBaseURL: srv.URL(), plugin.KeyToken: "$" + name + ":plugin.token", plugin.KeyRequestTimeout: "2"},
	}
	for _, obj := range []client.Object{secret, cm} {
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.IgnoreNotFound(env.Client.Delete(context.Background(), obj)) })
	}
	return srv, name
}

// pluginAppSet is an ApplicationSet "envs" with one Application per parameter set of the
// plugin of ConfigMap cm, asked for the team "web" every 45 seconds.
func pluginAppSet(cm string) string {
	return fmt.Sprintf(`
metadata: {name: envs}
spec:
  generators:
  - plugin:
      configMapRef: {name: %s}
      input: {parameters: {team: web}}
      values: {owner: 'team-{{generator.input.parameters.team}}'}
      requeueAfterSeconds: 45
  template:
    metadata:
      name: '{{env}}'
      labels: {team: '{{generator.input.parameters.team}}', owner: '{{values.owner}}'}
    spec:
      source: {repoURL: 'https://git.example/r.git', path: 'envs/{{env}}', targetRevision: '{{revision}}'}
      destination: {name: in-cluster, namespace: '{{env}}'}
`, cm)
}

func answerEnvs(envs ...string) func(map[string]any) []map[string]any {
	return func(in map[string]any) []map[string]any {
		out := []map[string]any{}
		for _, e := range envs {
			out = append(out, map[string]any{"env": e, "revision": fmt.Sprintf("%v-%s", in["team"], e)})
		}
		return out
	}
}

// The plugin's parameter sets become Applications; the request carries the ApplicationSet's
// name, its input and the token of the Secret; the pass is requeued after requeueAfterSeconds.
func TestPluginGeneratorParametersReachApplications(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	srv, cm := startPlugin(t, ns)
	srv.Answer(answerEnvs("dev", "prod"))
	set := applyAppSet(t, ns, pluginAppSet(cm))

	apps := waitForApps(t, ns, "dev,prod")
	prod := apps["prod"]
	if prod.Spec.Source.TargetRevision != "web-prod" || prod.Spec.Source.Path != "envs/prod" {
		t.Errorf("prod's source is %+v, want the plugin's parameters (web-prod, envs/prod)", prod.Spec.Source)
	}
	if prod.Labels["team"] != "web" || prod.Labels["owner"] != "team-web" {
		t.Errorf("prod's labels are %v, want team=web (generator.input.parameters) and owner=team-web (values)", prod.Labels)
	}
	recv := srv.Received()
	if len(recv) == 0 || recv[0].ApplicationSetName != "envs" || recv[0].Input.Parameters["team"] != "web" {
		t.Errorf("the plugin received %+v, want applicationSetName envs and the input team=web", recv)
	}
	if n := srv.Rejected(); n != 0 {
		t.Errorf("the plugin refused %d requests for their token", n)
	}
	waitForCondition(t, ns, "envs", navarchv1.ApplicationSetResourcesUpToDate, metav1.ConditionTrue, "")

	// The next pass is due after requeueAfterSeconds: run one as the controller does and look
	// at its result.
	r := &ApplicationSetReconciler{
		Client:       env.Client,
		Plugins:      &plugin.Caller{Reader: env.Client, Namespace: testenv.SystemNamespace},
		ErrorRequeue: time.Second,
	}
	res, err := r.Reconcile(ctrl.LoggerInto(context.Background(), env.Logger), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(set)})
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != 45*time.Second {
		t.Errorf("a pass asks to be requeued after %v, want requeueAfterSeconds (45s)", res.RequeueAfter)
	}

	// The plugin checks the token: one the plugin does not accept is a generator error.
	setPluginToken(t, cm, "not-the-token")
	refresh(t, set)
	cond := waitForCondition(t, ns, "envs", navarchv1.ApplicationSetErrorOccurred, metav1.ConditionTrue, navarchv1.ReasonGeneratorError)
	if !strings.Contains(cond.Message, "403 Forbidden") || strings.Contains(cond.Message, "not-the-token") {
		t.Errorf("the condition does not say the plugin refused the token, or reveals the token: %s", cond.Message)
	}
	if srv.Rejected() == 0 {
		t.Errorf("the plugin saw no request with a wrong token")
	}
	setPluginToken(t, cm, pluginToken)
	refresh(t, set)
	waitForCondition(t, ns, "envs", navarchv1.ApplicationSetErrorOccurred, metav1.ConditionFalse, "")
}

func setPluginToken(t *testing.T, name, token string) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.SystemNamespace, Name: name}}
	testenv.Update(t, env.Client, secret, func(s *corev1.Secret) { s.Data = map[string][]byte{"plugin.token": []byte(token)} })
}

// A plugin that fails, whatever the way, is a generator error: the pass deletes nothing, and
// the condition names the generator and the ConfigMap. Once the plugin answers again, the
// Applications it no longer generates are deleted.
func TestPluginFailuresDeleteNothing(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	srv, cm := startPlugin(t, ns)
	srv.Answer(answerEnvs("dev", "prod"))
	set := applyAppSet(t, ns, pluginAppSet(cm))
	before := waitForApps(t, ns, "dev,prod")
	// The plugin keeps answering dev and prod while the faults come and go, so that a pass
	// that runs between one fault's fix and the next fault changes nothing; a controller that
	// took a failure for an empty answer would delete both.

	editConfigMap := func(edit func(*corev1.ConfigMap)) {
		testenv.Update(t, env.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.SystemNamespace, Name: cm}}, edit)
	}
	faults := []struct {
		name         string
		breakIt, fix func()
		says         string
	}{
		{"a server error", func() { srv.Fail(http.StatusInternalServerError) }, func() { srv.Fail(0) }, "500 Internal Server Error"},
		{"an answer over the size limit", func() { srv.Oversize(plugin.MaxResponseBytes) }, func() { srv.Oversize(0) }, "the answer is larger than 10 MiB"},
		{"no answer within requestTimeout", func() { srv.Delay(time.Minute) }, func() { srv.Delay(0) }, "no answer within 2s (requestTimeout)"},
		{"a token Secret without its label", func() {
			testenv.Update(t, env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.SystemNamespace, Name: cm}},
				func(s *corev1.Secret) { delete(s.Labels, plugin.LabelPartOf) })
		}, func() {
			testenv.Update(t, env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.SystemNamespace, Name: cm}},
				func(s *corev1.Secret) { s.Labels = map[string]string{plugin.LabelPartOf: plugin.PartOf} })
		}, "is not labelled app.kubernetes.io/part-of=navarch"},
		{"a missing Secret", func() { editConfigMap(func(c *corev1.ConfigMap) { c.Data[plugin.KeyToken] = "$gone:plugin.token" }) },
			func() {
				editConfigMap(func(c *corev1.ConfigMap) { c.Data[plugin.KeyToken] = "$" + cm + ":plugin.token" })
			},
			"token: read Secret navarch-system/gone"},
		{"a missing ConfigMap", func() {
			testenv.Update(t, env.Client, set, func(s *navarchv1.ApplicationSet) { s.Spec.Generators[0].Plugin.ConfigMapRef.Name = "gone" })
		}, func() {
			testenv.Update(t, env.Client, set, func(s *navarchv1.ApplicationSet) { s.Spec.Generators[0].Plugin.ConfigMapRef.Name = cm })
		}, "ConfigMap navarch-system/gone: read:"},
	}
	for _, f := range faults {
		f.breakIt()
		refresh(t, set)
		testenv.Eventually(t, f.name+": the ErrorOccurred condition says "+f.says, func() string {
			c := meta.FindStatusCondition(getAppSet(t, ns, "envs").Status.Conditions, navarchv1.ApplicationSetErrorOccurred)
			if c == nil || c.Status != metav1.ConditionTrue || c.Reason != navarchv1.ReasonGeneratorError ||
				!strings.Contains(c.Message, f.says) || !strings.Contains(c.Message, "spec.generators[0].plugin: ") {
				return fmt.Sprintf("ErrorOccurred is %+v", c)
			}
			if strings.Contains(c.Message, pluginToken) {
				t.Fatalf("the condition reveals the token: %s", c.Message)
			}
			return ""
		})
		testenv.Consistently(t, 2*time.Second, f.name+": the Applications are left alone", func() string {
			after := listApps(t, ns)
			for name, a := range before {
				if b, ok := after[name]; !ok || !b.DeletionTimestamp.IsZero() || b.ResourceVersion != a.ResourceVersion {
					return fmt.Sprintf("Application %s was written or deleted", name)
				}
			}
			return ""
		})
		f.fix()
	}

	// The plugin answers again, without prod: what it no longer generates goes.
	srv.Answer(answerEnvs("dev"))
	refresh(t, set)
	waitForApps(t, ns, "dev")
	waitForCondition(t, ns, "envs", navarchv1.ApplicationSetErrorOccurred, metav1.ConditionFalse, "")
}

// In a matrix, the plugin is asked once per parameter set of the earlier child, with its input
// rendered from that set.
func TestPluginGeneratorInAMatrix(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	srv, cm := startPlugin(t, ns)
	srv.Answer(func(in map[string]any) []map[string]any {
		return []map[string]any{{"digest": fmt.Sprintf("sha256-%v", in["branch"])}}
	})
	applyAppSet(t, ns, fmt.Sprintf(`
metadata: {name: branches}
spec:
  generators:
  - matrix:
      generators:
      - list: {elements: [{branch: main}, {branch: feature}]}
      - plugin: {configMapRef: {name: %s}, input: {parameters: {branch: '{{branch}}'}}}
  template:
    metadata: {name: 'app-{{branch}}'}
    spec:
      source: {repoURL: 'https://git.example/r.git', path: deploy, targetRevision: '{{digest}}'}
      destination: {name: in-cluster, namespace: '{{branch}}'}
`, cm))
	apps := waitForApps(t, ns, "app-feature,app-main")
	for branch, app := range map[string]navarchv1.Application{"main": apps["app-main"], "feature": apps["app-feature"]} {
		if got := app.Spec.Source.TargetRevision; got != "sha256-"+branch {
			t.Errorf("%s targets %q, want the plugin's digest for %s", app.Name, got, branch)
		}
	}
}
