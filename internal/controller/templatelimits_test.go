package controller

import (
	"runtime"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/testenv"
)

// TestATemplateThatExhaustsMemoryFailsOnlyItsApplicationSet: the security probe's template once
// took the controller from 115 MB to 1.29 GB and got it OOM-killed on every start. Now it is a
// TemplateError on its own ApplicationSet, rendering stops long before it allocates that much,
// and the other ApplicationSets are served.
func TestATemplateThatExhaustsMemoryFailsOnlyItsApplicationSet(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	applyAppSet(t, ns, `
metadata: {name: greedy}
spec:
  goTemplate: true
  generators: [{list: {elements: [{name: a}]}}]
  template:
    metadata: {name: 'mem-{{ len (repeat 600000000 "x") }}'}
    spec:
      source: {repoURL: 'https://git.example/r.git', path: apps}
      destination: {name: in-cluster, namespace: default}
`)
	cond := waitForCondition(t, ns, "greedy", navarchv1.ApplicationSetErrorOccurred, metav1.ConditionTrue, navarchv1.ReasonTemplateError)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	// The controller runs in this process: everything it allocated while rendering is here.
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 300<<20 {
		t.Errorf("the process allocated %d MiB while the template was rendered; the template's output alone would be 572 MiB", grown>>20)
	}
	if !strings.Contains(cond.Message, "metadata.name") || !strings.Contains(cond.Message, "limit") {
		t.Errorf("the TemplateError does not name the field and the limit: %s", cond.Message)
	}

	applyAppSet(t, ns, listAppSet("b", "c"))
	waitForApps(t, ns, "b,c")
}
