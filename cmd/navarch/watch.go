package main

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// errWaitExpired is returned by watchApplication when ctx ends before done holds.
var errWaitExpired = errors.New("wait expired")

// watchApplication watches one Application until done returns true for a version of it, and
// returns that version. It starts from the current state and survives dropped watches (it
// lists again), so no change is lost and nothing polls.
func watchApplication(ctx context.Context, c client.WithWatch, namespace, name string,
	done func(*navarchv1.Application) (bool, error)) (*navarchv1.Application, error) {
	byName := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = byName
			list := &navarchv1.ApplicationList{}
			return list, c.List(ctx, list, client.InNamespace(namespace), &client.ListOptions{Raw: &opts})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = byName
			return c.Watch(ctx, &navarchv1.ApplicationList{}, client.InNamespace(namespace), &client.ListOptions{Raw: &opts})
		},
	}
	var last *navarchv1.Application
	_, err := watchtools.UntilWithSync(ctx, lw, &navarchv1.Application{}, nil, func(ev watch.Event) (bool, error) {
		switch ev.Type {
		case watch.Deleted:
			return false, fmt.Errorf("the Application %s was deleted", qualified(namespace, name))
		case watch.Added, watch.Modified:
			app, ok := ev.Object.(*navarchv1.Application)
			if !ok {
				return false, nil
			}
			last = app
			return done(app)
		}
		return false, nil
	})
	if err != nil && ctx.Err() != nil {
		return last, errWaitExpired
	}
	return last, err
}
