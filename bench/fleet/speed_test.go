package fleetbench

import (
	"crypto/sha256"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// speedProbe measures how much work the machine's CPUs do per CPU-second, whatever else runs:
// once a second it hashes a buffer that fits a core's cache on a thread of its own and divides
// by the CPU time that thread used for it (from /proc/thread-self/schedstat), which excludes
// the time it waited for a CPU. Two phases that keep the cores equally busy can still get
// different work out of each CPU-second: on a virtual machine, the host's other guests share
// the physical cores' caches and execution units (a hyperthread's sibling) without showing as
// stolen time. The probe's rate tells such phases apart; it costs about 1 % of one core.
type speedProbe struct {
	mu     sync.Mutex
	hashed int64         // bytes hashed so far
	cpu    time.Duration // the probe thread's CPU time for them
	stop   chan struct{}
	done   chan struct{}
}

// speedSample is the probe's totals at one moment.
type speedSample struct {
	hashed int64
	cpu    time.Duration
}

const (
	probeBuffer = 256 << 10 // fits the L2 cache of current x86 and arm64 cores
	probeRounds = 16        // hashed per tick: about 3 to 10 ms
)

func startSpeedProbe(b *testing.B) *speedProbe {
	p := &speedProbe{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		runtime.LockOSThread() // schedstat is this thread's
		buf := make([]byte, probeBuffer)
		for i := range buf {
			buf[i] = byte(i)
		}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			cpu, err := hashRounds(buf)
			if err != nil {
				b.Logf("speed probe: %v", err)
				return
			}
			p.mu.Lock()
			p.hashed += probeRounds * probeBuffer
			p.cpu += cpu
			p.mu.Unlock()
		}
	}()
	b.Cleanup(func() {
		close(p.stop)
		<-p.done
	})
	return p
}

func (p *speedProbe) sample() speedSample {
	p.mu.Lock()
	defer p.mu.Unlock()
	return speedSample{hashed: p.hashed, cpu: p.cpu}
}

// rate is MB hashed per CPU-second between s and now; 0 when the probe did not run between
// them (it stops if it cannot read its CPU time), so that no rate is logged.
func (s speedSample) rate(now speedSample) float64 {
	cpu := (now.cpu - s.cpu).Seconds()
	if cpu <= 0 {
		return 0
	}
	return float64(now.hashed-s.hashed) / 1e6 / cpu
}

// hashRounds hashes buf probeRounds times, each round depending on the last, and returns the
// CPU time the calling thread used for it.
func hashRounds(buf []byte) (time.Duration, error) {
	before, err := threadCPU()
	if err != nil {
		return 0, err
	}
	for range probeRounds {
		sum := sha256.Sum256(buf)
		buf[0] = sum[0]
	}
	after, err := threadCPU()
	return after - before, err
}

// threadCPU is the calling thread's CPU time, the first field of /proc/thread-self/schedstat
// (nanoseconds run on a CPU).
func threadCPU() (time.Duration, error) {
	data, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return 0, err
	}
	field, _, _ := strings.Cut(string(data), " ")
	ns, err := strconv.ParseInt(field, 10, 64)
	return time.Duration(ns), err
}
