package chartserver_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"oras.land/oras-go/v2/registry/remote/auth"
	"sigs.k8s.io/yaml"

	"github.com/navarch-io/navarch/internal/chartserver"
)

var webFiles = map[string]string{
	"values.yaml":           "replicas: 1\n",
	"templates/deploy.yaml": "kind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
}

func TestPackageIsHelmsArchive(t *testing.T) {
	c, err := chartserver.Package("web", "1.2.0", webFiles)
	if err != nil {
		t.Fatal(err)
	}
	if c.Filename() != "web-1.2.0.tgz" {
		t.Errorf("Filename() = %q, want web-1.2.0.tgz", c.Filename())
	}
	loaded, err := loader.LoadArchive(bytes.NewReader(c.Archive))
	if err != nil {
		t.Fatalf("Helm cannot load the archive: %v", err)
	}
	if loaded.Name() != "web" || loaded.Metadata.Version != "1.2.0" {
		t.Errorf("archive holds %s %s, want web 1.2.0", loaded.Name(), loaded.Metadata.Version)
	}
	if len(loaded.Templates) != 1 || loaded.Templates[0].Name != "templates/deploy.yaml" {
		t.Errorf("templates = %v, want templates/deploy.yaml", loaded.Templates)
	}
	if loaded.Values["replicas"] != float64(1) {
		t.Errorf("values = %v, want replicas: 1", loaded.Values)
	}

	again, err := chartserver.Package("web", "1.2.0", webFiles)
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest != c.Digest {
		t.Errorf("packaging the same files twice gave digests %s and %s", c.Digest, again.Digest)
	}
}

func TestPackageRefusesMismatchedChartYAML(t *testing.T) {
	_, err := chartserver.Package("web", "1.2.0", map[string]string{"Chart.yaml": "apiVersion: v2\nname: api\nversion: 1.2.0\n"})
	if err == nil {
		t.Fatal("Package accepted a Chart.yaml naming another chart")
	}
}

func TestPackageDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Chart.yaml", "apiVersion: v2\nname: api\nversion: 0.3.1\n")
	write("templates/svc.yaml", "kind: Service\n")
	c, err := chartserver.PackageDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "api" || c.Version != "0.3.1" {
		t.Errorf("PackageDir = %s %s, want api 0.3.1", c.Name, c.Version)
	}
}

func startRepository(t *testing.T, opts chartserver.RepositoryOptions) *chartserver.Repository {
	t.Helper()
	r, err := chartserver.StartRepository(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// reply is an HTTP answer, read in full.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func get(t *testing.T, url string, header http.Header) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: body}
}

func TestRepositoryServesIndexAndArchives(t *testing.T) {
	r := startRepository(t, chartserver.RepositoryOptions{})
	v1, err := r.AddChartFiles("web", "1.0.0", webFiles)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.AddChartFiles("web", "1.1.0", webFiles); err != nil {
		t.Fatal(err)
	}

	rep := get(t, r.URL()+"/index.yaml", nil)
	if rep.status != http.StatusOK {
		t.Fatalf("GET index.yaml: %d", rep.status)
	}
	var idx repo.IndexFile
	if err := yaml.Unmarshal(rep.body, &idx); err != nil {
		t.Fatal(err)
	}
	versions := idx.Entries["web"]
	if len(versions) != 2 || versions[0].Version != "1.1.0" || versions[1].Version != "1.0.0" {
		t.Fatalf("index lists %v, want web 1.1.0 and 1.0.0 newest first", versions)
	}
	if versions[1].Digest != v1.Digest || !slices.Equal(versions[1].URLs, []string{"charts/web-1.0.0.tgz"}) {
		t.Errorf("web 1.0.0 entry: digest %s urls %v, want %s [charts/web-1.0.0.tgz]", versions[1].Digest, versions[1].URLs, v1.Digest)
	}

	rep = get(t, r.URL()+"/charts/web-1.0.0.tgz", nil)
	if rep.status != http.StatusOK || !bytes.Equal(rep.body, v1.Archive) {
		t.Errorf("GET the archive: %d, %d bytes; want 200 and the packaged %d bytes", rep.status, len(rep.body), len(v1.Archive))
	}
	if got := r.Requests(r.ArchivePath("web", "1.0.0")); got != 1 {
		t.Errorf("Requests(archive) = %d, want 1", got)
	}

	// A client holding the ETag is told nothing changed, until it does.
	etag := get(t, r.URL()+"/index.yaml", nil).header.Get("ETag")
	if etag == "" {
		t.Fatal("index.yaml has no ETag")
	}
	if rep := get(t, r.URL()+"/index.yaml", http.Header{"If-None-Match": {etag}}); rep.status != http.StatusNotModified {
		t.Errorf("conditional GET of an unchanged index: %d, want 304", rep.status)
	}
	if err := r.SetDigest("web", "1.0.0", "0000"); err != nil {
		t.Fatal(err)
	}
	rep = get(t, r.URL()+"/index.yaml", http.Header{"If-None-Match": {etag}})
	if rep.status != http.StatusOK || !bytes.Contains(rep.body, []byte("digest: \"0000\"")) {
		t.Errorf("conditional GET after SetDigest: %d %q, want 200 with the new digest", rep.status, rep.body)
	}
	if err := r.SetChartURL("web", "9.9.9", "http://elsewhere/x.tgz"); err == nil {
		t.Error("SetChartURL of an unknown version succeeded")
	}
	if got := r.Requests("/index.yaml"); got != 4 {
		t.Errorf("Requests(/index.yaml) = %d, want 4", got)
	}
	if got, want := r.Statuses("/index.yaml"), []int{200, 200, 304, 200}; !slices.Equal(got, want) {
		t.Errorf("Statuses(/index.yaml) = %v, want %v", got, want)
	}
}

func TestRepositoryAuth(t *testing.T) {
	r := startRepository(t, chartserver.RepositoryOptions{Auth: chartserver.Auth{Username: "alice", Password: "s3cret", BearerToken: "tok"}})
	cases := []struct {
		name   string
		header http.Header
		want   int
	}{
		{"anonymous", nil, http.StatusUnauthorized},
		{"wrong password", http.Header{"Authorization": {basic("alice", "nope")}}, http.StatusUnauthorized},
		{"basic", http.Header{"Authorization": {basic("alice", "s3cret")}}, http.StatusOK},
		{"bearer", http.Header{"Authorization": {"Bearer tok"}}, http.StatusOK},
		{"wrong bearer", http.Header{"Authorization": {"Bearer other"}}, http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if rep := get(t, r.URL()+"/index.yaml", tc.header); rep.status != tc.want {
				t.Errorf("GET index.yaml: %d, want %d", rep.status, tc.want)
			}
		})
	}
	if got := r.AuthorizedRequests("/index.yaml"); got != 4 {
		t.Errorf("AuthorizedRequests = %d, want 4", got)
	}
}

func basic(user, pass string) string {
	req, _ := http.NewRequest(http.MethodGet, "http://x", http.NoBody)
	req.SetBasicAuth(user, pass)
	return req.Header.Get("Authorization")
}

func helmClient(t *testing.T, reg *chartserver.Registry, cred auth.Credential) *registry.Client {
	t.Helper()
	c, err := registry.NewClient(
		registry.ClientOptPlainHTTP(),
		registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(os.DevNull),
		registry.ClientOptAuthorizer(auth.Client{Client: &http.Client{}, Credential: auth.StaticCredential(reg.Host(), cred)}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRegistryHoldsWhatHelmPushed(t *testing.T) {
	for _, tc := range []struct {
		name string
		auth chartserver.Auth
		cred auth.Credential
	}{
		{name: "anonymous"},
		{name: "basic auth", auth: chartserver.Auth{Username: "bob", Password: "pw"}, cred: auth.Credential{Username: "bob", Password: "pw"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := chartserver.StartRegistry(chartserver.RegistryOptions{Auth: tc.auth})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = reg.Close() })
			if reg.URL() != "oci://"+reg.Host() {
				t.Errorf("URL() = %q, want oci://%s", reg.URL(), reg.Host())
			}
			v1, err := reg.PushChartFiles("charts", "web", "1.0.0", webFiles)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := reg.PushChartFiles("charts", "web", "1.1.0", webFiles); err != nil {
				t.Fatal(err)
			}

			c := helmClient(t, reg, tc.cred)
			tags, err := c.Tags(reg.Host() + "/charts/web")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tags, []string{"1.1.0", "1.0.0"}) {
				t.Errorf("tags = %v, want [1.1.0 1.0.0]", tags)
			}
			res, err := c.Pull(reg.Host()+"/charts/web:1.0.0", registry.PullOptWithChart(true))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(res.Chart.Data, v1.Archive) || res.Chart.Meta.Name != "web" {
				t.Errorf("pulled %d bytes of %q, want the pushed %d bytes of web", len(res.Chart.Data), res.Chart.Meta.Name, len(v1.Archive))
			}
			if reg.Requests("/v2/charts/web/tags/list") == 0 {
				t.Error("the tag list request was not counted")
			}
		})
	}
}

func TestRegistryRefusesAnonymousWhenAuthIsOn(t *testing.T) {
	reg, err := chartserver.StartRegistry(chartserver.RegistryOptions{Auth: chartserver.Auth{Username: "bob", Password: "pw"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	if _, err := reg.PushChartFiles("", "web", "1.0.0", webFiles); err != nil {
		t.Fatal(err)
	}
	_, err = helmClient(t, reg, auth.EmptyCredential).Tags(reg.Host() + "/web")
	if !errors.Is(err, auth.ErrBasicCredentialNotFound) {
		t.Errorf("anonymous Tags: %v, want %v", err, auth.ErrBasicCredentialNotFound)
	}
}
