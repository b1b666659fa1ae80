package repo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/navarch-io/navarch/fleet/helm/repo"
	"github.com/navarch-io/navarch/internal/chartserver"
)

// A client resolves a constraint against a repository's index.yaml and
// fetches the archive; failures name the repository, chart and version.
func Example() {
	r, err := chartserver.StartRepository(chartserver.RepositoryOptions{})
	if err != nil {
		panic(err)
	}
	defer func() { _ = r.Close() }()
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc.1"} {
		if _, err := r.AddChartFiles("web", v, map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"}); err != nil {
			panic(err)
		}
	}

	ctx := context.Background()
	c := repo.New(repo.Options{})
	version, err := c.Resolve(ctx, r.URL(), "web", "^1", false)
	if err != nil {
		panic(err)
	}
	chart, err := c.Fetch(ctx, r.URL(), "web", version)
	if err != nil {
		panic(err)
	}
	fmt.Println(chart.Name, chart.Version, strings.HasPrefix(chart.Digest, "sha256:"))

	_, err = c.Fetch(ctx, r.URL(), "web", "9.9.9")
	fmt.Println(errors.Is(err, repo.ErrVersionNotFound))
	fmt.Println(strings.Replace(err.Error(), r.URL(), "http://127.0.0.1:PORT", 1))
	// Output:
	// web 1.1.0 true
	// true
	// helm repository http://127.0.0.1:PORT: chart "web" version "9.9.9": no such version (have 2.0.0-rc.1, 1.1.0, 1.0.0)
}
