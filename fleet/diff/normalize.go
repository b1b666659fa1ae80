package diff

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/navarch-io/navarch/internal/jsontree"
)

// lastAppliedAnnotation is where kubectl's client-side apply keeps the applied manifest; the
// server-side apply dry run does not predict it, so it is noise for the diff.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// serverSetMetadata are the metadata fields the API server writes, never Git.
var serverSetMetadata = []string{
	"managedFields", "resourceVersion", "uid", "generation", "creationTimestamp", "selfLink",
	"deletionGracePeriodSeconds",
}

// Normalize returns a deep copy of obj without the fields that are server-set noise:
// metadata.managedFields, resourceVersion, uid, generation, creationTimestamp, selfLink,
// deletionGracePeriodSeconds, the kubectl.kubernetes.io/last-applied-configuration
// annotation and the whole status. Empty labels and annotations are removed, so an object
// without them and one with {} normalise alike. A nil obj gives an empty object.
func Normalize(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil || obj.Object == nil {
		return &unstructured.Unstructured{Object: map[string]any{}}
	}
	// Copy around the noise rather than copy and delete it: managedFields and status are
	// often most of an object.
	out := &unstructured.Unstructured{Object: make(map[string]any, len(obj.Object))}
	for k, v := range obj.Object {
		if k != "status" && k != "metadata" {
			out.Object[k] = jsontree.DeepCopy(v)
		}
	}
	md, ok := obj.Object["metadata"].(map[string]any)
	if !ok {
		if v, found := obj.Object["metadata"]; found {
			out.Object["metadata"] = jsontree.DeepCopy(v)
		}
		return out
	}
	outMD := make(map[string]any, len(md))
	for k, v := range md {
		if !slices.Contains(serverSetMetadata, k) {
			outMD[k] = jsontree.DeepCopy(v)
		}
	}
	if a, ok := outMD["annotations"].(map[string]any); ok {
		delete(a, lastAppliedAnnotation)
	}
	for _, f := range []string{"annotations", "labels"} {
		if v, ok := outMD[f]; ok && isEmpty(v) {
			delete(outMD, f)
		}
	}
	if len(outMD) > 0 {
		out.Object["metadata"] = outMD
	}
	return out
}

// Hash returns a stable hash of Normalize(obj), the SHA-256 of its canonical JSON (keys
// sorted), for use as a cache key: objects that differ only in server-set noise, status or
// map order hash alike. It is the 32 raw bytes, not their hex: the dry-run cache keeps three
// hashes per managed object, so at 30,000 objects hex would hold 3 MB more.
func Hash(obj *unstructured.Unstructured) string {
	n := Normalize(obj)
	data, err := json.Marshal(n.Object)
	if err != nil {
		// Only values JSON cannot hold (NaN, ±Inf) get here; fmt also prints maps with sorted
		// keys, so the hash stays stable.
		data = fmt.Appendf(nil, "%#v", n.Object)
	}
	sum := sha256.Sum256(data)
	return string(sum[:])
}
