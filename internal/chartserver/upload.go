package chartserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// maxUpload caps an uploaded archive.
const maxUpload = 64 << 20

// uploadPath is where a packaged chart is uploaded, as ChartMuseum takes them.
const uploadPath = "/api/charts"

// serveUpload publishes the packaged chart in the request body, replacing the same version:
// the dev fleet's demo uploads the charts of the examples each time it publishes them.
func (r *Repository) serveUpload(w http.ResponseWriter, req *http.Request) {
	data, err := io.ReadAll(io.LimitReader(req.Body, maxUpload+1))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(data) > maxUpload {
		http.Error(w, "chart archive too large", http.StatusRequestEntityTooLarge)
		return
	}
	c, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		http.Error(w, "not a chart archive: "+err.Error(), http.StatusBadRequest)
		return
	}
	sum := sha256.Sum256(data)
	r.add(&Chart{Name: c.Name(), Version: c.Metadata.Version, Archive: data, Digest: hex.EncodeToString(sum[:]), meta: c.Metadata})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, `{"saved":true}`)
}

// Upload publishes c to the repository at repoURL (its URL), as `curl --data-binary
// @chart.tgz REPO/api/charts` does, from another process than the one serving it.
func Upload(ctx context.Context, repoURL string, c *Chart) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, repoURL+uploadPath, bytes.NewReader(c.Archive))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("chartserver: upload %s: %w", c.Filename(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("chartserver: upload %s: %s: %s", c.Filename(), resp.Status, bytes.TrimSpace(body))
	}
	return nil
}
