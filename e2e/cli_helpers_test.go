package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/navarch-io/navarch/internal/scheme"
)

// cliClientFor is a client of the cluster a kubeconfig file names.
func cliClientFor(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", kubeconfig, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// clientForKubeconfig is a discovery client for a kubeconfig file, to check that it reaches
// its cluster.
func clientForKubeconfig(t *testing.T, kubeconfig string) discovery.ServerVersionInterface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s does not load: %v", kubeconfig, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

func loadKubeconfig(data []byte) (*clientcmdapi.Config, error) { return clientcmd.Load(data) }

func b64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

func jsonDecoder(s string) *json.Decoder { return json.NewDecoder(strings.NewReader(s)) }

func toJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

func equalJSON(a, b any) bool { return toJSON(a) == toJSON(b) }

// yamlToObject decodes one YAML document into obj.
func yamlToObject(doc string, obj any) error { return yaml.UnmarshalStrict([]byte(doc), obj) }

// decodeObjects decodes a stream of YAML documents into objects, as kubectl apply -f reads it.
func decodeObjects(stream string) ([]client.Object, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(stream)), 4096)
	var out []client.Object
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			out = append(out, &u)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no objects")
	}
	return out, nil
}
