package devfleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const stateFile = "state.json"

// State is what a running dev fleet records about itself.
type State struct {
	// PID is the supervisor process that owns every other process.
	PID int `json:"pid"`
	// StartedAt is when the supervisor started.
	StartedAt time.Time `json:"startedAt"`
	// Ready is true once every cluster runs and is registered.
	Ready bool `json:"ready"`
	// Workloads says whether the workload clusters run pods.
	Workloads bool `json:"workloads"`
	// Management is the management cluster.
	Management ClusterState `json:"management"`
	// Clusters are the workload clusters.
	Clusters []ClusterState `json:"clusters"`
	// Git is the Git server.
	Git GitState `json:"git"`
	// GitHub is the GitHub-compatible server.
	GitHub GitHubState `json:"github"`
	// Charts is the Helm chart repository.
	Charts ChartsState `json:"charts"`
	// ControllerLog is the log of the controller the supervisor runs, if it runs one.
	ControllerLog string `json:"controllerLog,omitempty"`
}

// ClusterState describes one running cluster.
type ClusterState struct {
	Name       string            `json:"name"`
	Server     string            `json:"server"`
	Kubeconfig string            `json:"kubeconfig"`
	Labels     map[string]string `json:"labels,omitempty"`
	PIDs       []int             `json:"pids"`
}

// GitState describes the Git server.
type GitState struct {
	URL  string `json:"url"`
	Root string `json:"root"`
}

// ChartsState describes the Helm chart repository: charts are published to it by uploading
// their archives (chartserver.Upload).
type ChartsState struct {
	URL string `json:"url"`
}

// GitHubState describes the GitHub-compatible server: its API URL, for a generator's
// github.api, and the token it accepts.
type GitHubState struct {
	URL    string `json:"url"`
	APIURL string `json:"apiURL"`
	Token  string `json:"token"`
	// WebhookURL is where it delivers webhooks: the controller's endpoint, when the fleet
	// runs one.
	WebhookURL string `json:"webhookURL,omitempty"`
}

// DefaultStateDir is $NAVARCH_DEV_STATE_DIR, or ~/.local/state/navarch/dev.
func DefaultStateDir() string {
	if d := os.Getenv("NAVARCH_DEV_STATE_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "navarch-dev")
	}
	return filepath.Join(home, ".local", "state", "navarch", "dev")
}

// ErrNotRunning means no dev fleet is recorded in the state directory.
var ErrNotRunning = errors.New("no dev fleet is running")

// ReadState reads the state file of the fleet in dir.
func ReadState(dir string) (*State, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotRunning
	}
	if err != nil {
		return nil, err
	}
	s := &State{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	return s, nil
}

func (s *State) write(dir string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, stateFile))
}

// AllPIDs lists the supervisor and every cluster process.
func (s *State) AllPIDs() []int {
	pids := []int{s.PID}
	pids = append(pids, s.Management.PIDs...)
	for _, c := range s.Clusters {
		pids = append(pids, c.PIDs...)
	}
	return pids
}

// processAlive reports whether pid runs and is one of ours: its command line mentions the
// state directory or is the supervisor. This guards against a PID reused by an unrelated
// process after a reboot or a crash.
func processAlive(pid int, stateDir string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil {
		// A zombie has exited; it only waits to be reaped by its parent.
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return strings.Contains(string(cmdline), stateDir)
}
