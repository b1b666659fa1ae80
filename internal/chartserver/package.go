package chartserver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path"
	"sort"
	"time"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"sigs.k8s.io/yaml"
)

// fileTime is the modification time written for every file of a chart made
// by [Package], so that the same files always give the same archive and
// digest.
var fileTime = time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)

// Chart is a packaged chart: the .tgz archive `helm package` writes, and
// what a repository index says about it.
type Chart struct {
	// Name and Version come from the chart's Chart.yaml.
	Name    string
	Version string
	// Archive is the gzipped tar archive.
	Archive []byte
	// Digest is the hex SHA-256 of Archive, as index.yaml carries it.
	Digest string

	meta *chart.Metadata
}

// Filename is the archive's conventional name, NAME-VERSION.tgz.
func (c *Chart) Filename() string { return c.Name + "-" + c.Version + ".tgz" }

// Package packages a chart made of files (path within the chart → content)
// with Helm's own loader and archiver. A Chart.yaml is written for name and
// version unless files has one; values.yaml and templates/ are taken as
// given. The same files always produce the same archive.
func Package(name, version string, files map[string]string) (*Chart, error) {
	if _, ok := files["Chart.yaml"]; !ok {
		meta, err := yaml.Marshal(chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: version, Type: "application"})
		if err != nil {
			return nil, fmt.Errorf("chartserver: Chart.yaml of %s: %w", name, err)
		}
		files = maps.Clone(files)
		if files == nil {
			files = map[string]string{}
		}
		files["Chart.yaml"] = string(meta)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	buffered := make([]*archive.BufferedFile, 0, len(names))
	for _, n := range names {
		buffered = append(buffered, &archive.BufferedFile{Name: path.Clean(n), ModTime: fileTime, Data: []byte(files[n])})
	}
	c, err := loader.LoadFiles(buffered)
	if err != nil {
		return nil, fmt.Errorf("chartserver: load chart %s: %w", name, err)
	}
	if c.Name() != name || c.Metadata.Version != version {
		return nil, fmt.Errorf("chartserver: Chart.yaml says %s %s, not %s %s", c.Name(), c.Metadata.Version, name, version)
	}
	return save(c)
}

// PackageDir packages the chart in dir as `helm package dir` would.
func PackageDir(dir string) (*Chart, error) {
	c, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("chartserver: load chart %s: %w", dir, err)
	}
	return save(c)
}

// save archives c through a scratch directory, since Helm's archiver
// writes files.
func save(c *chart.Chart) (*Chart, error) {
	tmp, err := os.MkdirTemp("", "navarch-chartserver-")
	if err != nil {
		return nil, fmt.Errorf("chartserver: %w", err)
	}
	defer os.RemoveAll(tmp)
	file, err := chartutil.Save(c, tmp)
	if err != nil {
		return nil, fmt.Errorf("chartserver: package %s: %w", c.Name(), err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("chartserver: package %s: %w", c.Name(), err)
	}
	sum := sha256.Sum256(data)
	return &Chart{
		Name:    c.Name(),
		Version: c.Metadata.Version,
		Archive: data,
		Digest:  hex.EncodeToString(sum[:]),
		meta:    c.Metadata,
	}, nil
}
