package engine

import (
	"slices"
	"strings"
	"testing"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func TestRequestedRevisions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sync    navarchv1.SyncOperation
		sources int
		want    []string
		err     string
	}{
		{name: "none", sync: navarchv1.SyncOperation{}, sources: 2},
		{name: "one source", sync: navarchv1.SyncOperation{Revision: "v1.2"}, sources: 1, want: []string{"v1.2"}},
		{name: "a branch with a comma, one source", sync: navarchv1.SyncOperation{Revision: "a,b"}, sources: 1, want: []string{"a,b"}},
		{name: "a list, constraints with commas kept whole", sync: navarchv1.SyncOperation{Revisions: []string{">=1.2, <2.0", "main"}}, sources: 2,
			want: []string{">=1.2, <2.0", "main"}},
		{name: "a list of the wrong length", sync: navarchv1.SyncOperation{Revisions: []string{"1.2.0"}}, sources: 2,
			err: "operation.sync.revisions: 1 revisions for 2 sources"},
		{name: "joined revisions as history records them", sync: navarchv1.SyncOperation{Revision: "1.2.0,9f1c2e7a"}, sources: 2,
			want: []string{"1.2.0", "9f1c2e7a"}},
		{name: "one revision for several sources", sync: navarchv1.SyncOperation{Revision: "main"}, sources: 2,
			err: "the Application has 2 sources; give one revision per source in operation.sync.revisions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := requestedRevisions(&tc.sync, tc.sources)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("requestedRevisions = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
