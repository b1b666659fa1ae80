package helm

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartloader "helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/strvals"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// ErrValueFileNotFound is returned, wrapped, for a value file or file parameter that does not
// exist (value files only without ignoreMissingValueFiles).
var ErrValueFileNotFound = errors.New("no such file")

// userValues merges the values of spec.source.helm, later winning: the value files in order,
// values, valuesObject, parameters (those without forceString first, as `helm --set` comes
// before `--set-string`), then file parameters. The chart's own values are not included.
func userValues(opts *navarchv1.ApplicationSourceHelm, files valueFiles) (map[string]any, error) {
	base := map[string]any{}
	for _, name := range opts.ValueFiles {
		vals, err := files.read(name, opts.IgnoreMissingValueFiles)
		if err != nil {
			return nil, err
		}
		base = chartloader.MergeMaps(base, vals)
	}
	if strings.TrimSpace(opts.Values) != "" {
		vals, err := chartloader.LoadValues(strings.NewReader(opts.Values))
		if err != nil {
			return nil, fmt.Errorf("values: %w", err)
		}
		base = chartloader.MergeMaps(base, vals)
	}
	if o := opts.ValuesObject; o != nil && len(o.Raw) > 0 {
		var vals map[string]any
		if err := yaml.Unmarshal(o.Raw, &vals); err != nil {
			return nil, fmt.Errorf("valuesObject: %w", err)
		}
		base = chartloader.MergeMaps(base, vals)
	}
	for _, forceString := range []bool{false, true} {
		for _, p := range opts.Parameters {
			if p.ForceString != forceString {
				continue
			}
			set := strvals.ParseInto
			if forceString {
				set = strvals.ParseIntoString
			}
			if err := set(p.Name+"="+escapeCommas(p.Value), base); err != nil {
				return nil, fmt.Errorf("parameter %q: %w", p.Name, err)
			}
		}
	}
	for _, p := range opts.FileParameters {
		data, err := files.readFile(p.Path)
		if err != nil {
			return nil, fmt.Errorf("file parameter %q: %w", p.Name, err)
		}
		// The value is the file's content, whatever the text after "=" holds.
		content := func([]rune) (any, error) { return string(data), nil }
		if err := strvals.ParseIntoFile(p.Name+"=file", base, content); err != nil {
			return nil, fmt.Errorf("file parameter %q: %w", p.Name, err)
		}
	}
	return base, nil
}

// escapeCommas escapes the commas of a parameter value, which `--set` takes for separators
// between values, unless the value is a list ("{a,b}") or the comma is already escaped.
func escapeCommas(v string) string {
	if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") || !strings.Contains(v, ",") {
		return v
	}
	var b strings.Builder
	b.Grow(len(v) + 4)
	for i := range len(v) {
		if v[i] == ',' && (i == 0 || v[i-1] != '\\') {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// valueFiles finds value files and file parameters.
type valueFiles struct {
	// chart is the root that relative paths start from: the snapshot of a chart directory,
	// or the files of a packaged chart.
	chart valueRoot
	// dir is the chart's directory in chart ("." for a packaged chart).
	dir string
	// refs are the snapshots of the other sources, for "$ref/path".
	refs map[string]fs.FS
}

// locate returns the root and the path inside it of a value file: "$ref/path" is path in
// the source with that ref, "/path" is path from the root of the chart's repository (or of a
// packaged chart), other paths are relative to the chart directory.
func (v valueFiles) locate(name string) (valueRoot, string, error) {
	var (
		root valueRoot
		p    string
	)
	switch {
	case strings.HasPrefix(name, "$"):
		ref, rest, _ := strings.Cut(name[1:], "/")
		fsys := v.refs[ref]
		if fsys == nil {
			return nil, "", fmt.Errorf("no source with ref %q", ref)
		}
		root, p = snapshotRoot{fsys}, rest
	case strings.Contains(name, "://"):
		return nil, "", errors.New("remote value files are not supported")
	case strings.HasPrefix(name, "/"):
		root, p = v.chart, strings.TrimLeft(name, "/")
	default:
		root, p = v.chart, path.Join(v.dir, name)
	}
	clean, err := inside(p)
	if err != nil {
		return nil, "", root.outside()
	}
	if clean == "." {
		return nil, "", errors.New("not a file")
	}
	return root, clean, nil
}

// read returns the merged values of the value file name, or of the files its glob matches,
// in order.
func (v valueFiles) read(name string, ignoreMissing bool) (map[string]any, error) {
	root, p, err := v.locate(name)
	if err != nil {
		return nil, fmt.Errorf("value file %q: %w", name, err)
	}
	matches := []string{p}
	if isGlob(name) {
		if matches, err = root.glob(p); err != nil {
			return nil, fmt.Errorf("value file %q: %w", name, err)
		}
		if len(matches) == 0 {
			if ignoreMissing {
				return nil, nil
			}
			return nil, fmt.Errorf("value file %q: no file matches: %w", name, ErrValueFileNotFound)
		}
	}
	base := map[string]any{}
	for _, m := range matches {
		data, err := root.readFile(m)
		switch {
		case errors.Is(err, fs.ErrNotExist) && ignoreMissing:
			continue
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("value file %q: %w", name, ErrValueFileNotFound)
		case err != nil:
			return nil, fmt.Errorf("value file %q: %w", name, err)
		}
		vals, err := chartloader.LoadValues(bytes.NewReader(data))
		if err != nil {
			if m != p {
				return nil, fmt.Errorf("value file %q (%s): %w", name, m, err)
			}
			return nil, fmt.Errorf("value file %q: %w", name, err)
		}
		base = chartloader.MergeMaps(base, vals)
	}
	return base, nil
}

// readFile returns the content of the file of a file parameter.
func (v valueFiles) readFile(name string) ([]byte, error) {
	root, p, err := v.locate(name)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", name, err)
	}
	data, err := root.readFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%q: %w", name, ErrValueFileNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("%q: %w", name, err)
	}
	return data, nil
}

func isGlob(name string) bool { return strings.ContainsAny(name, "*?[") }

// valueRoot is a tree that value files are read from.
type valueRoot interface {
	readFile(name string) ([]byte, error)
	// glob returns the files matching pattern, sorted.
	glob(pattern string) ([]string, error)
	// outside is the error for a path that leads outside the root.
	outside() error
}

// snapshotRoot is a repository snapshot.
type snapshotRoot struct{ fsys fs.FS }

func (r snapshotRoot) readFile(name string) ([]byte, error) { return fs.ReadFile(r.fsys, name) }

func (r snapshotRoot) glob(pattern string) ([]string, error) {
	matches, err := fs.Glob(r.fsys, pattern)
	slices.Sort(matches)
	return matches, err
}

func (snapshotRoot) outside() error { return errOutsideRoot }

// archiveRoot is the files of a packaged chart, by path.
type archiveRoot map[string][]byte

func newArchiveRoot(ch *chartv2.Chart) archiveRoot {
	files := make(archiveRoot, len(ch.Raw))
	for _, f := range ch.Raw {
		files[f.Name] = f.Data
	}
	return files
}

func (r archiveRoot) readFile(name string) ([]byte, error) {
	data, ok := r[name]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	return data, nil
}

func (r archiveRoot) glob(pattern string) ([]string, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, err
	}
	var matches []string
	for name := range r {
		if ok, _ := path.Match(pattern, name); ok {
			matches = append(matches, name)
		}
	}
	slices.Sort(matches)
	return matches, nil
}

func (archiveRoot) outside() error { return errors.New("must stay inside the chart") }
