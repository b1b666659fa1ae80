package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// remoteRepos serves snapshots of remote repositories by URL and ref, as Options.Remote does
// with the Git reader, and counts the fetches.
type remoteRepos struct {
	mu      sync.Mutex
	repos   map[gitKey]fs.FS
	fetches map[gitKey]int
}

func newRemoteRepos(repos map[gitKey]fs.FS) *remoteRepos {
	return &remoteRepos{repos: repos, fetches: map[gitKey]int{}}
}

func (r *remoteRepos) fetch(ctx context.Context, repoURL, ref string) (fs.FS, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := gitKey{repoURL, ref}
	r.fetches[key]++
	if repo, ok := r.repos[key]; ok {
		return repo, nil
	}
	return nil, fmt.Errorf("no ref %q in %s", ref, repoURL)
}

// webBase is a remote repository holding a base in web/, which uses a sibling directory.
func webBase() fstest.MapFS {
	return fstest.MapFS{
		"web/kustomization.yaml":    file("resources: [deploy.yaml, ../shared]\n"),
		"web/deploy.yaml":           file(deployment),
		"shared/kustomization.yaml": file("resources: [svc.yaml]\n"),
		"shared/svc.yaml":           file(service),
		"kustomization.yaml":        file("resources: [web]\n"),
	}
}

// overlayRepo is the Application's repository: envs/prod uses resources, in namespace prod.
func overlayRepo(resources ...string) fstest.MapFS {
	return fstest.MapFS{
		"envs/prod/kustomization.yaml": file("namespace: prod\nresources:\n- " + strings.Join(resources, "\n- ") + "\n"),
		"secrets/secret.yaml":          file(cm("secret")),
		"secrets/token":                file("s3cr3t\n"),
		"secrets/patch.yaml":           file(cm("secret")),
	}
}

func renderRemote(repo fs.FS, remotes *remoteRepos, src navarchv1.ApplicationSource) (objs []string, err error) {
	opts := Options{}
	if remotes != nil {
		opts.Remote = remotes.fetch
	}
	o, err := Render(context.Background(), repo, src, opts)
	return ids(o), err
}

func TestRenderRemoteBaseURLForms(t *testing.T) {
	tests := []struct {
		ref  string
		repo gitKey
	}{
		{"github.com/org/base//web?ref=v1", gitKey{"https://github.com/org/base.git", "v1"}},
		{"https://github.com/org/base//web?ref=v1", gitKey{"https://github.com/org/base.git", "v1"}},
		{"https://github.com/org/base/web?ref=v1", gitKey{"https://github.com/org/base.git", "v1"}},
		{"git@github.com:org/base.git/web?ref=v1", gitKey{"git@github.com:org/base.git", "v1"}},
		{"github.com/org/base?ref=v1", gitKey{"https://github.com/org/base.git", "v1"}},
		{"https://git.example.com/org/base.git//web?ref=v1", gitKey{"https://git.example.com/org/base.git", "v1"}},
		{"https://git.example.com/org/base.git/web", gitKey{"https://git.example.com/org/base.git", ""}},
		{"https://git.example.com/org/base//web?version=v1", gitKey{"https://git.example.com/org/base", "v1"}},
		{"git::https://git.example.com/org/base.git//web?ref=v1&timeout=90s&submodules=false", gitKey{"https://git.example.com/org/base.git", "v1"}},
		{"ssh://git@git.example.com/org/base.git//web?ref=v1", gitKey{"ssh://git@git.example.com/org/base.git", "v1"}},
		{"git@git.example.com:org/base.git//web?ref=3f2a9c1", gitKey{"git@git.example.com:org/base.git", "3f2a9c1"}},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			t.Setenv("PATH", "") // kustomize could not clone anything itself
			remotes := newRemoteRepos(map[gitKey]fs.FS{tt.repo: webBase()})
			repo := overlayRepo(tt.ref)
			before := maps.Clone(repo)
			got, err := renderRemote(repo, remotes, navarchv1.ApplicationSource{Path: "envs/prod"})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if want := []string{"Service/prod/web", "Deployment/prod/web"}; !slices.Equal(got, want) {
				t.Errorf("objects:\n got %q\nwant %q", got, want)
			}
			if !maps.Equal(repo, before) {
				t.Errorf("the repository changed")
			}
		})
	}
}

func TestRenderNestedRemoteBases(t *testing.T) {
	base := webBase()
	base["web/kustomization.yaml"] = file(`resources:
- deploy.yaml
- ../shared
- https://git.example.com/org/common.git//config?ref=v2
namePrefix: web-
`)
	base["extra/kustomization.yaml"] = file("resources: [cm.yaml]\n")
	base["extra/cm.yaml"] = file(cm("extra"))
	common := fstest.MapFS{
		"config/kustomization.yaml": file("configMapGenerator:\n- name: common\n  literals: [team=blue]\ngeneratorOptions: {disableNameSuffixHash: true}\n"),
	}
	remotes := newRemoteRepos(map[gitKey]fs.FS{
		{"https://github.com/org/base.git", "v1"}:        base,
		{"https://git.example.com/org/common.git", "v2"}: common,
	})
	// The same repository at the same ref twice, by two spellings: fetched once.
	repo := overlayRepo("github.com/org/base//web?ref=v1", "https://github.com/org/base.git//extra?ref=v1")

	got, err := renderRemote(repo, remotes, navarchv1.ApplicationSource{
		Path:      "envs/prod",
		Kustomize: &navarchv1.ApplicationSourceKustomize{CommonLabels: map[string]string{"app.kubernetes.io/part-of": "shop"}},
	})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	want := []string{"ConfigMap/prod/extra", "ConfigMap/prod/web-common", "Service/prod/web-web", "Deployment/prod/web-web"}
	if !slices.Equal(got, want) {
		t.Errorf("objects:\n got %q\nwant %q", got, want)
	}
	wantFetches := map[gitKey]int{
		{"https://github.com/org/base.git", "v1"}:        1,
		{"https://git.example.com/org/common.git", "v2"}: 1,
	}
	if !maps.Equal(remotes.fetches, wantFetches) {
		t.Errorf("fetches = %v, want %v", remotes.fetches, wantFetches)
	}
}

func TestRenderRemoteBaseErrors(t *testing.T) {
	escape := fstest.MapFS{
		"up/kustomization.yaml":            file("resources: [../../../repo/secrets]\n"),
		"abs/kustomization.yaml":           file("resources: [/repo/secrets/secret.yaml]\n"),
		"gen/kustomization.yaml":           file("configMapGenerator:\n- name: x\n  files: [token=../../../repo/secrets/token]\n"),
		"patch/kustomization.yaml":         file("resources: [../ok]\npatches:\n- path: ../../../repo/secrets/patch.yaml\n"),
		"plugin/kustomization.yaml":        file("resources: [../ok]\ntransformers: [patcher.yaml]\n"),
		"plugin/patcher.yaml":              file("apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: ../ok/cm.yaml\n"),
		"inline/kustomization.yaml":        file("resources: [../ok]\ntransformers:\n- |\n  apiVersion: builtin\n  kind: PatchStrategicMergeTransformer\n  metadata: {name: p}\n  Paths: [/repo/secrets/patch.yaml]\n"),
		"ok/kustomization.yaml":            file("resources: [cm.yaml]\n"),
		"ok/cm.yaml":                       file(cm("ok")),
		"broken/kustomization.yaml":        file("resources: [missing.yaml]\n"),
		"nested/kustomization.yaml":        file("resources: [../ok, 'https://git.example.com/org/escape.git//ok?ref=v404']\n"),
		"download/kustomization.yaml":      file("resources: [../ok]\npatches:\n- path: https://example.com/patch.yaml\n"),
		"plugindir/kustomization.yaml":     file("resources: [../ok]\ntransformers: [../transformers]\n"),
		"transformers/kustomization.yaml":  file("resources: [../plugin/patcher.yaml]\n"),
		"remoteplugins/kustomization.yaml": file("resources: [../ok]\ngenerators: ['https://git.example.com/org/escape.git//transformers?ref=v1']\n"),
		"configs/kustomization.yaml":       file("resources: [../plugin/patcher.yaml]\n"),
		"genplugin/kustomization.yaml":     file("generators: [gen.yaml]\n"),
		"genplugin/gen.yaml":               file("apiVersion: builtin\nkind: SecretGenerator\nmetadata: {name: s}\nFiles: [token=../../../repo/secrets/token]\n"),
	}
	loop := fstest.MapFS{
		"a/kustomization.yaml":    file("resources: ['https://git.example.com/org/loop.git//b?ref=v1']\n"),
		"b/kustomization.yaml":    file("resources: ['https://git.example.com/org/loop.git//a?ref=v1']\n"),
		"self/kustomization.yaml": file("resources: ['https://git.example.com/org/loop.git?ref=v1']\n"),
		"kustomization.yaml":      file("resources: [self]\n"),
	}
	const escapeRepo = "https://git.example.com/org/escape.git"
	repos := map[gitKey]fs.FS{
		{"https://github.com/org/base.git", "v1"}:      webBase(),
		{escapeRepo, "v1"}:                             escape,
		{"https://git.example.com/org/loop.git", "v1"}: loop,
	}
	escapeFile := func(dir string) string { return escapeRepo + "//" + dir + "/kustomization.yaml?ref=v1" }
	escaping := func(dir, field, ref string) string {
		return escapeFile(dir) + ": " + field + " " + fmt.Sprintf("%q", ref) + ": paths of a remote base must stay inside its repository"
	}

	tests := []struct {
		name     string
		ref      string
		repo     fstest.MapFS // instead of an overlay of ref
		noRemote bool
		want     string // the whole message, or a prefix ending in "…"
		contains string
		is       error
		file     string // the *Error's File
	}{
		{
			name: "unfetchable ref names the kustomization and the URL",
			ref:  "github.com/org/base//web?ref=v9",
			want: `envs/prod/kustomization.yaml: resources[0] "github.com/org/base//web?ref=v9": no ref "v9" in https://github.com/org/base.git`,
			file: "envs/prod/kustomization.yaml",
		},
		{
			name: "unknown repository",
			ref:  "https://git.example.com/org/nothere.git//web?ref=v1",
			want: `envs/prod/kustomization.yaml: resources[0] "https://git.example.com/org/nothere.git//web?ref=v1": no ref "v1" in https://git.example.com/org/nothere.git`,
		},
		{
			name: "missing directory",
			ref:  "github.com/org/base//nothere?ref=v1",
			want: `envs/prod/kustomization.yaml: resources[0] "github.com/org/base//nothere?ref=v1": "nothere" in https://github.com/org/base.git at v1: no such directory in the repository`,
			is:   ErrPathNotFound,
		},
		{
			name: "a file, not a directory",
			ref:  "github.com/org/base//web/deploy.yaml?ref=v1",
			want: `envs/prod/kustomization.yaml: resources[0] "github.com/org/base//web/deploy.yaml?ref=v1": "web/deploy.yaml" in https://github.com/org/base.git at v1: no such directory in the repository`,
			is:   ErrPathNotFound,
		},
		{
			name: "unfetchable base of a remote base names the remote kustomization",
			ref:  escapeRepo + "//nested?ref=v1",
			want: escapeFile("nested") + `: resources[1] "https://git.example.com/org/escape.git//ok?ref=v404": no ref "v404" in ` + escapeRepo,
			file: escapeFile("nested"),
		},
		{
			name: "HTTP file",
			ref:  "https://example.com/deploy.yaml",
			want: `envs/prod/kustomization.yaml: resources[0] "https://example.com/deploy.yaml": downloading files is not supported; only Git repositories can be remote bases`,
			is:   ErrRemoteNotSupported,
		},
		{
			name: "HTTP file in a remote base",
			ref:  escapeRepo + "//download?ref=v1",
			want: escapeFile("download") + `: patches[0].path "https://example.com/patch.yaml": downloading files is not supported; only Git repositories can be remote bases`,
			is:   ErrRemoteNotSupported,
			file: escapeFile("download"),
		},
		{
			name: "file URL",
			ref:  "file:///srv/git/base.git//web",
			want: `envs/prod/kustomization.yaml: resources[0] "file:///srv/git/base.git//web": file:// repositories are not supported`,
			is:   ErrRemoteNotSupported,
		},
		{
			name: "directory out of the repository",
			ref:  "github.com/org/base//../web?ref=v1",
			want: `envs/prod/kustomization.yaml: resources[0] "github.com/org/base//../web?ref=v1": not a Git URL kustomize accepts: the directory leaves the repository`,
			is:   ErrRemoteNotSupported,
		},
		{
			name: "base out of the repository",
			ref:  escapeRepo + "//up?ref=v1",
			want: escaping("up", "resources[0]", "../../../repo/secrets"),
			is:   errEscapes,
			file: escapeFile("up"),
		},
		{
			name: "absolute path",
			ref:  escapeRepo + "//abs?ref=v1",
			want: escaping("abs", "resources[0]", "/repo/secrets/secret.yaml"),
			is:   errEscapes,
		},
		{
			name: "generator file out of the repository",
			ref:  escapeRepo + "//gen?ref=v1",
			want: escaping("gen", "configMapGenerator[0].files", "../../../repo/secrets/token"),
			is:   errEscapes,
		},
		{
			name: "patch out of the repository",
			ref:  escapeRepo + "//patch?ref=v1",
			want: escaping("patch", "patches[0].path", "../../../repo/secrets/patch.yaml"),
			is:   errEscapes,
		},
		{
			name: "plugin configuration file going up",
			ref:  escapeRepo + "//plugin?ref=v1",
			want: escapeRepo + `//plugin/patcher.yaml?ref=v1: document 1: PatchTransformer "../ok/cm.yaml": paths of a remote base must stay inside its repository`,
			is:   errEscapes,
			file: escapeRepo + "//plugin/patcher.yaml?ref=v1",
		},
		{
			name: "generator configuration file going up, field name in another case",
			ref:  escapeRepo + "//genplugin?ref=v1",
			want: escapeRepo + `//genplugin/gen.yaml?ref=v1: document 1: SecretGenerator "../../../repo/secrets/token": paths of a remote base must stay inside its repository`,
			is:   errEscapes,
		},
		{
			name: "inline plugin configuration, field name in another case",
			ref:  escapeRepo + "//inline?ref=v1",
			want: escapeFile("inline") + `: transformers[0]: PatchStrategicMergeTransformer "/repo/secrets/patch.yaml": paths of a remote base must stay inside its repository`,
			is:   errEscapes,
		},
		{
			name: "directory of plugin configurations in a remote base",
			ref:  escapeRepo + "//plugindir?ref=v1",
			want: escapeFile("plugindir") + `: transformers[0] "../transformers": generators, transformers and validators of a remote base must be files or inline, not directories`,
			is:   ErrRemoteNotSupported,
		},
		{
			name: "remote plugin configurations",
			ref:  escapeRepo + "//remoteplugins?ref=v1",
			want: escapeFile("remoteplugins") + `: generators[0] "https://git.example.com/org/escape.git//transformers?ref=v1": remote generators, transformers and validators are not supported`,
			is:   ErrRemoteNotSupported,
		},
		{
			name: "plugin configurations of a remote base through a local directory",
			repo: func() fstest.MapFS {
				repo := overlayRepo("../../ok.yaml")
				repo["ok.yaml"] = file(cm("local"))
				repo["envs/prod/kustomization.yaml"] = file("resources: [../../ok.yaml]\ntransformers: [../../transformers]\n")
				repo["transformers/kustomization.yaml"] = file("resources: ['" + escapeRepo + "//configs?ref=v1']\n")
				return repo
			}(),
			want: escapeFile("configs") + `: read for generators, transformers or validators: remote generators, transformers and validators are not supported`,
			is:   ErrRemoteNotSupported,
		},
		{
			name: "kustomize errors name remote files by URL",
			ref:  escapeRepo + "//broken?ref=v1",
			want: "envs/prod: kustomize: accumulating resources: accumulation err='accumulating resources from '" +
				escapeRepo + "//broken?ref=v1': …",
			file: "envs/prod",
		},
		{
			name:     "cycle",
			ref:      "https://git.example.com/org/loop.git//a?ref=v1",
			want:     "envs/prod: kustomize: accumulating resources: …",
			contains: "cycle detected: candidate root 'https://git.example.com/org/loop.git//a?ref=v1'",
		},
		{
			name:     "cycle through the repository root",
			ref:      "https://git.example.com/org/loop.git?ref=v1",
			want:     "envs/prod: kustomize: accumulating resources: …",
			contains: "cycle detected: candidate root 'https://git.example.com/org/loop.git?ref=v1'",
		},
		{
			name:     "without Options.Remote, as before",
			ref:      "github.com/org/base//web?ref=v1",
			noRemote: true,
			want: `envs/prod/kustomization.yaml: resources[0] "github.com/org/base//web?ref=v1": ` +
				`remote kustomize references are not supported; use a path inside the repository`,
			is:   ErrRemoteNotSupported,
			file: "envs/prod/kustomization.yaml",
		},
		{
			name:     "without Options.Remote, HTTP files as before",
			ref:      "https://example.com/deploy.yaml",
			noRemote: true,
			want: `envs/prod/kustomization.yaml: resources[0] "https://example.com/deploy.yaml": ` +
				`remote kustomize references are not supported; use a path inside the repository`,
			is: ErrRemoteNotSupported,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", "") // kustomize could not clone anything itself
			remotes := newRemoteRepos(repos)
			if tt.noRemote {
				remotes = nil
			}
			repo := tt.repo
			if repo == nil {
				repo = overlayRepo(tt.ref)
			}
			got, err := renderRemote(repo, remotes, navarchv1.ApplicationSource{Path: "envs/prod"})
			if err == nil {
				t.Fatalf("Render returned %q, want error %q", got, tt.want)
			}
			if prefix, ok := strings.CutSuffix(tt.want, "…"); ok {
				if !strings.HasPrefix(err.Error(), prefix) {
					t.Errorf("error:\n got %q\nwant %q", err, tt.want)
				}
			} else if err.Error() != tt.want {
				t.Errorf("error:\n got %q\nwant %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not say %q", err, tt.contains)
			}
			if strings.Contains(err.Error(), "remote/") {
				t.Errorf("error %q shows kustomize's internal paths", err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
			if tt.file != "" {
				var rerr *Error
				if !errors.As(err, &rerr) || rerr.File != tt.file {
					t.Errorf("error %#v is not an *Error for %s", err, tt.file)
				}
			}
		})
	}
}

// A chain of remote bases, each at the next ref of the same repository, stops at
// maxRemoteDepth.
func TestRenderRemoteBasesTooDeep(t *testing.T) {
	const repoURL = "https://git.example.com/org/chain.git"
	var fetches int
	remote := func(_ context.Context, url, ref string) (fs.FS, error) {
		fetches++
		var n int
		if _, err := fmt.Sscanf(ref, "v%d", &n); err != nil || url != repoURL {
			return nil, fmt.Errorf("no ref %q in %s", ref, url)
		}
		return fstest.MapFS{
			"kustomization.yaml": file(fmt.Sprintf("resources: ['%s?ref=v%d']\n", repoURL, n+1)),
		}, nil
	}
	repo := overlayRepo(repoURL + "?ref=v1")
	_, err := Render(context.Background(), repo, navarchv1.ApplicationSource{Path: "envs/prod"}, Options{Remote: remote})
	if !errors.Is(err, errTooDeep) {
		t.Fatalf("Render error = %v, want %v", err, errTooDeep)
	}
	want := repoURL + "//kustomization.yaml?ref=v10: resources[0] \"" + repoURL + "?ref=v11\": remote bases nest deeper than 10"
	if err.Error() != want {
		t.Errorf("error:\n got %q\nwant %q", err, want)
	}
	if fetches != maxRemoteDepth {
		t.Errorf("%d fetches, want %d", fetches, maxRemoteDepth)
	}
}

// A cancelled Render stops before fetching.
func TestRenderRemoteBaseCancelled(t *testing.T) {
	remotes := newRemoteRepos(map[gitKey]fs.FS{{"https://github.com/org/base.git", "v1"}: webBase()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Render(ctx, overlayRepo("github.com/org/base//web?ref=v1"), navarchv1.ApplicationSource{Path: "envs/prod"}, Options{Remote: remotes.fetch})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Render error = %v, want %v", err, context.Canceled)
	}
	if len(remotes.fetches) != 0 {
		t.Errorf("fetched %v", remotes.fetches)
	}
}

// Render may be called concurrently with remote bases and charts, also for remote bases that
// set openapi (fetched while not holding the schema, then rendered alone).
func TestRenderRemoteBasesConcurrently(t *testing.T) {
	base := webBase()
	base["openapi/kustomization.yaml"] = file("openapi:\n  version: v1.21.2\nresources: [../web]\n")
	repos := map[gitKey]fs.FS{{"https://github.com/org/base.git", "v1"}: base}
	sources := map[string]fstest.MapFS{
		"plain":   overlayRepo("github.com/org/base//web?ref=v1"),
		"openapi": overlayRepo("github.com/org/base//openapi?ref=v1"),
		"helm":    overlayRepo("github.com/org/base//web?ref=v1", "../../charts"),
	}
	sources["helm"]["charts/kustomization.yaml"] = file("helmCharts:\n- {name: web, repo: 'https://charts.example.com'}\n")
	render := func(name string) ([]string, error) {
		remotes := newRemoteRepos(repos)
		objs, err := Render(context.Background(), sources[name], navarchv1.ApplicationSource{Path: "envs/prod"},
			Options{Remote: remotes.fetch, Helm: &recordingHelm{}})
		return ids(objs), err
	}
	want := map[string][]string{
		"plain":   {"Service/prod/web", "Deployment/prod/web"},
		"openapi": {"Service/prod/web", "Deployment/prod/web"},
		"helm":    {"ConfigMap/prod/web-web", "Service/prod/web", "Deployment/prod/web", "Pod/prod/web-web-test"},
	}
	errs := make(chan error, 4*len(sources))
	for range 4 {
		for name := range sources {
			go func() {
				got, err := render(name)
				if err == nil && !slices.Equal(got, want[name]) {
					err = fmt.Errorf("%s: got %q, want %q", name, got, want[name])
				}
				errs <- err
			}()
		}
	}
	for range 4 * len(sources) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
