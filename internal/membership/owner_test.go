package membership

import (
	"fmt"
	"slices"
	"testing"
)

func clusterNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("cluster-%03d", i)
	}
	return names
}

func assign(clusters, members []string) map[string]string {
	owners := map[string]string{}
	for _, c := range clusters {
		owners[c] = Owner(c, members)
	}
	return owners
}

func TestOwnerSpreadsClustersEvenlyWhateverTheOrderOfMembers(t *testing.T) {
	clusters := clusterNames(1000)
	members := []string{"navarch-7f9c4-abcde", "navarch-7f9c4-fghij", "navarch-7f9c4-klmno"}
	owners := assign(clusters, members)
	reversed := slices.Clone(members)
	slices.Reverse(reversed)
	share := map[string]int{}
	for _, c := range clusters {
		if got := Owner(c, reversed); got != owners[c] {
			t.Fatalf("Owner(%s) is %s with the members in one order and %s in another", c, owners[c], got)
		}
		share[owners[c]]++
	}
	for _, m := range members {
		// 1000/3 ≈ 333; a fair hash stays well within ±15%.
		if share[m] < 283 || share[m] > 383 {
			t.Errorf("member %s owns %d of 1000 clusters, want about 333: %v", m, share[m], share)
		}
	}
	if got := Owner("cluster-000", nil); got != "" {
		t.Errorf("Owner with no members = %q, want \"\"", got)
	}
	if got := Owner("cluster-000", []string{"only"}); got != "only" {
		t.Errorf("Owner with one member = %q, want it", got)
	}
}

func TestOwnerMovesOnlyTheShareOfAMemberThatJoinsOrLeaves(t *testing.T) {
	clusters := clusterNames(1000)
	for _, tc := range []struct {
		name           string
		before, after  []string
		changed        string // the member joining or leaving
		joins          bool
		minMoved, maxM int
	}{
		{name: "a fourth joins", before: []string{"a", "b", "c"}, after: []string{"a", "b", "c", "d"}, changed: "d", joins: true, minMoved: 200, maxM: 300},
		{name: "one of four leaves", before: []string{"a", "b", "c", "d"}, after: []string{"a", "c", "d"}, changed: "b", minMoved: 200, maxM: 300},
		{name: "a tenth joins", before: clusterNamesN("r", 9), after: clusterNamesN("r", 10), changed: "r-9", joins: true, minMoved: 70, maxM: 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, after := assign(clusters, tc.before), assign(clusters, tc.after)
			moved := 0
			for _, c := range clusters {
				if before[c] == after[c] {
					continue
				}
				moved++
				// Only the changed member's share moves: to it when it joins, from it when it
				// leaves.
				if tc.joins && after[c] != tc.changed || !tc.joins && before[c] != tc.changed {
					t.Errorf("%s moved from %s to %s, but only %s joined or left", c, before[c], after[c], tc.changed)
				}
			}
			if moved < tc.minMoved || moved > tc.maxM {
				t.Errorf("%d of 1000 clusters moved, want about 1000/%d", moved, max(len(tc.before), len(tc.after)))
			}
		})
	}
}

func clusterNamesN(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return names
}

func TestClusterLeaseNameIsAValidObjectName(t *testing.T) {
	if got := clusterLeaseName("prod-eu"); got != "navarch-cluster-prod-eu" {
		t.Errorf("clusterLeaseName(prod-eu) = %q", got)
	}
	long := ""
	for len(long) < 250 {
		long += "abcdefghi."
	}
	long += "x"
	a, b := clusterLeaseName(long), clusterLeaseName(long[:len(long)-1]+"y")
	if len(a) > 253 || a == b {
		t.Errorf("long names give %q (%d characters) and %q: want distinct names of at most 253", a, len(a), b)
	}
}
