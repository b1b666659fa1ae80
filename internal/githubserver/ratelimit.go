package githubserver

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"
)

// GitHub's primary rate limits of the core resource.
const (
	// defaultTokenLimit is the hourly limit of a personal access token or an
	// installation token.
	defaultTokenLimit = 5000
	// defaultAnonymousLimit is the hourly limit of unauthenticated requests.
	defaultAnonymousLimit = 60
	// rateWindow is how long after its first request a bucket refills.
	rateWindow = time.Hour
	// searchLimit and graphqlLimit are reported by /rate_limit only; the
	// server has neither API.
	searchLimit  = 30
	graphqlLimit = 5000
)

// anonymousBucket is the bucket of unauthenticated requests. GitHub keys it by
// IP address; every client of this server is on the same machine.
const anonymousBucket = "anonymous"

// limits is the rate-limit and fault state of a [Server].
type limits struct {
	buckets map[string]*rateBucket
	// template, set by SetRateLimit, is the state every bucket starts from;
	// nil means GitHub's defaults.
	template *rateBucket

	failStatus      int
	secondaryStatus int
	secondaryUntil  time.Time
	delay           time.Duration
}

// rateBucket is the primary rate limit of one caller.
type rateBucket struct {
	limit     int
	remaining int
	reset     time.Time
}

func newLimits() limits {
	return limits{buckets: map[string]*rateBucket{}}
}

// SetRateLimit sets the primary rate limit of every caller (each token, each
// app and anonymous requests) to limit requests, remaining of them left, until
// reset; after reset each caller's bucket refills to limit for another hour,
// as GitHub's do. Counting starts afresh for every caller.
func (s *Server) SetRateLimit(limit, remaining int, reset time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits.template = &rateBucket{limit: limit, remaining: min(remaining, limit), reset: reset}
	clear(s.limits.buckets)
}

// Fail makes every API request answer status (a 5xx, say) with GitHub's error
// body until Fail(0). Such answers do not count against the rate limit.
func (s *Server) Fail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits.failStatus = status
}

// SecondaryLimit makes API requests answer status (403, or 429) with
// GitHub's secondary-rate-limit message and a Retry-After header counting
// down the seconds left, until retryAfter has passed. Status 0 lifts it. Such
// answers do not count against the primary rate limit.
func (s *Server) SecondaryLimit(status int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits.secondaryStatus = status
	s.limits.secondaryUntil = time.Now().Add(retryAfter)
}

// Delay holds every API response back by d (0 turns it off), to exercise
// client timeouts. A request whose client gives up stops waiting.
func (s *Server) Delay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits.delay = d
}

// wait sleeps for the configured delay, or until the client goes away or the
// server closes.
func (s *Server) wait(r *http.Request) {
	s.mu.Lock()
	d := s.limits.delay
	s.mu.Unlock()
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	case <-s.closing:
	}
}

// bucketLocked returns the caller's bucket, refilled if its window has
// passed. s.mu must be held.
func (s *Server) bucketLocked(key string, authenticated bool, now time.Time) *rateBucket {
	b := s.limits.buckets[key]
	if b == nil {
		switch {
		case s.limits.template != nil:
			t := *s.limits.template
			b = &t
		case authenticated:
			b = &rateBucket{limit: defaultTokenLimit, remaining: defaultTokenLimit}
		default:
			b = &rateBucket{limit: defaultAnonymousLimit, remaining: defaultAnonymousLimit}
		}
		if b.reset.IsZero() {
			b.reset = now.Add(rateWindow)
		}
		s.limits.buckets[key] = b
	}
	if !now.Before(b.reset) {
		b.remaining = b.limit
		b.reset = now.Add(rateWindow)
	}
	return b
}

// gate decides whether a request reaches its endpoint: injected failures and
// secondary limits answer first, then the primary limit, which the request
// uses up one of when counted is true. It returns the answer for a request
// that is stopped.
func (s *Server) gate(r *http.Request, c caller, counted bool) *reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	l := &s.limits
	if l.failStatus != 0 {
		rep := errorReply(l.failStatus, failMessage(l.failStatus), docsREST)
		return &rep
	}
	if l.secondaryStatus != 0 && now.Before(l.secondaryUntil) {
		rep := errorReply(l.secondaryStatus, messageSecondaryLimit, docsSecondaryRate)
		seconds := int(math.Ceil(l.secondaryUntil.Sub(now).Seconds()))
		rep.header = http.Header{"Retry-After": {strconv.Itoa(max(seconds, 1))}}
		return &rep
	}
	if !counted {
		return nil
	}
	b := s.bucketLocked(c.bucket(), c.authenticated(), now)
	if b.remaining <= 0 {
		b.remaining = 0
		var msg string
		if c.authenticated() {
			msg = fmt.Sprintf(messageTokenRateLimit, userID(c.login))
		} else {
			msg = fmt.Sprintf(messageAnonRateLimit, remoteIP(r))
		}
		rep := errorReply(http.StatusForbidden, msg, docsRateLimit)
		return &rep
	}
	b.remaining--
	return nil
}

// failMessage is the message of an injected failure.
func failMessage(status int) string {
	if status >= http.StatusInternalServerError {
		return "Server Error"
	}
	if text := http.StatusText(status); text != "" {
		return text
	}
	return "Error"
}

// remoteIP is the client's IP address, as GitHub names it in the anonymous
// rate-limit message.
func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// refund gives back the request a 304 Not Modified used up: GitHub does not
// count those.
func (s *Server) refund(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.limits.buckets[key]; b != nil && b.remaining < b.limit {
		b.remaining++
	}
}

// setRateHeaders adds GitHub's X-RateLimit-* headers for the caller's bucket.
func (s *Server) setRateHeaders(h http.Header, key string, authenticated bool) {
	s.mu.Lock()
	b := *s.bucketLocked(key, authenticated, time.Now())
	s.mu.Unlock()
	h.Set("X-RateLimit-Limit", strconv.Itoa(b.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(b.remaining))
	h.Set("X-RateLimit-Used", strconv.Itoa(b.limit-b.remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(b.reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
}

// rateJSON is one resource of GET /rate_limit.
type rateJSON struct {
	Limit     int    `json:"limit"`
	Used      int    `json:"used"`
	Remaining int    `json:"remaining"`
	Reset     int64  `json:"reset"`
	Resource  string `json:"resource,omitempty"`
}

// rateLimitJSON is the body of GET /rate_limit.
type rateLimitJSON struct {
	Resources map[string]rateJSON `json:"resources"`
	Rate      rateJSON            `json:"rate"`
}

// getRateLimit serves GET /rate_limit, which does not itself count.
func (s *Server) getRateLimit(r *http.Request, c caller) reply {
	s.mu.Lock()
	now := time.Now()
	b := *s.bucketLocked(c.bucket(), c.authenticated(), now)
	s.mu.Unlock()
	core := rateJSON{Limit: b.limit, Used: b.limit - b.remaining, Remaining: b.remaining, Reset: b.reset.Unix(), Resource: "core"}
	hour := now.Add(rateWindow).Unix()
	search := searchLimit
	if !c.authenticated() {
		search = 10
	}
	body := rateLimitJSON{
		Resources: map[string]rateJSON{
			"core":    core,
			"search":  {Limit: search, Remaining: search, Reset: now.Add(time.Minute).Unix(), Resource: "search"},
			"graphql": {Limit: graphqlLimit, Remaining: graphqlLimit, Reset: hour, Resource: "graphql"},
		},
		Rate: core,
	}
	return reply{status: http.StatusOK, body: body}
}
