package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/chartserver"
	"github.com/navarch-io/navarch/internal/devfleet"
	"github.com/navarch-io/navarch/internal/gitserver"
	"github.com/navarch-io/navarch/internal/scheme"
)

// examplesPlaceholder is the repository URL the files in examples/ use, githubPlaceholder
// the GitHub API URL and chartsPlaceholder the Helm repository URL; the demo replaces them
// with the dev fleet's Git server, GitHub-compatible server and chart repository.
const (
	examplesPlaceholder = "https://git.example.com/navarch-examples.git"
	githubPlaceholder   = "https://github.example.com/api/v3/"
	chartsPlaceholder   = "https://charts.example.com/navarch-examples"
)

// githubTokenSecret is the Secret of the demo namespace holding the dev GitHub token.
const githubTokenSecret = "github-token"

// placeholders replaces the examples' placeholder URLs with the dev fleet's.
func placeholders(state *devfleet.State, repoURL string) *strings.Replacer {
	return strings.NewReplacer(examplesPlaceholder, repoURL, githubPlaceholder, state.GitHub.APIURL, chartsPlaceholder, state.Charts.URL)
}

// demoNamespace holds the example ApplicationSets and Applications.
const demoNamespace = "demo"

func newDemoCommand() *cobra.Command {
	var (
		stateDir, examples string
		timeout            time.Duration
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the examples on a local fleet and show it synced",
		Long: `demo brings up a dev fleet (a management cluster and three workload clusters labelled
env=dev, staging and prod, with navarch's controller), publishes the examples directory to the
fleet's Git server, applies the example ApplicationSets and Applications, waits until every
Application is Synced and Healthy, and prints the fleet matrix. The fleet keeps running.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return runDemo(ctx, cmd.OutOrStdout(), stateDir, examples)
		},
	}
	cmd.Flags().StringVar(&stateDir, "state-dir", devfleet.DefaultStateDir(), "directory of the dev fleet's state")
	cmd.Flags().StringVar(&examples, "examples", "examples", "directory of the examples repository")
	cmd.Flags().DurationVar(&timeout, "timeout", 15*time.Minute, "how long to wait for everything")
	return cmd
}

func runDemo(ctx context.Context, out io.Writer, stateDir, examples string) error {
	start := time.Now()
	step := func(format string, args ...any) {
		fmt.Fprintf(out, "[%5.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	if fi, err := os.Stat(examples); err != nil || !fi.IsDir() {
		return usageError{fmt.Errorf("--examples %s: not a directory (run navarch demo from the repository root)", examples)}
	}

	step("starting the dev fleet (management + dev-1, staging-2, prod-3, with the controller)")
	state, already, err := devfleet.Up(ctx, devfleet.UpOptions{
		Options: devfleet.Options{StateDir: stateDir, Clusters: 3, Workloads: true, Controller: true, Progress: indent(out)},
	})
	if err != nil {
		return err
	}
	if already && (state.ControllerLog == "" || len(state.Clusters) != 3 || !state.Workloads) {
		return fmt.Errorf("a different dev fleet already runs in %s; run \"navarch dev down%s\" first", stateDir, stateFlag(stateDir))
	}

	repoURL, commit, err := publishExamples(examples, state)
	if err != nil {
		return err
	}
	step("published %s to %s at %.8s", examples, repoURL, commit)
	charts, err := publishCharts(ctx, examples, state)
	if err != nil {
		return err
	}
	step("published the charts %s to %s", strings.Join(charts, ", "), state.Charts.URL)

	cfg, err := clientcmd.BuildConfigFromFlags("", state.Management.Kubeconfig)
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	applied, err := applyExamples(ctx, c, examples, state, repoURL)
	if err != nil {
		return err
	}
	step("applied %s", strings.Join(applied, ", "))

	step("waiting until every Application is Synced and Healthy")
	if err := waitForDemo(ctx, c, func(line string) { step("%s", line) }); err != nil {
		return err
	}
	step("every Application is Synced and Healthy")
	fmt.Fprintln(out)
	var apps navarchv1.ApplicationList
	var clusters navarchv1.ClusterList
	if err := errors.Join(c.List(ctx, &apps), c.List(ctx, &clusters)); err != nil {
		return err
	}
	if err := printFleetMatrix(out, buildFleetMatrix(apps.Items, clusters.Items), false, paletteFor(out)); err != nil {
		return err
	}
	fmt.Fprintf(out, `
The fleet keeps running. Explore it:
  export KUBECONFIG=%s
  navarch status                     # the fleet matrix
  navarch app list -n %s           # every Application
  navarch app get guestbook-prod-3 -n %s
  kubectl --kubeconfig %s get deployments -A
Change something: edit the examples, then run "make demo" again to publish them.
Open a pull request and watch its preview (docs/pull-request-previews.md):
  navarch dev pr open --branch try-preview --label preview%s
  navarch app get guestbook-pr-1 -n %s
  navarch dev pr status 1%s           # the commit status the preview reports
  navarch dev pr close 1%s            # the preview and its namespace go
Stop it:  navarch dev down%s
`, state.Management.Kubeconfig, demoNamespace, demoNamespace, state.Clusters[2].Kubeconfig,
		stateFlag(stateDir), demoNamespace, stateFlag(stateDir), stateFlag(stateDir), stateFlag(stateDir))
	return nil
}

// publishExamples commits the examples directory, with the placeholder repository URL
// replaced by the fleet's, to the repository "examples" of the fleet's Git server.
func publishExamples(examples string, state *devfleet.State) (url, commit string, err error) {
	git := gitserver.Remote(state.Git.Root, state.Git.URL)
	url = git.RepoURL("examples")
	copyTo := func(dst string) error { return copyExamples(examples, dst, placeholders(state, url)) }
	if _, err := git.Resolve("examples", "main"); err == nil {
		commit, err = git.Update("examples", "navarch demo: publish the examples", func(dir string) error {
			entries, err := os.ReadDir(dir)
			if err != nil {
				return err
			}
			for _, e := range entries {
				if e.Name() != ".git" {
					if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
						return err
					}
				}
			}
			return copyTo(dir)
		})
		return url, commit, err
	}
	tmp, err := os.MkdirTemp("", "navarch-demo-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	if err := copyTo(tmp); err != nil {
		return "", "", err
	}
	commit, err = git.CreateRepo("examples", tmp)
	return url, commit, err
}

// publishCharts packages every chart under the examples' charts/ directory and uploads it to
// the fleet's Helm repository, replacing the same version. It returns "name version" of each.
func publishCharts(ctx context.Context, examples string, state *devfleet.State) ([]string, error) {
	if state.Charts.URL == "" {
		return nil, errors.New("the dev fleet runs no Helm chart repository; run \"navarch dev down\" and start it again")
	}
	dirs, err := filepath.Glob(filepath.Join(examples, "charts", "*", "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	var published []string
	for _, file := range dirs {
		c, err := chartserver.PackageDir(filepath.Dir(file))
		if err != nil {
			return nil, err
		}
		if err := chartserver.Upload(ctx, state.Charts.URL, c); err != nil {
			return nil, err
		}
		published = append(published, c.Name+" "+c.Version)
	}
	return published, nil
}

// copyExamples copies the examples tree to dst with the placeholder URLs replaced.
func copyExamples(src, dst string, urls *strings.Replacer) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, []byte(urls.Replace(string(data))), 0o644)
	})
}

// applyExamples server-side applies the example ApplicationSets and Applications, and the
// Secret with the dev GitHub token that the previews example reads.
func applyExamples(ctx context.Context, c client.Client, examples string, state *devfleet.State, url string) ([]string, error) {
	if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}})); err != nil {
		return nil, err
	}
	token := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: githubTokenSecret},
		StringData: map[string]string{"token": state.GitHub.Token},
	}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, token)); err != nil {
		return nil, fmt.Errorf("create Secret %s/%s: %w", demoNamespace, githubTokenSecret, err)
	}
	urls := placeholders(state, url)
	var files []string
	for _, dir := range []string{"applicationsets", "applications"} {
		matches, err := filepath.Glob(filepath.Join(examples, dir, "*.yaml"))
		if err != nil {
			return nil, err
		}
		files = append(files, matches...)
	}
	var applied []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(urls.Replace(string(data))), &obj.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		body, err := json.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		if err := c.Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner("navarch-demo"), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("apply %s: %w", f, err)
		}
		applied = append(applied, obj.GetKind()+" "+obj.GetName())
	}
	return applied, nil
}

// waitForDemo waits until the example ApplicationSet is up to date and every Application in
// the demo namespace is Synced and Healthy, reporting progress whenever it changes.
func waitForDemo(ctx context.Context, c client.Client, progress func(string)) error {
	last := ""
	for {
		line, done, err := demoProgress(ctx, c)
		if err != nil {
			return err
		}
		if line != last {
			progress(line)
			last = line
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still waiting after the timeout: %s", last)
		case <-time.After(time.Second):
		}
	}
}

func demoProgress(ctx context.Context, c client.Client) (line string, done bool, err error) {
	var sets navarchv1.ApplicationSetList
	if err := c.List(ctx, &sets, client.InNamespace(demoNamespace)); err != nil {
		return "", false, err
	}
	var apps navarchv1.ApplicationList
	if err := c.List(ctx, &apps, client.InNamespace(demoNamespace)); err != nil {
		return "", false, err
	}
	setsReady := len(sets.Items) > 0
	for _, s := range sets.Items {
		setsReady = setsReady && meta.IsStatusConditionTrue(s.Status.Conditions, navarchv1.ApplicationSetResourcesUpToDate)
	}
	var waiting []string
	for _, a := range apps.Items {
		if a.Status.Sync.Status != navarchv1.SyncStatusSynced || a.Status.Health.Status != navarchv1.HealthHealthy {
			waiting = append(waiting, fmt.Sprintf("%s (%s/%s)", a.Name, orUnknown(string(a.Status.Sync.Status)), orUnknown(string(a.Status.Health.Status))))
		}
	}
	slices.Sort(waiting)
	ready := len(apps.Items) - len(waiting)
	line = fmt.Sprintf("%d/%d Applications Synced and Healthy", ready, len(apps.Items))
	if len(waiting) > 0 {
		if len(waiting) > 4 {
			waiting = append(waiting[:4], fmt.Sprintf("and %d more", len(waiting)-4))
		}
		line += "; waiting for " + strings.Join(waiting, ", ")
	}
	return line, setsReady && len(apps.Items) > 0 && len(waiting) == 0, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}

// indent prefixes each line written to w with spaces, for the dev fleet's own progress.
func indent(w io.Writer) io.Writer { return &indentWriter{w: w, start: true} }

type indentWriter struct {
	w     io.Writer
	start bool
}

func (iw *indentWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if iw.start {
			if _, err := iw.w.Write([]byte("         ")); err != nil {
				return 0, err
			}
		}
		if _, err := iw.w.Write([]byte{b}); err != nil {
			return 0, err
		}
		iw.start = b == '\n'
	}
	return len(p), nil
}
