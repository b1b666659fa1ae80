package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/testenv"
)

// teamAppSet is an ApplicationSet named "s" with one Application per element, labelled with
// its element's team.
const teamAppSet = `
metadata: {name: s}
spec:
  generators: [{list: {elements: [{name: a, team: web}, {name: b, team: web}, {name: c, team: web}]}}]
  template:
    metadata: {name: '{{name}}', labels: {team: '{{team}}'}}
    spec:
      source: {repoURL: 'https://git.example/r.git', path: 'apps/{{name}}'}
      destination: {name: in-cluster, namespace: '{{name}}'}
`

// teamElements are list generator elements; teams[i] is the team of the i-th name.
func teamElements(names, teams string) []apiextensionsv1.JSON {
	var out []apiextensionsv1.JSON
	ts := strings.Split(teams, ",")
	for i, n := range strings.Split(names, ",") {
		out = append(out, apiextensionsv1.JSON{Raw: fmt.Appendf(nil, `{"name":%q,"team":%q}`, n, ts[i])})
	}
	return out
}

// A write the API server refuses holds every deletion of the pass, as a rendering that fails
// before writing does: the Applications that look gone may be the very ones the refused
// Application replaces. 'not a label value!' passes the templates and reaches the API server,
// which refuses it.
func TestDeletionsAreHeldWhileAWriteIsRefused(t *testing.T) {
	tests := []struct {
		name    string
		mistake func(*navarchv1.ApplicationSet)
		// refused is the Application the API server refuses; during the Applications while
		// the mistake is in place, held how many of them are no longer generated; fix the
		// change that repairs it, after the Applications.
		refused, during string
		held            int
		fix             func(*navarchv1.ApplicationSet)
		after           string
	}{
		{
			// a-v2 and c-v2 are created; b-v2 is refused, so a, b and c stay.
			name: "a new name template and one refused create",
			mistake: func(s *navarchv1.ApplicationSet) {
				s.Spec.Template.Metadata.Name = "{{name}}-v2"
				s.Spec.Generators[0].List.Elements = teamElements("a,b,c", "web,not a label value!,web")
			},
			refused: "b-v2",
			during:  "a,a-v2,b,c,c-v2",
			held:    3,
			fix: func(s *navarchv1.ApplicationSet) {
				s.Spec.Generators[0].List.Elements = teamElements("a,b,c", "web,web,web")
			},
			after: "a-v2,b-v2,c-v2",
		},
		{
			// c is no longer generated, but b's update is refused: c stays.
			name: "a removed element and one refused update",
			mistake: func(s *navarchv1.ApplicationSet) {
				s.Spec.Generators[0].List.Elements = teamElements("a,b", "web,not a label value!")
			},
			refused: "update Application b",
			during:  "a,b,c",
			held:    1,
			fix: func(s *navarchv1.ApplicationSet) {
				s.Spec.Generators[0].List.Elements = teamElements("a,b", "web,api")
			},
			after: "a,b",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := testenv.Namespace(t, env.Client)
			set := applyAppSet(t, ns, teamAppSet)
			waitForApps(t, ns, "a,b,c")
			waitForCondition(t, ns, "s", navarchv1.ApplicationSetResourcesUpToDate, metav1.ConditionTrue, "")

			testenv.Update(t, env.Client, set, tt.mistake)
			var cond *metav1.Condition
			testenv.Eventually(t, "ErrorOccurred names the refused write", func() string {
				cond = meta.FindStatusCondition(getAppSet(t, ns, "s").Status.Conditions, navarchv1.ApplicationSetErrorOccurred)
				if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != navarchv1.ReasonApplicationError || !strings.Contains(cond.Message, tt.refused) {
					return fmt.Sprintf("ErrorOccurred is %+v", cond)
				}
				return ""
			})
			// The passes from here on all see the refused write.
			logged := len(controllerLogs.Lines("Applied ApplicationSet", "applicationSet", ns+"/s"))
			requestRefresh(t, set) // one more pass inside the window
			testenv.Consistently(t, 3*time.Second, "no Application is deleted while a write is refused", func() string {
				if got := appNames(listApps(t, ns)); got != tt.during {
					return fmt.Sprintf("Applications are %q, want %q", got, tt.during)
				}
				return ""
			})
			for _, phrase := range []string{tt.refused, "deletions are held back", "until every Application is written"} {
				if !strings.Contains(cond.Message, phrase) {
					t.Errorf("the condition does not say %q: %s", phrase, cond.Message)
				}
			}

			// The log tells an operator the same: nothing deleted, the deletions held.
			lines := controllerLogs.Lines("Applied ApplicationSet", "applicationSet", ns+"/s")[logged:]
			if len(lines) == 0 {
				t.Fatal("no Applied ApplicationSet line for the passes with the refused write")
			}
			for _, l := range lines {
				if l.Values["deleted"] != 0 || l.Values["heldDeletions"] != tt.held {
					t.Errorf("a pass with a refused write logged deleted=%v heldDeletions=%v, want deleted=0 heldDeletions=%d",
						l.Values["deleted"], l.Values["heldDeletions"], tt.held)
				}
			}

			// Once every Application is written, the deletions go ahead.
			testenv.Update(t, env.Client, set, tt.fix)
			waitForApps(t, ns, tt.after)
			waitForCondition(t, ns, "s", navarchv1.ApplicationSetResourcesUpToDate, metav1.ConditionTrue, "")
		})
	}
}
