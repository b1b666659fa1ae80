package chartserver_test

import (
	"fmt"
	"io"
	"net/http"
	"os"

	"helm.sh/helm/v4/pkg/registry"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/navarch-io/navarch/internal/chartserver"
)

// A test pushes charts to an in-process registry; Helm's own client sees
// them as it would on any OCI registry.
func ExampleRegistry() {
	reg, err := chartserver.StartRegistry(chartserver.RegistryOptions{})
	if err != nil {
		panic(err)
	}
	defer func() { _ = reg.Close() }()
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if _, err := reg.PushChartFiles("charts", "web", v, map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"}); err != nil {
			panic(err)
		}
	}

	helm, err := registry.NewClient(
		registry.ClientOptPlainHTTP(),
		registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(os.DevNull),
		registry.ClientOptAuthorizer(auth.Client{Client: http.DefaultClient}),
	)
	if err != nil {
		panic(err)
	}
	tags, err := helm.Tags(reg.Host() + "/charts/web")
	if err != nil {
		panic(err)
	}
	fmt.Println(tags)
	// Output:
	// [1.1.0 1.0.0]
}
