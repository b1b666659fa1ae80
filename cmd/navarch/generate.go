package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/generators"
	"github.com/navarch-io/navarch/internal/appset"
	"github.com/navarch-io/navarch/internal/argocd"
	"github.com/navarch-io/navarch/internal/gitrepo"
	"github.com/navarch-io/navarch/internal/scm"
)

type generateOptions struct {
	files         []string
	clustersFile  string
	repoOverrides []string
	output        string
	diff          bool
	maxParamSets  int
	kube          kubeFlags
}

func newGenerateCommand() *cobra.Command {
	o := &generateOptions{}
	cmd := &cobra.Command{
		Use:   "generate -f APPSET.yaml",
		Short: "Print the Applications an ApplicationSet would produce, offline",
		Long: `generate runs an ApplicationSet's generators and template exactly as the controller does
and prints the Applications it would write, without a controller.

Git is read from the real repositories, or from a local directory named by --repo-override
(its working tree as it is, uncommitted changes included). Clusters come from a YAML file of
Cluster objects (--clusters) or from the live management cluster (--kubeconfig / $KUBECONFIG).
Argo CD ApplicationSets (argoproj.io/v1alpha1) are accepted as they are: fields navarch can
safely ignore are dropped with a warning, fields it cannot honour are errors.`,
		Example: `  navarch generate -f appset.yaml --clusters clusters.yaml \
      --repo-override https://github.com/org/deploy.git=./deploy
  navarch generate -f appset.yaml --kubeconfig ~/.kube/mgmt -o yaml
  navarch generate -f appset.yaml --diff`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "ApplicationSet YAML file (several documents allowed; - for stdin); repeatable")
	f.StringVar(&o.clustersFile, "clusters", "", "YAML file of Cluster objects to select from (instead of a live management cluster)")
	f.StringArrayVar(&o.repoOverrides, "repo-override", nil, "URL=DIR: read repository URL from local directory DIR; repeatable")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table|wide|yaml|json")
	f.BoolVar(&o.diff, "diff", false, "compare with the live management cluster: list Applications to create, update and delete")
	f.IntVar(&o.maxParamSets, "max-param-sets", generators.DefaultMaxParamSets, "cap on parameter sets per ApplicationSet")
	o.kube.addTo(f)
	return cmd
}

func (o *generateOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	if len(o.files) == 0 {
		return usageError{errors.New(`required flag "--filename" (-f) not set`)}
	}
	overrides, err := o.validate()
	if err != nil {
		return err
	}
	sets, err := readApplicationSets(o.files, stderr)
	if err != nil {
		return err
	}
	var live client.Client
	if o.diff || (o.clustersFile == "" && o.kubeconfigGiven()) {
		if live, err = o.kube.client(); err != nil {
			return err
		}
	}
	return o.expand(ctx, sets, live, overrides, stdout, stderr)
}

// validate checks the flags generate shares with appset generate and returns the parsed
// --repo-override flags.
func (o *generateOptions) validate() (map[string]string, error) {
	switch o.output {
	case "table", "wide", "yaml", "json":
	default:
		return nil, usageError{fmt.Errorf("--output must be table, wide, yaml or json, got %q", o.output)}
	}
	overrides, err := parseRepoOverrides(o.repoOverrides)
	if err != nil {
		return nil, usageError{err}
	}
	return overrides, nil
}

// expand runs sets through their generators and templates and prints the Applications, or
// with --diff how they compare with live. Clusters come from --clusters, else from live.
func (o *generateOptions) expand(ctx context.Context, sets []*navarchv1.ApplicationSet, live client.Client,
	overrides map[string]string, stdout, stderr io.Writer) error {
	in := generators.Inputs{MaxParamSets: o.maxParamSets}
	// A private cache for this run: concurrent runs must not share a mirror directory.
	reader, err := gitrepo.New(gitrepo.Options{})
	if err != nil {
		return err
	}
	defer reader.Close()
	in.Git = &overrideReader{dirs: overrides, next: appset.GitReader(reader, nil)}
	switch {
	case o.clustersFile != "":
		clusters, err := readClusters(o.clustersFile)
		if err != nil {
			return err
		}
		in.Clusters = staticClusters(clusters)
	case live != nil:
		in.Clusters = liveClusters{c: live}
	}

	github := scm.New(scm.Options{Secrets: func(ctx context.Context, key types.NamespacedName) (*corev1.Secret, error) {
		if live == nil {
			return nil, fmt.Errorf("reading Secret %s needs the management cluster: pass --kubeconfig", key)
		}
		secret := &corev1.Secret{}
		return secret, live.Get(ctx, key, secret)
	}})

	var all []*navarchv1.Application
	failed := false
	var diffs []diffRow
	for _, set := range sets {
		// Pull requests and repositories are read with the credentials of the Secrets the
		// generators name, in the ApplicationSet's namespace.
		namespace := set.Namespace
		if namespace == "" {
			namespace = "default"
		}
		providers := github.For(namespace)
		in.PullRequests, in.SCMProviders = providers, providers
		exp, err := appset.Expand(ctx, set, in)
		if err != nil {
			if errors.Is(err, generators.ErrNoClusterLister) {
				err = fmt.Errorf("%w; pass --clusters FILE or --kubeconfig", err)
			}
			fmt.Fprintln(stderr, redactUserInfo(fmt.Sprintf("error: ApplicationSet %s: %v", set.Name, err)))
			failed = true
			continue
		}
		for _, p := range exp.Problems {
			fmt.Fprintln(stderr, redactUserInfo(fmt.Sprintf("error: ApplicationSet %s: Application %q: %v", set.Name, p.Name, p.Err)))
			failed = true
		}
		all = append(all, exp.Applications...)
		if o.diff {
			rows, err := diffWithLive(ctx, live, set, exp)
			if err != nil {
				return err
			}
			diffs = append(diffs, rows...)
		}
	}
	if o.diff {
		printDiff(stdout, diffs)
	} else if err := printApplications(stdout, all, o.output); err != nil {
		return err
	}
	if failed {
		return errors.New("some Applications could not be generated (see above)")
	}
	return nil
}

func (o *generateOptions) kubeconfigGiven() bool {
	return o.kube.kubeconfig != "" || os.Getenv("KUBECONFIG") != ""
}

// readApplicationSets reads every document of files, converting Argo CD ApplicationSets and
// printing conversion warnings.
func readApplicationSets(files []string, stderr io.Writer) ([]*navarchv1.ApplicationSet, error) {
	var sets []*navarchv1.ApplicationSet
	for _, file := range files {
		docs, err := readDocuments(file)
		if err != nil {
			return nil, err
		}
		for i, doc := range docs {
			set, warnings, err := argocd.ApplicationSet(doc)
			name := fmt.Sprintf("%s (document %d)", file, i+1)
			if set != nil && set.Name != "" {
				name = set.Name
			}
			for _, w := range warnings {
				fmt.Fprintln(stderr, redactUserInfo(fmt.Sprintf("warning: %s: %s", name, w)))
			}
			if err != nil {
				return nil, fmt.Errorf("%s:\n%w", name, err)
			}
			if set.Namespace == "" {
				set.Namespace = "default"
			}
			sets = append(sets, set)
		}
	}
	if len(sets) == 0 {
		return nil, usageError{errors.New("no ApplicationSet in the given files")}
	}
	return sets, nil
}

// readDocuments decodes every non-empty YAML or JSON document of a file ("-" is stdin).
func readDocuments(file string) ([]map[string]any, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs []map[string]any
	for i := 1; ; i++ {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		if len(doc) > 0 {
			docs = append(docs, doc)
		}
	}
}

// readClusters reads Cluster objects (documents, or a List) from a YAML file.
func readClusters(file string) ([]navarchv1.Cluster, error) {
	docs, err := readDocuments(file)
	if err != nil {
		return nil, err
	}
	var out []navarchv1.Cluster
	var add func(doc map[string]any) error
	add = func(doc map[string]any) error {
		if items, ok := doc["items"].([]any); ok {
			for _, it := range items {
				if m, ok := it.(map[string]any); ok {
					if err := add(m); err != nil {
						return err
					}
				}
			}
			return nil
		}
		if doc["kind"] != "Cluster" || doc["apiVersion"] != navarchv1.GroupVersion.String() {
			return fmt.Errorf("%s: want navarch.io/v1alpha1 Cluster objects, got %v %v", file, doc["apiVersion"], doc["kind"])
		}
		data, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		var c navarchv1.Cluster
		if err := json.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		out = append(out, c)
		return nil
	}
	for _, doc := range docs {
		if err := add(doc); err != nil {
			return nil, err
		}
	}
	return out, nil
}

type staticClusters []navarchv1.Cluster

func (s staticClusters) ListClusters(context.Context) ([]navarchv1.Cluster, error) { return s, nil }

type liveClusters struct{ c client.Client }

func (l liveClusters) ListClusters(ctx context.Context) ([]navarchv1.Cluster, error) {
	var list navarchv1.ClusterList
	if err := l.c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list Clusters in the management cluster: %w", err)
	}
	return list.Items, nil
}

func printApplications(out io.Writer, apps []*navarchv1.Application, format string) error {
	switch format {
	case "json":
		// A list, even an empty one: `[]`, never `null`, for jq and other readers.
		data, err := json.MarshalIndent(redactSources(apps), "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(data))
		return err
	case "yaml":
		for i, app := range redactSources(apps) {
			data, err := yaml.Marshal(app)
			if err != nil {
				return err
			}
			if i > 0 {
				fmt.Fprintln(out, "---")
			}
			if _, err := out.Write(data); err != nil {
				return err
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	header := "NAME\tCLUSTER\tNAMESPACE\tREPO\tPATH\tREVISION"
	if format == "wide" {
		header += "\tAPPLICATIONSET\tAUTOSYNC"
	}
	fmt.Fprintln(w, header)
	for _, app := range apps {
		d, s := app.Spec.Destination, app.Spec.GetSources()[0]
		cluster := d.Name
		if cluster == "" {
			cluster = d.Server
		}
		repo := s.RepoURL
		if n := len(app.Spec.Sources); n > 1 {
			repo += fmt.Sprintf(" (+%d)", n-1)
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", app.Name, cluster, d.Namespace, repo, sourcePath(s), s.TargetRevision)
		if format == "wide" {
			auto := "manual"
			if sp := app.Spec.SyncPolicy; sp != nil && sp.Automated != nil {
				auto = fmt.Sprintf("prune=%v,selfHeal=%v", sp.Automated.Prune, sp.Automated.SelfHeal)
			}
			row += fmt.Sprintf("\t%s\t%s", app.Labels[navarchv1.LabelApplicationSet], auto)
		}
		fmt.Fprintln(w, redactUserInfo(row))
	}
	return w.Flush()
}

// redactSources returns copies of apps without the user info of their sources' repoURLs. The
// API server refuses a repoURL with credentials, but an ApplicationSet may still produce one,
// and no output shows it. An SSH user name, which is no secret, is kept.
func redactSources(apps []*navarchv1.Application) []*navarchv1.Application {
	out := make([]*navarchv1.Application, len(apps))
	for i, app := range apps {
		app = app.DeepCopy()
		app.Spec.Source.RepoURL = gitrepo.RedactURL(app.Spec.Source.RepoURL)
		for j := range app.Spec.Sources {
			app.Spec.Sources[j].RepoURL = gitrepo.RedactURL(app.Spec.Sources[j].RepoURL)
		}
		out[i] = app
	}
	return out
}

type diffRow struct {
	action, appSet, name string
}

// diffWithLive compares an expansion with the Applications the ApplicationSet owns in the
// management cluster.
func diffWithLive(ctx context.Context, c client.Client, set *navarchv1.ApplicationSet, exp *appset.Expansion) ([]diffRow, error) {
	var live navarchv1.ApplicationList
	if err := c.List(ctx, &live, client.InNamespace(set.Namespace),
		client.MatchingLabels{navarchv1.LabelApplicationSet: set.Name}); err != nil {
		return nil, fmt.Errorf("list the Applications of %s: %w", set.Name, err)
	}
	existing := map[string]*navarchv1.Application{}
	for i := range live.Items {
		existing[live.Items[i].Name] = &live.Items[i]
	}
	protected := map[string]bool{}
	for _, p := range exp.Problems {
		protected[p.Name] = true
	}
	var rows []diffRow
	for _, app := range exp.Applications {
		cur, ok := existing[app.Name]
		delete(existing, app.Name)
		switch {
		case !ok:
			rows = append(rows, diffRow{"create", set.Name, app.Name})
		case !equality.Semantic.DeepEqual(cur.Spec, app.Spec) || !subset(app.Labels, cur.Labels) || !subset(app.Annotations, cur.Annotations):
			rows = append(rows, diffRow{"update", set.Name, app.Name})
		default:
			rows = append(rows, diffRow{"unchanged", set.Name, app.Name})
		}
	}
	for name := range existing {
		if !protected[name] {
			rows = append(rows, diffRow{"delete", set.Name, name})
		}
	}
	return rows, nil
}

func subset(want, have map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func printDiff(out io.Writer, rows []diffRow) {
	order := map[string]int{"create": 0, "update": 1, "delete": 2, "unchanged": 3}
	sort.SliceStable(rows, func(i, j int) bool {
		if order[rows[i].action] != order[rows[j].action] {
			return order[rows[i].action] < order[rows[j].action]
		}
		return rows[i].name < rows[j].name
	})
	w := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(w, "ACTION\tAPPLICATIONSET\tAPPLICATION")
	counts := map[string]int{}
	for _, r := range rows {
		counts[r.action]++
		fmt.Fprintf(w, "%s\t%s\t%s\n", r.action, r.appSet, r.name)
	}
	_ = w.Flush()
	fmt.Fprintf(out, "\n%d to create, %d to update, %d to delete, %d unchanged\n",
		counts["create"], counts["update"], counts["delete"], counts["unchanged"])
}
