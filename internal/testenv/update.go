package testenv

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Update reads obj, applies edit to it and writes it back, again from the read on a conflict:
// the controller under test writes the same objects. obj holds the written object afterwards.
func Update[T client.Object](t testing.TB, c client.Client, obj T, edit func(T)) {
	t.Helper()
	ctx := context.Background()
	for range 10 {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatalf("update %s: %v", client.ObjectKeyFromObject(obj), err)
		}
		edit(obj)
		err := c.Update(ctx, obj)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			t.Fatalf("update %s: %v", client.ObjectKeyFromObject(obj), err)
		}
	}
	t.Fatalf("update %s: still conflicting after 10 attempts", client.ObjectKeyFromObject(obj))
}
