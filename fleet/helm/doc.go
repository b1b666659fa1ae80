// Package helm renders Helm charts in process, as `helm template` does, for the sources of
// Applications. A Renderer implements render.HelmRenderer: fleet/render hands it a chart
// directory of a Git snapshot, or a chart of a Helm repository or OCI registry, with
// spec.source.helm, the release and the destination cluster's capabilities, and gets the
// objects back.
//
//	r := helm.New(helm.Options{Charts: fetcher})
//	objs, err := r.RenderChart(ctx, req)
//
// # Charts and dependencies
//
// A chart directory is read from the snapshot as Helm reads a directory (.helmignore applies,
// symbolic links are followed inside the snapshot); a repository chart is fetched, as an
// archive, through Options.Charts. Dependencies of Chart.yaml that the chart's charts/
// directory already holds are used as they are. Missing ones are loaded like
// `helm dependency build` would: file:// ones from the same snapshot (they must stay inside
// it, and their own missing dependencies are loaded the same way), the others fetched through
// Options.Charts from their https://, http:// or oci:// repository, at the version of
// Chart.lock when it pins one, else at the version constraint of Chart.yaml. A repository
// named by an alias ("@stable", "alias:stable") is refused: navarch has no repository list.
//
// # Values
//
// Later sources win: the chart's values, the value files in order, values, valuesObject
// (merged over values), the parameters (those without forceString first, as Helm applies
// --set before --set-string; commas in a value do not split it unless the value is a {a,b}
// list), then the file parameters (the file's content as a string, as --set-file). Value file
// paths are relative to the chart directory, or to the repository root with a leading "/";
// "$ref/path" is path in the source with that ref; for a repository chart they are files of
// the chart. A path may be a glob (expanded in sorted order) and may not leave its repository
// or chart. A missing file is an error wrapping ErrValueFileNotFound unless
// ignoreMissingValueFiles is set.
//
// The values are checked against the values.schema.json of the chart and of its subcharts
// unless skipSchemaValidation is set (errors wrap ErrValuesSchema). Unlike Helm, references
// of a schema to other files or URLs are never read: such a reference accepts any value, and a
// schema that needs part of another document is not enforced. Rendering never reads the
// controller's files or reaches the network, except through Options.Charts.
//
// # Output
//
// Templates render with the release's name and namespace as an install (revision 1), and with
// Helm's default capabilities plus the Kubernetes version and API versions of
// spec.source.helm, else of the destination cluster. There is no cluster client: lookup
// returns nothing, as in `helm template`. The objects are, in order: the CRDs of the crds/
// directories of the chart and its subcharts (when the request includes CRDs and skipCrds is
// not set), the templates' objects in Helm's install order by kind, then the hooks in the same
// order. Hooks keep their helm.sh/hook annotations, which the sync engine maps to its phases;
// hooks with events Helm does not know are left out, as Helm does, and so are test hooks with
// skipTests. NOTES.txt and partials produce nothing. Objects keep the namespace the chart gives
// them, none if it gives none. A List stands for its items.
//
// Errors name the chart ("chart charts/web: …"); a template that fails is a *TemplateError
// naming the template's path in the chart and its line. A chart that fails returns no objects.
//
// # Cache and metrics
//
// Renders are cached, least recently used first out, by the identity of the chart (a hash of
// every file read, and the digests of the archives fetched), the values, the release, the
// capabilities and the options. A cache hit returns the objects of the first render: callers
// must deep-copy an object before changing it. navarch_helm_renders_total counts renders by
// result (rendered, cached, failed) in controller-runtime's registry; Renderer.Stats gives
// the counts of one Renderer.
//
// The Helm library logs values through log/slog's default logger and the standard log
// package; a process that must not log them calls DiscardLibraryLogs once, as the controller
// does.
package helm
