package jsontree_test

import (
	"encoding/json"
	"fmt"

	"github.com/navarch-io/navarch/internal/jsontree"
)

// Keep the live image of the "web" container in the desired object, the way a field named by
// ignoreDifferences survives a sync.
func ExampleJQ_Paths() {
	var desired, live map[string]any
	_ = json.Unmarshal([]byte(`{"spec":{"containers":[{"name":"web","image":"web:2"}]}}`), &desired)
	_ = json.Unmarshal([]byte(`{"spec":{"containers":[{"name":"web","image":"web:1-hotfix"}]}}`), &live)

	q, err := jsontree.CompileJQ(`.spec.containers[] | select(.name == "web") | .image`)
	if err != nil {
		panic(err)
	}
	paths := q.Paths(live)
	for _, p := range paths {
		fmt.Println(jsontree.FormatPointer(p))
	}
	jsontree.CopyAll(desired, live, paths)
	image, _ := jsontree.Lookup(desired, []any{"spec", "containers", 0, "image"})
	fmt.Println(image)
	// Output:
	// /spec/containers/0/image
	// web:1-hotfix
}
