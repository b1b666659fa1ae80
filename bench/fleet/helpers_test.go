package fleetbench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/localcluster"
	"github.com/navarch-io/navarch/internal/scheme"
)

// --- the controller process ------------------------------------------------------------------

// navarchProcess is `navarch controller` running as a child process, as in production: its
// RSS and CPU time are read from /proc/<pid>, its heap and its own client-side request
// counts from its Prometheus endpoint.
type navarchProcess struct {
	cmd        *exec.Cmd
	logPath    string
	metricsURL string
	webhookURL string
	pprofURL   string
	// heapSampled is whether the controller samples its heap for the profile
	// (NAVARCH_BENCH_HEAP_PROFILE=1, or a GODEBUG that sets memprofilerate); otherwise it runs
	// with GODEBUG=memprofilerate=0, the memory of a controller that serves no profiles, the
	// default.
	heapSampled bool
	exited      chan struct{}
	waitErr     error // set before exited is closed
}

// buildNavarch builds cmd/navarch into dir and returns the binary's path.
func buildNavarch(b *testing.B, dir string) string {
	b.Helper()
	bin := filepath.Join(dir, "navarch")
	build := exec.Command("go", "build", "-o", bin, "github.com/navarch-io/navarch/cmd/navarch")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build: a static binary maps fewer pages
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/navarch: %v\n%s", err, out)
	}
	return bin
}

// startNavarch runs `navarch controller` at its default settings against the management
// cluster's kubeconfig. Only addresses are set: metrics over plain HTTP on a free loopback port
// (so the benchmark can read them), the health probes off (their default port may be taken
// by another test), the webhook endpoint on a free loopback port (the documented way to have a
// push acted on before the 3-minute poll), and the Git cache in the artifacts directory. The
// process is stopped, by its process group, when the benchmark ends.
func startNavarch(b *testing.B, bin, kubeconfig, artifacts string) *navarchProcess {
	b.Helper()
	addrs := freeAddrs(b, 3)
	metricsAddr, webhookAddr, pprofAddr := addrs[0], addrs[1], addrs[2]
	p := &navarchProcess{
		logPath:    filepath.Join(artifacts, "controller.log"),
		metricsURL: "http://" + metricsAddr + "/metrics",
		webhookURL: "http://" + webhookAddr + "/api/webhook",
		pprofURL:   "http://" + pprofAddr + "/debug/pprof/",
		exited:     make(chan struct{}),
		// The controller samples allocations for the heap profile only when it serves
		// profiles, which it does here for the CPU profiles.
		heapSampled: os.Getenv("NAVARCH_BENCH_HEAP_PROFILE") != "" || strings.Contains(os.Getenv("GODEBUG"), "memprofilerate="),
	}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		b.Fatal(err)
	}
	p.cmd = exec.Command(bin, "controller", "--kubeconfig", kubeconfig,
		"--metrics-bind-address", metricsAddr, "--metrics-secure=false",
		"--health-probe-bind-address", "0",
		"--webhook-bind-address", webhookAddr,
		"--pprof-bind-address", pprofAddr,
		"--git-cache-dir", filepath.Join(artifacts, "git-cache"))
	p.cmd.Args = append(p.cmd.Args, strings.Fields(os.Getenv("NAVARCH_BENCH_CONTROLLER_ARGS"))...)
	if !p.heapSampled {
		godebug := "memprofilerate=0"
		if set := os.Getenv("GODEBUG"); set != "" {
			godebug = set + "," + godebug
		}
		p.cmd.Env = append(os.Environ(), "GODEBUG="+godebug)
	}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = controllerProcAttr()
	if err := p.cmd.Start(); err != nil {
		b.Fatalf("start navarch controller: %v", err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		_ = logFile.Close()
		close(p.exited)
	}()
	b.Cleanup(p.stop)
	b.Logf("navarch controller started, pid %d, log %s", p.cmd.Process.Pid, p.logPath)
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := p.metrics(); err == nil {
			return p
		} else if time.Now().After(deadline) {
			b.Fatalf("the controller's metrics endpoint does not answer after 1m: %v (log: %s)", err, p.logPath)
		}
		p.mustRun(b)
		time.Sleep(200 * time.Millisecond)
	}
}

// mustRun fails the benchmark if the controller has exited.
func (p *navarchProcess) mustRun(b *testing.B) {
	b.Helper()
	select {
	case <-p.exited:
		b.Fatalf("navarch controller (pid %d) exited: %v; its log is %s", p.cmd.Process.Pid, p.waitErr, p.logPath)
	default:
	}
}

// stop ends the controller's process group, SIGTERM first, and waits for it.
func (p *navarchProcess) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// cpuTimes returns the CPU time of process pid (utime+stime) and of its waited-for children
// (cutime+cstime).
func cpuTimes(b *testing.B, pid int) (own, children time.Duration) {
	b.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which is in parentheses and may contain spaces:
	// state (field 3), ..., utime (14), stime (15), cutime (16), cstime (17).
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	tick := func(i int) time.Duration { return ticks(b, fmt.Sprintf("/proc/%d/stat", pid), i, fields[i-3]) }
	return tick(14) + tick(15), tick(16) + tick(17)
}

// ticks parses field i of file, a count of clock ticks (USER_HZ), as a duration.
func ticks(b *testing.B, file string, i int, field string) time.Duration {
	b.Helper()
	n, err := strconv.ParseInt(field, 10, 64)
	if err != nil {
		b.Fatalf("%s field %d: %v", file, i, err)
	}
	return time.Duration(n) * clockTick
}

// clusterCPU is the CPU time used so far by the processes (apiserver, etcd, controllers) of
// the management cluster and of all workload clusters together; byProcess splits both by
// process name (kube-apiserver, etcd, kube-controller-manager, ...), the management cluster's
// prefixed with "management ".
type clusterCPU struct {
	management, workloads time.Duration
	byProcess             map[string]time.Duration
	machine               machineTimes
	speed                 speedSample
}

// machineTimes is the machine's time so far, over all its CPUs, from /proc/stat: busy (user,
// nice, system, irq, softirq), idle (idle and iowait) and steal, the time the hypervisor ran
// something else while a CPU of this machine wanted to run. Steal tells a run whose host was
// busy: its processes then also get less done per CPU-second, so such a run's figures are not
// comparable with a quiet one's. switches counts the context switches of all CPUs (ctxt).
type machineTimes struct {
	busy, idle, steal time.Duration
	switches          int64
}

func readMachineTimes(b *testing.B) machineTimes {
	b.Helper()
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	if len(f) < 9 || f[0] != "cpu" {
		b.Fatalf("/proc/stat: unexpected first line %q", line)
	}
	tick := func(i int) time.Duration { return ticks(b, "/proc/stat", i, f[i]) }
	m := machineTimes{busy: tick(1) + tick(2) + tick(3) + tick(6) + tick(7), idle: tick(4) + tick(5), steal: tick(8)}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "ctxt "); ok {
			if m.switches, err = strconv.ParseInt(strings.TrimSpace(rest), 10, 64); err != nil {
				b.Fatalf("/proc/stat ctxt: %v", err)
			}
		}
	}
	return m
}

func (f *fleet) clusterCPU(b *testing.B) clusterCPU {
	b.Helper()
	out := clusterCPU{byProcess: map[string]time.Duration{}, machine: readMachineTimes(b), speed: f.probe.sample()}
	out.management = processCPU(b, f.mgmt, "management ", out.byProcess)
	for _, w := range f.workloads {
		out.workloads += processCPU(b, w, "", out.byProcess)
	}
	return out
}

// processCPU adds the CPU time each of c's processes has used so far to into, under its
// process name (kube-apiserver, etcd, ...) prefixed with prefix, and returns their sum.
func processCPU(b *testing.B, c *localcluster.Cluster, prefix string, into map[string]time.Duration) time.Duration {
	b.Helper()
	var total time.Duration
	for _, pid := range c.PIDs() {
		own, _ := cpuTimes(b, pid)
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			b.Fatal(err)
		}
		into[prefix+strings.TrimSpace(string(comm))] += own
		total += own
	}
	return total
}

// since logs the CPU the clusters used since c, for the phase named what, and its split by
// process; it returns the total.
func (c clusterCPU) since(b *testing.B, f *fleet, what string) time.Duration {
	b.Helper()
	return c.until(b, f.clusterCPU(b), what)
}

// until logs the CPU the clusters used from c to now, for the phase named what, and its split
// by process; it returns the total.
func (c clusterCPU) until(b *testing.B, now clusterCPU, what string) time.Duration {
	b.Helper()
	split := map[string]float64{}
	for name, t := range now.byProcess {
		split[name] = (t - c.byProcess[name]).Seconds()
	}
	used := now.management + now.workloads - c.management - c.workloads
	b.Logf("%s: the clusters' processes used %.1f s of CPU: the management cluster %.1f s, the workload clusters %.1f s; by process: %s",
		what, used.Seconds(), (now.management - c.management).Seconds(), (now.workloads - c.workloads).Seconds(), format(split))
	b.Logf("%s: the machine's CPUs were busy %.1f s, idle %.1f s, and had %.1f s stolen by the host; they switched context %d times",
		what, (now.machine.busy - c.machine.busy).Seconds(), (now.machine.idle - c.machine.idle).Seconds(), (now.machine.steal - c.machine.steal).Seconds(),
		now.machine.switches-c.machine.switches)
	if rate := c.speed.rate(now.speed); rate > 0 {
		b.Logf("%s: the speed probe hashed %.0f MB per CPU-second", what, rate)
	}
	return used
}

// served counts the requests the management apiserver and the workload apiservers (all
// together) have served so far, by verb and resource, dry runs apart.
type served struct{ management, workloads map[string]float64 }

func (f *fleet) served(b *testing.B) served {
	b.Helper()
	count := func(c *localcluster.Cluster, into map[string]float64) {
		m, err := apiserverMetrics(context.Background(), c)
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range m {
			if s.name != "apiserver_request_total" {
				continue
			}
			key := s.labels["verb"] + " " + s.labels["resource"]
			if s.labels["dry_run"] != "" {
				key += " (dry run)"
			}
			into[key] += s.value
		}
	}
	out := served{management: map[string]float64{}, workloads: map[string]float64{}}
	count(f.mgmt, out.management)
	for _, w := range f.workloads {
		count(w, out.workloads)
	}
	return out
}

// since logs the requests served since s, for the phase named what; counts below one per
// hundred Applications are left out.
func (s served) since(b *testing.B, f *fleet, what string) {
	b.Helper()
	now := f.served(b)
	significant := func(d map[string]float64) map[string]float64 {
		for k, v := range d {
			if v < float64(f.cfg.apps)/100 {
				delete(d, k)
			}
		}
		return d
	}
	b.Logf("%s: requests served by the management apiserver: %s", what, format(significant(diff(now.management, s.management))))
	b.Logf("%s: requests served by the workload apiservers: %s", what, format(significant(diff(now.workloads, s.workloads))))
}

// apiserverProfile saves a CPU profile of c's kube-apiserver, taken over seconds, as file in
// the artifacts directory, and logs its top entries.
func (f *fleet) apiserverProfile(b *testing.B, c *localcluster.Cluster, file string, seconds int, logTop bool) {
	b.Helper()
	cfg := c.RESTConfig()
	cfg.Timeout = time.Duration(seconds+60) * time.Second
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Logf("apiserver profile: %v", err)
		return
	}
	url, path := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", c.Server(), seconds), filepath.Join(f.artifacts, file)
	if !logTop {
		if err := fetchTo(hc, url, path); err != nil {
			b.Logf("apiserver %s profile %s: %v", c.Name, path, err)
		}
		return
	}
	savePprof(b, hc, url, path, "cpu", "apiserver "+c.Name)
}

// procSample is what /proc says about the controller process at one moment.
type procSample struct {
	at time.Time
	// cpu is utime+stime of the process itself; children is cutime+cstime, the CPU time of
	// the child processes (git) it has waited for.
	cpu, children time.Duration
	// rssKB is VmRSS, hwmKB VmHWM (the peak RSS since the process started); anonKB and
	// fileKB split VmRSS into anonymous memory (the Go heap, stacks, runtime) and mapped
	// files (the binary's pages).
	rssKB, hwmKB, anonKB, fileKB int64
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on every Linux
// architecture Go supports.
const clockTick = 10 * time.Millisecond

func (p *navarchProcess) sample(b *testing.B) procSample {
	b.Helper()
	p.mustRun(b)
	pid := p.cmd.Process.Pid
	s := procSample{at: time.Now()}
	s.cpu, s.children = cpuTimes(b, pid)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		k, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		switch k {
		case "VmRSS":
			s.rssKB, _ = strconv.ParseInt(f[0], 10, 64)
		case "VmHWM":
			s.hwmKB, _ = strconv.ParseInt(f[0], 10, 64)
		case "RssAnon":
			s.anonKB, _ = strconv.ParseInt(f[0], 10, 64)
		case "RssFile":
			s.fileKB, _ = strconv.ParseInt(f[0], 10, 64)
		}
	}
	return s
}

// binaryPages returns the resident KB of the controller binary's code (its r-xp mapping) and
// read-only data (r--p: the function tables and symbols, constant data), from smaps. What of
// the read-only data is resident depends on what read it: stack walks, and any profile, whose
// symbols are looked up there.
func (p *navarchProcess) binaryPages(b *testing.B) (codeKB, rodataKB int64) {
	b.Helper()
	smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", p.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	var into *int64
	for line := range strings.Lines(string(smaps)) {
		f := strings.Fields(line)
		switch {
		case len(f) == 6 && strings.Contains(f[0], "-"): // a mapping's first line
			into = nil
			if f[5] == p.cmd.Path {
				switch f[1] {
				case "r-xp":
					into = &codeKB
				case "r--p":
					into = &rodataKB
				}
			}
		case into != nil && len(f) >= 2 && f[0] == "Rss:":
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			*into += kb
		}
	}
	return codeKB, rodataKB
}

// metrics reads the controller's Prometheus endpoint.
func (p *navarchProcess) metrics() (metricSet, error) {
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(p.metricsURL)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", p.metricsURL, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// profile saves the controller's profile name (heap, or profile for CPU, with query) into
// dir/file and logs its top entries (go tool pprof -top), so that a run says where memory and
// CPU go; NAVARCH_BENCH_KEEP=1 keeps the file for a closer look.
func (p *navarchProcess) profile(b *testing.B, dir, file, name, query, sampleIndex string) {
	b.Helper()
	savePprof(b, &http.Client{Timeout: 5 * time.Minute}, p.pprofURL+name+query, filepath.Join(dir, file), sampleIndex, "controller")
}

// savePprof saves the pprof profile served at url as path and logs its top entries.
func savePprof(b *testing.B, hc *http.Client, url, path, sampleIndex, whose string) {
	b.Helper()
	if err := fetchTo(hc, url, path); err != nil {
		b.Logf("%s profile %s: %v", whose, path, err)
		return
	}
	top, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=25", "-sample_index="+sampleIndex, path).CombinedOutput()
	if err != nil {
		b.Logf("go tool pprof %s: %v\n%s", path, err, top)
		return
	}
	b.Logf("%s profile %s, top entries:\n%s", whose, path, top)
}

// fetchTo saves what url returns as path.
func fetchTo(hc *http.Client, url, path string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, resp.Body)
	return errors.Join(err, out.Close())
}

// mustMetrics is metrics, failing the benchmark on an error.
func (p *navarchProcess) mustMetrics(b *testing.B) metricSet {
	b.Helper()
	m, err := p.metrics()
	if err != nil {
		b.Fatalf("read the controller's metrics: %v", err)
	}
	return m
}

// freeAddrs returns n distinct free loopback addresses. It holds every listener until it has
// all of them: a port closed before the next is asked for may be handed out again (two of
// the controller's servers were once given one port, and it exited at start).
func freeAddrs(b *testing.B, n int) []string {
	b.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		addrs[i] = l.Addr().String()
	}
	return addrs
}

// --- Prometheus text format ------------------------------------------------------------------

// metric is one sample of the Prometheus text format.
type metric struct {
	name   string
	labels map[string]string
	value  float64
}

type metricSet []metric

// parseMetrics reads the Prometheus text exposition format. The benchmark reads counters and
// gauges only; other types keep no value here.
func parseMetrics(r io.Reader) (metricSet, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	var out metricSet
	for name, f := range families {
		for _, m := range f.GetMetric() {
			sample := metric{name: name, labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				sample.labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.Counter != nil:
				sample.value = m.GetCounter().GetValue()
			case m.Gauge != nil:
				sample.value = m.GetGauge().GetValue()
			case m.Untyped != nil:
				sample.value = m.GetUntyped().GetValue()
			}
			out = append(out, sample)
		}
	}
	return out, nil
}

// sum adds up the samples of name whose labels satisfy keep (nil keeps all), grouped by
// the value of label by ("" groups everything under "").
func (s metricSet) sum(name, by string, keep func(map[string]string) bool) map[string]float64 {
	out := map[string]float64{}
	for _, m := range s {
		if m.name == name && (keep == nil || keep(m.labels)) {
			out[m.labels[by]] += m.value
		}
	}
	return out
}

// value is the sum of every sample of name.
func (s metricSet) value(name string) float64 { return s.sum(name, "", nil)[""] }

// diff is after - before, key by key.
func diff(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func total(m map[string]float64) float64 {
	var t float64
	for _, v := range m {
		t += v
	}
	return t
}

// format prints a map sorted by key, e.g. "GET=12 LIST=3".
func format(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var sb strings.Builder
	for _, k := range keys {
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%s=%.0f", cmp.Or(k, "(none)"), m[k])
	}
	if sb.Len() == 0 {
		return "(none)"
	}
	return sb.String()
}

// apiserverMetrics reads a cluster's kube-apiserver /metrics with its admin credentials.
func apiserverMetrics(ctx context.Context, c *localcluster.Cluster) (metricSet, error) {
	cfg := c.RESTConfig()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Server()+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %s", c.Server(), resp.Status)
	}
	return parseMetrics(resp.Body)
}

// writeVerbs are the verbs of apiserver_request_total that change something.
var writeVerbs = []string{"POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY", "CREATE", "UPDATE"}

// isWrite keeps apiserver_request_total samples of writes that were not dry runs.
func isWrite(l map[string]string) bool {
	return slices.Contains(writeVerbs, strings.ToUpper(l["verb"])) && l["dry_run"] == ""
}

// --- the Git server's request log -----------------------------------------------------------

// gitRequests counts the requests of the Git server from its log (Options.Log), which has one
// line per request: "gitserver: <date> <time> <METHOD> <path> <status> user=... <duration>".
type gitRequests struct {
	mu      sync.Mutex
	partial []byte
	times   []time.Time
	paths   []string
}

func (g *gitRequests) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.partial = append(g.partial, p...)
	for {
		i := bytes.IndexByte(g.partial, '\n')
		if i < 0 {
			break
		}
		f := strings.Fields(string(g.partial[:i]))
		g.partial = g.partial[i+1:]
		if len(f) >= 5 && f[0] == "gitserver:" && (f[3] == http.MethodGet || f[3] == http.MethodPost) {
			g.times = append(g.times, time.Now())
			g.paths = append(g.paths, f[3]+" "+f[4])
		}
	}
	return len(p), nil
}

// since returns the requests logged at or after t, and when each arrived.
func (g *gitRequests) since(t time.Time) ([]time.Time, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	i, _ := slices.BinarySearchFunc(g.times, t, func(a, b time.Time) int { return a.Compare(b) })
	return slices.Clone(g.times[i:]), slices.Clone(g.paths[i:])
}

// --- watching the Applications --------------------------------------------------------------

// appState is what the benchmark needs of an Application's status.
type appState struct {
	revision string // status.sync.revision
	sync     navarchv1.SyncStatusCode
	health   navarchv1.HealthStatusCode
	running  bool // an operation is Running
	ready    string
}

func (s appState) done(revision string) bool {
	return s.revision == revision && s.sync == navarchv1.SyncStatusSynced && s.health == navarchv1.HealthHealthy && !s.running
}

// tracker follows every Application of a namespace through one watch (an informer of the
// benchmark process): counting 10,000 Applications in memory costs the apiserver nothing,
// where listing them every few hundred milliseconds would load the apiserver that the
// controller writes to, on the same 2 cores.
type tracker struct {
	mu   sync.Mutex
	apps map[string]appState
	// firstAt is when an Application first reported each revision.
	firstAt map[string]time.Time
	stop    context.CancelFunc
}

func startTracker(b *testing.B, mgmt *localcluster.Cluster, namespace string) *tracker {
	b.Helper()
	cfg := mgmt.RESTConfig()
	cfg.QPS, cfg.Burst = 100, 200
	c, err := crcache.New(cfg, crcache.Options{
		Scheme:            scheme.New(),
		DefaultNamespaces: map[string]crcache.Config{namespace: {}},
		DefaultTransform:  crcache.TransformStripManagedFields(),
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &tracker{apps: map[string]appState{}, firstAt: map[string]time.Time{}, stop: cancel}
	b.Cleanup(cancel)
	inf, err := c.GetInformer(ctx, &navarchv1.Application{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    t.observe,
		UpdateFunc: func(_, obj any) { t.observe(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if a, ok := obj.(*navarchv1.Application); ok {
				t.mu.Lock()
				delete(t.apps, a.Name)
				t.mu.Unlock()
			}
		},
	}); err != nil {
		b.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("the Application watch did not sync")
	}
	return t
}

func (t *tracker) observe(obj any) {
	a, ok := obj.(*navarchv1.Application)
	if !ok {
		return
	}
	s := appState{revision: a.Status.Sync.Revision, sync: a.Status.Sync.Status, health: a.Status.Health.Status,
		running: a.Status.OperationState != nil && a.Status.OperationState.Phase == navarchv1.OperationRunning}
	if c := meta.FindStatusCondition(a.Status.Conditions, navarchv1.ConditionReady); c != nil {
		s.ready = string(c.Status) + " " + c.Reason + ": " + c.Message
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.apps[a.Name] = s
	if _, seen := t.firstAt[s.revision]; s.revision != "" && !seen {
		t.firstAt[s.revision] = time.Now()
	}
}

// count returns how many Applications exist and how many are Synced and Healthy at revision.
func (t *tracker) count(revision string) (exist, done int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.apps {
		if s.done(revision) {
			done++
		}
	}
	return len(t.apps), done
}

// firstSeen is when an Application first reported revision, if one has.
func (t *tracker) firstSeen(revision string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.firstAt[revision]
	return at, ok
}

// summary says how the Applications stand, for a progress line or a failure: counts by
// sync/health/revision and one Application that is not done.
func (t *tracker) summary(revision string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	counts := map[string]float64{}
	var stuck []string
	for name, s := range t.apps {
		rev := "new"
		if s.revision != revision {
			rev = "other"
		}
		counts[fmt.Sprintf("%s/%s/%s/running=%v", cmp.Or(string(s.sync), "-"), cmp.Or(string(s.health), "-"), rev, s.running)]++
		if !s.done(revision) {
			stuck = append(stuck, name)
		}
	}
	out := fmt.Sprintf("%d Applications: %s", len(t.apps), format(counts))
	if len(stuck) > 0 {
		slices.Sort(stuck)
		s := t.apps[stuck[0]]
		out += fmt.Sprintf("; e.g. %s: revision %.8s, Ready %s", stuck[0], s.revision, s.ready)
	}
	return out
}

// waitFor polls cond every interval until it holds or timeout passes; progress is logged
// every minute with what describe says.
func waitFor(b *testing.B, timeout, interval time.Duration, what string, cond func() bool, describe func() string) {
	b.Helper()
	start := time.Now()
	lastLog := start
	for !cond() {
		if time.Since(start) > timeout {
			b.Fatalf("waited %s for %s in vain: %s", timeout, what, describe())
		}
		if time.Since(lastLog) >= time.Minute {
			lastLog = time.Now()
			b.Logf("%s: waiting for %s: %s", time.Since(start).Round(time.Second), what, describe())
		}
		time.Sleep(interval)
	}
}

// envInt reads a positive integer from the environment, or returns def.
func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// envDuration reads a duration from the environment, or returns def.
func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	b.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		b.Fatalf("%s=%q: want a duration", name, s)
	}
	return d
}

var errNotLinux = errors.New("the benchmark reads /proc and runs on Linux only")
