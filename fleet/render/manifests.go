package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// document is one YAML document of a file.
type document struct {
	// index is the 1-based position of the document in the file.
	index int
	// line is the line of the file where the document's text starts.
	line int
	// text is the document without its "---" line.
	text []byte
}

var bom = []byte("\xef\xbb\xbf")

// splitDocuments splits a YAML stream at its "---" lines. Comments and blank lines before the
// first "---" are not a document of their own, as in YAML; every document after a "---" is
// counted, even an empty one, so that the numbers match what a reader counts.
func splitDocuments(data []byte) []document {
	data = bytes.TrimPrefix(data, bom)
	var (
		docs    []document
		cur     bytes.Buffer
		start   = 1
		lineNo  = 0
		opened  = false // whether the current document was opened by a "---"
		content = false // whether the current document has more than blanks and comments
	)
	flush := func() {
		if opened || content || len(docs) > 0 {
			docs = append(docs, document{index: len(docs) + 1, line: start, text: bytes.Clone(cur.Bytes())})
		}
		cur.Reset()
	}
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i+1], data[i+1:]
		} else {
			data = nil
		}
		lineNo++
		if rest, ok := separatorRest(line); ok {
			flush()
			opened, content, start = true, false, lineNo
			if len(bytes.TrimSpace(rest)) > 0 && !bytes.HasPrefix(bytes.TrimSpace(rest), []byte("#")) {
				// "--- value": the value belongs to the new document; keep its column.
				cur.WriteString("   ")
				cur.Write(rest)
				content = true
			} else {
				start = lineNo + 1
			}
			continue
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 && trimmed[0] != '#' {
			content = true
		}
		cur.Write(line)
	}
	if opened || content {
		flush()
	}
	return docs
}

// separatorRest reports whether line is a document separator, "---" alone or followed by a
// blank, and returns what follows the "---".
func separatorRest(line []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	if !ok {
		return nil, false
	}
	if len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r' {
		return rest, true
	}
	return nil, false
}

// yamlToJSON converts one YAML document to JSON. It never panics: a panic in the YAML library
// on hostile input becomes an error.
func yamlToJSON(text []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("yaml: cannot parse document: %v", r)
		}
	}()
	return yaml.YAMLToJSON(text)
}

// parseYAML returns the objects of the YAML file name, in document order. Empty and
// comment-only documents are skipped; List documents are expanded into their items.
func parseYAML(name string, data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, doc := range splitDocuments(data) {
		j, err := yamlToJSON(doc.text)
		if err != nil {
			// Parse again with the document where it sits in the file, so that the line
			// numbers of the error count from the top of the file. This costs nothing on the
			// success path.
			padded := append(bytes.Repeat([]byte("\n"), doc.line-1), doc.text...)
			if _, perr := yamlToJSON(padded); perr != nil {
				err = perr
			}
			return nil, &Error{File: name, Document: doc.index, Err: err}
		}
		v, err := decodeJSON(j)
		if err != nil {
			return nil, &Error{File: name, Document: doc.index, Err: err}
		}
		if v == nil {
			continue // empty or comment-only
		}
		objs, err = appendObjects(objs, v, "")
		if err != nil {
			return nil, &Error{File: name, Document: doc.index, Err: err}
		}
	}
	return objs, nil
}

// parseJSON returns the objects of the JSON file name: one object, or a List. An empty file
// holds none.
func parseJSON(name string, data []byte) ([]*unstructured.Unstructured, error) {
	data = bytes.TrimPrefix(data, bom)
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	v, err := decodeJSON(data)
	if err != nil {
		// The decoder above has its own error types; the standard one tells where a syntax
		// error is.
		var syntax *json.SyntaxError
		if serr := json.Unmarshal(data, new(json.RawMessage)); errors.As(serr, &syntax) {
			line := 1 + bytes.Count(data[:min(max(int(syntax.Offset), 0), len(data))], []byte("\n"))
			err = fmt.Errorf("json: line %d: %w", line, serr)
		}
		return nil, &Error{File: name, Err: err}
	}
	objs, err := appendObjects(nil, v, "")
	if err != nil {
		return nil, &Error{File: name, Err: err}
	}
	return objs, nil
}

// decodeJSON decodes JSON the way the API machinery does: whole numbers become int64 and the
// others float64, so that the result is a valid unstructured object.
func decodeJSON(data []byte) (any, error) {
	var v any
	if err := utiljson.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// appendObjects appends the object v, or the items of the List v, to objs. where is the
// position of v in its document ("" for the document itself, "items[3]" for an item).
func appendObjects(objs []*unstructured.Unstructured, v any, where string) ([]*unstructured.Unstructured, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return objs, located(where, fmt.Errorf("not an object but %s", jsonKind(v)))
	}
	if items, ok := listItems(m); ok {
		for i, item := range items {
			var err error
			if objs, err = appendObjects(objs, item, fmt.Sprintf("%sitems[%d]", prefix(where), i)); err != nil {
				return objs, err
			}
		}
		return objs, nil
	}
	if err := checkObject(m); err != nil {
		return objs, located(where, err)
	}
	return append(objs, &unstructured.Unstructured{Object: m}), nil
}

// listItems returns the items of a List: an object of kind List, or of a kind ending in "List"
// with an items array, like a PodList.
func listItems(m map[string]any) ([]any, bool) {
	kind, _ := m["kind"].(string)
	if kind == "List" {
		if m["items"] == nil {
			return nil, true
		}
		items, ok := m["items"].([]any)
		return items, ok
	}
	if strings.HasSuffix(kind, "List") {
		items, ok := m["items"].([]any)
		return items, ok
	}
	return nil, false
}

// checkObject checks the fields every Kubernetes object needs.
func checkObject(m map[string]any) error {
	for _, field := range []string{"apiVersion", "kind"} {
		if err := requireString(m, field, field); err != nil {
			return err
		}
	}
	md, ok := m["metadata"]
	if !ok || md == nil {
		return errors.New("missing metadata.name")
	}
	meta, ok := md.(map[string]any)
	if !ok {
		return fmt.Errorf("metadata is not an object but %s", jsonKind(md))
	}
	if meta["generateName"] != nil && meta["name"] == nil {
		return requireString(meta, "generateName", "metadata.generateName")
	}
	return requireString(meta, "name", "metadata.name")
}

// requireString checks that m[key] is a non-empty string; field names it in errors.
func requireString(m map[string]any, key, field string) error {
	v, ok := m[key]
	if !ok || v == nil {
		return errors.New("missing " + field)
	}
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("%s is not a string but %s", field, jsonKind(v))
	}
	if s == "" {
		return errors.New("missing " + field)
	}
	return nil
}

func located(where string, err error) error {
	if where == "" {
		return err
	}
	return fmt.Errorf("%s: %w", where, err)
}

func prefix(where string) string {
	if where == "" {
		return ""
	}
	return where + "."
}

// jsonKind names the JSON type of v for error messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}
