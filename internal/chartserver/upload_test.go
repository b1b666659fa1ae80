package chartserver_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"

	"github.com/navarch-io/navarch/internal/chartserver"
)

// A chart uploaded from another process is served, and an upload of the same version replaces
// it; what is not a chart archive is refused.
func TestUploadPublishesAndReplaces(t *testing.T) {
	r := startRepository(t, chartserver.RepositoryOptions{})
	ctx := context.Background()
	first, err := chartserver.Package("web", "1.0.0", webFiles)
	if err != nil {
		t.Fatal(err)
	}
	if err := chartserver.Upload(ctx, r.URL(), first); err != nil {
		t.Fatal(err)
	}
	changed := map[string]string{"values.yaml": "greeting: changed\n"}
	for k, v := range webFiles {
		if _, ok := changed[k]; !ok {
			changed[k] = v
		}
	}
	second, err := chartserver.Package("web", "1.0.0", changed)
	if err != nil {
		t.Fatal(err)
	}
	if err := chartserver.Upload(ctx, r.URL(), second); err != nil {
		t.Fatal(err)
	}
	var idx repo.IndexFile
	if err := yaml.Unmarshal(get(t, r.URL()+"/index.yaml", nil).body, &idx); err != nil {
		t.Fatal(err)
	}
	if v := idx.Entries["web"]; len(v) != 1 || v[0].Digest != second.Digest {
		t.Fatalf("index lists %+v, want only web 1.0.0 with the second upload's digest", v)
	}
	if rep := get(t, r.URL()+"/charts/web-1.0.0.tgz", nil); !bytes.Equal(rep.body, second.Archive) {
		t.Error("the archive served is not the second upload")
	}

	resp, err := http.Post(r.URL()+"/api/charts", "application/gzip", bytes.NewReader([]byte("not a chart")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("uploading garbage: %d, want 400", resp.StatusCode)
	}
}
