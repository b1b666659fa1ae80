// Package destination resolves an Application's spec.destination to the Cluster that serves
// it. Every part of navarch that asks "which cluster is this?" (the ApplicationSet
// controller's checks, the Application router, the CLI) asks here, so they cannot disagree.
package destination

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// InClusterServer is the API server URL by which Argo CD users name the management cluster;
// navarch resolves it to the destination named navarchv1.InClusterName.
const InClusterServer = "https://kubernetes.default.svc"

// ErrNoCluster means that a destination names no registered Cluster.
var ErrNoCluster = errors.New("no such Cluster")

// NormalizeServer returns an API server URL in the form in which URLs are compared: scheme and
// host in lower case, the scheme's default port and a trailing slash dropped. Strings that
// are not URLs are only trimmed of trailing slashes.
func NormalizeServer(server string) string {
	if n, ok := normalized.Load(server); ok {
		return n.(string)
	}
	n := normalizeServer(server)
	if normalizedCount.Add(1) <= maxNormalized {
		normalized.Store(server, n)
	}
	return n
}

// normalized remembers NormalizeServer's answers, up to maxNormalized of them: a fleet names
// few API servers, and every pass of every Application checks its Cluster's against its
// Project, which would otherwise parse the same URL each time.
var (
	normalized      sync.Map // server → its normalized form
	normalizedCount atomic.Int64
)

const maxNormalized = 4096

func normalizeServer(server string) string {
	server = strings.TrimRight(strings.TrimSpace(server), "/")
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return server
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	if (u.Scheme == "https" && u.Port() == "443") || (u.Scheme == "http" && u.Port() == "80") {
		u.Host = u.Hostname()
		if strings.Contains(u.Host, ":") {
			u.Host = "[" + u.Host + "]"
		}
	}
	return u.String()
}

// InCluster reports whether d names the management cluster.
func InCluster(d navarchv1.ApplicationDestination) bool {
	if d.Name != "" {
		return d.Name == navarchv1.InClusterName
	}
	return NormalizeServer(d.Server) == InClusterServer
}

// Names reports whether d names cluster c.
func Names(d navarchv1.ApplicationDestination, c *navarchv1.Cluster) bool {
	if d.Name != "" {
		return d.Name == c.Name
	}
	return c.Spec.Server != "" && NormalizeServer(d.Server) == NormalizeServer(c.Spec.Server)
}

// Resolve returns the name of the cluster d names: navarchv1.InClusterName for the management
// cluster, otherwise the name of one of clusters. An error wrapping ErrNoCluster names the
// field of d that matched nothing.
func Resolve(d navarchv1.ApplicationDestination, clusters []navarchv1.Cluster) (string, error) {
	if InCluster(d) {
		return navarchv1.InClusterName, nil
	}
	for i := range clusters {
		if Names(d, &clusters[i]) {
			return clusters[i].Name, nil
		}
	}
	if d.Name != "" {
		return "", &noClusterError{field: "spec.destination.name", what: fmt.Sprintf("named %q", d.Name)}
	}
	return "", &noClusterError{field: "spec.destination.server", what: fmt.Sprintf("with server %q", d.Server)}
}

// noClusterError names the destination field that matched no Cluster; it is ErrNoCluster.
type noClusterError struct{ field, what string }

func (e *noClusterError) Error() string        { return e.field + ": no Cluster " + e.what }
func (e *noClusterError) Is(target error) bool { return target == ErrNoCluster }
