package render

import (
	"errors"
	"strconv"
)

// Error is a rendering error in one file or directory of the repository. Its message reads
// "apps/web/deploy.yaml: document 2: missing kind" or, for a whole file or directory,
// "apps/web: kustomize: …".
type Error struct {
	// File is the slash-separated path, relative to the repository root, of the file (a manifest,
	// a kustomization) or of the directory (a kustomization directory) that failed.
	File string
	// Document is the 1-based position of the YAML document in File, counting every document
	// that a "---" line opens; 0 means the whole file or directory.
	Document int
	// Err is what went wrong. Line numbers in YAML syntax errors count from the top of File.
	Err error
}

// Error returns "file: document N: error", or "file: error" when Document is 0.
func (e *Error) Error() string {
	if e.Document > 0 {
		return e.File + ": document " + strconv.Itoa(e.Document) + ": " + e.Err.Error()
	}
	return e.File + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

var (
	// ErrPathNotFound is returned, wrapped, when the source path is not a directory of the
	// repository, or the directory of a remote kustomize base is not one of its repository.
	ErrPathNotFound = errors.New("no such directory in the repository")

	// ErrHelmNotSupported is returned, wrapped, for a Helm source (one with spec.source.helm
	// set, or whose directory holds a Chart.yaml) when Options.Helm is nil.
	ErrHelmNotSupported = errors.New("helm sources are not supported yet")

	// ErrHelmChartsNotSupported is returned, wrapped, for a kustomization that inflates Helm
	// charts (helmCharts or helmChartInflationGenerator) when Options.Helm is nil, and for
	// HelmChartInflationGenerator plugin configurations, which only kustomize's helm command
	// could inflate.
	ErrHelmChartsNotSupported = errors.New("helm chart inflation in kustomizations is not supported")

	// ErrRemoteNotSupported is returned, wrapped, for a kustomization that refers to a remote
	// base, resource or file (a Git URL such as github.com/org/repo//path, or an HTTP URL) when
	// Options.Remote is nil. With Options.Remote, it is returned for files to download, for
	// file:// repositories and for Git URLs kustomize would not accept: rendering never
	// reaches the network but through Options.Remote.
	ErrRemoteNotSupported = errors.New("remote kustomize references are not supported; use a path inside the repository")
)
