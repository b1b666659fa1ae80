package generators

import (
	"errors"
	"slices"
	"testing"
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

const repo = "https://git.example.com/org/deploy.git"

// deployRepo is the layout of the seed guide's repository plus the usual odds and ends.
func deployRepo() *memGit {
	return &memGit{trees: map[string]*memTree{repo + "@main": {
		commit: "c0ffee",
		files: map[string]string{
			"apps/api/kustomization.yaml":           "resources: []",
			"apps/web/kustomization.yaml":           "resources: []",
			"apps/web/base/deployment.yaml":         "kind: Deployment",
			"apps/Billing_Svc/kustomization.yaml":   "resources: []",
			"apps/.cache/x":                         "",
			".github/workflows/ci.yaml":             "on: push",
			"envs/prod/api/values.yaml":             "",
			"envs/staging/web/values.yaml":          "",
			"README.md":                             "# deploy",
			"clusters/eu/config.json":               `{"cluster": {"name": "eu-1", "address": "https://eu.example.com"}, "tags": ["a", "b"], "replicas": 3}`,
			"clusters/us/config.json":               `{"cluster": {"name": "us-1", "address": "https://us.example.com"}, "tags": [], "replicas": 1000000}`,
			"clusters/us/deep/config.json":          `{"cluster": {"name": "us-deep"}}`,
			"regions/all.yaml":                      "- region: eu\n  zone: a\n- region: us\n  zone: b\n",
			"broken/config.json":                    `{"cluster": `,
			"scalar/config.yaml":                    "just a string",
			"empty/config.yaml":                     "",
			"apps/api/config/.hidden-dir-file.json": `{}`,
			"apps/api/config/settings.json":         `{"k": "v"}`,
		},
		extra: []string{"apps/empty"},
	}}}
}

func TestGitDirectories(t *testing.T) {
	tests := []struct {
		name       string
		goTemplate bool
		spec       *navarchv1.GitGenerator
		want       []map[string]any
		wantErr    string
	}{
		{
			name: "seed guide: apps/* gives one set per directory, hidden ones skipped",
			spec: gitDirs(repo, include("apps/*")),
			want: []map[string]any{
				{"path": "apps/Billing_Svc", "path.basename": "Billing_Svc", "path.basenameNormalized": "billing-svc", "path[0]": "apps", "path[1]": "Billing_Svc"},
				{"path": "apps/api", "path.basename": "api", "path.basenameNormalized": "api", "path[0]": "apps", "path[1]": "api"},
				{"path": "apps/empty", "path.basename": "empty", "path.basenameNormalized": "empty", "path[0]": "apps", "path[1]": "empty"},
				{"path": "apps/web", "path.basename": "web", "path.basenameNormalized": "web", "path[0]": "apps", "path[1]": "web"},
			},
		},
		{
			name: "exclude wins over include, whatever the order",
			spec: gitDirs(repo, exclude("apps/web"), include("apps/*"), exclude("apps/[Be]*")),
			want: []map[string]any{
				{"path": "apps/api", "path.basename": "api", "path.basenameNormalized": "api", "path[0]": "apps", "path[1]": "api"},
			},
		},
		{
			name: "pathParamPrefix and values",
			spec: &navarchv1.GitGenerator{
				RepoURL: repo, Revision: "main", PathParamPrefix: "app",
				Directories: []navarchv1.GitPathItem{include("envs/*/*")},
				Values:      map[string]string{"ns": "{{app.path[1]}}-{{app.path.basename}}"},
			},
			want: []map[string]any{
				{
					"app.path": "envs/prod/api", "app.path.basename": "api", "app.path.basenameNormalized": "api",
					"app.path[0]": "envs", "app.path[1]": "prod", "app.path[2]": "api", "values.ns": "prod-api",
				},
				{
					"app.path": "envs/staging/web", "app.path.basename": "web", "app.path.basenameNormalized": "web",
					"app.path[0]": "envs", "app.path[1]": "staging", "app.path[2]": "web", "values.ns": "staging-web",
				},
			},
		},
		{
			name:       "goTemplate nests path parameters",
			goTemplate: true,
			spec: &navarchv1.GitGenerator{
				RepoURL: repo, Revision: "main",
				Directories: []navarchv1.GitPathItem{include("apps/web/*")},
				Values:      map[string]string{"app": "{{.path.basename}}"},
			},
			want: []map[string]any{{
				"path": map[string]any{
					"path": "apps/web/base", "basename": "base", "basenameNormalized": "base",
					"segments": []string{"apps", "web", "base"},
				},
				"values": map[string]any{"app": "base"},
			}},
		},
		{
			name:       "goTemplate with pathParamPrefix",
			goTemplate: true,
			spec: &navarchv1.GitGenerator{
				RepoURL: repo, Revision: "main", PathParamPrefix: "app",
				Directories: []navarchv1.GitPathItem{include("apps/web/base")},
			},
			want: []map[string]any{{
				"app": map[string]any{"path": map[string]any{
					"path": "apps/web/base", "basename": "base", "basenameNormalized": "base",
					"segments": []string{"apps", "web", "base"},
				}},
			}},
		},
		{
			name: "** reaches any depth but not hidden directories",
			spec: gitDirs(repo, include("apps/**"), exclude("apps/*")),
			want: []map[string]any{
				{"path": "apps/api/config", "path.basename": "config", "path.basenameNormalized": "config", "path[0]": "apps", "path[1]": "api", "path[2]": "config"},
				{"path": "apps/web/base", "path.basename": "base", "path.basenameNormalized": "base", "path[0]": "apps", "path[1]": "web", "path[2]": "base"},
			},
		},
		{
			name: "a leading ** matches zero directories too",
			spec: gitDirs(repo, include("**/base"), include("**/envs")),
			want: []map[string]any{
				{"path": "apps/web/base", "path.basename": "base", "path.basenameNormalized": "base", "path[0]": "apps", "path[1]": "web", "path[2]": "base"},
				{"path": "envs", "path.basename": "envs", "path.basenameNormalized": "envs", "path[0]": "envs"},
			},
		},
		{
			name: "no directory matches",
			spec: gitDirs(repo, include("nothing/*")),
			want: nil,
		},
		{
			name:    ".. is rejected with the field path",
			spec:    gitDirs(repo, include("apps/*"), include("../other/*")),
			wantErr: `spec.generators[0].git.directories[1].path: "../other/*" must not contain ".." segments`,
		},
		{
			name:    "absolute paths are rejected",
			spec:    gitDirs(repo, include("/apps/*")),
			wantErr: `spec.generators[0].git.directories[0].path: "/apps/*" must be relative to the repository root`,
		},
		{
			name:    "malformed glob",
			spec:    gitDirs(repo, include("apps/[a-")),
			wantErr: `spec.generators[0].git.directories[0].path: "apps/[a-" malformed glob`,
		},
		{
			name:    "unknown revision is an error",
			spec:    &navarchv1.GitGenerator{RepoURL: repo, Revision: "nope", Directories: []navarchv1.GitPathItem{include("*")}},
			wantErr: "spec.generators[0].git.repoURL: read " + repo + " at nope: revision nope not found",
		},
		{
			name:    "directories and files together",
			spec:    &navarchv1.GitGenerator{RepoURL: repo, Directories: []navarchv1.GitPathItem{include("*")}, Files: []navarchv1.GitPathItem{include("*")}},
			wantErr: "spec.generators[0].git: exactly one of directories or files must be set",
		},
		{
			name:    "repoURL missing",
			spec:    &navarchv1.GitGenerator{Directories: []navarchv1.GitPathItem{include("*")}},
			wantErr: "spec.generators[0].git.repoURL: must be set",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := generate(t, tt.goTemplate, Inputs{Git: deployRepo()}, navarchv1.ApplicationSetGenerator{Git: tt.spec})
			if checkErr(t, err, tt.wantErr) {
				checkParams(t, got, tt.want)
			}
		})
	}
}

func TestGitFiles(t *testing.T) {
	tests := []struct {
		name       string
		goTemplate bool
		spec       *navarchv1.GitGenerator
		want       []map[string]any
		wantErr    string
	}{
		{
			name: "JSON files flattened with dots, path parameters of the file's directory",
			spec: gitFiles(include("clusters/*/config.json")),
			want: []map[string]any{
				{
					"cluster.name": "eu-1", "cluster.address": "https://eu.example.com", "tags.0": "a", "tags.1": "b", "replicas": "3",
					"path": "clusters/eu", "path.basename": "eu", "path.basenameNormalized": "eu",
					"path.filename": "config.json", "path.filenameNormalized": "config.json", "path[0]": "clusters", "path[1]": "eu",
				},
				{
					"cluster.name": "us-1", "cluster.address": "https://us.example.com", "replicas": "1000000",
					"path": "clusters/us", "path.basename": "us", "path.basenameNormalized": "us",
					"path.filename": "config.json", "path.filenameNormalized": "config.json", "path[0]": "clusters", "path[1]": "us",
				},
			},
		},
		{
			name: "** matches files at any depth",
			spec: gitFiles(include("clusters/**/config.json"), exclude("clusters/eu/*")),
			want: []map[string]any{
				{
					"cluster.name": "us-1", "cluster.address": "https://us.example.com", "replicas": "1000000",
					"path": "clusters/us", "path.basename": "us", "path.basenameNormalized": "us",
					"path.filename": "config.json", "path.filenameNormalized": "config.json", "path[0]": "clusters", "path[1]": "us",
				},
				{
					"cluster.name": "us-deep",
					"path":         "clusters/us/deep", "path.basename": "deep", "path.basenameNormalized": "deep",
					"path.filename": "config.json", "path.filenameNormalized": "config.json",
					"path[0]": "clusters", "path[1]": "us", "path[2]": "deep",
				},
			},
		},
		{
			name: "a YAML list gives several sets",
			spec: &navarchv1.GitGenerator{
				RepoURL: repo, Revision: "main", PathParamPrefix: "src",
				Files:  []navarchv1.GitPathItem{include("regions/*.yaml")},
				Values: map[string]string{"name": "{{region}}-{{zone}}"},
			},
			want: []map[string]any{
				{
					"region": "eu", "zone": "a", "values.name": "eu-a",
					"src.path": "regions", "src.path.basename": "regions", "src.path.basenameNormalized": "regions",
					"src.path.filename": "all.yaml", "src.path.filenameNormalized": "all.yaml", "src.path[0]": "regions",
				},
				{
					"region": "us", "zone": "b", "values.name": "us-b",
					"src.path": "regions", "src.path.basename": "regions", "src.path.basenameNormalized": "regions",
					"src.path.filename": "all.yaml", "src.path.filenameNormalized": "all.yaml", "src.path[0]": "regions",
				},
			},
		},
		{
			name:       "goTemplate keeps the file's structure",
			goTemplate: true,
			spec:       gitFiles(include("clusters/eu/config.json")),
			want: []map[string]any{{
				"cluster":  map[string]any{"name": "eu-1", "address": "https://eu.example.com"},
				"tags":     []any{"a", "b"},
				"replicas": float64(3),
				"path": map[string]any{
					"path": "clusters/eu", "basename": "eu", "basenameNormalized": "eu",
					"filename": "config.json", "filenameNormalized": "config.json", "segments": []string{"clusters", "eu"},
				},
			}},
		},
		{
			name: "a file at the root (a comment-only YAML document is an empty object)",
			spec: gitFiles(include("*.md")),
			want: []map[string]any{{
				"path": ".", "path.basename": ".", "path.basenameNormalized": "",
				"path.filename": "README.md", "path.filenameNormalized": "readme.md", "path[0]": ".",
			}},
		},
		{
			name: "an empty file gives one set of path parameters",
			spec: gitFiles(include("empty/config.yaml")),
			want: []map[string]any{{
				"path": "empty", "path.basename": "empty", "path.basenameNormalized": "empty",
				"path.filename": "config.yaml", "path.filenameNormalized": "config.yaml", "path[0]": "empty",
			}},
		},
		{
			name:    "a parse error names the file",
			spec:    gitFiles(include("*/config.json")),
			wantErr: "spec.generators[0].git.files: parse broken/config.json: ",
		},
		{
			name:    "a scalar document is an error naming the file",
			spec:    gitFiles(include("scalar/*")),
			wantErr: "spec.generators[0].git.files: parse scalar/config.yaml: must be an object or a list of objects, not a string",
		},
		{
			name:    ".. in a file glob",
			spec:    gitFiles(include("a/../../etc/passwd")),
			wantErr: `spec.generators[0].git.files[0].path: "a/../../etc/passwd" must not contain ".."`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := generate(t, tt.goTemplate, Inputs{Git: deployRepo()}, navarchv1.ApplicationSetGenerator{Git: tt.spec})
			if checkErr(t, err, tt.wantErr) {
				checkParams(t, got, tt.want)
			}
		})
	}
}

func TestGitReadFailures(t *testing.T) {
	git := &memGit{err: errors.New("dial tcp 127.0.0.1:1: connection refused")}
	spec := &navarchv1.GitGenerator{RepoURL: "https://user:s3cret@git.example.com/org/deploy.git", Directories: []navarchv1.GitPathItem{include("apps/*")}}
	_, err := generate(t, false, Inputs{Git: git}, navarchv1.ApplicationSetGenerator{Git: spec})
	checkErr(t, err, "spec.generators[0].git.repoURL: read https://git.example.com/org/deploy.git at HEAD: dial tcp 127.0.0.1:1: connection refused")
	if !slices.Equal(git.reads, []string{spec.RepoURL + "@HEAD"}) {
		t.Errorf("reads = %v, want one read of HEAD", git.reads)
	}

	_, err = generate(t, false, Inputs{}, navarchv1.ApplicationSetGenerator{Git: spec})
	checkErr(t, err, "spec.generators[0].git: no Git reader configured")
}

func TestGitRequeueAfter(t *testing.T) {
	if got := (Git{Spec: gitDirs(repo, include("*"))}).RequeueAfter(); got != 180*time.Second {
		t.Errorf("default RequeueAfter = %v, want 3m", got)
	}
	spec := gitDirs(repo, include("*"))
	spec.RequeueAfterSeconds = ptr[int64](30)
	if got := (Git{Spec: spec}).RequeueAfter(); got != 30*time.Second {
		t.Errorf("RequeueAfter = %v, want 30s", got)
	}
}
