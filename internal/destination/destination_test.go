package destination

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func TestResolve(t *testing.T) {
	clusters := []navarchv1.Cluster{
		{ObjectMeta: metav1.ObjectMeta{Name: "east"}, Spec: navarchv1.ClusterSpec{Server: "https://east.example:6443"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "west"}, Spec: navarchv1.ClusterSpec{Server: "https://West.Example:443/"}},
	}
	tests := []struct {
		name string
		dest navarchv1.ApplicationDestination
		want string // "" for ErrNoCluster
	}{
		{"by name", navarchv1.ApplicationDestination{Name: "east"}, "east"},
		{"in-cluster by name", navarchv1.ApplicationDestination{Name: "in-cluster"}, navarchv1.InClusterName},
		{"in-cluster by server", navarchv1.ApplicationDestination{Server: "https://kubernetes.default.svc"}, navarchv1.InClusterName},
		{"in-cluster by server with a slash", navarchv1.ApplicationDestination{Server: "https://kubernetes.default.svc/"}, navarchv1.InClusterName},
		{"in-cluster by server with the default port", navarchv1.ApplicationDestination{Server: "https://kubernetes.default.svc:443"}, navarchv1.InClusterName},
		{"by server", navarchv1.ApplicationDestination{Server: "https://east.example:6443"}, "east"},
		{"by server with a trailing slash", navarchv1.ApplicationDestination{Server: "https://east.example:6443/"}, "east"},
		{"by server, case and default port", navarchv1.ApplicationDestination{Server: "https://west.example"}, "west"},
		{"unknown name", navarchv1.ApplicationDestination{Name: "north"}, ""},
		{"unknown server", navarchv1.ApplicationDestination{Server: "https://east.example:6444"}, ""},
		{"a name wins over a server", navarchv1.ApplicationDestination{Name: "north", Server: "https://east.example:6443"}, ""},
	}
	for _, tc := range tests {
		got, err := Resolve(tc.dest, clusters)
		if tc.want == "" {
			if !errors.Is(err, ErrNoCluster) {
				t.Errorf("%s: Resolve = %q, %v; want ErrNoCluster", tc.name, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: Resolve = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// NormalizeServer's forms, asked twice: the second answer comes from its memory, the same
// and without an allocation (every pass of every Application asks about its Cluster's server).
func TestNormalizeServer(t *testing.T) {
	for in, want := range map[string]string{
		"https://West.Example:443/":  "https://west.example",
		" https://east.example:6443": "https://east.example:6443",
		"http://[::1]:80":            "http://[::1]",
		"HTTP://Host:8080/path/":     "http://host:8080/path",
		"not a url/":                 "not a url",
	} {
		for round := range 2 {
			if got := NormalizeServer(in); got != want {
				t.Errorf("round %d: NormalizeServer(%q) = %q, want %q", round, in, got, want)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { NormalizeServer("https://West.Example:443/") }); n != 0 {
		t.Errorf("NormalizeServer of a server it normalized before made %v allocations, want 0", n)
	}
}
