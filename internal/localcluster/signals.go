package localcluster

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// StopOnSignal makes SIGINT and SIGTERM stop every cluster of this process that is running or
// starting, then lets the signal take its default course (the process dies of it). release
// undoes this. Use it in programs and TestMain functions that start clusters; it is what keeps
// an interrupted run from leaving temporary directories behind, since on Linux the processes
// would die with the Go process anyway.
func StopOnSignal() (release func()) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	released := make(chan struct{})
	go func() {
		select {
		case sig := <-signals:
			var wg sync.WaitGroup
			for _, c := range running.all() {
				wg.Go(func() {
					if err := c.Stop(); err != nil {
						fmt.Fprintln(os.Stderr, "localcluster:", err)
					}
				})
			}
			wg.Wait()
			signal.Reset(sig)
			_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
		case <-released:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(signals)
			close(released)
		})
	}
}

// running is every cluster of this process that has not been stopped.
var running = &clusterSet{clusters: make(map[*Cluster]struct{})}

type clusterSet struct {
	mu       sync.Mutex
	clusters map[*Cluster]struct{}
}

// add records a starting cluster, unless a running one uses its directory.
func (s *clusterSet) add(c *Cluster) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for other := range s.clusters {
		if other.dir == c.dir {
			return fmt.Errorf("directory %s is in use by running cluster %q", c.dir, other.Name)
		}
	}
	s.clusters[c] = struct{}{}
	return nil
}

func (s *clusterSet) remove(c *Cluster) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.clusters, c)
}

func (s *clusterSet) all() []*Cluster {
	s.mu.Lock()
	defer s.mu.Unlock()
	clusters := make([]*Cluster, 0, len(s.clusters))
	for c := range s.clusters {
		clusters = append(clusters, c)
	}
	return clusters
}
