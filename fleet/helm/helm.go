package helm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync/atomic"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/lru"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/render"
)

// DefaultCachedRenders is the number of renders a Renderer keeps when Options.CachedRenders is 0.
const DefaultCachedRenders = 1024

// ChartFetcher fetches packaged charts from Helm repositories and OCI registries. Package
// fleet/helm/repo implements it.
type ChartFetcher interface {
	// FetchChart returns the chart archive (.tgz) of chart name at version (an exact version
	// or a semver constraint; empty means the latest stable version) of the repository
	// repoURL (http(s)://… or oci://host/path), and a digest that changes whenever the
	// archive does. passCredentials sends the repository's credentials also to downloads on
	// other hosts.
	FetchChart(ctx context.Context, repoURL, name, version string, passCredentials bool) (archive []byte, digest string, err error)
}

// Options configure a Renderer.
type Options struct {
	// Charts fetches charts, and missing dependencies of charts, from repositories. nil
	// refuses them.
	Charts ChartFetcher
	// CachedRenders is how many renders are kept for reuse; 0 means DefaultCachedRenders
	// and a negative number none.
	CachedRenders int
}

// Renderer renders Helm charts like `helm template`. It implements render.HelmRenderer and may
// be used concurrently.
type Renderer struct {
	charts ChartFetcher
	cache  *lru.Cache // render key → []*unstructured.Unstructured; nil when caching is off

	rendered, cached, failed atomic.Uint64
}

var _ render.HelmRenderer = (*Renderer)(nil)

// DiscardLibraryLogs routes log/slog's default logger, and with it the standard log package,
// nowhere, for the whole process. The Helm library logs through them, and some of its messages
// hold values, which may be secrets. A process that renders charts and logs through logr (the
// controller) calls it once at start; it must then set ErrorLog on its http.Servers.
func DiscardLibraryLogs() { slog.SetDefault(slog.New(slog.DiscardHandler)) }

// New returns a Renderer.
func New(opts Options) *Renderer {
	r := &Renderer{charts: opts.Charts}
	size := cmp.Or(opts.CachedRenders, DefaultCachedRenders)
	if size > 0 {
		r.cache = lru.New(size)
	}
	return r
}

// Stats count the renders of a Renderer by outcome.
type Stats struct {
	// Rendered counts the charts rendered, Cached the renders served from the cache, and
	// Failed those that returned an error.
	Rendered, Cached, Failed uint64
}

// Stats returns how many renders the Renderer has done, by outcome.
func (r *Renderer) Stats() Stats {
	return Stats{Rendered: r.rendered.Load(), Cached: r.cached.Load(), Failed: r.failed.Load()}
}

// RenderChart renders the chart of req as `helm template` would, with the options of
// req.Options, and returns its objects: the CRDs of crds/ directories first (when
// req.IncludeCRDs and not skipCrds), then the templates' objects in Helm's install order,
// then the hooks, with their annotations. NOTES.txt and partials are not rendered. A chart that
// fails returns no objects.
//
// The objects may be shared with the render cache and with other callers: callers must not
// change them, but deep-copy those they change. The slice itself is the caller's.
func (r *Renderer) RenderChart(ctx context.Context, req render.HelmRequest) ([]*unstructured.Unstructured, error) {
	objs, hit, err := r.render(ctx, req)
	switch {
	case err != nil:
		r.failed.Add(1)
		rendersTotal.WithLabelValues(resultFailed).Inc()
		return nil, fmt.Errorf("chart %s: %w", chartSource(req.Chart), err)
	case hit:
		r.cached.Add(1)
		rendersTotal.WithLabelValues(resultCached).Inc()
	default:
		r.rendered.Add(1)
		rendersTotal.WithLabelValues(resultRendered).Inc()
	}
	return slices.Clone(objs), nil
}

// chartSource names a chart in errors.
func chartSource(c render.HelmChart) string {
	if c.Source != "" {
		return c.Source
	}
	if c.RepoURL != "" {
		return strings.TrimSpace(strings.Join([]string{c.RepoURL, c.Name, c.Version}, " "))
	}
	return cmp.Or(c.Dir, ".")
}

// render returns the objects of req, and whether they came from the cache.
func (r *Renderer) render(ctx context.Context, req render.HelmRequest) ([]*unstructured.Unstructured, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	opts := req.Options
	if opts == nil {
		opts = &navarchv1.ApplicationSourceHelm{}
	}
	if err := chartutil.ValidateReleaseName(req.ReleaseName); err != nil {
		return nil, false, fmt.Errorf("release name %q: %w", req.ReleaseName, err)
	}
	caps, err := capabilities(req, opts)
	if err != nil {
		return nil, false, err
	}

	l := newLoader(r.charts, opts.PassCredentials)
	var (
		ch    *chartv2.Chart
		files valueFiles
	)
	if req.Chart.RepoURL != "" {
		if ch, err = l.loadRepository(ctx, req.Chart.RepoURL, req.Chart.Name, req.Chart.Version); err != nil {
			return nil, false, err
		}
		files = valueFiles{chart: newArchiveRoot(ch), dir: ".", refs: req.Refs}
	} else {
		dir, err := cleanDir(req.Chart.Dir)
		if err != nil {
			return nil, false, err
		}
		if ch, err = l.loadDirectory(ctx, req.Chart.FS, dir); err != nil {
			return nil, false, err
		}
		files = valueFiles{chart: snapshotRoot{req.Chart.FS}, dir: dir, refs: req.Refs}
	}

	vals, err := userValues(opts, files)
	if err != nil {
		return nil, false, err
	}
	flags := renderFlags{
		includeCRDs:          req.IncludeCRDs && !opts.SkipCrds,
		skipTests:            opts.SkipTests,
		skipSchemaValidation: opts.SkipSchemaValidation,
	}
	key, err := renderKey(l.identity(), vals, req.ReleaseName, req.Namespace, caps, flags)
	if err != nil {
		return nil, false, err
	}
	if r.cache != nil {
		if objs, ok := r.cache.Get(key); ok {
			return objs.([]*unstructured.Unstructured), true, nil
		}
	}

	objs, err := renderChart(ctx, ch, vals, common.ReleaseOptions{
		Name:      req.ReleaseName,
		Namespace: req.Namespace,
		Revision:  1,
		IsInstall: true,
	}, caps, flags)
	if err != nil {
		return nil, false, err
	}
	if r.cache != nil {
		r.cache.Add(key, objs)
	}
	return objs, false, nil
}

// renderFlags are the options that change what a render returns beyond values.
type renderFlags struct {
	includeCRDs, skipTests, skipSchemaValidation bool
}

// renderChart renders a loaded chart with the user's values. It processes the chart's
// dependencies, which changes the chart: a chart is rendered once.
func renderChart(ctx context.Context, ch *chartv2.Chart, vals map[string]any, release common.ReleaseOptions, caps *common.Capabilities, flags renderFlags) ([]*unstructured.Unstructured, error) {
	if t := ch.Metadata.Type; t != "" && t != "application" {
		return nil, fmt.Errorf("%s charts are not installable", t)
	}
	if kv := ch.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion %s, which is incompatible with Kubernetes %s", kv, caps.KubeVersion.Version)
	}
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return nil, fmt.Errorf("dependencies: %w", err)
	}
	top, err := commonutil.ToRenderValuesWithSchemaValidation(ch, vals, release, caps, true)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	if !flags.skipSchemaValidation {
		values, _ := top["Values"].(common.Values)
		if err := validateValues(ch, values); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// No client: lookup returns nothing, and DNS lookups are off, as in `helm template`.
	rendered, err := engine.Engine{}.RenderWithContext(ctx, ch, top)
	if err != nil {
		return nil, newTemplateError(ch.Name(), err)
	}
	return chartObjects(ch, rendered, flags)
}

// capabilities are .Capabilities: Helm's defaults, with the Kubernetes version and API
// versions of spec.source.helm, else of the destination cluster.
func capabilities(req render.HelmRequest, opts *navarchv1.ApplicationSourceHelm) (*common.Capabilities, error) {
	caps := common.DefaultCapabilities.Copy()
	if v := cmp.Or(opts.KubeVersion, req.Capabilities.KubeVersion); v != "" {
		kv, err := common.ParseKubeVersion(v)
		if err != nil {
			return nil, fmt.Errorf("kubeVersion %q: %w", v, err)
		}
		caps.KubeVersion = *kv
	}
	extra := opts.APIVersions
	if len(extra) == 0 {
		extra = req.Capabilities.APIVersions
	}
	// A new slice: the default set is shared by the whole process.
	caps.APIVersions = slices.Concat(common.DefaultVersionSet, extra)
	return caps, nil
}

// cleanDir turns the chart directory into an fs.FS path.
func cleanDir(dir string) (string, error) {
	clean := path.Clean(cmp.Or(dir, "."))
	if !fs.ValidPath(clean) {
		return "", fmt.Errorf("chart directory %q: %w", dir, errOutsideRoot)
	}
	return clean, nil
}

// errOutsideRoot is returned, wrapped, for a path that leads outside its repository or chart.
var errOutsideRoot = errors.New("must stay inside the repository")
