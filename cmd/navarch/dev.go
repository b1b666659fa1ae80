package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/navarch-io/navarch/internal/devfleet"
)

func newDevCommand() *cobra.Command {
	var stateDir string
	dev := &cobra.Command{
		Use:   "dev",
		Short: "Run a local fleet: a management cluster, workload clusters and a Git server",
		Long: `dev runs a local navarch fleet built from real Kubernetes binaries (see "make k8s"):
a management cluster with navarch's CRDs, workload clusters registered in it as Cluster objects
labelled env=dev|staging|prod and region=..., and a Git server for your repositories.`,
	}
	dev.PersistentFlags().StringVar(&stateDir, "state-dir", devfleet.DefaultStateDir(),
		"directory for the fleet's state, data and logs ($NAVARCH_DEV_STATE_DIR)")
	dev.AddCommand(newDevUpCommand(&stateDir), newDevDownCommand(&stateDir),
		newDevStatusCommand(&stateDir), newDevServeCommand(&stateDir), newDevPRCommand(&stateDir))
	return dev
}

func newDevUpCommand(stateDir *string) *cobra.Command {
	opts := devfleet.UpOptions{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the local fleet (a no-op when it already runs)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Clusters < 0 {
				return usageError{fmt.Errorf("--clusters must be 0 or more, got %d", opts.Clusters)}
			}
			out := cmd.OutOrStdout()
			opts.StateDir = *stateDir
			opts.Progress = out
			state, already, err := devfleet.Up(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if already {
				fmt.Fprintf(out, "A dev fleet is already running in %s (supervisor pid %d, started %s); nothing to do.\n",
					*stateDir, state.PID, state.StartedAt.Local().Format(time.DateTime))
				fmt.Fprintln(out, `Run "navarch dev down" first to start a different one.`)
			}
			printHowToReach(out, *stateDir, state)
			return nil
		},
	}
	cmd.Flags().IntVar(&opts.Clusters, "clusters", 3, "number of workload clusters")
	cmd.Flags().BoolVar(&opts.Workloads, "workloads", false,
		"run controllers, a scheduler and simulated nodes so Deployments become Available and Jobs complete")
	cmd.Flags().BoolVar(&opts.Controller, "controller", false, "also run navarch's controller against the management cluster")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 5*time.Minute, "how long to wait for the fleet")
	return cmd
}

func printHowToReach(out io.Writer, stateDir string, s *devfleet.State) {
	fmt.Fprintf(out, "\nThe management cluster (navarch's CRDs, Cluster objects):\n  export KUBECONFIG=%s\n  kubectl get clusters.navarch.io\n", s.Management.Kubeconfig)
	if len(s.Clusters) > 0 {
		fmt.Fprintln(out, "\nWorkload clusters:")
		w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		for _, c := range s.Clusters {
			fmt.Fprintf(w, "  %s\t%s\tkubectl --kubeconfig %s get nodes\n", c.Name, labelString(c.Labels), c.Kubeconfig)
		}
		_ = w.Flush()
	}
	fmt.Fprintf(out, "\nGit server: %s (repositories in %s)\n", s.Git.URL, s.Git.Root)
	if s.GitHub.URL != "" {
		fmt.Fprintf(out, "GitHub-compatible server: api %s, token %q (navarch dev pr opens pull requests)\n", s.GitHub.APIURL, s.GitHub.Token)
	}
	if s.Charts.URL != "" {
		fmt.Fprintf(out, "Helm chart repository: %s (upload a chart: curl --data-binary @chart.tgz %s/api/charts)\n", s.Charts.URL, s.Charts.URL)
	}
	if s.ControllerLog != "" {
		fmt.Fprintf(out, "Controller log: %s\n", s.ControllerLog)
	}
	fmt.Fprintf(out, "\nStatus: navarch dev status%s\nStop:   navarch dev down%s\n", stateFlag(stateDir), stateFlag(stateDir))
}

func stateFlag(dir string) string {
	if dir == devfleet.DefaultStateDir() {
		return ""
	}
	return " --state-dir " + dir
}

func labelString(labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	return "env=" + labels["env"] + ",region=" + labels["region"]
}

func newDevDownCommand(stateDir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the local fleet and remove its state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			err := devfleet.Down(*stateDir, out)
			if errors.Is(err, devfleet.ErrNotRunning) {
				fmt.Fprintf(out, "No dev fleet is running in %s.\n", *stateDir)
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(out, "The dev fleet is stopped; no process of it is left.")
			return nil
		},
	}
}

func newDevStatusCommand(stateDir *string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List what the local fleet runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			s, err := devfleet.ReadState(*stateDir)
			if errors.Is(err, devfleet.ErrNotRunning) {
				return fmt.Errorf("no dev fleet is running in %s; start one with \"navarch dev up\"", *stateDir)
			}
			if err != nil {
				return err
			}
			switch output {
			case "json":
				data, err := json.MarshalIndent(s, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(out, string(data))
				return err
			case "yaml":
				data, err := yaml.Marshal(s)
				if err != nil {
					return err
				}
				_, err = out.Write(data)
				return err
			case "", "table", "wide":
				return printDevStatus(out, *stateDir, s)
			default:
				return usageError{fmt.Errorf("--output must be table, wide, json or yaml, got %q", output)}
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table|wide|json|yaml")
	return cmd
}

func printDevStatus(out io.Writer, stateDir string, s *devfleet.State) error {
	alive := devfleet.Running(s, stateDir)
	state := func(pids []int) string {
		up := 0
		for _, p := range pids {
			if alive[p] {
				up++
			}
		}
		if up == len(pids) {
			return "Running"
		}
		return fmt.Sprintf("Degraded (%d/%d processes)", up, len(pids))
	}
	w := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(w, "COMPONENT\tNAME\tLABELS\tSTATE\tENDPOINT\tPIDS")
	fmt.Fprintf(w, "supervisor\t\t\t%s\t%s\t%d\n", state([]int{s.PID}), filepath.Join(stateDir, "supervisor.log"), s.PID)
	fmt.Fprintf(w, "git\t\t\t%s\t%s\t%d\n", state([]int{s.PID}), s.Git.URL, s.PID)
	if s.GitHub.URL != "" {
		fmt.Fprintf(w, "github\t\t\t%s\t%s\t%d\n", state([]int{s.PID}), s.GitHub.APIURL, s.PID)
	}
	if s.Charts.URL != "" {
		fmt.Fprintf(w, "charts\t\t\t%s\t%s\t%d\n", state([]int{s.PID}), s.Charts.URL, s.PID)
	}
	fmt.Fprintf(w, "cluster\t%s\t\t%s\t%s\t%s\n", s.Management.Name, state(s.Management.PIDs), s.Management.Server, joinPIDs(s.Management.PIDs))
	for _, c := range s.Clusters {
		fmt.Fprintf(w, "cluster\t%s\t%s\t%s\t%s\t%s\n", c.Name, labelString(c.Labels), state(c.PIDs), c.Server, joinPIDs(c.PIDs))
	}
	return w.Flush()
}

func joinPIDs(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ",")
}

// newDevServeCommand is the supervisor `dev up` starts in the background; it runs the fleet
// until it receives SIGTERM or SIGINT.
func newDevServeCommand(stateDir *string) *cobra.Command {
	opts := devfleet.Options{}
	cmd := &cobra.Command{
		Use:    "serve",
		Short:  "Run the local fleet in the foreground (what dev up starts in the background)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.StateDir = *stateDir
			opts.Progress = cmd.OutOrStdout()
			return devfleet.Run(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.Clusters, "clusters", 3, "number of workload clusters")
	cmd.Flags().BoolVar(&opts.Workloads, "workloads", false, "run pods in the workload clusters")
	cmd.Flags().BoolVar(&opts.Controller, "controller", false, "run navarch's controller")
	return cmd
}
