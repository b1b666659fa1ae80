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
//     siblings such as ../../base. The options of spec.source.kustomize are applied by a
//     generated kustomization, in memory, whose only resource is the directory; the
//     repository is never modified. Objects come in `kustomize build` order.
//
//     Remote bases, resources and components, named by Git URLs in the forms kustomize
//     accepts (github.com/org/repo//dir?ref=v1, https://host/org/repo.git//dir?ref=v1,
//     git::https://…, ssh://git@host/org/repo.git//dir?ref=v1, git@host:org/repo.git//dir;
//     ?version= for ?ref=), are fetched with Options.Remote, once per repository and ref in a
//     Render, and shown to kustomize as read-only directories beside the repository; GitHub
//     repositories are asked for as https://github.com/org/repo.git. A remote base may have
//     remote bases of its own, up to 10 deep, and its paths must stay inside its repository.
//     Plugin configurations may come from a remote base only as files or inline, not as
//     kustomization directories, and generators, transformers and validators may not be
//     remote: kustomize transforms such configurations before loading the files they name.
//     Without Options.Remote, remote references are refused (ErrRemoteNotSupported). Files to
//     download (an http(s) URL that names no Git repository, in resources or in patches,
//     generators and other fields), and file:// repositories, are always refused.
//
//     helmCharts (and the deprecated helmChartInflationGenerator) are rendered with
//     Options.Helm, in process, and their objects join the kustomization's resources, so
//     that its transformers apply to them. The chart is the directory chartHome/name of the
//     snapshot (helmGlobals.chartHome, by default "charts" in the kustomization's directory),
//     or chartHome/name-version/name for a chart with repo and version, where kustomize keeps
//     the charts it pulls; else the chart name of repo (http(s) or oci://). Values are those
//     of valuesFile (by default the chart's values.yaml, when the chart is in the snapshot),
//     with valuesInline merged in as valuesMerge says (override, merge or replace), then
//     additionalValuesFiles in order. The release is releaseName, else the chart's name; its
//     namespace is the chart's namespace, else the kustomization's, else the one of the
//     kustomization that uses it as a base (as kustomize passes it down), else
//     Options.Namespace. The kustomization's namespace is also set on the chart's objects, as
//     kustomize did before v5.8 (kubernetes-sigs/kustomize#6058). includeCRDs, skipTests,
//     skipHooks, kubeVersion and apiVersions are honoured. Without Options.Helm, helmCharts
//     are refused (ErrHelmChartsNotSupported), as are HelmChartInflationGenerator
//     configurations among generators in any case.
//
//   - A Helm chart, when spec.source.helm is set or the directory holds Chart.yaml: rendered
//     with Options.Helm; without it, refused (ErrHelmNotSupported).
//
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
// "apps/web/deploy.yaml: document 2: missing kind". A file of a remote base is named by its
// Git URL, as in "https://github.com/org/base.git//web/kustomization.yaml?ref=v1"; a remote
// base or chart that cannot be fetched is an error of the kustomization that names it, as in
// `envs/prod/kustomization.yaml: resources[0] "github.com/org/base//web?ref=v1": …`. A source
// path that is not a directory of the repository, or a remote base's directory missing from
// its repository, gives an error wrapping ErrPathNotFound.
//
// The package is pure apart from kustomize and Options: it reads only the snapshots (the
// repository's, and those of Options.Remote), renders charts only with Options.Helm, has no
// client and does not log. Render may be called concurrently. kustomize keeps its OpenAPI
// schema in a process global; a kustomization that sets openapi therefore renders alone, and
// the schema is reset after it. Options.Remote and Options.Helm are called on the calling
// goroutine, outside that exclusion, so a slow fetch holds up no other Render.
package render
