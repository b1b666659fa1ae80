package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxNameLength bounds Name, leaving room below the 63 characters of a DNS label (and of a
// label value) for the suffixes tests add, such as ns+"-child".
const maxNameLength = 40

var notDNS = regexp.MustCompile(`[^a-z0-9]+`)

// Name is a DNS label derived from the test's name, e.g. "syncpolicies-create-only" for
// TestSyncPolicies/create-only: the name of the test's namespace, Git repository or Cluster.
// Distinct tests get distinct names: a name too long to keep whole is cut and ends in a hash
// of the whole.
func Name(t testing.TB) string {
	full := notDNS.ReplaceAllString(strings.ToLower(t.Name()), "-")
	name := strings.Trim(strings.TrimPrefix(full, "test"), "-")
	if len(name) > maxNameLength {
		sum := sha256.Sum256([]byte(t.Name()))
		hash := hex.EncodeToString(sum[:3])
		name = strings.TrimRight(name[:maxNameLength-len(hash)-1], "-") + "-" + hash
	}
	return name
}

// Namespace creates the test's namespace, named Name(t), in the cluster behind c.
//
// The namespace is not deleted when the test ends: the cluster goes with the test binary, a
// deletion would only add work for the controllers while other tests run, and what is left
// is there to look at when a test fails.
func Namespace(t testing.TB, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Name(t)}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace %s: %v", ns.Name, err)
	}
	return ns.Name
}
