package render

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// openAPILock guards kyaml's OpenAPI schema, which is global to the process. Ordinary
// kustomize runs only read it and share the lock. A kustomization that sets openapi replaces
// the schema for the whole process, so its run holds the lock alone and resets the schema
// before letting others in.
var openAPILock sync.RWMutex

// maxRemoteDepth is how deep remote bases may nest: a remote base of a remote base of the
// repository is 2 deep.
const maxRemoteDepth = 10

// errTooDeep refuses a remote base nested deeper than maxRemoteDepth.
var errTooDeep = fmt.Errorf("remote bases nest deeper than %d", maxRemoteDepth)

// kustomizeBuild is the rendering of one kustomization. It may take several runs of
// kustomize: a run stops at the first kustomization that sets openapi, to run again alone
// (see openAPILock), and at the first kustomization whose remote bases or Helm charts are not
// fetched yet. Those are fetched between runs, without holding openAPILock, and kept for the
// next runs, so each is fetched once per Render.
type kustomizeBuild struct {
	repo    fs.FS
	dir     string
	overlay []byte // the kustomization of spec.source.kustomize, or nil
	opts    Options

	remotes map[gitKey]*remoteRepo
	byID    map[string]*remoteRepo
	charts  map[string]*renderedChart // by request key
}

// gitKey is a repository at a ref.
type gitKey struct{ repoURL, ref string }

// remoteRepo is the snapshot of a remote base's repository, seen by kustomize at
// remoteRoot/<id>.
type remoteRepo struct {
	gitKey
	id    string
	depth int // 1 for a remote base of the repository
	done  bool
	fsys  fs.FS
	err   error
}

// renderedChart is a chart of helmCharts, rendered; kustomize sees it as a file of
// resources.
type renderedChart struct {
	req       HelmRequest
	skipHooks bool
	file      string // absolute path under helmRoot
	// configuredIn is the file name of the first kustomization that used the chart.
	configuredIn string
	done         bool
	data         []byte // the objects as a YAML stream; nil for none
	err          error
}

// needFetch stops a run for remote bases and charts to fetch.
type needFetch struct {
	remotes []*remoteRepo
	charts  []*renderedChart
}

func (*needFetch) Error() string { return "remote bases or Helm charts to fetch" }

// renderKustomization builds the kustomization in dir, with the options of src on top.
func renderKustomization(ctx context.Context, repo fs.FS, dir string, src *navarchv1.ApplicationSourceKustomize, opts Options) ([]*unstructured.Unstructured, error) {
	b := &kustomizeBuild{
		repo:    repo,
		dir:     dir,
		opts:    opts,
		remotes: map[gitKey]*remoteRepo{},
		byID:    map[string]*remoteRepo{},
		charts:  map[string]*renderedChart{},
	}
	if !isZeroKustomize(src) {
		var err error
		if b.overlay, err = overlayKustomization(dir, src); err != nil {
			return nil, err
		}
	}
	// Most kustomizations leave the schema alone and run side by side.
	exclusive := false
	for {
		objs, err := b.run(exclusive)
		var fetch *needFetch
		switch {
		case errors.Is(err, errNeedsExclusive):
			exclusive = true
		case errors.As(err, &fetch):
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			b.fetch(ctx, fetch)
		default:
			return objs, err
		}
	}
}

// fetch fetches the remote bases and renders the charts of f. Their errors are kept for the
// kustomizations that use them to report.
func (b *kustomizeBuild) fetch(ctx context.Context, f *needFetch) {
	for _, r := range f.remotes {
		r.fsys, r.err = b.opts.Remote(ctx, r.repoURL, r.ref)
		if r.err == nil && r.fsys == nil {
			r.err = errors.New("no snapshot")
		}
		r.done = true
	}
	for _, c := range f.charts {
		objs, err := b.opts.Helm.RenderChart(ctx, c.req)
		if err == nil {
			c.data, err = chartStream(objs, c.skipHooks)
		}
		c.err, c.done = err, true
	}
}

// remote returns the repository of g, seen first at depth.
func (b *kustomizeBuild) remote(g gitRef, depth int) *remoteRepo {
	key := gitKey{g.RepoURL, g.Ref}
	if r, ok := b.remotes[key]; ok {
		return r
	}
	sum := sha256.Sum256([]byte(g.RepoURL + "\n" + g.Ref))
	r := &remoteRepo{gitKey: key, id: hex.EncodeToString(sum[:8]), depth: depth}
	b.remotes[key] = r
	b.byID[r.id] = r
	return r
}

// displayName names abs, a path as kustomize sees it, for the user: relative to the
// repository root in the repository, as a Git URL in a remote base's repository.
func (b *kustomizeBuild) displayName(abs string) string {
	switch {
	case abs == repoRoot:
		return "."
	case strings.HasPrefix(abs, repoRoot+"/"):
		return abs[len(repoRoot)+1:]
	case strings.HasPrefix(abs, remoteRoot+"/"):
		id, rest, _ := strings.Cut(abs[len(remoteRoot)+1:], "/")
		if r, ok := b.byID[id]; ok {
			return gitRef{RepoURL: r.repoURL, Ref: r.ref, Dir: cmp.Or(rest, ".")}.String()
		}
	}
	return abs
}

// run runs kustomize once. exclusive says whether the run holds openAPILock alone.
func (b *kustomizeBuild) run(exclusive bool) ([]*unstructured.Unstructured, error) {
	if exclusive {
		openAPILock.Lock()
		defer func() {
			openapi.ResetOpenAPI()
			openAPILock.Unlock()
		}()
	} else {
		openAPILock.RLock()
		defer openAPILock.RUnlock()
	}

	fsys := newSnapshotFS(b.repo)
	for _, r := range b.remotes {
		if r.fsys != nil {
			fsys.mount(r.id, r.fsys)
		}
	}
	for _, c := range b.charts {
		if c.data != nil {
			fsys.helm[c.file] = c.data
		}
	}
	r := &kustomizeRun{build: b, fsys: fsys, exclusive: exclusive}
	// refused is the first file that the checks refused. kustomize gets an error for it, but
	// may swallow it (it tries each kustomization file name in turn), so the check's own error
	// is what Render returns.
	var refused error
	fsys.inspect = func(name string, data []byte) ([]byte, error) {
		out, err := r.inspect(name, data)
		if err != nil && refused == nil {
			refused = err
		}
		return out, err
	}

	target := repoRoot
	if b.dir != "." {
		target += "/" + b.dir
	}
	if b.overlay != nil {
		fsys.files[overlayRoot+"/kustomization.yaml"] = b.overlay
		target = overlayRoot
	}
	m, err := runKrusty(fsys, target)
	if refused != nil {
		return nil, refused
	}
	if err != nil {
		return nil, &Error{File: b.dir, Err: b.kustomizeError(err)}
	}

	resources := m.Resources()
	objs := make([]*unstructured.Unstructured, 0, len(resources))
	for _, r := range resources {
		j, err := r.MarshalJSON()
		if err != nil {
			return nil, &Error{File: b.dir, Err: b.kustomizeError(err)}
		}
		v, err := decodeJSON(j)
		if err != nil {
			return nil, &Error{File: b.dir, Err: b.kustomizeError(err)}
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, &Error{File: b.dir, Err: fmt.Errorf("kustomize: output is %s, not an object", jsonKind(v))}
		}
		if err := checkObject(obj); err != nil {
			return nil, &Error{File: b.dir, Err: fmt.Errorf("kustomize: %s %q: %w", r.GetKind(), r.GetName(), err)}
		}
		u := &unstructured.Unstructured{Object: obj}
		if len(b.remotes) > 0 || len(b.charts) > 0 {
			b.fixOrigins(u)
		}
		objs = append(objs, u)
	}
	return objs, nil
}

// kustomizeRun is one run of kustomize: it checks and rewrites the files kustomize reads.
type kustomizeRun struct {
	build     *kustomizeBuild
	fsys      *snapshotFS
	exclusive bool
	// visits are the kustomizations read so far, in order; see parent.
	visits []*visit
}

// visit is a kustomization that kustomize read.
type visit struct {
	// bases counts the directories that the kustomization names as resources, bases,
	// components, generators, transformers or validators, less those read since.
	bases map[baseDir]int
	// namespace is the namespace that Helm charts of its bases default to: its own, else the
	// one it got from its parent.
	namespace string
	// plugins says whether kustomize reads the kustomization for plugin configurations: it,
	// or a kustomization that uses it, is named by generators, transformers or validators.
	plugins bool
}

// baseDir is a directory that a kustomization names: its absolute path, and whether it is
// named by generators, transformers or validators.
type baseDir struct {
	dir     string
	plugins bool
}

// inspect checks a file that kustomize reads, at abs, and returns what kustomize sees of it:
// kustomizations that use remote bases or Helm charts are rewritten.
func (r *kustomizeRun) inspect(abs string, data []byte) ([]byte, error) {
	b := r.build
	p := policy{remote: b.opts.Remote != nil, helm: b.opts.Helm != nil, exclusive: r.exclusive}
	depth := 0
	if l := r.fsys.locate(abs); l.area == areaMount && l.root != repoRoot {
		p.within = l.root
		depth = b.byID[path.Base(l.root)].depth
	}
	name := b.displayName(abs)
	if !isKustomizationName(path.Base(abs)) {
		doc, err := checkPluginConfigsInFile(data, p)
		if err != nil {
			return nil, &Error{File: name, Document: doc, Err: err}
		}
		return data, nil
	}

	k, ok := decodeKustomization(data)
	if !ok {
		return data, nil // kustomize reports it, with its own message
	}
	if p.within != "" {
		p.dir = path.Dir(abs)
	}
	if err := checkKustomization(k, p); err != nil {
		if errors.Is(err, errNeedsExclusive) {
			return nil, err
		}
		return nil, &Error{File: name, Err: err}
	}
	out, err := r.rewrite(abs, data, k, depth)
	var fetch *needFetch
	if err != nil && !errors.As(err, &fetch) {
		err = &Error{File: name, Err: err}
	}
	return out, err
}

// parent returns what the kustomization in dir gets from the kustomization that names it: the
// namespace for its Helm charts, as kustomize passes it down, and whether it is read for
// plugin configurations.
//
// kustomize reads kustomizations depth first, and reads a base once for each time a
// kustomization names it, but does not say which kustomization it reads a base for. The
// parent is therefore the last kustomization read that names dir and has not had it read yet.
func (r *kustomizeRun) parent(dir string) (namespace string, plugins bool) {
	for i := len(r.visits) - 1; i >= 0; i-- {
		v := r.visits[i]
		for _, p := range []bool{true, false} {
			if key := (baseDir{dir, p}); v.bases[key] > 0 {
				v.bases[key]--
				return v.namespace, v.plugins || p
			}
		}
	}
	return "", false
}

// rewrite returns the kustomization k, read from abs, as kustomize is to see it: remote bases
// become paths to their snapshots under remoteRoot, and helmCharts become files of rendered
// resources. depth is how deep the kustomization's repository is in remote bases. It returns
// a *needFetch for the remote bases and charts that are not fetched yet.
func (r *kustomizeRun) rewrite(abs string, data []byte, k *types.Kustomization, depth int) ([]byte, error) {
	dir := path.Dir(abs)
	inherited, plugins := r.parent(dir)
	if plugins && depth > 0 {
		// kustomize transforms the plugin configurations of a kustomization before loading the
		// files they name, so those of a remote base could name any file.
		return nil, fmt.Errorf("read for generators, transformers or validators: %w", refusedRemote(errRemotePlugins))
	}
	v := &visit{bases: map[baseDir]int{}, namespace: cmp.Or(k.Namespace, inherited), plugins: plugins}
	var (
		fetch   needFetch
		changed bool
	)

	for _, f := range baseFields(k) {
		for i, ref := range f.refs {
			switch {
			case f.pluginConfigs && isInlineConfig(ref):
			case isRemote(ref):
				target, err := r.remoteBase(ref, depth, &fetch)
				if err != nil {
					return nil, fmt.Errorf("%s[%d] %q: %w", f.name, i, ref, err)
				}
				if target == "" {
					continue // not fetched yet
				}
				f.refs[i] = relativePath(dir, target)
				v.bases[baseDir{target, f.pluginConfigs}]++
				changed = true
			case path.IsAbs(ref):
			case f.pluginConfigs && depth > 0 && r.fsys.IsDir(path.Join(dir, ref)):
				return nil, fmt.Errorf("%s[%d] %q: %w", f.name, i, ref, refusedRemote(errPluginDir))
			default:
				v.bases[baseDir{path.Join(dir, ref), f.pluginConfigs}]++
			}
		}
	}

	charts, globals := k.HelmCharts, k.HelmGlobals
	if len(k.HelmChartInflationGenerator) > 0 {
		// What kustomize does with the deprecated field.
		more, g := types.SplitHelmParameters(k.HelmChartInflationGenerator)
		charts = append(slices.Clip(charts), more...)
		if globals == nil && (g.ChartHome != "" || g.ConfigHome != "") {
			globals = &g
		}
	}
	var rendered []string
	for i, c := range charts {
		field := fmt.Sprintf("helmCharts[%d]", i)
		if i >= len(k.HelmCharts) {
			field = fmt.Sprintf("helmChartInflationGenerator[%d]", i-len(k.HelmCharts))
		}
		c.Namespace = cmp.Or(c.Namespace, v.namespace, r.build.opts.Namespace)
		chart, err := r.chart(dir, c, globals)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", field, c.Name, err)
		}
		switch {
		case !chart.done:
			if !slices.Contains(fetch.charts, chart) {
				fetch.charts = append(fetch.charts, chart)
			}
		case chart.err != nil:
			return nil, fmt.Errorf("%s %q: %w", field, c.Name, chart.err)
		case chart.data != nil:
			rendered = append(rendered, chart.file)
			chart.configuredIn = cmp.Or(chart.configuredIn, path.Base(abs))
		}
	}

	if len(fetch.remotes) > 0 || len(fetch.charts) > 0 {
		return nil, &fetch
	}
	r.visits = append(r.visits, v)
	if len(charts) > 0 {
		// The rendered charts come after the resources, as generated resources do.
		k.Resources = append(k.Resources, k.Bases...) //nolint:staticcheck // deprecated, but kustomize still reads it
		k.Resources = append(k.Resources, rendered...)
		k.Bases, k.HelmCharts, k.HelmGlobals, k.HelmChartInflationGenerator = nil, nil, nil, nil //nolint:staticcheck // as above
		changed = true
	}
	if !changed {
		return data, nil
	}
	// kustomize decodes the kustomization with encoding/json, as decodeKustomization did, so
	// it reads exactly k.
	return json.Marshal(k)
}

// remoteBase returns the directory, as kustomize sees it, of ref, a remote base named by a
// kustomization depth deep in remote bases; or "" with the repository added to fetch when it
// is not fetched yet.
func (r *kustomizeRun) remoteBase(ref string, depth int, fetch *needFetch) (string, error) {
	g, err := parseGitRef(ref)
	if err != nil {
		return "", refusedRemote(err) // checkKustomization has refused it already
	}
	if depth+1 > maxRemoteDepth {
		return "", errTooDeep
	}
	repo := r.build.remote(g, depth+1)
	switch {
	case !repo.done:
		if !slices.Contains(fetch.remotes, repo) {
			fetch.remotes = append(fetch.remotes, repo)
		}
		return "", nil
	case repo.err != nil:
		return "", repo.err
	}
	if fi, err := fs.Stat(repo.fsys, g.Dir); err != nil || !fi.IsDir() {
		at := repo.repoURL
		if repo.ref != "" {
			at += " at " + repo.ref
		}
		return "", fmt.Errorf("%q in %s: %w", g.Dir, at, ErrPathNotFound)
	}
	return path.Join(remoteRoot, repo.id, g.Dir), nil
}

// relativePath returns the path of target relative to dir, both absolute, through "/":
// kustomize takes only relative paths for bases.
func relativePath(dir, target string) string {
	return strings.Repeat("../", strings.Count(dir, "/")) + strings.TrimPrefix(target, "/")
}

// runKrusty runs kustomize in process, with plugins (exec, Go, KRM functions and Helm) off
// and no load restrictions: fsys already confines it to the snapshot. A panic in kustomize
// becomes an error.
func runKrusty(fsys *snapshotFS, target string) (m resmap.ResMap, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("kustomize panicked: %v", r)
		}
	}()
	k := krusty.MakeKustomizer(&krusty.Options{
		// As `kustomize build` without --reorder: the legacy order (namespaces and CRDs
		// first) unless the kustomization sets sortOptions.
		Reorder:          krusty.ReorderOptionUnspecified,
		LoadRestrictions: types.LoadRestrictionsNone,
		PluginConfig:     types.DisabledPluginConfig(),
	})
	return k.Run(fsys, target)
}

// kustomizeError is an error of kustomize, with the paths kustomize sees turned back into
// those the user knows: relative to the repository root in the repository, Git URLs in
// remote bases.
type kustomizeError struct {
	err error
	msg string
}

// remotePath matches a path under remoteRoot in kustomize's messages, also as a relative
// path (a remote base as rewritten).
var remotePath = regexp.MustCompile(`(?:\.\./)*/?` + remoteRoot[1:] + `/([0-9a-f]{16})((?:/[^\s'"(),:]*)?)`)

func (b *kustomizeBuild) kustomizeError(err error) *kustomizeError {
	msg := err.Error()
	for _, quote := range []string{"'", `"`, " ", "(", "="} {
		msg = strings.ReplaceAll(msg, quote+repoRoot+"/", quote)
		msg = strings.ReplaceAll(msg, quote+repoRoot+quote, quote+"."+quote)
	}
	msg = remotePath.ReplaceAllStringFunc(msg, func(s string) string {
		m := remotePath.FindStringSubmatch(s)
		return b.displayName(remoteRoot + "/" + m[1] + m[2])
	})
	return &kustomizeError{err: err, msg: msg}
}

func (e *kustomizeError) Error() string { return "kustomize: " + e.msg }

func (e *kustomizeError) Unwrap() error { return e.err }

// overlayKustomization returns a kustomization that applies opts on top of the kustomization
// in dir. It lives in the in-memory overlay, so the repository is never modified.
func overlayKustomization(dir string, opts *navarchv1.ApplicationSourceKustomize) ([]byte, error) {
	base := "../" + path.Base(repoRoot)
	if dir != "." {
		base += "/" + dir
	}
	k := types.Kustomization{
		TypeMeta:          types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources:         []string{base},
		NamePrefix:        opts.NamePrefix,
		NameSuffix:        opts.NameSuffix,
		Namespace:         opts.Namespace,
		CommonAnnotations: opts.CommonAnnotations,
	}
	if len(opts.CommonLabels) > 0 {
		// What commonLabels does, without kustomize's deprecation warning.
		k.Labels = []types.Label{{Pairs: opts.CommonLabels, IncludeSelectors: true}}
	}
	for i, s := range opts.Images {
		img, err := parseImage(s)
		if err != nil {
			return nil, fmt.Errorf("spec.source.kustomize.images[%d]: %w", i, err)
		}
		k.Images = append(k.Images, img)
	}
	for i, r := range opts.Replicas {
		switch {
		case r.Name == "":
			return nil, fmt.Errorf("spec.source.kustomize.replicas[%d].name: must not be empty", i)
		case r.Count < 0:
			return nil, fmt.Errorf("spec.source.kustomize.replicas[%d].count: must not be negative", i)
		}
		k.Replicas = append(k.Replicas, types.Replica{Name: r.Name, Count: int64(r.Count)})
	}
	return yaml.Marshal(k)
}

// parseImage parses an image override in the forms `kustomize edit set image` takes:
// "name=newName", "name=newName:tag", "name=newName@digest", "name:tag" and "name@digest".
func parseImage(s string) (types.Image, error) {
	var img types.Image
	name, ref, renamed := strings.Cut(s, "=")
	if !renamed {
		ref = s
	}
	ref, digest, hasDigest := strings.Cut(ref, "@")
	if hasDigest {
		if digest == "" {
			return img, fmt.Errorf("image %q: empty digest", s)
		}
		img.Digest = digest
	}
	ref, img.NewTag = splitTag(ref)
	if renamed {
		img.Name, img.NewName = name, ref
	} else {
		img.Name = ref
	}
	switch {
	case img.Name == "":
		return img, fmt.Errorf("image %q: missing image name", s)
	case img.NewName == "" && img.NewTag == "" && img.Digest == "":
		return img, fmt.Errorf("image %q: sets no new name, tag or digest", s)
	}
	return img, nil
}

// splitTag splits "registry:5000/app:1.2" into "registry:5000/app" and "1.2". The tag is after
// the last colon that follows the last slash.
func splitTag(ref string) (name, tag string) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i+1:], "/") {
		return ref, ""
	}
	return ref[:i], ref[i+1:]
}
