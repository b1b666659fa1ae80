package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The service network of every cluster; the first address is the kubernetes Service's.
const (
	serviceCIDR         = "10.96.0.0/16"
	kubernetesServiceIP = "10.96.0.1"
)

// etcdMemberName names the single etcd member; cluster names may not suit --initial-cluster.
const etcdMemberName = "navarch"

// Start-up budgets. kube-apiserver needs about 3s alone, more when several clusters start at
// once on few cores.
const (
	etcdReadyTimeout      = 30 * time.Second
	apiServerReadyTimeout = 90 * time.Second
	controlPlaneAttempts  = 3
)

// Client rate limits of the admin REST config: a local cluster can take the load.
const (
	clientQPS   = 200
	clientBurst = 400
)

func servingIPs() []net.IP {
	return []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.ParseIP(kubernetesServiceIP)}
}

func servingNames() []string {
	return []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
}

// startControlPlane starts etcd and kube-apiserver and writes the kubeconfig. Ports are picked
// free just before use, so another process may grab one first; if etcd or kube-apiserver exits
// while starting, it tries again on new ports.
func (c *Cluster) startControlPlane(ctx context.Context, bins binaries, creds *pki, workloads bool) error {
	for attempt := 1; ; attempt++ {
		procs, err := c.tryStartControlPlane(ctx, bins, creds, workloads)
		if err == nil {
			return nil
		}
		err = errors.Join(err, c.discard(procs...))
		var exited *processExitedError
		if attempt == controlPlaneAttempts || ctx.Err() != nil || !errors.As(err, &exited) {
			return err
		}
		c.log.Info("control plane exited while starting; retrying on new ports", "attempt", attempt, "error", err)
	}
}

func (c *Cluster) tryStartControlPlane(ctx context.Context, bins binaries, creds *pki, workloads bool) ([]*process, error) {
	var procs []*process
	etcdPort, err := ports.next()
	if err != nil {
		return nil, err
	}
	etcdPeerPort, err := ports.next()
	if err != nil {
		return nil, err
	}
	apiPort, err := ports.next()
	if err != nil {
		return nil, err
	}

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	etcdPeerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeerPort)
	dataDir := filepath.Join(c.dir, "etcd")
	// A failed attempt may have left a member with other peer URLs behind.
	if err := os.RemoveAll(dataDir); err != nil {
		return nil, fmt.Errorf("clearing etcd data directory: %w", err)
	}
	etcd, err := c.run(etcdBinary, bins.etcd, []string{
		"--name=" + etcdMemberName,
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + etcdPeerURL,
		"--initial-advertise-peer-urls=" + etcdPeerURL,
		"--initial-cluster=" + etcdMemberName + "=" + etcdPeerURL,
		"--unsafe-no-fsync=true", // throwaway data: speed over durability
	}, nil)
	if err != nil {
		return procs, err
	}
	procs = append(procs, etcd)
	if err := c.waitUntil(ctx, "etcd to become healthy", etcdReadyTimeout, httpOK(etcdURL+"/health")); err != nil {
		return procs, err
	}

	c.server = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + filepath.Join(c.dir, "pki"),
		"--tls-cert-file=" + creds.servingCertFile,
		"--tls-private-key-file=" + creds.servingKeyFile,
		"--client-ca-file=" + creds.caCertFile,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--service-account-issuer=" + c.server,
		"--service-account-key-file=" + creds.saPubFile,
		"--service-account-signing-key-file=" + creds.saKeyFile,
		"--allow-privileged=true",
	}
	if !workloads {
		// Without kube-controller-manager nobody creates the default ServiceAccount that
		// this admission plugin requires for every pod.
		args = append(args, "--disable-admission-plugins=ServiceAccount")
	}
	apiServer, err := c.run(kubeAPIServerBinary, bins.apiServer, args, nil)
	if err != nil {
		return procs, err
	}
	procs = append(procs, apiServer)

	if err := c.writeKubeconfig(creds); err != nil {
		return procs, err
	}
	client, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		return procs, fmt.Errorf("creating client: %w", err)
	}
	apiServerReady := func(ctx context.Context) (bool, error) {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return false, err
		}
		return string(body) == "ok", nil
	}
	if err := c.waitUntil(ctx, "kube-apiserver to become ready", apiServerReadyTimeout, apiServerReady); err != nil {
		return procs, err
	}
	return procs, nil
}

// writeKubeconfig builds the admin kubeconfig and REST config for c.server and writes the
// kubeconfig to <dir>/kubeconfig.
func (c *Cluster) writeKubeconfig(creds *pki) error {
	data, err := c.kubeconfigOf(c.Name+"-admin", creds.clientCert, creds.clientKey)
	if err != nil {
		return err
	}
	restConfig, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return fmt.Errorf("building REST config: %w", err)
	}
	restConfig.QPS, restConfig.Burst = clientQPS, clientBurst

	path := filepath.Join(c.dir, "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	c.kubeconfig, c.kubeconfigPath, c.restConfig = data, path, restConfig
	return nil
}

// kubeconfigOf encodes a kubeconfig for c.server whose user authenticates with cert and key.
func (c *Cluster) kubeconfigOf(user string, cert, key []byte) ([]byte, error) {
	config := clientcmdapi.NewConfig()
	config.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.server, CertificateAuthorityData: c.creds.caCert}
	config.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	config.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: user}
	config.CurrentContext = c.Name
	data, err := clientcmd.Write(*config)
	if err != nil {
		return nil, fmt.Errorf("encoding kubeconfig: %w", err)
	}
	return data, nil
}

// waitForDefaultNamespace waits for kube-apiserver to create the default namespace, which
// it does shortly after it turns ready.
func (c *Cluster) waitForDefaultNamespace(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	return c.waitUntil(ctx, "the default namespace", apiServerReadyTimeout, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// installCRDs installs the CRDs found in paths and waits until the API server serves them.
func (c *Cluster) installCRDs(paths []string) error {
	crds, err := envtest.InstallCRDs(c.restConfig, envtest.CRDInstallOptions{
		Paths:              paths,
		ErrorIfPathMissing: true,
		MaxTime:            30 * time.Second,
		PollInterval:       100 * time.Millisecond,
	})
	if err != nil {
		return fmt.Errorf("installing CRDs from %v: %w", paths, err)
	}
	c.log.V(1).Info("installed CRDs", "count", len(crds))
	return nil
}

// httpOK reports whether a GET of url answers 200.
func httpOK(url string) func(context.Context) (bool, error) {
	client := &http.Client{Timeout: time.Second}
	return func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return true, nil
	}
}

// ports hands out free loopback TCP ports and never the same one twice in this process, so
// clusters started concurrently do not collide. Another process can still take a port
// between the check and the bind; startControlPlane retries for that.
var ports = &portAllocator{handedOut: make(map[int]bool)}

type portAllocator struct {
	mu        sync.Mutex
	handedOut map[int]bool
}

func (a *portAllocator) next() (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("finding a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if err := l.Close(); err != nil {
			return 0, fmt.Errorf("finding a free port: %w", err)
		}
		if !a.handedOut[port] {
			a.handedOut[port] = true
			return port, nil
		}
	}
	return 0, errors.New("finding a free port: every port the kernel offered was handed out already")
}
