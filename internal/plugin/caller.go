package plugin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/navarch-io/navarch/generators"
)

// The keys of a plugin's ConfigMap, as Argo CD names them.
const (
	// KeyBaseURL is the plugin's http or https base URL (required).
	KeyBaseURL = "baseUrl"
	// KeyToken refers to the bearer token (required): `$<key>` is a key of DefaultSecret,
	// `$<secret>:<key>` a key of another Secret, both in the controller's namespace.
	KeyToken = "token"
	// KeyRequestTimeout bounds each call: seconds ("45"), or a duration ("45s"). Default
	// DefaultTimeout, at most MaxTimeout.
	KeyRequestTimeout = "requestTimeout"
)

// DefaultSecret is the Secret a `$<key>` token refers to, navarch's counterpart of Argo CD's
// argocd-secret.
const DefaultSecret = "navarch-plugins"

// LabelPartOf, set to PartOf, must mark a Secret other than DefaultSecret for a token to
// refer to it (`$<secret>:<key>`), as Argo CD asks `app.kubernetes.io/part-of: argocd`: a
// ConfigMap alone cannot hand the controller's other Secrets (repository credentials,
// kubeconfigs) to a plugin.
const (
	LabelPartOf = "app.kubernetes.io/part-of"
	PartOf      = "navarch"
)

// Caller calls the plugins that ConfigMaps in Namespace configure. It implements
// generators.PluginCaller. It reads the ConfigMap and the token's Secret on every call, so an
// edit or a rotated token applies to the next pass.
type Caller struct {
	// Reader reads the ConfigMaps and Secrets; an uncached reader, so that the controller
	// needs neither a watch nor list permissions on them.
	Reader client.Reader
	// Namespace holds the ConfigMaps and Secrets: the controller's own namespace.
	Namespace string
	// HTTP sends the requests; nil means a client of its own.
	HTTP *http.Client
}

var _ generators.PluginCaller = (*Caller)(nil)

// defaultHTTP is shared by Callers without an HTTP client, so connections are reused.
var defaultHTTP = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

// CallPlugin implements generators.PluginCaller. Errors start with the ConfigMap's name.
func (c *Caller) CallPlugin(ctx context.Context, call generators.PluginCall) ([]map[string]any, error) {
	where := fmt.Sprintf("ConfigMap %s/%s", c.Namespace, call.ConfigMap)
	e, err := c.endpoint(ctx, call.ConfigMap)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	sets, err := Post(ctx, hc, e, Request{ApplicationSetName: call.ApplicationSet, Input: Input{Parameters: call.Parameters}})
	if err != nil {
		return nil, fmt.Errorf("plugin of %s: %w", where, err)
	}
	return sets, nil
}

// endpoint reads the plugin's ConfigMap and its token.
func (c *Caller) endpoint(ctx context.Context, name string) (Endpoint, error) {
	cm := &corev1.ConfigMap{}
	if err := c.Reader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, cm); err != nil {
		return Endpoint{}, fmt.Errorf("read: %w", err)
	}
	e := Endpoint{BaseURL: strings.TrimSpace(cm.Data[KeyBaseURL])}
	if e.BaseURL == "" {
		return Endpoint{}, fmt.Errorf("%s: must be set", KeyBaseURL)
	}
	if _, err := endpointURL(e.BaseURL); err != nil {
		return Endpoint{}, err
	}
	var err error
	if e.Timeout, err = ParseTimeout(cm.Data[KeyRequestTimeout]); err != nil {
		return Endpoint{}, fmt.Errorf("%s: %w", KeyRequestTimeout, err)
	}
	secret, key, err := ParseTokenRef(cm.Data[KeyToken])
	if err != nil {
		return Endpoint{}, fmt.Errorf("%s: %w", KeyToken, err)
	}
	if e.Token, err = c.token(ctx, secret, key); err != nil {
		return Endpoint{}, fmt.Errorf("%s: %w", KeyToken, err)
	}
	return e, nil
}

// token reads key of the Secret secret.
func (c *Caller) token(ctx context.Context, secret, key string) (string, error) {
	s := &corev1.Secret{}
	if err := c.Reader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: secret}, s); err != nil {
		return "", fmt.Errorf("read Secret %s/%s: %w", c.Namespace, secret, err)
	}
	if secret != DefaultSecret && s.Labels[LabelPartOf] != PartOf {
		return "", fmt.Errorf("the Secret %s/%s is not labelled %s=%s, which a plugin's token Secret other than %s must be",
			c.Namespace, secret, LabelPartOf, PartOf, DefaultSecret)
	}
	token := strings.TrimSpace(string(s.Data[key]))
	if token == "" {
		return "", fmt.Errorf("the Secret %s/%s has no key %s, or it is empty", c.Namespace, secret, key)
	}
	return token, nil
}

// ParseTokenRef reads the token of a plugin's ConfigMap, a reference to a Secret key in the
// controller's namespace: `$<key>` is key of DefaultSecret, `$<secret>:<key>` key of secret.
func ParseTokenRef(ref string) (secret, key string, err error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", "", errors.New("must be set, to $<key> (a key of Secret " + DefaultSecret + ") or $<secret>:<key>")
	}
	rest, ok := strings.CutPrefix(ref, "$")
	if !ok {
		return "", "", errors.New("must refer to a Secret key, as $<key> (a key of Secret " + DefaultSecret + ") or $<secret>:<key>; a token is never written in a ConfigMap")
	}
	secret, key, ok = strings.Cut(rest, ":")
	if !ok {
		secret, key = DefaultSecret, rest
	}
	if secret == "" || key == "" || strings.Contains(key, ":") {
		return "", "", fmt.Errorf("%q is not $<key> or $<secret>:<key>", ref)
	}
	return secret, key, nil
}

// ParseTimeout reads a requestTimeout: whole seconds, as Argo CD writes it, or a Go duration;
// empty means DefaultTimeout.
func ParseTimeout(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultTimeout, nil
	}
	d, err := time.ParseDuration(s)
	if n, nerr := strconv.ParseInt(s, 10, 64); nerr == nil {
		d, err = time.Duration(n)*time.Second, nil
		if n > int64(MaxTimeout/time.Second) {
			d = MaxTimeout + 1 // reported below, without overflowing
		}
	}
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is neither seconds nor a duration", s)
	case d <= 0:
		return 0, fmt.Errorf("%q must be positive", s)
	case d > MaxTimeout:
		return 0, fmt.Errorf("%q is longer than the maximum, %s", s, MaxTimeout)
	}
	return d, nil
}
