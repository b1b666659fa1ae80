// Package jsontree reads and edits JSON documents held as plain Go values: map[string]any,
// []any and scalars, as encoding/json and unstructured.Unstructured decode them.
//
// A location in a document is a path, a []any whose elements are map keys (string) and list
// indexes (int, or a string of digits), the form jq's path() returns. ParsePointer and
// FormatPointer convert between paths and RFC 6901 JSON pointers; JQ selects paths with a
// jq expression; Lookup, Copy and Remove follow a path through a document. The package is
// shared by the features that let users name fields to leave alone: an ApplicationSet's
// ignoreApplicationDifferences and an Application's ignoreDifferences.
package jsontree
