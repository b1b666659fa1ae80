package render

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/types"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/kustomize/kyaml/yaml/merge2"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// The helmCharts of a kustomization are rendered by Options.Helm, in process, instead of by
// kustomize's HelmChartInflationGenerator, which runs the helm command. The request is built
// as that generator builds its helm command line; the rendered objects become a file of
// resources of the kustomization (see kustomizeRun.rewrite), so that its transformers apply to
// them.

// valuesMerge options of helmCharts.
const (
	valuesMergeOverride = "override"
	valuesMergeMerge    = "merge"
	valuesMergeReplace  = "replace"
)

// helmHookAnnotation marks Helm hooks, which skipHooks leaves out.
const helmHookAnnotation = "helm.sh/hook"

// chart returns the rendering of c, an entry of helmCharts of the kustomization in dir
// (absolute, as kustomize sees it), with the kustomization's helmGlobals. c.Namespace is the
// release namespace, defaults applied. The chart is a directory of the snapshot at
// chartHome/name (chartHome/name-version/name for a chart with repo and version, where
// kustomize keeps the charts it pulls), else the chart name of repo.
func (r *kustomizeRun) chart(dir string, c types.HelmChart, globals *types.HelmGlobals) (*renderedChart, error) {
	if c.Name == "" {
		return nil, errors.New("name: must not be empty")
	}
	merge := cmp.Or(c.ValuesMerge, valuesMergeOverride)
	if merge != valuesMergeOverride && merge != valuesMergeMerge && merge != valuesMergeReplace {
		return nil, fmt.Errorf("valuesMerge %q: must be override, merge or replace", c.ValuesMerge)
	}
	home := types.HelmDefaultHome
	if globals != nil && globals.ChartHome != "" {
		home = globals.ChartHome
	}
	if path.IsAbs(home) {
		return nil, fmt.Errorf("helmGlobals.chartHome %q: must be relative to the kustomization", home)
	}
	chartHome := path.Join(dir, home)
	if c.Repo != "" && c.Version != "" {
		chartHome = path.Join(chartHome, c.Name+"-"+c.Version)
	}
	chartDir := path.Join(chartHome, c.Name)

	var (
		chart         HelmChart
		defaultValues []byte // the values.yaml of a chart of the snapshot
	)
	switch l := r.fsys.locate(chartDir); {
	case l.area == areaMount && r.fsys.IsDir(chartDir):
		chart = HelmChart{FS: r.fsys.mounts[l.root], Dir: l.rel, Source: r.build.displayName(chartDir)}
		defaultValues, _ = r.fsys.readSnapshotFile(path.Join(chartDir, "values.yaml"))
	case c.Repo != "":
		chart = HelmChart{RepoURL: c.Repo, Name: c.Name, Version: c.Version,
			Source: strings.TrimSpace(c.Repo + " " + c.Name + " " + c.Version)}
	default:
		return nil, fmt.Errorf("no chart at %s, and no repo to pull it from", r.build.displayName(chartDir))
	}

	values, err := r.chartValues(dir, c, merge, defaultValues)
	if err != nil {
		return nil, err
	}
	helm := &navarchv1.ApplicationSourceHelm{
		ReleaseName: cmp.Or(c.ReleaseName, c.Name),
		Namespace:   c.Namespace,
		SkipCrds:    !c.IncludeCRDs,
		SkipTests:   c.SkipTests,
		KubeVersion: c.KubeVersion,
		APIVersions: c.ApiVersions,
	}
	if len(values) > 0 {
		raw, err := json.Marshal(values)
		if err != nil {
			return nil, fmt.Errorf("values: %w", err)
		}
		helm.ValuesObject = &runtime.RawExtension{Raw: raw}
	}
	req := HelmRequest{
		Chart:        chart,
		Options:      helm,
		ReleaseName:  helm.ReleaseName,
		Namespace:    helm.Namespace,
		Capabilities: r.build.opts.Capabilities,
		IncludeCRDs:  c.IncludeCRDs,
	}

	key, err := json.Marshal(struct {
		Root, Dir, RepoURL, Name, Version string
		Options                           *navarchv1.ApplicationSourceHelm
		SkipHooks                         bool
	}{r.fsys.locate(chartDir).root, chart.Dir, chart.RepoURL, chart.Name, chart.Version, helm, c.SkipHooks})
	if err != nil {
		return nil, err
	}
	if rc, ok := r.build.charts[string(key)]; ok {
		return rc, nil
	}
	sum := sha256.Sum256(key)
	rc := &renderedChart{req: req, skipHooks: c.SkipHooks, file: helmRoot + "/" + hex.EncodeToString(sum[:8]) + ".yaml"}
	r.build.charts[string(key)] = rc
	return rc, nil
}

// chartValues returns the values of c as kustomize passes them to helm: valuesFile (by
// default the chart's own values.yaml), with valuesInline merged in as valuesMerge says, then
// additionalValuesFiles in order. chartValues is the chart's values.yaml, if the chart is in
// the snapshot.
func (r *kustomizeRun) chartValues(dir string, c types.HelmChart, merge string, chartValues []byte) (map[string]any, error) {
	read := func(field, name string) ([]byte, error) {
		if path.IsAbs(name) {
			return nil, fmt.Errorf("%s %q: must be relative to the kustomization", field, name)
		}
		data, err := r.fsys.readSnapshotFile(path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", field, name, unwrapPathError(err))
		}
		return data, nil
	}
	file, field := chartValues, "values.yaml of the chart"
	if c.ValuesFile != "" {
		var err error
		if file, err = read("valuesFile", c.ValuesFile); err != nil {
			return nil, err
		}
		field = fmt.Sprintf("valuesFile %q", c.ValuesFile)
	}

	var (
		values map[string]any
		err    error
	)
	switch {
	case len(c.ValuesInline) == 0:
		values, err = parseValues(file)
	case merge == valuesMergeReplace:
		values = c.ValuesInline
	default:
		values, err = mergeInlineValues(file, c.ValuesInline, merge)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}

	for i, name := range c.AdditionalValuesFiles {
		field := fmt.Sprintf("additionalValuesFiles[%d]", i)
		data, err := read(field, name)
		if err != nil {
			return nil, err
		}
		more, err := parseValues(data)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", field, name, err)
		}
		values = mergeValues(values, more)
	}
	return values, nil
}

// parseValues parses a values file; an empty one holds no values.
func parseValues(data []byte) (map[string]any, error) {
	j, err := yamlToJSON(data)
	if err != nil {
		return nil, err
	}
	v, err := decodeJSON(j)
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return v, nil
	default:
		return nil, fmt.Errorf("values are %s, not an object", jsonKind(v))
	}
}

// mergeInlineValues merges inline into the values file data as kustomize does: with
// "override", inline wins; with "merge", the file wins.
func mergeInlineValues(data []byte, inline map[string]any, merge string) (map[string]any, error) {
	file := kyaml.NewMapRNode(nil)
	if len(bytes.TrimSpace(data)) > 0 {
		var err error
		if file, err = kyaml.Parse(string(data)); err != nil {
			return nil, err
		}
	}
	in, err := kyaml.FromMap(inline)
	if err != nil {
		return nil, fmt.Errorf("valuesInline: %w", err)
	}
	// merge2.Merge overrides dest with src.
	var out *kyaml.RNode
	if merge == valuesMergeOverride {
		out, err = merge2.Merge(in, file.Copy(), kyaml.MergeOptions{})
	} else {
		out, err = merge2.Merge(file, in.Copy(), kyaml.MergeOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("merging valuesInline: %w", err)
	}
	j, err := out.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return parseValues(j)
}

// mergeValues merges src into a copy of dst as helm merges values files: maps are merged
// key by key, src wins for anything else.
func mergeValues(dst, src map[string]any) map[string]any {
	out := maps.Clone(dst)
	if out == nil {
		out = make(map[string]any, len(src))
	}
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := out[k].(map[string]any); ok {
				out[k] = mergeValues(dm, sm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// chartStream returns objs as a YAML stream, without Helm hooks if skipHooks; nil if there
// is nothing left.
func chartStream(objs []*unstructured.Unstructured, skipHooks bool) ([]byte, error) {
	var stream []byte
	for _, obj := range objs {
		if obj == nil {
			continue
		}
		if _, hook := obj.GetAnnotations()[helmHookAnnotation]; hook && skipHooks {
			continue
		}
		doc, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", obj.GetKind(), obj.GetName(), err)
		}
		stream = slices.Concat(stream, []byte("---\n"), doc)
	}
	return stream, nil
}
