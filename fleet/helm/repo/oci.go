package repo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sync"
	"time"

	"helm.sh/helm/v4/pkg/registry"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// tagCache holds the version tags of each chart in an OCI registry.
type tagCache struct {
	mu      sync.Mutex
	entries map[string]*cachedTags // by repository key + "/" + chart
	flight  flight[*cachedTags]
}

type cachedTags struct {
	tags    []string // semver tags, newest first
	fetched time.Time
}

func (tc *tagCache) get(key string) *cachedTags {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.entries[key]
}

// drop forgets the tags of key, so that the next lookup asks the registry again.
func (tc *tagCache) drop(key string) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	delete(tc.entries, key)
}

func (tc *tagCache) set(key string, e *cachedTags) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.entries == nil {
		tc.entries = map[string]*cachedTags{}
	}
	tc.entries[key] = e
}

// resolveTag picks the tag of chart matching version in an OCI registry.
func (c *Client) resolveTag(ctx context.Context, r *repository, chart, version string, refresh bool) (string, error) {
	tags, err := c.chartTags(ctx, r, chart, refresh)
	if err != nil {
		return "", err
	}
	tag, err := registry.GetTagMatchingVersionOrConstraint(tags, version)
	if err != nil {
		return "", fmt.Errorf("%w (have %s)", ErrVersionNotFound, newest(tags, 5))
	}
	return tag, nil
}

// chartTags returns the semver tags of chart, newest first, fetching them
// when the cached list is older than the TTL or refresh is set.
func (c *Client) chartTags(ctx context.Context, r *repository, chart string, refresh bool) ([]string, error) {
	key := r.key + "/" + chart
	if e := c.tags.get(key); e != nil && !refresh && c.fresh(e.fetched) {
		return e.tags, nil
	}
	e, err := c.tags.flight.do(ctx, key, func(ctx context.Context) (*cachedTags, error) {
		client, err := c.registryClient(ctx, r)
		if err != nil {
			return nil, err
		}
		tags, err := client.Tags(r.ref + "/" + chart)
		if err = classify(err); err != nil {
			if errors.Is(err, errNotFound) {
				return nil, ErrChartNotFound
			}
			return nil, err
		}
		if len(tags) == 0 {
			return nil, fmt.Errorf("%w: the registry has no version tags for it", ErrChartNotFound)
		}
		e := &cachedTags{tags: tags, fetched: c.clock.Now()}
		c.tags.set(key, e)
		return e, nil
	})
	if err != nil {
		// A failed fetch (a refresh after the credentials broke) must not be hidden by the
		// next lookup answering from the older list.
		c.tags.drop(key)
		return nil, err
	}
	return e.tags, nil
}

// pull downloads chart at the exact version from an OCI registry with
// Helm's registry client, which checks the layer against its digest.
func (c *Client) pull(ctx context.Context, r *repository, chart, version string) (*Chart, error) {
	client, err := c.registryClient(ctx, r)
	if err != nil {
		return nil, err
	}
	res, err := client.Pull(r.ref+"/"+chart+":"+version, registry.PullOptWithChart(true))
	if err = classify(err); err != nil {
		if errors.Is(err, errNotFound) {
			return nil, ErrVersionNotFound
		}
		return nil, err
	}
	data := res.Chart.Data
	digest := sha256Digest(data)
	if res.Chart.Digest != digest {
		return nil, fmt.Errorf("%w: layer %s has %s", ErrDigestMismatch, res.Chart.Digest, digest)
	}
	return &Chart{Name: chart, Version: version, Digest: digest, Archive: data}, nil
}

// registryClient returns a Helm registry client for one operation against
// r: its requests are bound to ctx and capped in size, and it
// authenticates with r's credentials only. It never reads a helm or docker
// credentials file: Helm's own credential lookup (the default authorizer)
// is replaced rather than given an empty file.
func (c *Client) registryClient(ctx context.Context, r *repository) (*registry.Client, error) {
	creds, err := c.credentials(ctx, r)
	if err != nil {
		return nil, err
	}
	u := &url.URL{Scheme: "https", Host: r.host}
	if creds != nil && creds.PlainHTTP {
		u.Scheme = "http"
	}
	// Registry credentials are the auth client's to send, per challenge;
	// the HTTP client only carries the transport settings.
	transportCreds := creds
	if creds != nil {
		transportCreds = &Credentials{CertData: creds.CertData, KeyData: creds.KeyData, CAData: creds.CAData}
	}
	hc, err := c.httpClient(transportCreds, origin(u))
	if err != nil {
		return nil, err
	}
	hc.Transport = &operationTransport{ctx: ctx, next: hc.Transport, maxBody: MaxArchiveBytes}

	cred := auth.EmptyCredential
	if creds != nil {
		switch {
		case creds.Username != "":
			cred = auth.Credential{Username: creds.Username, Password: creds.Password}
		case creds.BearerToken != "":
			cred = auth.Credential{AccessToken: creds.BearerToken}
		}
	}
	host := u.Host
	options := []registry.ClientOption{
		registry.ClientOptHTTPClient(hc),
		registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(os.DevNull),
		registry.ClientOptAuthorizer(auth.Client{
			Client:     hc,
			Credential: auth.StaticCredential(host, cred),
			Cache:      c.authCache(host, cred),
		}),
	}
	if creds != nil && creds.PlainHTTP {
		options = append(options, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(options...)
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	return client, nil
}

// authCache returns the registry token cache for host and cred, shared by
// the operations that use the same credentials (never across different
// ones).
func (c *Client) authCache(host string, cred auth.Credential) auth.Cache {
	h := sha256.New()
	for _, s := range []string{host, cred.Username, cred.Password, cred.AccessToken} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	key := hex.EncodeToString(h.Sum(nil))
	c.mu.Lock()
	defer c.mu.Unlock()
	ac, ok := c.authCaches[key]
	if !ok {
		ac = auth.NewCache()
		c.authCaches[key] = ac
	}
	return ac
}
