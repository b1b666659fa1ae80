package clustercache

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/client-go/discovery"

	"github.com/navarch-io/navarch/fleet/render"
)

// capabilitiesTTL is how long discovered capabilities are trusted when the API has not been
// rediscovered meanwhile: a chart that tests for a CRD's API sees it this soon after the CRD
// is installed by someone else.
const capabilitiesTTL = 5 * time.Minute

// capabilities are the discovered capabilities and when.
type capabilities struct {
	render.Capabilities
	at    time.Time
	reset time.Time // lastReset when discovered
}

// Capabilities describe the cluster to Helm charts: its version and its API group/versions and
// group/version/kinds, sorted. They come from discovery, which is asked again after the API
// changed (a kind was not found) or capabilitiesTTL: only what Helm reads is kept, not the
// discovery documents.
func (r *Remote) Capabilities() (render.Capabilities, error) {
	a := r.api
	a.mu.Lock()
	c := a.caps
	reset := a.lastReset
	a.mu.Unlock()
	if c != nil && c.reset.Equal(reset) && time.Since(c.at) < capabilitiesTTL {
		return c.Capabilities, nil
	}
	version, err := a.discovery.ServerVersion()
	if err != nil {
		return render.Capabilities{}, fmt.Errorf("cluster %s: discover version: %w", r.Name, err)
	}
	_, lists, err := discovery.ServerGroupsAndResources(a.discovery)
	if err != nil && len(lists) == 0 {
		// A partial answer (one aggregated API down) is still the best description.
		return render.Capabilities{}, fmt.Errorf("cluster %s: discover APIs: %w", r.Name, err)
	}
	var apis []string
	seen := map[string]bool{}
	for _, l := range lists {
		if !seen[l.GroupVersion] {
			seen[l.GroupVersion] = true
			apis = append(apis, l.GroupVersion)
		}
		for _, res := range l.APIResources {
			if res.Kind == "" || slices.Contains([]rune(res.Name), '/') {
				continue // subresources
			}
			if gvk := l.GroupVersion + "/" + res.Kind; !seen[gvk] {
				seen[gvk] = true
				apis = append(apis, gvk)
			}
		}
	}
	slices.Sort(apis)
	c = &capabilities{Capabilities: render.Capabilities{KubeVersion: version.GitVersion, APIVersions: apis}, at: time.Now(), reset: reset}
	a.mu.Lock()
	a.caps = c
	a.mu.Unlock()
	return c.Capabilities, nil
}
