package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/generators"
)

func newAppSetCommand() *cobra.Command {
	return commandGroup("appset", "List and inspect ApplicationSets, preview what they generate, and steer their rollouts",
		`appset works with the ApplicationSets in the management cluster.`,
		[]string{"appsets", "applicationset", "applicationsets"},
		newAppSetListCommand(), newAppSetGetCommand(), newAppSetGenerateCommand(),
		newAppSetRolloutCommand(), newAppSetPromoteCommand(), newAppSetPauseCommand(), newAppSetResumeCommand())
}

func newAppSetListCommand() *cobra.Command {
	var (
		api    apiFlags
		all    bool
		output string
	)
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List ApplicationSets with their Applications and conditions",
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output, "table", "wide", "yaml", "json"); err != nil {
				return err
			}
			s, err := api.session()
			if err != nil {
				return err
			}
			var opts []client.ListOption
			if !all {
				opts = append(opts, client.InNamespace(s.ns))
			}
			ctx := cmd.Context()
			var sets navarchv1.ApplicationSetList
			if err := s.c.List(ctx, &sets, opts...); err != nil {
				return fmt.Errorf("list ApplicationSets: %w", err)
			}
			slices.SortFunc(sets.Items, func(a, b navarchv1.ApplicationSet) int {
				return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
			})
			out := cmd.OutOrStdout()
			switch output {
			case "yaml", "json":
				objs := make([]client.Object, len(sets.Items))
				for i := range sets.Items {
					objs[i] = &sets.Items[i]
				}
				return printObjects(out, output, true, objs...)
			}
			if len(sets.Items) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), noneFound("ApplicationSets", all, s.ns))
				return nil
			}
			var apps navarchv1.ApplicationList
			if err := s.c.List(ctx, &apps, append(opts, client.HasLabels{navarchv1.LabelApplicationSet})...); err != nil {
				return fmt.Errorf("list Applications: %w", err)
			}
			counts := map[string]int{}
			for _, app := range apps.Items {
				counts[app.Namespace+"/"+app.Labels[navarchv1.LabelApplicationSet]]++
			}
			return printTable(out, appSetListRows(sets.Items, counts, output == "wide", all, time.Now(), paletteFor(out)))
		},
	}
	api.addTo(cmd.Flags())
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list ApplicationSets in every namespace")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table|wide|yaml|json")
	return cmd
}

// appSetListRows is the table of appset list; counts are the live Applications of each
// ApplicationSet by namespace/name.
func appSetListRows(sets []navarchv1.ApplicationSet, counts map[string]int, wide, allNamespaces bool, now time.Time, p palette) [][]string {
	header := []string{"NAME", "APPLICATIONS", "GENERATED", "UP-TO-DATE", "AGE"}
	if wide {
		header = append(header, "GENERATORS", "MESSAGE")
	}
	rows := [][]string{header}
	for i := range sets {
		set := &sets[i]
		name := set.Name
		if allNamespaces {
			name = qualified(set.Namespace, set.Name)
		}
		row := []string{
			name,
			fmt.Sprint(counts[set.Namespace+"/"+set.Name]),
			conditionStatus(set.Status.Conditions, navarchv1.ApplicationSetParametersGenerated, "True", p),
			conditionStatus(set.Status.Conditions, navarchv1.ApplicationSetResourcesUpToDate, "True", p),
			ago(now, set.CreationTimestamp.Time),
		}
		if wide {
			row = append(row, strings.Join(generatorKinds(set.Spec.Generators), ","), orDash(oneLine(appSetProblem(set), 120)))
		}
		rows = append(rows, row)
	}
	return rows
}

func conditionStatus(conds []metav1.Condition, typ, good string, p palette) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return "-"
	}
	return p.condition(string(c.Status), good)
}

// appSetProblem is the message of the first condition that says something is wrong.
func appSetProblem(set *navarchv1.ApplicationSet) string {
	for _, c := range set.Status.Conditions {
		bad := (c.Type == navarchv1.ApplicationSetErrorOccurred && c.Status == "True") ||
			((c.Type == navarchv1.ApplicationSetParametersGenerated || c.Type == navarchv1.ApplicationSetResourcesUpToDate) && c.Status == "False")
		if bad {
			return c.Message
		}
	}
	return ""
}

// generatorKinds names each generator: list, clusters, git, matrix(git+clusters), ...
func generatorKinds(gens []navarchv1.ApplicationSetGenerator) []string {
	kinds := make([]string, len(gens))
	for i, g := range gens {
		switch {
		case g.Matrix != nil:
			kinds[i] = "matrix(" + nestedKinds(g.Matrix.Generators) + ")"
		case g.Merge != nil:
			kinds[i] = "merge(" + nestedKinds(g.Merge.Generators) + ")"
		default:
			kinds[i] = leafKind(g.List != nil, g.Clusters != nil, g.Git != nil, g.PullRequest != nil)
		}
	}
	return kinds
}

func nestedKinds(gens []navarchv1.NestedGenerator) string {
	kinds := make([]string, len(gens))
	for i, g := range gens {
		switch {
		case g.Matrix != nil:
			kinds[i] = "matrix"
		case g.Merge != nil:
			kinds[i] = "merge"
		default:
			kinds[i] = leafKind(g.List != nil, g.Clusters != nil, g.Git != nil, g.PullRequest != nil)
		}
	}
	return strings.Join(kinds, "+")
}

// leafKind names a generator that has no children by which of its fields is set.
func leafKind(list, clusters, git, pullRequest bool) string {
	switch {
	case list:
		return "list"
	case clusters:
		return "clusters"
	case git:
		return "git"
	case pullRequest:
		return "pullRequest"
	}
	return "?"
}

func newAppSetGetCommand() *cobra.Command {
	var (
		api    apiFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Describe an ApplicationSet: generators, template, conditions and its Applications",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "table", "yaml", "json"); err != nil {
				return err
			}
			s, err := api.session()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			set, err := s.applicationSet(ctx, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if output != "table" {
				return printObjects(out, output, false, set)
			}
			var apps navarchv1.ApplicationList
			if err := s.c.List(ctx, &apps, client.InNamespace(set.Namespace), client.MatchingLabels{navarchv1.LabelApplicationSet: set.Name}); err != nil {
				return fmt.Errorf("list the Applications of %s: %w", set.Name, err)
			}
			sortApplications(apps.Items)
			return describeApplicationSet(out, set, apps.Items, time.Now(), paletteFor(out))
		},
	}
	api.addTo(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table (a description)|yaml|json")
	return cmd
}

func (s *session) applicationSet(ctx context.Context, name string) (*navarchv1.ApplicationSet, error) {
	return getNamed(ctx, s, "ApplicationSet", name, &navarchv1.ApplicationSet{})
}

func describeApplicationSet(out io.Writer, set *navarchv1.ApplicationSet, apps []navarchv1.Application, now time.Time, p palette) error {
	t := set.Spec.Template
	mode := "fasttemplate"
	if set.Spec.GoTemplate {
		mode = "goTemplate"
	}
	policy := string(navarchv1.ApplicationsSyncSync)
	if sp := set.Spec.SyncPolicy; sp != nil && sp.ApplicationsSync != nil {
		policy = string(*sp.ApplicationsSync)
	}
	strategy := string(navarchv1.StrategyAllAtOnce)
	if set.Spec.Strategy != nil && set.Spec.Strategy.Type != "" {
		strategy = string(set.Spec.Strategy.Type)
	}
	fields := [][]string{
		{"Name:", qualified(set.Namespace, set.Name)},
		{"Generators:", strings.Join(generatorKinds(set.Spec.Generators), ", ")},
		{"Template:", fmt.Sprintf("name %s (%s)", t.Metadata.Name, mode)},
	}
	describeSources(func(name, value string) { fields = append(fields, []string{name + ":", value}) }, "  ", t.Spec.GetSources())
	fields = append(fields,
		[]string{"  Destination:", fmt.Sprintf("cluster %s, namespace %s", destinationName(t.Spec.Destination), orDash(t.Spec.Destination.Namespace))},
		[]string{"Policy:", policy},
		[]string{"Strategy:", strategy},
		[]string{"Applications:", fmt.Sprint(len(apps))},
	)
	if err := printFields(out, fields); err != nil {
		return err
	}
	if len(set.Status.Conditions) > 0 {
		fmt.Fprintln(out, "\nConditions:")
		rows := [][]string{{"TYPE", "STATUS", "REASON", "AGE", "MESSAGE"}}
		for _, c := range set.Status.Conditions {
			good := "True"
			if c.Type == navarchv1.ApplicationSetErrorOccurred || c.Type == navarchv1.ApplicationSetRolloutProgressing {
				good = "False"
			}
			rows = append(rows, []string{c.Type, p.condition(string(c.Status), good), orDash(c.Reason),
				orDash(ago(now, c.LastTransitionTime.Time)), oneLine(c.Message, 512)})
		}
		if err := indentTable(out, rows); err != nil {
			return err
		}
	}
	if len(apps) == 0 {
		return nil
	}
	fmt.Fprintln(out, "\nApplications:")
	return indentTable(out, appListRows(apps, false, false, now, p))
}

func newAppSetGenerateCommand() *cobra.Command {
	o := &generateOptions{}
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "generate NAME",
		Short: "Print the Applications a live ApplicationSet would generate now",
		Long: `generate reads an ApplicationSet from the management cluster and runs its generators and
template exactly as the controller does (like navarch generate -f, with the Clusters of the
management cluster), printing the Applications without writing anything. --diff compares
them with the Applications that exist.`,
		Example: `  navarch appset generate fleet -n apps
  navarch appset generate fleet -n apps --diff
  navarch appset generate fleet -n apps --repo-override https://github.com/org/deploy.git=./deploy`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			overrides, err := o.validate()
			if err != nil {
				return err
			}
			s, err := api.session()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			set, err := s.applicationSet(ctx, args[0])
			if err != nil {
				return err
			}
			return o.expand(ctx, []*navarchv1.ApplicationSet{set}, s.c, overrides, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	api.addTo(f)
	f.StringArrayVar(&o.repoOverrides, "repo-override", nil, "URL=DIR: read repository URL from local directory DIR; repeatable")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table|wide|yaml|json")
	f.BoolVar(&o.diff, "diff", false, "list the Applications to create, update and delete instead")
	f.IntVar(&o.maxParamSets, "max-param-sets", generators.DefaultMaxParamSets, "cap on parameter sets per ApplicationSet")
	return cmd
}
