package githubserver

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// GitHub's page sizes for list endpoints.
const (
	defaultPerPage = 30
	maxPerPage     = 100
)

// paginate returns the page of items a list request asks for (per_page,
// default 30, at most 100; page, from 1) and, when there is more than one
// page, GitHub's Link header with the prev, next, last and first pages. The
// page is never nil, so it encodes as [] when empty.
func paginate[T any](r *http.Request, items []T) ([]T, http.Header) {
	q := r.URL.Query()
	size := queryInt(q, "per_page", defaultPerPage)
	if size > maxPerPage {
		size = maxPerPage
	}
	number := queryInt(q, "page", 1)
	last := max(1, (len(items)+size-1)/size)

	out := []T{}
	if start := (number - 1) * size; start < len(items) {
		out = append(out, items[start:min(start+size, len(items))]...)
	}

	var links []string
	link := func(page int, rel string) {
		q.Set("page", strconv.Itoa(page))
		u := url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: q.Encode()}
		links = append(links, fmt.Sprintf("<%s>; rel=%q", u.String(), rel))
	}
	if number > 1 {
		link(number-1, "prev")
	}
	if number < last {
		link(number+1, "next")
		link(last, "last")
	}
	if number > 1 {
		link(1, "first")
	}
	if len(links) == 0 {
		return out, nil
	}
	return out, http.Header{"Link": {strings.Join(links, ", ")}}
}

// queryInt reads a positive integer query parameter; anything else gives def.
func queryInt(q url.Values, name string, def int) int {
	n, err := strconv.Atoi(q.Get(name))
	if err != nil || n < 1 {
		return def
	}
	return n
}
