package scm

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	requestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "navarch_github_requests_total",
		Help: "Requests to GitHub APIs, by API host and status code (304 Not Modified costs no rate limit).",
	}, []string{"api", "code"})
	rateLimitRemaining = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "navarch_github_rate_limit_remaining",
		Help: "The remaining GitHub API rate limit of each credential, as last reported by GitHub.",
	}, []string{"api", "credential"})
)

func init() { metrics.Registry.MustRegister(requestsTotal, rateLimitRemaining) }

// conditional makes every GET a conditional request: it keeps the ETag and body of each 200
// response and sends If-None-Match the next time, so an unchanged listing costs GitHub a
// 304 Not Modified, which does not count against the rate limit. The 304 reaches the client
// as the 200 it stands for, with the fresh response's headers (rate limits). One conditional
// transport serves one credential: GitHub varies responses by it.
type conditional struct {
	next http.RoundTripper
	// seen records the rate limit reported by each response.
	seen func(limit, remaining int, reset time.Time)
	api  string

	mu    sync.Mutex
	cache *lru.Cache // URL → cachedResponse
}

type cachedResponse struct {
	etag string
	dump []byte // the 200 response, as httputil.DumpResponse wrote it
}

// maxCachedBody bounds the responses kept for revalidation; larger ones are not cached.
const maxCachedBody = 4 << 20

func newConditional(next http.RoundTripper, api string, seen func(limit, remaining int, reset time.Time)) *conditional {
	return &conditional{next: next, api: api, seen: seen, cache: lru.New(1024)}
}

// RoundTrip implements http.RoundTripper.
func (c *conditional) RoundTrip(req *http.Request) (*http.Response, error) {
	key := req.URL.String()
	var cached *cachedResponse
	if req.Method == http.MethodGet && req.Header.Get("If-None-Match") == "" {
		c.mu.Lock()
		if v, ok := c.cache.Get(key); ok {
			cached = v.(*cachedResponse)
		}
		c.mu.Unlock()
		if cached != nil {
			req = req.Clone(req.Context())
			req.Header.Set("If-None-Match", cached.etag)
		}
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		requestsTotal.WithLabelValues(c.api, "error").Inc()
		return nil, err
	}
	requestsTotal.WithLabelValues(c.api, strconv.Itoa(resp.StatusCode)).Inc()
	c.observe(resp.Header)
	switch {
	case resp.StatusCode == http.StatusNotModified && cached != nil:
		return c.replay(req, resp, cached)
	case req.Method == http.MethodGet && resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
		c.remember(key, resp)
	}
	return resp, nil
}

// replay answers a 304 with the cached 200, carrying the 304's headers.
func (c *conditional) replay(req *http.Request, notModified *http.Response, cached *cachedResponse) (*http.Response, error) {
	_ = notModified.Body.Close()
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(cached.dump)), req)
	if err != nil {
		return nil, err
	}
	for k, v := range notModified.Header {
		resp.Header[k] = v
	}
	return resp, nil
}

func (c *conditional) remember(key string, resp *http.Response) {
	if resp.ContentLength > maxCachedBody {
		return
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCachedBody+1))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil || len(body) > maxCachedBody {
		return
	}
	copied := *resp
	copied.Body = io.NopCloser(bytes.NewReader(body))
	copied.ContentLength = int64(len(body))
	copied.TransferEncoding = nil
	dump, err := httputil.DumpResponse(&copied, true)
	if err != nil {
		return
	}
	c.mu.Lock()
	c.cache.Add(key, &cachedResponse{etag: resp.Header.Get("ETag"), dump: dump})
	c.mu.Unlock()
}

func (c *conditional) observe(h http.Header) {
	remaining, err1 := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	limit, err2 := strconv.Atoi(h.Get("X-RateLimit-Limit"))
	reset, err3 := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || c.seen == nil {
		return
	}
	c.seen(limit, remaining, time.Unix(reset, 0))
}
