package repo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	helmrepo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"
)

// indexCache holds the parsed index.yaml of each HTTP repository, with the
// validators to re-fetch it conditionally.
type indexCache struct {
	mu      sync.Mutex
	entries map[string]*cachedIndex // by repository key
	flight  flight[*cachedIndex]
}

type cachedIndex struct {
	index        *helmrepo.IndexFile
	etag         string
	lastModified string
	fetched      time.Time
}

func (ic *indexCache) get(key string) *cachedIndex {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	return ic.entries[key]
}

// expire makes the cached index of key stale, so that the next lookup asks the repository
// again (conditionally, with the copy's validators) instead of answering from the copy.
func (ic *indexCache) expire(key string) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if e := ic.entries[key]; e != nil {
		stale := *e
		stale.fetched = time.Time{}
		ic.entries[key] = &stale
	}
}

func (ic *indexCache) set(key string, e *cachedIndex) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if ic.entries == nil {
		ic.entries = map[string]*cachedIndex{}
	}
	ic.entries[key] = e
}

// index returns the index of r, fetching it when the cached copy is older
// than the TTL or refresh is set.
func (c *Client) index(ctx context.Context, r *repository, refresh bool) (*helmrepo.IndexFile, error) {
	if e := c.indexes.get(r.key); e != nil && !refresh && c.fresh(e.fetched) {
		return e.index, nil
	}
	e, err := c.indexes.flight.do(ctx, r.key, func(ctx context.Context) (*cachedIndex, error) {
		return c.fetchIndex(ctx, r)
	})
	if err != nil {
		// A failed fetch (a refresh after the credentials broke) must not be hidden by the
		// next lookup answering from the older copy.
		c.indexes.expire(r.key)
		return nil, err
	}
	return e.index, nil
}

// fetchIndex downloads index.yaml, conditionally when a copy is cached.
func (c *Client) fetchIndex(ctx context.Context, r *repository) (*cachedIndex, error) {
	creds, err := c.credentials(ctx, r)
	if err != nil {
		return nil, err
	}
	hc, err := c.httpClient(creds, origin(r.url))
	if err != nil {
		return nil, err
	}
	indexURL := r.url.JoinPath("index.yaml").String()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, indexURL, http.NoBody)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRepository, err)
	}
	req.Header.Set("Accept", "application/x-yaml, text/yaml, application/json, */*")
	old := c.indexes.get(r.key)
	if old != nil {
		if old.etag != "" {
			req.Header.Set("If-None-Match", old.etag)
		}
		if old.lastModified != "" {
			req.Header.Set("If-Modified-Since", old.lastModified)
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, classify(err)
	}
	defer resp.Body.Close()

	now := c.clock.Now()
	switch {
	case resp.StatusCode == http.StatusNotModified && old != nil:
		e := &cachedIndex{index: old.index, etag: old.etag, lastModified: old.lastModified, fetched: now}
		c.indexes.set(r.key, e)
		return e, nil
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%w: no index.yaml at %s", ErrInvalidRepository, indexURL)
	case resp.StatusCode != http.StatusOK:
		return nil, statusError("GET index.yaml", resp.StatusCode)
	}
	data, err := readCapped(resp.Body, MaxIndexBytes, "index.yaml")
	if err != nil {
		return nil, classify(err)
	}
	idx, err := parseIndex(data)
	if err != nil {
		return nil, err
	}
	e := &cachedIndex{
		index:        idx,
		etag:         resp.Header.Get("ETag"),
		lastModified: resp.Header.Get("Last-Modified"),
		fetched:      now,
	}
	c.indexes.set(r.key, e)
	return e, nil
}

// parseIndex reads an index.yaml (or its JSON form) into Helm's type,
// leniently as to unknown fields, dropping entries without a version, and
// sorts each chart's versions newest first.
func parseIndex(data []byte) (*helmrepo.IndexFile, error) {
	idx := &helmrepo.IndexFile{}
	var err error
	if json.Valid(data) {
		err = json.Unmarshal(data, idx)
	} else {
		err = yaml.Unmarshal(data, idx)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: index.yaml: %w", ErrInvalidRepository, err)
	}
	if idx.APIVersion == "" {
		return nil, fmt.Errorf("%w: index.yaml: %w", ErrInvalidRepository, helmrepo.ErrNoAPIVersion)
	}
	for name, versions := range idx.Entries {
		kept := versions[:0]
		for _, v := range versions {
			if v != nil && v.Metadata != nil && v.Version != "" {
				kept = append(kept, v)
			}
		}
		idx.Entries[name] = kept
	}
	idx.SortEntries()
	return idx, nil
}

// indexEntry returns the entry of chart matching version in r's index.
func (c *Client) indexEntry(ctx context.Context, r *repository, chart, version string, refresh bool) (*helmrepo.ChartVersion, error) {
	idx, err := c.index(ctx, r, refresh)
	if err != nil {
		return nil, err
	}
	versions := idx.Entries[chart]
	if len(versions) == 0 {
		return nil, ErrChartNotFound
	}
	cv, err := idx.Get(chart, version)
	if err != nil {
		have := make([]string, 0, len(versions))
		for _, v := range versions {
			have = append(have, v.Version)
		}
		return nil, fmt.Errorf("%w (have %s)", ErrVersionNotFound, newest(have, 5))
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("%w: index.yaml lists no URL for %s %s", ErrInvalidRepository, chart, cv.Version)
	}
	return cv, nil
}

// download fetches the archive of chart at the exact version from an HTTP
// repository and checks it against the index's digest. pass sends the
// credentials along to another host.
func (c *Client) download(ctx context.Context, r *repository, chart, version string, pass bool) (*Chart, error) {
	cv, err := c.indexEntry(ctx, r, chart, version, false)
	if err != nil {
		return nil, err
	}
	chartURL, err := helmrepo.ResolveReferenceURL(r.key, cv.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("%w: chart URL: %w", ErrInvalidRepository, err)
	}
	u, err := url.Parse(chartURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%w: chart URL %s is not http(s)", ErrInvalidRepository, redact(chartURL))
	}
	creds, err := c.credentials(ctx, r)
	if err != nil {
		return nil, err
	}
	if creds != nil && pass && !creds.PassCredentials {
		withPass := *creds
		withPass.PassCredentials = true
		creds = &withPass
	}
	hc, err := c.httpClient(creds, origin(r.url))
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), http.NoBody)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRepository, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, classify(err)
	}
	defer resp.Body.Close()
	what := "GET " + redact(u.String())
	if resp.StatusCode != http.StatusOK {
		err := statusError(what, resp.StatusCode)
		if errors.Is(err, ErrUnauthorized) && creds != nil && !creds.PassCredentials && origin(u) != origin(r.url) {
			err = fmt.Errorf("%w (credentials are sent to the repository's own host only, unless passCredentials is set)", err)
		}
		return nil, err
	}
	if resp.ContentLength > MaxArchiveBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than the %d accepted", ErrTooLarge, what, resp.ContentLength, MaxArchiveBytes)
	}
	data, err := readCapped(resp.Body, MaxArchiveBytes, what)
	if err != nil {
		return nil, classify(err)
	}
	digest := sha256Digest(data)
	if want := cv.Digest; want != "" && !strings.EqualFold(strings.TrimPrefix(want, "sha256:"), strings.TrimPrefix(digest, "sha256:")) {
		return nil, fmt.Errorf("%w: %s has %s, index.yaml says sha256:%s", ErrDigestMismatch, what, digest, strings.TrimPrefix(want, "sha256:"))
	}
	if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		return nil, fmt.Errorf("%w: %s is not a gzipped chart archive", ErrInvalidRepository, what)
	}
	return &Chart{Name: chart, Version: cv.Version, Digest: digest, Archive: data}, nil
}
