package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/eventrec"
	"github.com/navarch-io/navarch/internal/notify"
)

// The notification configuration: the ConfigMap and Secret navarch-notifications of the
// system namespace, watched (get/list/watch, granted in manager.go); Events on the ConfigMap
// say what is wrong with it, and the events destination records Events on Applications and
// ApplicationSets (events.k8s.io, granted in application.go).
// +kubebuilder:rbac:groups="",namespace=navarch-system,resources=configmaps;secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// ReasonInvalidNotificationConfig is the reason of the Warning Event recorded on the
// ConfigMap navarch-notifications when it cannot be used.
const ReasonInvalidNotificationConfig = "InvalidNotificationConfig"

// setupNotifications adds the Notifier to mgr, fed by the manager's informers of
// Applications and ApplicationSets, and configured by the ConfigMap and Secret
// navarch-notifications, which a cache of those two objects alone watches.
func setupNotifications(mgr ctrl.Manager, cfg *rest.Config, opts Options, recorder *eventrec.Recorder, packer *statusPacker) error {
	notifier := notify.New(notify.Options{Logger: opts.Logger.WithName("notifications"), Events: recorder, Whole: packer.unpacked})
	if err := mgr.Add(notifier); err != nil {
		return err
	}
	byName := cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", notify.Name)}
	configCache, err := cache.New(cfg, cache.Options{
		Scheme:            mgr.GetScheme(),
		Mapper:            mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{opts.SystemNamespace: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
		ByObject:          map[client.Object]cache.ByObject{&corev1.ConfigMap{}: byName, &corev1.Secret{}: byName},
	})
	if err != nil {
		return fmt.Errorf("create the notification configuration cache: %w", err)
	}
	if err := mgr.Add(configCache); err != nil {
		return err
	}
	config := &notificationConfig{reader: configCache, notifier: notifier, events: recorder, key: types.NamespacedName{Namespace: opts.SystemNamespace, Name: notify.Name}}
	toKey := func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: config.key}}
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("notifications").
		WatchesRawSource(source.Kind(configCache, &corev1.ConfigMap{}, handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, o *corev1.ConfigMap) []reconcile.Request { return toKey(ctx, o) }))).
		WatchesRawSource(source.Kind(configCache, &corev1.Secret{}, handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, o *corev1.Secret) []reconcile.Request { return toKey(ctx, o) }))).
		Complete(config); err != nil {
		return err
	}
	return mgr.Add(&notificationFeed{cache: mgr.GetCache(), notifier: notifier})
}

// notificationConfig reloads the Notifier's configuration whenever the ConfigMap or the
// Secret changes. An invalid configuration is a log line, a metric
// (navarch_notifications_config_valid 0) and a Warning Event on the ConfigMap, and the last
// valid configuration stays in use: it never fails a reconcile of anything else.
type notificationConfig struct {
	reader   client.Reader
	notifier *notify.Notifier
	events   events.EventRecorder
	key      types.NamespacedName
	// lastError is the last problem reported, so that it is reported once.
	lastError string
}

func (c *notificationConfig) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	cm := &corev1.ConfigMap{}
	if err := c.reader.Get(ctx, c.key, cm); apierrors.IsNotFound(err) {
		cm = nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	secret := &corev1.Secret{}
	if err := c.reader.Get(ctx, c.key, secret); apierrors.IsNotFound(err) {
		secret = nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	var data map[string]string
	var secretData map[string][]byte
	if cm != nil {
		data = cm.Data
	}
	if secret != nil {
		secretData = secret.Data
	}
	parsed, err := notify.Parse(data, secretData)
	if err != nil {
		notify.SetConfigValid(false)
		if msg := err.Error(); msg != c.lastError {
			c.lastError = msg
			log.Error(err, "The notification configuration is invalid; the last valid one stays in use", "configMap", klog.KRef(c.key.Namespace, c.key.Name))
			if cm != nil {
				c.events.Eventf(cm, nil, corev1.EventTypeWarning, ReasonInvalidNotificationConfig, "Load", "%s", truncate(msg, 1024))
			}
		}
		return reconcile.Result{}, nil
	}
	c.lastError = ""
	notify.SetConfigValid(true)
	c.notifier.SetConfig(parsed)
	log.Info("Notification configuration loaded", "configMap", klog.KRef(c.key.Namespace, c.key.Name),
		"destinations", len(parsed.Destinations), "subscriptions", len(parsed.Subscriptions))
	return reconcile.Result{}, nil
}

// notificationFeed hands every state of every Application and ApplicationSet the manager's
// informers see to the Notifier: each watch event, not each reconcile, so that a state that
// lasts between two reconciles is seen too, and a reconcile that changes nothing sends
// nothing. It runs on the leader only (it does not opt out of leader election), so that one
// replica notifies. The informers' Applications are the cache's, with their status lists
// encoded: the Notifier decodes those that fire a trigger (notify.Options.Whole).
type notificationFeed struct {
	cache    cache.Cache
	notifier *notify.Notifier
}

func (f *notificationFeed) Start(ctx context.Context) error {
	observe := func(obj any) {
		switch o := obj.(type) {
		case *navarchv1.Application:
			f.notifier.Application(o)
		case *navarchv1.ApplicationSet:
			f.notifier.ApplicationSet(o)
		}
	}
	handlers := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if o, ok := obj.(client.Object); ok {
				f.notifier.Forget(o.GetUID())
			}
		},
	}
	for _, obj := range []client.Object{&navarchv1.Application{}, &navarchv1.ApplicationSet{}} {
		informer, err := f.cache.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("watch %T for notifications: %w", obj, err)
		}
		reg, err := informer.AddEventHandler(handlers)
		if err != nil {
			return err
		}
		defer func() { _ = informer.RemoveEventHandler(reg) }()
	}
	<-ctx.Done()
	return nil
}
