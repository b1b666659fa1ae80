package controller

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/source"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/scm"
	"github.com/navarch-io/navarch/internal/webhook"
)

// The Secret that holds the webhook secret, in the system namespace (docs/webhooks.md).
const (
	WebhookSecretName = "navarch-webhook"
	WebhookSecretKey  = "github.secret"
)

// indexWebhookRepositories indexes ApplicationSets by what their generators read, at any
// depth: "git:<RepoKey>", "pulls:<owner/repo>" and "org:<organization>", lower-cased, so that
// an event lists only the ApplicationSets it concerns. Applications have no index: a push scans
// the cache's Applications instead (followers).
const indexWebhookRepositories = "navarch.io/webhook-repositories"

var webhookDeliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "navarch_webhook_deliveries_total",
	Help: "GitHub webhook deliveries, by event (push, pull_request, ping, other) and result " +
		"(queued, ping, ignored, bad_payload, unauthorized, method_not_allowed, too_large, queue_full, no_secret).",
}, []string{"event", "result"})

func init() { metrics.Registry.MustRegister(webhookDeliveries) }

// forgetter drops a remembered branch resolution: the Application controller's source
// Fetcher.
type forgetter interface {
	Forget(repoURL, revision string)
}

// webhookReceiver wires the webhook endpoint to the controllers. It indexes what events are
// matched against and turns each event into requests on the controllers' own queues, through
// channel sources: an event writes nothing to the API.
type webhookReceiver struct {
	opts Options
	// applications and applicationSets feed the controllers; nil when a controller does not
	// run in this process.
	applications, applicationSets chan event.GenericEvent

	reader  client.Reader
	fetcher forgetter
	github  *scm.GitHub
	log     logr.Logger
	// relay, when replicas share the fleet, hands a push on to the replica that syncs app
	// and says whether it did; the elected replica, which receives the deliveries, syncs
	// only its own share.
	relay func(ctx context.Context, app *navarchv1.Application) bool
}

// newWebhookReceiver returns the receiver of opts.WebhookAddr, or nil when the endpoint is off.
func newWebhookReceiver(opts Options, applications, applicationSets bool) *webhookReceiver {
	if opts.WebhookAddr == "" {
		return nil
	}
	w := &webhookReceiver{opts: opts, log: opts.Logger.WithName("webhook")}
	if applications {
		w.applications = make(chan event.GenericEvent, 1024)
	}
	if applicationSets {
		w.applicationSets = make(chan event.GenericEvent, 1024)
	}
	return w
}

// applicationSources are the Application controller's sources of webhook events.
func (w *webhookReceiver) applicationSources() []source.Source {
	if w == nil || w.applications == nil {
		return nil
	}
	return []source.Source{source.Channel(w.applications, &handler.EnqueueRequestForObject{})}
}

// applicationSetSources are the ApplicationSet controller's sources of webhook events.
func (w *webhookReceiver) applicationSetSources() []source.Source {
	if w == nil || w.applicationSets == nil {
		return nil
	}
	return []source.Source{source.Channel(w.applicationSets, &handler.EnqueueRequestForObject{})}
}

// setup registers the indexes, the endpoint and the worker with mgr. fetcher is the
// Application controller's, github the ApplicationSet controller's shared GitHub client.
func (w *webhookReceiver) setup(mgr ctrl.Manager, cfg *rest.Config, fetcher forgetter, github *scm.GitHub) error {
	if w == nil {
		return nil
	}
	w.reader, w.fetcher, w.github = mgr.GetClient(), fetcher, github
	ctx := context.Background()
	if w.applicationSets != nil {
		if err := mgr.GetFieldIndexer().IndexField(ctx, &navarchv1.ApplicationSet{}, indexWebhookRepositories, webhookRepositoryKeys); err != nil {
			return err
		}
	}
	secret, err := webhookSecret(cfg, mgr, w.opts.SystemNamespace)
	if err != nil {
		return err
	}
	receiver := webhook.New(webhook.Options{
		Secret:     secret,
		QueueSize:  w.opts.WebhookQueueSize,
		MaxPayload: w.opts.WebhookMaxPayload,
		Logger:     w.log,
		Observe: func(event string, result webhook.Result) {
			webhookDeliveries.WithLabelValues(event, string(result)).Inc()
		},
	})
	mux := http.NewServeMux()
	mux.Handle(webhook.Path, receiver)
	shutdown := 5 * time.Second
	// The endpoint runs on every replica, so a standby's queue holds what arrives during a
	// rollout until it leads; the worker runs on the leader only, whose caches and queues the
	// events feed.
	if err := mgr.Add(&manager.Server{
		Name: "webhook",
		Server: &http.Server{
			Addr: w.opts.WebhookAddr, Handler: mux,
			ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
			IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
			// The standard logger is silenced (helm.DiscardLibraryLogs): connection errors go
			// to the controller's log.
			ErrorLog: slog.NewLogLogger(logr.ToSlogHandler(w.opts.Logger.WithName("webhook-server")), slog.LevelError),
		},
		ShutdownTimeout: &shutdown,
	}); err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { return receiver.Run(ctx, w.handle) }))
}

// webhookSecret returns a reader of the webhook secret, watched through a cache of that one
// Secret, so a changed secret applies to the next delivery. A missing Secret or key reads as
// no secret, which refuses every delivery. (The controller may already get, list and watch
// the Secrets of its namespace: see credentialStore.)
func webhookSecret(cfg *rest.Config, mgr ctrl.Manager, namespace string) (func(context.Context) ([]byte, error), error) {
	secrets, err := cache.New(cfg, cache.Options{
		Scheme:            mgr.GetScheme(),
		Mapper:            mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: {
			Field: fields.OneTermEqualSelector("metadata.name", WebhookSecretName),
		}},
	})
	if err != nil {
		return nil, err
	}
	// Ask for the informer now, so that it starts with the cache rather than at the first
	// delivery.
	if _, err := secrets.GetInformer(context.Background(), &corev1.Secret{}, cache.BlockUntilSynced(false)); err != nil {
		return nil, err
	}
	// Like the endpoint, the cache runs on standby replicas too.
	if err := mgr.Add(everyReplica{secrets}); err != nil {
		return nil, err
	}
	key := types.NamespacedName{Namespace: namespace, Name: WebhookSecretName}
	return func(ctx context.Context) ([]byte, error) {
		var s corev1.Secret
		if err := secrets.Get(ctx, key, &s); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		// A file read with --from-file may end in a newline that GitHub's secret lacks.
		return bytes.TrimRight(s.Data[WebhookSecretKey], "\r\n"), nil
	}, nil
}

// everyReplica runs a Runnable whether or not this replica leads.
type everyReplica struct{ manager.Runnable }

func (everyReplica) NeedLeaderElection() bool { return false }

// gitRef is a Git repository, as webhook.RepoKey names it, at a revision, as webhook.Revision
// names it: what a push moves, and what an Application's Git source follows.
type gitRef struct{ repo, revision string }

// gitRefs is the repositories and revisions Applications follow, matched against a push. It
// remembers the RepoKey of each repoURL it was asked about: the Applications of a fleet share a
// few repositories, whose URLs it then parses once per push rather than once per Application.
type gitRefs struct{ repoKeys map[string]string }

// of returns the ref a Git source follows; its repo is empty when its URL names no repository
// a push could come from.
func (g *gitRefs) of(src *navarchv1.ApplicationSource) gitRef {
	repo, ok := g.repoKeys[src.RepoURL]
	if !ok {
		if g.repoKeys == nil {
			g.repoKeys = map[string]string{}
		}
		repo = webhook.RepoKey(src.RepoURL)
		g.repoKeys[src.RepoURL] = repo
	}
	return gitRef{repo, webhook.Revision(src.TargetRevision)}
}

// moves reports whether src is a Git source that follows a ref in moved.
func (g *gitRefs) moves(src *navarchv1.ApplicationSource, moved map[gitRef]bool) bool {
	if src.Chart != "" {
		return false // a Helm repository, not a Git one
	}
	ref := g.of(src)
	return ref.repo != "" && moved[ref]
}

// follows reports whether one of app's sources follows a ref in moved.
func (g *gitRefs) follows(app *navarchv1.Application, moved map[gitRef]bool) bool {
	sources := app.Spec.GetSources()
	for i := range sources {
		if g.moves(&sources[i], moved) {
			return true
		}
	}
	return false
}

// webhookRepositoryKeys is the index function of indexWebhookRepositories.
func webhookRepositoryKeys(o client.Object) []string {
	var out []string
	add := func(k string) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	for _, g := range generatorsOf(&o.(*navarchv1.ApplicationSet).Spec) {
		if g.Git != nil {
			if k := webhook.RepoKey(g.Git.RepoURL); k != "" {
				add(gitKey(k))
			}
		}
		if g.PullRequest != nil && g.PullRequest.Github != nil {
			add(pullsKey(g.PullRequest.Github.Owner, g.PullRequest.Github.Repo))
		}
		if g.SCMProvider != nil && g.SCMProvider.Github != nil {
			add(organizationKey(g.SCMProvider.Github.Organization))
		}
	}
	return out
}

func gitKey(repoKey string) string       { return "git:" + repoKey }
func pullsKey(owner, repo string) string { return "pulls:" + strings.ToLower(owner+"/"+repo) }
func organizationKey(org string) string  { return "org:" + strings.ToLower(org) }

// reference is what a controller's queue needs of an object: its namespace and name.
func reference(o client.Object) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: o.GetName()}
}

// handle acts on one event: it drops what the controllers remember of the repository and
// queues the objects that read it.
func (w *webhookReceiver) handle(ctx context.Context, ev webhook.Event) {
	log := w.log.WithValues("event", ev.Name, "delivery", ev.Delivery)
	switch {
	case ev.Push != nil:
		p := ev.Push
		apps := w.refreshApplications(ctx, log, p)
		keys := []string{organizationKey(p.Repository.Owner)}
		for _, k := range p.Repository.Keys() {
			keys = append(keys, gitKey(k))
		}
		if w.github != nil {
			// An scmProvider generator lists the owner's repositories and branches: a new
			// branch may have appeared.
			w.github.Invalidate(p.Repository.Owner, p.Repository.Name)
		}
		sets := w.refreshApplicationSets(ctx, log, keys)
		log.Info("Webhook push handled", "repository", p.Repository.FullName(), "ref", p.Ref, "commit", p.After,
			"applications", apps, "applicationSets", sets)
	case ev.PullRequest != nil:
		pr := ev.PullRequest
		if w.github != nil {
			w.github.Invalidate(pr.Repository.Owner, pr.Repository.Name)
		}
		sets := w.refreshApplicationSets(ctx, log, []string{pullsKey(pr.Repository.Owner, pr.Repository.Name)})
		log.Info("Webhook pull request handled", "repository", pr.Repository.FullName(), "pullRequest", pr.Number,
			"action", pr.Action, "applicationSets", sets)
	}
}

// refreshApplications makes the Applications that follow the pushed ref resolve it again, and
// queues them. It returns how many it queued.
func (w *webhookReceiver) refreshApplications(ctx context.Context, log logr.Logger, p *webhook.Push) int {
	if w.applications == nil {
		return 0
	}
	moved := map[gitRef]bool{}
	for _, repo := range p.Repository.Keys() {
		for _, rev := range p.Revisions() {
			moved[gitRef{repo, rev}] = true
		}
	}
	var refs gitRefs
	apps, err := w.followers(ctx, &refs, moved)
	if err != nil {
		log.Error(err, "List the Applications of a push")
		return 0
	}
	// First forget, then queue: the passes must not find the old commit remembered.
	forgotten := map[[2]string]bool{} // repoURL and targetRevision
	for _, app := range apps {
		sources := app.Spec.GetSources()
		for i := range sources {
			src := [2]string{sources[i].RepoURL, sources[i].TargetRevision}
			if !forgotten[src] && refs.moves(&sources[i], moved) {
				forgotten[src] = true
				w.fetcher.Forget(src[0], src[1])
			}
		}
	}
	queued := 0
	for _, app := range apps {
		queued++
		if w.relay != nil && w.relay(ctx, app) {
			continue
		}
		if !send(ctx, w.applications, &navarchv1.Application{ObjectMeta: reference(app)}) {
			break
		}
	}
	return queued
}

// followers returns the cached Applications with a Git source on a ref in moved. They share
// the cache's maps, slices and strings, which neither it nor its caller may change. An index of
// the Applications by source, which this scan replaces, kept its own copy of each
// Application's key, replaced at each of its status writes, for a lookup needed at a push: at
// 10,000 Applications about 1.5 MB of the controller's heap at rest, for a lookup a scan does
// at each push.
func (w *webhookReceiver) followers(ctx context.Context, refs *gitRefs, moved map[gitRef]bool) ([]*navarchv1.Application, error) {
	var list navarchv1.ApplicationList
	if err := w.reader.List(ctx, &list, client.UnsafeDisableDeepCopy, withoutStatusLists{}); err != nil {
		return nil, err
	}
	var out []*navarchv1.Application
	for i := range list.Items {
		if app := &list.Items[i]; refs.follows(app, moved) {
			out = append(out, app)
		}
	}
	return out, nil
}

// refreshApplicationSets queues the ApplicationSets indexed under any of keys and returns how
// many it queued.
func (w *webhookReceiver) refreshApplicationSets(ctx context.Context, log logr.Logger, keys []string) int {
	if w.applicationSets == nil {
		return 0
	}
	queued := map[string]bool{}
	for _, k := range keys {
		var list navarchv1.ApplicationSetList
		if err := w.reader.List(ctx, &list, client.MatchingFields{indexWebhookRepositories: k}); err != nil {
			log.Error(err, "List the ApplicationSets of a webhook event")
			continue
		}
		for i := range list.Items {
			set := &list.Items[i]
			key := set.Namespace + "/" + set.Name
			if queued[key] {
				continue
			}
			queued[key] = true
			if !send(ctx, w.applicationSets, &navarchv1.ApplicationSet{ObjectMeta: reference(set)}) {
				return len(queued)
			}
		}
	}
	return len(queued)
}

// send hands o to a controller's source; it waits while the source is busy, which fills the
// webhook queue, whose deliveries are then refused.
func send(ctx context.Context, ch chan<- event.GenericEvent, o client.Object) bool {
	select {
	case ch <- event.GenericEvent{Object: o}:
		return true
	case <-ctx.Done():
		return false
	}
}
