package helm

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// notesFile is the template whose output Helm prints after an install, not a manifest.
const notesFile = "NOTES.txt"

// hookEvents are the values of helm.sh/hook that Helm knows; it leaves out objects with any
// other. test-success is Helm 2's name for test.
var hookEvents = map[string]bool{
	string(release.HookPreInstall):   true,
	string(release.HookPostInstall):  true,
	string(release.HookPreDelete):    true,
	string(release.HookPostDelete):   true,
	string(release.HookPreUpgrade):   true,
	string(release.HookPostUpgrade):  true,
	string(release.HookPreRollback):  true,
	string(release.HookPostRollback): true,
	string(release.HookTest):         true,
	"test-success":                   true,
}

// installRank is the position of each kind in Helm's install order.
var installRank = func() map[string]int {
	m := make(map[string]int, len(releaseutil.InstallOrder))
	for i, k := range releaseutil.InstallOrder {
		m[k] = i
	}
	return m
}()

// chartObjects turns the rendered templates of ch into objects, as `helm template` prints
// them: the CRDs of the crds/ directories (with flags.includeCRDs), then the manifests, then
// the hooks, manifests and hooks each in Helm's install order by kind and otherwise in file
// and document order. NOTES.txt and partials are left out, and so are hooks Helm does not
// know and, with flags.skipTests, test hooks.
func chartObjects(ch *chartv2.Chart, rendered map[string]string, flags renderFlags) ([]*unstructured.Unstructured, error) {
	prefix := ch.Name() + "/"
	var crds, manifests, hooks []*unstructured.Unstructured
	if flags.includeCRDs {
		for _, crd := range ch.CRDObjects() {
			objs, err := parseManifests(strings.TrimPrefix(crd.Filename, prefix), string(crd.File.Data))
			if err != nil {
				return nil, err
			}
			crds = append(crds, objs...)
		}
	}

	names := make([]string, 0, len(rendered))
	for name, content := range rendered {
		if strings.HasSuffix(name, notesFile) || strings.HasPrefix(path.Base(name), "_") || strings.TrimSpace(content) == "" {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		objs, err := parseManifests(strings.TrimPrefix(name, prefix), rendered[name])
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			switch hook, known, test := hookOf(obj); {
			case !hook:
				manifests = append(manifests, obj)
			case !known, test && flags.skipTests:
			default:
				hooks = append(hooks, obj)
			}
		}
	}
	sortByKind(manifests)
	sortByKind(hooks)
	return slices.Concat(crds, manifests, hooks), nil
}

// hookOf reports whether obj is a Helm hook, whether Helm knows all its events, and whether
// one of them is test.
func hookOf(obj *unstructured.Unstructured) (hook, known, test bool) {
	value, hook := obj.GetAnnotations()[release.HookAnnotation]
	if !hook {
		return false, false, false
	}
	known = true
	for event := range strings.SplitSeq(value, ",") {
		event = strings.ToLower(strings.TrimSpace(event))
		known = known && hookEvents[event]
		test = test || event == string(release.HookTest) || event == "test-success"
	}
	return true, known, test
}

// sortByKind sorts objs in Helm's install order: known kinds in their order, then the others
// by kind; objects of one kind keep their order.
func sortByKind(objs []*unstructured.Unstructured) {
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		ka, kb := a.GetKind(), b.GetKind()
		ra, aok := installRank[ka]
		rb, bok := installRank[kb]
		switch {
		case aok && bok:
			return ra - rb
		case aok:
			return -1
		case bok:
			return 1
		}
		return strings.Compare(ka, kb)
	})
}

// documentSeparator splits a rendered template into YAML documents exactly as Helm does.
var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*`)

// parseManifests returns the objects of the rendered file name: one per YAML document, a List
// standing for its items. Empty and comment-only documents are skipped.
func parseManifests(name, content string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	docs := documentSeparator.Split(content, -1)
	// Documents count from 1; text before the first "---" is a document unless it is blank.
	first := 1
	if strings.TrimSpace(docs[0]) == "" {
		first = 0
	}
	for i, doc := range docs {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		n := i + first
		v, err := decodeYAML(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, n, err)
		}
		if v == nil {
			continue
		}
		if objs, err = appendObjects(objs, v, ""); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, n, err)
		}
	}
	return objs, nil
}

// decodeYAML decodes one YAML document as the API machinery decodes JSON: whole numbers
// become int64. A panic of the YAML library on hostile input becomes an error.
func decodeYAML(doc string) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("yaml: cannot parse document: %v", r)
		}
	}()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return nil, err
	}
	err = utiljson.Unmarshal(j, &v)
	return v, err
}

// appendObjects appends the object v, or the items of the List v, to objs; where locates v
// in its document for errors.
func appendObjects(objs []*unstructured.Unstructured, v any, where string) ([]*unstructured.Unstructured, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return objs, located(where, fmt.Errorf("not an object but %T", v))
	}
	kind, _ := m["kind"].(string)
	if items, ok := m["items"].([]any); ok && strings.HasSuffix(kind, "List") || kind == "List" {
		for i, item := range items {
			var err error
			if objs, err = appendObjects(objs, item, fmt.Sprintf("%sitems[%d]", dotted(where), i)); err != nil {
				return objs, err
			}
		}
		return objs, nil
	}
	obj := &unstructured.Unstructured{Object: m}
	switch {
	case obj.GetAPIVersion() == "":
		return objs, located(where, errors.New("missing apiVersion"))
	case kind == "":
		return objs, located(where, errors.New("missing kind"))
	case obj.GetName() == "" && obj.GetGenerateName() == "":
		return objs, located(where, errors.New("missing metadata.name"))
	}
	return append(objs, obj), nil
}

// dotted returns where followed by a dot, or "" for the document itself.
func dotted(where string) string {
	if where == "" {
		return ""
	}
	return where + "."
}

func located(where string, err error) error {
	if where == "" {
		return err
	}
	return fmt.Errorf("%s: %w", where, err)
}
