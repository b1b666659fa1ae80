package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/destination"
	"github.com/navarch-io/navarch/internal/project"
)

func newProjectCommand() *cobra.Command {
	return commandGroup("project", "List and inspect the Projects that say what Applications may deploy, where and when",
		`project shows the Projects of the management cluster: what each allows its Applications
(repositories, destinations, kinds, the namespaces they may be declared in), its sync windows
and whether they are open now, and the Applications that name it. Projects live in navarch's
namespace (--system-namespace); an Application without spec.project belongs to "default".`,
		[]string{"projects", "proj"},
		newProjectListCommand(), newProjectGetCommand(), newProjectWindowsCommand())
}

// projectFlags pick the management cluster and the namespace Projects live in.
type projectFlags struct {
	kube      kubeFlags
	namespace string
}

func (f *projectFlags) addTo(fs *pflag.FlagSet) {
	f.kube.addTo(fs)
	fs.StringVar(&f.namespace, "system-namespace", systemNamespace, "navarch's controller namespace, where Projects live")
}

// connect checks that output is one of formats, then connects to the management cluster.
func (f *projectFlags) connect(output string, formats ...string) (client.Client, error) {
	if err := checkOutput(output, formats...); err != nil {
		return nil, err
	}
	return f.kube.client()
}

// readProject is connect, then reads the Project name from the namespace Projects live in
// (getProject). It returns the client too, for what the command reads next.
func (f *projectFlags) readProject(ctx context.Context, name, output string, formats ...string) (client.Client, *navarchv1.Project, error) {
	c, err := f.connect(output, formats...)
	if err != nil {
		return nil, nil, err
	}
	proj, err := getProject(ctx, c, f.namespace, name)
	if err != nil {
		return nil, nil, err
	}
	return c, proj, nil
}

func newProjectListCommand() *cobra.Command {
	var (
		flags  projectFlags
		output string
	)
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List Projects with what they allow, their sync windows and how many Applications name them",
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := flags.connect(output, "table", "wide", "yaml", "json")
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var list navarchv1.ProjectList
			if err := c.List(ctx, &list, client.InNamespace(flags.namespace)); err != nil {
				return fmt.Errorf("list Projects in namespace %s: %w", flags.namespace, err)
			}
			slices.SortFunc(list.Items, func(a, b navarchv1.Project) int { return strings.Compare(a.Name, b.Name) })
			out := cmd.OutOrStdout()
			switch output {
			case "yaml", "json":
				objs := make([]client.Object, len(list.Items))
				for i := range list.Items {
					objs[i] = &list.Items[i]
				}
				return printObjects(out, output, true, objs...)
			}
			if len(list.Items) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "No Projects found in namespace %s. The controller creates the default Project when it starts; is navarch installed there (else pass --system-namespace)?\n", flags.namespace)
				return nil
			}
			apps := readProjectApplications(ctx, c, false, cmd.ErrOrStderr())
			return printTable(out, projectListRows(list.Items, apps, flags.namespace, output == "wide", time.Now()))
		},
	}
	flags.addTo(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table|wide|yaml|json")
	return cmd
}

func newProjectGetCommand() *cobra.Command {
	var (
		flags  projectFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Describe a Project: what it allows, its sync windows now and the Applications that name it",
		Example: `  navarch project get team-a
  navarch project get default -o yaml`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, proj, err := flags.readProject(ctx, args[0], output, "table", "yaml", "json")
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if output != "table" {
				return printObjects(out, output, false, proj)
			}
			apps := readProjectApplications(ctx, c, false, cmd.ErrOrStderr())
			return describeProject(out, proj, flags.namespace, apps, time.Now(), paletteFor(out))
		},
	}
	flags.addTo(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table (a description)|yaml|json")
	return cmd
}

func newProjectWindowsCommand() *cobra.Command {
	var (
		flags  projectFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "windows NAME",
		Short: "Show a Project's sync windows, whether each is open now, and whether its Applications may sync",
		Long: `windows prints one row per sync window of the Project: its schedule, what it matches, whether
it lets manual syncs through, and whether it is open now (until when) or closed (and when it
opens). A second table says, for each Application of the Project, whether automated and manual
syncs may start now and, if not, which window stops them. The CLI works this out from the
Project and the clock, with the controller's rules; the controller's own verdict is the
Application's SyncBlocked condition (navarch app get).`,
		Example: `  navarch project windows team-a
  navarch project windows team-a -o json`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, proj, err := flags.readProject(ctx, args[0], output, "table", "yaml", "json")
			if err != nil {
				return err
			}
			pol, err := project.Compile(proj, flags.namespace)
			if err != nil {
				return fmt.Errorf("project %s is invalid, and the controller refuses its Applications: %w", proj.Name, err)
			}
			apps := readProjectApplications(ctx, c, true, cmd.ErrOrStderr())
			now := time.Now()
			out := cmd.OutOrStdout()
			if output != "table" {
				return printDocument(out, output, windowsDocumentOf(pol, apps.of(proj.Name), apps.clusters, now))
			}
			return printProjectWindows(out, cmd.ErrOrStderr(), pol, apps, now, paletteFor(out))
		},
	}
	flags.addTo(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table|yaml|json")
	return cmd
}

// getProject reads the Project name in namespace; a missing one is an error that says which
// Projects there are.
func getProject(ctx context.Context, c client.Client, namespace, name string) (*navarchv1.Project, error) {
	proj := &navarchv1.Project{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, proj)
	if err == nil {
		return proj, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get Project %s/%s: %w", namespace, name, err)
	}
	var list navarchv1.ProjectList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("project %q not found in namespace %s", name, namespace)
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("project %q not found in namespace %s, which holds no Projects: is navarch installed in another namespace (--system-namespace)?", name, namespace)
	}
	names := make([]string, len(list.Items))
	for i := range list.Items {
		names[i] = list.Items[i].Name
	}
	slices.Sort(names)
	return nil, fmt.Errorf("project %q not found in namespace %s (its Projects: %s)", name, namespace, strings.Join(names, ", "))
}

// projectApplications are the Applications of every namespace, for the project commands to
// say which name a Project, and the Clusters their destinations resolve to.
type projectApplications struct {
	// listed is false when the Applications could not be listed.
	listed   bool
	apps     []navarchv1.Application
	clusters []navarchv1.Cluster
}

// readProjectApplications lists every Application (and, withClusters, every Cluster). A
// failure, e.g. RBAC that allows reading Projects but not Applications in every namespace, is
// a warning: the Project is still shown.
func readProjectApplications(ctx context.Context, c client.Client, withClusters bool, stderr io.Writer) projectApplications {
	var pa projectApplications
	var apps navarchv1.ApplicationList
	if err := c.List(ctx, &apps); err != nil {
		fmt.Fprintf(stderr, "warning: cannot list the Applications of every namespace, so which name the Project is unknown: %v\n", err)
		return pa
	}
	pa.listed, pa.apps = true, apps.Items
	sortApplications(pa.apps)
	if withClusters {
		var clusters navarchv1.ClusterList
		if err := c.List(ctx, &clusters); err != nil {
			fmt.Fprintf(stderr, "warning: cannot list Clusters, so windows that match clusters by server may be missed: %v\n", err)
		}
		pa.clusters = clusters.Items
	}
	return pa
}

// of returns the Applications that name the Project name (those without spec.project name
// "default").
func (pa projectApplications) of(name string) []navarchv1.Application {
	var out []navarchv1.Application
	for i := range pa.apps {
		if project.NameOf(&pa.apps[i].Spec) == name {
			out = append(out, pa.apps[i])
		}
	}
	return out
}

// projectListRows is the table of project list.
func projectListRows(projects []navarchv1.Project, apps projectApplications, controlNamespace string, wide bool, now time.Time) [][]string {
	header := []string{"NAME", "DESCRIPTION", "REPOS", "DESTINATIONS", "WINDOWS", "APPLICATIONS", "AGE"}
	if wide {
		header = append(header, "APP-NAMESPACES")
	}
	rows := [][]string{header}
	few := 2
	if wide {
		few = -1
	}
	for i := range projects {
		proj := &projects[i]
		s := &proj.Spec
		dests := make([]string, len(s.Destinations))
		for j, d := range s.Destinations {
			dests[j] = compactDestination(d)
		}
		count := "?"
		if apps.listed {
			count = fmt.Sprint(len(apps.of(proj.Name)))
		}
		description := oneLine(s.Description, 60)
		if wide {
			description = oneLine(s.Description, 200)
		}
		row := []string{proj.Name, orDash(description), firstFew(s.SourceRepos, few), firstFew(dests, few),
			windowsSummary(proj, controlNamespace, now), count, orDash(ago(now, proj.CreationTimestamp.Time))}
		if wide {
			row = append(row, strings.Join(append([]string{controlNamespace}, s.SourceNamespaces...), ","))
		}
		rows = append(rows, row)
	}
	return rows
}

// firstFew joins the first n items (all when n < 0) with commas and counts the others:
// "a,b (+3)"; "none" when there are none.
func firstFew(items []string, n int) string {
	if len(items) == 0 {
		return "none"
	}
	if n < 0 || len(items) <= n {
		return strings.Join(items, ",")
	}
	return fmt.Sprintf("%s (+%d)", strings.Join(items[:n], ","), len(items)-n)
}

// compactDestination is a Project destination in a table cell: namespace@cluster, the
// cluster by name, else by server.
func compactDestination(d navarchv1.ProjectDestination) string {
	cluster := d.Name
	if cluster == "" {
		cluster = d.Server
	}
	return d.Namespace + "@" + cluster
}

// windowsSummary is the WINDOWS cell: how many sync windows and how many are open now.
func windowsSummary(proj *navarchv1.Project, controlNamespace string, now time.Time) string {
	if len(proj.Spec.SyncWindows) == 0 {
		return "none"
	}
	pol, err := project.Compile(proj, controlNamespace)
	if err != nil {
		return "invalid"
	}
	open := 0
	for _, w := range pol.Windows(now) {
		if w.Open {
			open++
		}
	}
	return fmt.Sprintf("%d, %d open", len(proj.Spec.SyncWindows), open)
}

// describeProject prints what a Project allows, its sync windows now and the Applications
// that name it.
func describeProject(out io.Writer, proj *navarchv1.Project, controlNamespace string, apps projectApplications, now time.Time, p palette) error {
	s := &proj.Spec
	var fields [][]string
	field := func(name, value string) { fields = append(fields, []string{name + ":", value}) }
	// list adds a field with one line per value, or none when there are no values.
	list := func(name string, values []string, none string) {
		if len(values) == 0 {
			field(name, none)
			return
		}
		field(name, values[0])
		for _, v := range values[1:] {
			fields = append(fields, []string{"", v})
		}
	}
	field("Name", qualified(proj.Namespace, proj.Name))
	field("Description", orDash(s.Description))
	list("Repositories", s.SourceRepos, "none: its Applications may render no repository")
	dests := make([]string, len(s.Destinations))
	for i, d := range s.Destinations {
		dests[i] = describeProjectDestination(d)
	}
	list("Destinations", dests, "none: its Applications may sync nowhere")
	field("Cluster kinds", clusterKinds(s))
	field("Namespaced kinds", namespacedKinds(s))
	field("App namespaces", strings.Join(append([]string{controlNamespace}, s.SourceNamespaces...), ", "))
	field("Created", ago(now, proj.CreationTimestamp.Time)+" ago")
	if err := printFields(out, fields); err != nil {
		return err
	}

	pol, compileErr := project.Compile(proj, controlNamespace)
	switch {
	case compileErr != nil:
		fmt.Fprintf(out, "\nInvalid:          %s\n", p.paint(ansiRed, compileErr.Error()+"; the controller refuses every Application of this Project"))
	case len(s.SyncWindows) == 0:
		fmt.Fprintln(out, "\nSync windows:     none; its Applications may sync at any time")
	default:
		fmt.Fprintf(out, "\nSync windows (%d):\n", len(s.SyncWindows))
		if err := indentTable(out, windowRows(pol.Windows(now), now, p)); err != nil {
			return err
		}
	}

	if !apps.listed {
		fmt.Fprintln(out, "\nApplications:     unknown (see the warning)")
		return nil
	}
	mine := apps.of(proj.Name)
	if len(mine) == 0 {
		fmt.Fprintln(out, "\nApplications:     none")
		return nil
	}
	fmt.Fprintf(out, "\nApplications (%d):\n", len(mine))
	rows := [][]string{{"NAME", "CLUSTER", "NAMESPACE", "SYNC", "HEALTH", "PROJECT-CONDITION"}}
	for i := range mine {
		app := &mine[i]
		st := app.Status
		rows = append(rows, []string{qualified(app.Namespace, app.Name), destinationName(app.Spec.Destination),
			orDash(app.Spec.Destination.Namespace), p.sync(st.Sync.Status, orDash(string(st.Sync.Status))),
			p.health(st.Health.Status, orDash(string(st.Health.Status))), projectCondition(app, p)})
	}
	return indentTable(out, rows)
}

// projectCondition is what the controller last said about an Application and its Project
// (projectHold): "refused (REASON)", "syncs blocked", or "-".
func projectCondition(app *navarchv1.Application, p palette) string {
	c := projectHold(app)
	switch {
	case c == nil:
		return "-"
	case c.Type == navarchv1.ApplicationInvalidSpecError:
		return p.paint(ansiRed, "refused ("+c.Reason+")")
	}
	return p.paint(ansiYellow, "syncs blocked")
}

// describeProjectDestination is a Project destination in words.
func describeProjectDestination(d navarchv1.ProjectDestination) string {
	var cluster string
	switch {
	case d.Name != "" && d.Server != "":
		cluster = fmt.Sprintf("cluster %s or server %s", d.Name, d.Server)
	case d.Name != "":
		cluster = "cluster " + d.Name
	default:
		cluster = "server " + d.Server
	}
	return fmt.Sprintf("namespace %s on %s", d.Namespace, cluster)
}

// clusterKinds says which cluster-scoped kinds a Project allows.
func clusterKinds(s *navarchv1.ProjectSpec) string {
	if len(s.ClusterResourceWhitelist) == 0 {
		return "no cluster-scoped kinds"
	}
	allowed := kindList(s.ClusterResourceWhitelist)
	if slices.ContainsFunc(s.ClusterResourceWhitelist, everyKind) {
		allowed = "every cluster-scoped kind"
	}
	return allowed + except(s.ClusterResourceBlacklist)
}

// namespacedKinds says which namespaced kinds a Project allows.
func namespacedKinds(s *navarchv1.ProjectSpec) string {
	if len(s.NamespaceResourceWhitelist) == 0 || slices.ContainsFunc(s.NamespaceResourceWhitelist, everyKind) {
		return "every namespaced kind" + except(s.NamespaceResourceBlacklist)
	}
	return "only " + kindList(s.NamespaceResourceWhitelist) + except(s.NamespaceResourceBlacklist)
}

func everyKind(gk navarchv1.GroupKind) bool { return gk.Group == "*" && gk.Kind == "*" }

func except(denied []navarchv1.GroupKind) string {
	if len(denied) == 0 {
		return ""
	}
	return " except " + kindList(denied)
}

// kindList prints kinds as kubectl names them: Kind for the core group, Kind.group otherwise.
func kindList(kinds []navarchv1.GroupKind) string {
	out := make([]string, len(kinds))
	for i, gk := range kinds {
		out[i] = gk.Kind
		if gk.Group != "" {
			out[i] += "." + gk.Group
		}
	}
	return strings.Join(out, ", ")
}

// windowRows is the table of a Project's sync windows and their state at now.
func windowRows(states []project.WindowState, now time.Time, p palette) [][]string {
	rows := [][]string{{"KIND", "SCHEDULE", "DURATION", "TIMEZONE", "MATCHES", "MANUAL-SYNC", "STATE"}}
	for _, ws := range states {
		w := ws.Window
		manual := "no"
		if w.ManualSync {
			manual = "yes"
		}
		rows = append(rows, []string{string(w.Kind), w.Schedule, w.Duration, orDefault(w.TimeZone, "UTC"),
			windowMatches(w), manual, windowState(ws, now, p)})
	}
	return rows
}

// windowMatches says which Applications a window concerns.
func windowMatches(w navarchv1.SyncWindow) string {
	var on []string
	for _, l := range []struct {
		name string
		list []string
	}{{"applications", w.Applications}, {"namespaces", w.Namespaces}, {"clusters", w.Clusters}} {
		if len(l.list) > 0 {
			on = append(on, l.name+" "+strings.Join(l.list, ","))
		}
	}
	if len(on) == 0 {
		return "nothing"
	}
	return strings.Join(on, "; ")
}

// windowState says whether a window is open at now and when that changes.
func windowState(ws project.WindowState, now time.Time, p palette) string {
	switch {
	case ws.Open:
		colour := ansiGreen
		if ws.Window.Kind == navarchv1.SyncWindowDeny {
			colour = ansiYellow
		}
		return p.paint(colour, "open") + " until " + when(ws.Change, now)
	case ws.Change.IsZero():
		return "closed, never opens"
	}
	return "closed, opens at " + when(ws.Change, now)
}

// when is a future time as the controller's messages print it (UTC, RFC 3339) and how far
// off it is.
func when(t, now time.Time) string {
	return fmt.Sprintf("%s (in %s)", t.UTC().Format(time.RFC3339), duration.HumanDuration(t.Sub(now)))
}

// gateDestination is the cluster of an Application as Projects name it: the Cluster its
// destination resolves to, else what the destination says.
func gateDestination(d navarchv1.ApplicationDestination, clusters []navarchv1.Cluster) project.Destination {
	name, err := destination.Resolve(d, clusters)
	switch {
	case err != nil:
		return project.Destination{Name: d.Name, Server: d.Server}
	case name == navarchv1.InClusterName:
		return project.ManagementCluster
	}
	i := slices.IndexFunc(clusters, func(c navarchv1.Cluster) bool { return c.Name == name })
	return project.DestinationOf(&clusters[i])
}

// gateRows is the table of whether each Application may sync at now.
func gateRows(pol *project.Policy, apps []navarchv1.Application, clusters []navarchv1.Cluster, now time.Time, p palette) [][]string {
	rows := [][]string{{"APPLICATION", "CLUSTER", "NAMESPACE", "AUTOMATED", "MANUAL", "REASON"}}
	for i := range apps {
		app := &apps[i]
		d := app.Spec.Destination
		g := pol.Gate(app.Name, d.Namespace, gateDestination(d, clusters), now)
		rows = append(rows, []string{qualified(app.Namespace, app.Name), destinationName(d), orDash(d.Namespace),
			mayRun(g.Automated, "waits", p), mayRun(g.Manual, "refused", p), orDash(g.Reason)})
	}
	return rows
}

func mayRun(ok bool, no string, p palette) string {
	if ok {
		return p.paint(ansiGreen, "yes")
	}
	return p.paint(ansiYellow, no)
}

// printProjectWindows prints project windows: the windows, then what they say about each
// Application of the Project.
func printProjectWindows(out, stderr io.Writer, pol *project.Policy, apps projectApplications, now time.Time, p palette) error {
	states := pol.Windows(now)
	if len(states) == 0 {
		fmt.Fprintf(stderr, "Project %s has no sync windows: its Applications may sync at any time.\n", pol.Name)
		return nil
	}
	if err := printTable(out, windowRows(states, now, p)); err != nil {
		return err
	}
	if !apps.listed {
		return nil
	}
	mine := apps.of(pol.Name)
	if len(mine) == 0 {
		fmt.Fprintf(stderr, "No Application names Project %s.\n", pol.Name)
		return nil
	}
	fmt.Fprintln(out)
	return printTable(out, gateRows(pol, mine, apps.clusters, now, p))
}

// windowsDocument is project windows -o yaml|json.
type windowsDocument struct {
	Project      string           `json:"project"`
	Windows      []windowDocument `json:"windows"`
	Applications []gateDocument   `json:"applications"`
}

type windowDocument struct {
	navarchv1.SyncWindow `json:",inline"`
	Open                 bool       `json:"open"`
	ClosesAt             *time.Time `json:"closesAt,omitempty"`
	OpensAt              *time.Time `json:"opensAt,omitempty"`
}

type gateDocument struct {
	Namespace string     `json:"namespace"`
	Name      string     `json:"name"`
	Automated bool       `json:"automated"`
	Manual    bool       `json:"manual"`
	Reason    string     `json:"reason,omitempty"`
	ChangesAt *time.Time `json:"changesAt,omitempty"`
}

func windowsDocumentOf(pol *project.Policy, apps []navarchv1.Application, clusters []navarchv1.Cluster, now time.Time) windowsDocument {
	doc := windowsDocument{Project: pol.Name, Windows: []windowDocument{}, Applications: []gateDocument{}}
	for _, ws := range pol.Windows(now) {
		wd := windowDocument{SyncWindow: ws.Window, Open: ws.Open}
		if change := utcOrNil(ws.Change); ws.Open {
			wd.ClosesAt = change
		} else {
			wd.OpensAt = change
		}
		doc.Windows = append(doc.Windows, wd)
	}
	for i := range apps {
		app := &apps[i]
		d := app.Spec.Destination
		g := pol.Gate(app.Name, d.Namespace, gateDestination(d, clusters), now)
		doc.Applications = append(doc.Applications, gateDocument{Namespace: app.Namespace, Name: app.Name,
			Automated: g.Automated, Manual: g.Manual, Reason: g.Reason, ChangesAt: utcOrNil(g.Change)})
	}
	return doc
}

func utcOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
