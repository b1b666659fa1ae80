package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Versions of the binaries hack/k8s/build.sh builds. They name the cache directory, so they must
// match the ones in that script.
const (
	KubernetesVersion = "v1.37.2"
	EtcdVersion       = "v3.7.0"
	KwokVersion       = "v0.8.0"
)

// Environment variables that locate the binaries.
const (
	// AssetsEnv names a directory holding the binaries; it takes precedence over the cache.
	AssetsEnv = "NAVARCH_K8S_ASSETS"
	// CacheDirEnv overrides the cache root hack/k8s/build.sh builds into (default ~/.cache/navarch).
	CacheDirEnv = "NAVARCH_CACHE_DIR"
)

// Names of the binaries a cluster runs.
const (
	etcdBinary                  = "etcd"
	kubeAPIServerBinary         = "kube-apiserver"
	kubeControllerManagerBinary = "kube-controller-manager"
	kubeSchedulerBinary         = "kube-scheduler"
	kwokBinary                  = "kwok"
)

// buildHint is how to get the binaries; every error about missing binaries ends with it.
const buildHint = `run "make k8s" (hack/k8s/build.sh) to build it`

// ErrBinaryMissing is wrapped by the errors BinDir and Start return when a binary is not there.
var ErrBinaryMissing = errors.New("kubernetes binary missing")

// BinDir returns the directory holding the cluster binaries: $NAVARCH_K8S_ASSETS if set,
// otherwise the cache directory hack/k8s/build.sh builds into,
// ${NAVARCH_CACHE_DIR:-~/.cache/navarch}/k8s-<version>-etcd-<version>-kwok-<version>.
// A cache directory only counts once the build has finished (its .complete stamp exists).
func BinDir() (string, error) {
	if dir := os.Getenv(AssetsEnv); dir != "" {
		info, err := os.Stat(dir)
		if err != nil || !info.IsDir() {
			return "", fmt.Errorf("%w: $%s=%s is not a directory: %s", ErrBinaryMissing, AssetsEnv, dir, buildHint)
		}
		return dir, nil
	}
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		return "", fmt.Errorf("%w: no finished build in %s: %s", ErrBinaryMissing, dir, buildHint)
	}
	return dir, nil
}

// cacheDir is the directory hack/k8s/build.sh builds into; keep the formula in step with it.
func cacheDir() (string, error) {
	root := os.Getenv(CacheDirEnv)
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("locating the binary cache: %w", err)
		}
		root = filepath.Join(home, ".cache", "navarch")
	}
	name := fmt.Sprintf("k8s-%s-etcd-%s-kwok-%s", KubernetesVersion, EtcdVersion, KwokVersion)
	return filepath.Join(root, name), nil
}

// binaries are the paths of the binaries a cluster runs.
type binaries struct {
	etcd, apiServer, controllerManager, scheduler, kwok string
}

// findBinaries locates the binaries in dir: all five in workload mode, else etcd and
// kube-apiserver. The error names every missing one and says how to build them.
func findBinaries(dir string, workloads bool) (binaries, error) {
	names := []string{etcdBinary, kubeAPIServerBinary}
	if workloads {
		names = append(names, kubeControllerManagerBinary, kubeSchedulerBinary, kwokBinary)
	}
	paths := make(map[string]string, len(names))
	var missing []string
	for _, name := range names {
		path := filepath.Join(dir, name)
		if info, err := os.Stat(path); err != nil || info.IsDir() || info.Mode().Perm()&0o111 == 0 {
			missing = append(missing, name)
			continue
		}
		paths[name] = path
	}
	if len(missing) > 0 {
		return binaries{}, fmt.Errorf("%w: %s not found in %s: %s", ErrBinaryMissing, strings.Join(missing, ", "), dir, buildHint)
	}
	return binaries{
		etcd:              paths[etcdBinary],
		apiServer:         paths[kubeAPIServerBinary],
		controllerManager: paths[kubeControllerManagerBinary],
		scheduler:         paths[kubeSchedulerBinary],
		kwok:              paths[kwokBinary],
	}, nil
}
