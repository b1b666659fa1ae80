package localcluster

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
)

// stopOnSignalOnce installs StopOnSignal for StartForTest, once per test binary.
var stopOnSignalOnce sync.Once

// testStartTimeout bounds starting a cluster for tests, generous for loaded CI machines.
const testStartTimeout = 3 * time.Minute

// StartForTest starts a cluster for one test (or benchmark) and stops it in t.Cleanup; it
// fails the test if the cluster does not start or stop cleanly. If the test failed, a
// temporary cluster directory is kept for its logs and its path logged. Without
// Options.Logger progress goes to t.Log. It also installs StopOnSignal (once per process), so
// an interrupted `go test` stops the cluster before it dies.
func StartForTest(t testing.TB, opts Options) *Cluster {
	t.Helper()
	stopOnSignalOnce.Do(func() { StopOnSignal() })

	if opts.Logger.GetSink() == nil {
		opts.Logger = testr.NewWithInterface(t, testr.Options{})
	}
	ctx, cancel := context.WithTimeout(context.Background(), testStartTimeout)
	defer cancel()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() && c.keepDir() {
			t.Logf("cluster %q: state and logs kept in %s", c.Name, c.Dir())
		}
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// RunMain runs the tests of a test binary against one shared cluster: it starts the cluster,
// stores it in *cluster, runs m.Run, stops the cluster and returns the exit code for os.Exit.
// SIGINT and SIGTERM stop the cluster too (see StopOnSignal).
//
//	var cluster *localcluster.Cluster
//
//	func TestMain(m *testing.M) {
//		os.Exit(localcluster.RunMain(m, localcluster.Options{Workloads: true}, &cluster))
//	}
func RunMain(m *testing.M, opts Options, cluster **Cluster) int {
	release := StopOnSignal()
	defer release()

	ctx, cancel := context.WithTimeout(context.Background(), testStartTimeout)
	c, err := Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		return 1
	}
	*cluster = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
