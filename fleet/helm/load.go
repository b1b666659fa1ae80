package helm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartloader "helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/ignore"
)

const (
	// maxDirectoryDepth bounds how deep a chart directory is read, which also stops symbolic
	// links that lead to their own parents.
	maxDirectoryDepth = 32
	// maxDependencyDepth bounds chains of file:// dependencies.
	maxDependencyDepth = 16
)

// errNoFetcher is returned, wrapped, for a chart that must be fetched from a repository when the
// Renderer has no ChartFetcher.
var errNoFetcher = errors.New("charts from repositories are not supported: no chart fetcher")

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// loader loads one chart with the dependencies it lacks, and hashes everything it reads into
// the chart's identity. A loader serves one render: the charts it returns are the caller's to
// change.
type loader struct {
	charts          ChartFetcher
	passCredentials bool
	hash            hash.Hash
}

func newLoader(charts ChartFetcher, passCredentials bool) *loader {
	return &loader{charts: charts, passCredentials: passCredentials, hash: sha256.New()}
}

// identity is the hash of every file and archive loaded so far.
func (l *loader) identity() string { return hex.EncodeToString(l.hash.Sum(nil)) }

// write adds a length-prefixed field to the identity, so that fields cannot run into each
// other.
func (l *loader) write(field []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(field)))
	l.hash.Write(n[:])
	l.hash.Write(field)
}

// loadDirectory loads the chart in the directory dir of the snapshot fsys, and the dependencies
// it lacks.
func (l *loader) loadDirectory(ctx context.Context, fsys fs.FS, dir string) (*chartv2.Chart, error) {
	if fsys == nil {
		return nil, errors.New("no snapshot to read the chart from")
	}
	return l.loadDir(ctx, fsys, dir, nil)
}

// loadDir loads the chart in dir; stack holds the directories of the file:// dependencies that
// led to it.
func (l *loader) loadDir(ctx context.Context, fsys fs.FS, dir string, stack []string) (*chartv2.Chart, error) {
	files, err := readChartDirectory(fsys, dir)
	if err != nil {
		return nil, err
	}
	l.write([]byte("directory"))
	for _, f := range files {
		l.write([]byte(f.Name))
		l.write(f.Data)
	}
	ch, err := loadFiles(files)
	if err != nil {
		return nil, err
	}
	if err := l.resolveDependencies(ctx, ch, &localChart{fsys: fsys, dir: dir}, append(stack, dir)); err != nil {
		return nil, err
	}
	return ch, nil
}

// loadRepository fetches chart name at version from the repository repoURL, and the
// dependencies it lacks.
func (l *loader) loadRepository(ctx context.Context, repoURL, name, version string) (*chartv2.Chart, error) {
	ch, err := l.fetch(ctx, repoURL, name, version)
	if err != nil {
		return nil, err
	}
	if err := l.resolveDependencies(ctx, ch, nil, nil); err != nil {
		return nil, err
	}
	return ch, nil
}

// fetch fetches a packaged chart and loads it as it is.
func (l *loader) fetch(ctx context.Context, repoURL, name, version string) (*chartv2.Chart, error) {
	if l.charts == nil {
		return nil, errNoFetcher
	}
	data, digest, err := l.charts.FetchChart(ctx, repoURL, name, version, l.passCredentials)
	if err != nil {
		return nil, err
	}
	if digest == "" {
		sum := sha256.Sum256(data)
		digest = "sha256:" + hex.EncodeToString(sum[:])
	}
	l.write([]byte("archive"))
	l.write([]byte(digest))
	ch, err := chartloader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("load chart archive of %s from %s: %w", name, repoURL, err)
	}
	if err := checkAPIVersion(ch); err != nil {
		return nil, err
	}
	sortDependencies(ch)
	return ch, nil
}

// loadFiles turns the files of a chart directory into a chart.
func loadFiles(files []*archive.BufferedFile) (*chartv2.Chart, error) {
	ch, err := chartloader.LoadFiles(files)
	if err != nil {
		return nil, err
	}
	if err := checkAPIVersion(ch); err != nil {
		return nil, err
	}
	sortDependencies(ch)
	return ch, nil
}

func checkAPIVersion(ch *chartv2.Chart) error {
	switch v := ch.Metadata.APIVersion; v {
	case chartv2.APIVersionV1, chartv2.APIVersionV2:
		return nil
	default:
		return fmt.Errorf("chart apiVersion %q is not supported (v1 and v2 are)", v)
	}
}

// sortDependencies orders the subcharts of ch and of its subcharts by name: the loader finds
// them in random order, and the order shows in the CRDs rendered.
func sortDependencies(ch *chartv2.Chart) {
	deps := slices.Clone(ch.Dependencies())
	slices.SortStableFunc(deps, func(a, b *chartv2.Chart) int { return strings.Compare(a.Name(), b.Name()) })
	ch.SetDependencies(deps...)
	for _, d := range deps {
		sortDependencies(d)
	}
}

// localChart is a chart directory of a snapshot, where file:// dependencies are found.
type localChart struct {
	fsys fs.FS
	dir  string
}

// resolveDependencies adds to ch the dependencies of its Chart.yaml that its charts/ directory
// lacks: file:// ones from the snapshot of local (nil for a packaged chart, which must hold
// them), the others fetched from their repositories at the version of Chart.lock, else of
// Chart.yaml. Like `helm dependency build`, it adds disabled dependencies too.
func (l *loader) resolveDependencies(ctx context.Context, ch *chartv2.Chart, local *localChart, stack []string) error {
	locked := map[[2]string]string{} // name, repository → version
	if ch.Lock != nil {
		for _, d := range ch.Lock.Dependencies {
			if d != nil {
				locked[[2]string{d.Name, d.Repository}] = d.Version
			}
		}
	}
	added := false
	for _, dep := range ch.Metadata.Dependencies {
		if dep == nil || hasSubchart(ch, dep.Name) {
			continue
		}
		sub, err := l.dependency(ctx, dep, locked[[2]string{dep.Name, dep.Repository}], local, stack)
		if err != nil {
			return fmt.Errorf("dependency %q: %w", dep.Name, err)
		}
		ch.AddDependency(sub)
		added = true
	}
	if added {
		sortDependencies(ch)
	}
	return nil
}

// hasSubchart reports whether ch holds a subchart called name, as Helm checks dependencies.
func hasSubchart(ch *chartv2.Chart, name string) bool {
	return slices.ContainsFunc(ch.Dependencies(), func(d *chartv2.Chart) bool { return d.Name() == name })
}

// dependency loads the missing dependency dep; lockedVersion is its version in Chart.lock.
func (l *loader) dependency(ctx context.Context, dep *chartv2.Dependency, lockedVersion string, local *localChart, stack []string) (*chartv2.Chart, error) {
	repo := dep.Repository
	switch {
	case strings.HasPrefix(repo, "file://"):
		if local == nil {
			return nil, fmt.Errorf("repository %q: a packaged chart must hold its file:// dependencies in charts/", repo)
		}
		rel := strings.TrimPrefix(repo, "file://")
		if path.IsAbs(rel) {
			return nil, fmt.Errorf("repository %q: must be relative to the chart directory", repo)
		}
		dir, err := inside(path.Join(local.dir, rel))
		if err != nil {
			return nil, fmt.Errorf("repository %q: %w", repo, err)
		}
		if slices.Contains(stack, dir) {
			return nil, fmt.Errorf("repository %q: dependency cycle through %s", repo, dir)
		}
		if len(stack) >= maxDependencyDepth {
			return nil, fmt.Errorf("repository %q: more than %d levels of file:// dependencies", repo, maxDependencyDepth)
		}
		sub, err := l.loadDir(ctx, local.fsys, dir, stack)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		if dep.Version != "" && !chartutil.IsCompatibleRange(dep.Version, sub.Metadata.Version) {
			return nil, fmt.Errorf("%s has version %s, which does not satisfy %q", dir, sub.Metadata.Version, dep.Version)
		}
		return sub, nil
	case strings.HasPrefix(repo, "https://"), strings.HasPrefix(repo, "http://"), strings.HasPrefix(repo, "oci://"):
		version := dep.Version
		if lockedVersion != "" {
			if dep.Version != "" && !chartutil.IsCompatibleRange(dep.Version, lockedVersion) {
				return nil, fmt.Errorf("the Chart.lock version %s does not satisfy %q of Chart.yaml; run helm dependency update", lockedVersion, dep.Version)
			}
			version = lockedVersion
		}
		return l.fetch(ctx, repo, dep.Name, version)
	case repo == "":
		return nil, errors.New("not in the chart's charts/ directory, and no repository to fetch it from")
	case strings.HasPrefix(repo, "@"), strings.HasPrefix(repo, "alias:"):
		return nil, fmt.Errorf("repository %q names a repository; use its URL (https://… or oci://…)", repo)
	default:
		return nil, fmt.Errorf("repository %q is not a URL (https://…, oci://… or file://…)", repo)
	}
}

// readChartDirectory reads the files of the chart directory dir as Helm does: .helmignore
// and the default rules apply, symbolic links are followed, and the whole chart may not exceed
// Helm's size limit.
func readChartDirectory(fsys fs.FS, dir string) ([]*archive.BufferedFile, error) {
	rules := ignore.Empty()
	data, err := fs.ReadFile(fsys, joinPath(dir, ignore.HelmIgnore))
	switch {
	case err == nil:
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("%s: %w", joinPath(dir, ignore.HelmIgnore), err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	rules.AddDefaults()

	budget := archive.MaxDecompressedChartSize
	var files []*archive.BufferedFile
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		entries, err := fs.ReadDir(fsys, joinPath(dir, rel))
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := joinPath(rel, e.Name())
			full := joinPath(dir, name)
			var fi fs.FileInfo
			if e.Type()&fs.ModeSymlink != 0 {
				fi, err = fs.Stat(fsys, full)
			} else {
				fi, err = e.Info()
			}
			if err != nil {
				return err
			}
			if rules.Ignore(name, fi) {
				continue
			}
			if fi.IsDir() {
				if depth >= maxDirectoryDepth {
					return fmt.Errorf("%s: more than %d levels of directories", full, maxDirectoryDepth)
				}
				if err := walk(name, depth+1); err != nil {
					return err
				}
				continue
			}
			if !fi.Mode().IsRegular() {
				return fmt.Errorf("%s: not a regular file", full)
			}
			if fi.Size() > budget {
				return fmt.Errorf("%s: the chart is larger than %d bytes", dir, archive.MaxDecompressedChartSize)
			}
			data, err := fs.ReadFile(fsys, full)
			if err != nil {
				return err
			}
			if budget -= int64(len(data)); budget < 0 {
				return fmt.Errorf("%s: the chart is larger than %d bytes", dir, archive.MaxDecompressedChartSize)
			}
			files = append(files, &archive.BufferedFile{Name: name, ModTime: fi.ModTime(), Data: bytes.TrimPrefix(data, utf8BOM)})
		}
		return nil
	}
	if err := walk(".", 0); err != nil {
		return nil, err
	}
	return files, nil
}

// joinPath joins a directory ("." for the root) and a path relative to it.
func joinPath(dir, rel string) string {
	switch {
	case dir == ".":
		return rel
	case rel == ".":
		return dir
	}
	return dir + "/" + rel
}

// inside cleans the slash-separated path p, which must stay inside its root.
func inside(p string) (string, error) {
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") || !fs.ValidPath(clean) {
		return "", errOutsideRoot
	}
	return clean, nil
}
