// Package render turns the source directory of an Application, inside a snapshot of its Git
// repository, into the Kubernetes objects to sync. The fleet reconciler calls Render once per
// Application and revision, then diffs the objects against the destination cluster.
//
// The directory is rendered in one of three ways:
//
//   - A kustomization, when it holds kustomization.yaml, kustomization.yml or Kustomization:
//     kustomize runs in process (sigs.k8s.io/kustomize/api/krusty) over a read-only view of
//     the snapshot; it never runs git, exec or KRM-function plugins, or Helm, and never reaches
//     the network. A kustomization may use any path inside the repository, including
//     siblings such as ../../base, but remote bases, resources and files are refused
//     (ErrRemoteNotSupported), as are helmCharts (ErrHelmChartsNotSupported). The options
//     of spec.source.kustomize are applied by a generated kustomization, in memory, whose only
//     resource is the directory; the repository is never modified. Objects come in
//     `kustomize build` order.
//   - A Helm chart, when spec.source.helm is set or the directory holds Chart.yaml: not
//     supported yet (ErrHelmNotSupported).
//   - Otherwise, a directory of plain manifests: the *.yaml, *.yml and *.json files, sorted by
//     path, of the directory, or of its whole tree with spec.source.directory.recurse (symbolic
//     links to directories are not followed, and kustomization files of subdirectories are
//     skipped). spec.source.directory.include and exclude are globs matched against the path
//     relative to the directory: `*` does not cross "/", `**` does, and `{a,b}` lists
//     alternatives; exclude wins. YAML files may hold several documents; empty and
//     comment-only documents are skipped. A List (kind List, or a kind ending in "List" with
//     items) stands for its items. Every object needs apiVersion, kind and metadata.name (or
//     metadata.generateName). spec.source.directory is ignored for kustomizations.
//
// Errors in a file, or from kustomize, are *Error values that name the file (or the
// kustomization's directory) and the YAML document, as in
// "apps/web/deploy.yaml: document 2: missing kind". A source path that is not a directory of
// the repository gives an error wrapping ErrPathNotFound.
//
// The package is pure apart from kustomize: it reads only the snapshot, has no client and does
// not log. Render may be called concurrently. kustomize keeps its OpenAPI schema in a process
// global; a kustomization that sets openapi therefore renders alone, and the schema is reset
// after it.
package render
