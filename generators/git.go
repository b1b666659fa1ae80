package generators

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// DefaultGitRequeueAfter is how often a git generator re-reads its repository when
// requeueAfterSeconds is not set (Argo CD's default).
const DefaultGitRequeueAfter = 3 * time.Minute

// Git is the git generator. With `directories` it emits one parameter set per directory
// matching the globs: "path", "path.basename", "path.basenameNormalized" and "path[N]" for
// each segment (goTemplate: .path.path, .path.basename, .path.basenameNormalized,
// .path.segments). With `files` it emits one set per object in each matching JSON/YAML file
// (a top-level list gives several): the file's keys (flattened with dots in fasttemplate mode)
// plus "path" (the file's directory), "path.basename", "path.filename",
// "path.basenameNormalized", "path.filenameNormalized" and "path[N]". pathParamPrefix `p`
// renames "path" to "p.path" (goTemplate: .p.path.*). Both add templated "values.<k>".
//
// Globs are matched segment by segment with `**` for any depth (see pathmatch.go for how that
// compares with Argo CD); an exclude wins over every include. As in Argo CD, directories with
// a segment starting with "." are never listed. Unlike Argo CD's default file globbing, `*`
// does not cross "/" in file globs (Argo CD's opt-in "new globbing"); use `**` for any depth.
//
// In fasttemplate mode a null in a file becomes "<nil>", as in Argo CD (see gitFileNull).
type Git struct {
	// Spec is the generator's spec.
	Spec *navarchv1.GitGenerator
	// Field is the spec's path, e.g. "spec.generators[0].git".
	Field string
}

func (g Git) validate() error {
	if strings.TrimSpace(g.Spec.RepoURL) == "" {
		return fmt.Errorf("%s.repoURL: must be set", g.Field)
	}
	if (len(g.Spec.Directories) == 0) == (len(g.Spec.Files) == 0) {
		return fmt.Errorf("%s: exactly one of directories or files must be set", g.Field)
	}
	if s := g.Spec.RequeueAfterSeconds; s != nil && *s < 1 {
		return fmt.Errorf("%s.requeueAfterSeconds: must be at least 1, not %d", g.Field, *s)
	}
	_, err := g.paths()
	return err
}

// paths validates and splits the directory or file globs.
func (g Git) paths() (pathSet, error) {
	items, name := g.Spec.Directories, "directories"
	if len(items) == 0 {
		items, name = g.Spec.Files, "files"
	}
	var set pathSet
	for i, item := range items {
		if err := checkGlob(item.Path); err != nil {
			return pathSet{}, fmt.Errorf("%s.%s[%d].path: %q %w", g.Field, name, i, item.Path, err)
		}
		if item.Exclude {
			set.exclude = append(set.exclude, item.Path)
		} else {
			set.include = append(set.include, item.Path)
		}
	}
	return set, nil
}

// checkGlob validates a glob. A glob still holding a template action (a matrix child before
// its earlier siblings' parameters are known) is only checked for what rendering cannot fix.
func checkGlob(pattern string) error {
	if !isTemplated(pattern) {
		return validatePattern(pattern)
	}
	if strings.HasPrefix(pattern, "/") || slices.Contains(strings.Split(pattern, "/"), "..") {
		return validatePattern(pattern)
	}
	return nil
}

// RequeueAfter implements Generator.
func (g Git) RequeueAfter() time.Duration {
	if s := g.Spec.RequeueAfterSeconds; s != nil && *s > 0 {
		return time.Duration(*s) * time.Second
	}
	return DefaultGitRequeueAfter
}

// Params implements Generator.
func (g Git) Params(ctx context.Context, in Inputs) ([]map[string]any, error) {
	if err := g.validate(); err != nil {
		return nil, err
	}
	set, _ := g.paths()
	if in.Git == nil {
		return nil, fmt.Errorf("%s: no Git reader configured", g.Field)
	}
	revision := g.Spec.Revision
	if revision == "" {
		revision = "HEAD"
	}
	tree, err := in.Git.Snapshot(ctx, g.Spec.RepoURL, revision)
	if err != nil {
		return nil, fmt.Errorf("%s.repoURL: read %s at %s: %w", g.Field, redactURL(g.Spec.RepoURL), revision, err)
	}
	if len(g.Spec.Directories) > 0 {
		return g.directoryParams(in, tree, set)
	}
	return g.fileParams(in, tree, set)
}

func (g Git) directoryParams(in Inputs, tree GitTree, set pathSet) ([]map[string]any, error) {
	var dirs []string
	for _, d := range tree.Dirs() {
		if d == "" || d == "." || isHiddenPath(d) {
			continue
		}
		if set.matches(d) {
			dirs = append(dirs, d)
		}
	}
	// The order of a depth-first walk, as Argo CD's repo server lists directories.
	slices.SortFunc(dirs, comparePaths)
	dirs = slices.Compact(dirs)

	out := make([]map[string]any, 0, len(dirs))
	for _, d := range dirs {
		params := map[string]any{}
		g.addPathParams(params, d, "", in.GoTemplate)
		if err := appendValues(in, g.Field, fmt.Sprintf("directory %q", d), g.Spec.Values, params); err != nil {
			return nil, err
		}
		out = append(out, params)
	}
	return out, nil
}

func (g Git) fileParams(in Inputs, tree GitTree, set pathSet) ([]map[string]any, error) {
	var files []string
	for _, f := range tree.Files() {
		if set.matches(f) {
			files = append(files, f)
		}
	}
	sort.Strings(files)
	files = slices.Compact(files)

	var out []map[string]any
	for _, f := range files {
		data, err := tree.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%s.files: read %s: %w", g.Field, f, err)
		}
		objs, err := decodeObjects(data, true)
		if err != nil {
			return nil, fmt.Errorf("%s.files: parse %s: %w", g.Field, f, err)
		}
		for _, obj := range objs {
			if !in.GoTemplate {
				markNulls(obj)
			}
			params := shapeObject(obj, in.GoTemplate)
			g.addPathParams(params, path.Dir(f), path.Base(f), in.GoTemplate)
			if err := appendValues(in, g.Field, fmt.Sprintf("file %q", f), g.Spec.Values, params); err != nil {
				return nil, err
			}
			out = append(out, params)
		}
	}
	return out, nil
}

// gitFileNull is what a null in a git file becomes in fasttemplate mode. Argo CD flattens the
// file's object and formats every value with fmt's %v (generateParamsFromGitFile in
// applicationset/generators/git.go, over github.com/jeremywohl/flatten, which keeps a null as a
// nil leaf), and %v of nil is "<nil>": `owner: null` renders `{{owner}}` as "<nil>".
const gitFileNull = "<nil>"

// markNulls replaces, in place, every null inside a decoded git file object by gitFileNull.
func markNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, item := range t {
			if item == nil {
				t[k] = gitFileNull
			} else {
				markNulls(item)
			}
		}
	case []any:
		for i, item := range t {
			if item == nil {
				t[i] = gitFileNull
			} else {
				markNulls(item)
			}
		}
	}
}

// addPathParams adds the path parameters of directory dir, and of file filename in it when
// filename is not empty.
func (g Git) addPathParams(params map[string]any, dir, filename string, goTemplate bool) {
	base := path.Base(dir)
	if goTemplate {
		p := map[string]any{
			"path":               dir,
			"basename":           base,
			"basenameNormalized": normalizeName(base),
			"segments":           strings.Split(dir, "/"),
		}
		if filename != "" {
			p["filename"] = filename
			p["filenameNormalized"] = normalizeName(filename)
		}
		if g.Spec.PathParamPrefix != "" {
			params[g.Spec.PathParamPrefix] = map[string]any{"path": p}
		} else {
			params["path"] = p
		}
		return
	}
	name := "path"
	if g.Spec.PathParamPrefix != "" {
		name = g.Spec.PathParamPrefix + ".path"
	}
	params[name] = dir
	params[name+".basename"] = base
	params[name+".basenameNormalized"] = normalizeName(base)
	if filename != "" {
		params[name+".filename"] = filename
		params[name+".filenameNormalized"] = normalizeName(filename)
	}
	for i, seg := range strings.Split(dir, "/") {
		if seg != "" {
			params[name+"["+strconv.Itoa(i)+"]"] = seg
		}
	}
}

// comparePaths orders paths as a depth-first walk visits them: "a", "a/b", "a-b".
func comparePaths(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		switch {
		case a[i] == '/':
			return -1
		case b[i] == '/':
			return 1
		case a[i] < b[i]:
			return -1
		default:
			return 1
		}
	}
	return len(a) - len(b)
}

// redactURL drops the user info (a token is often the user name) of a URL with credentials, so
// errors never carry secrets.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}
