package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/source"
	"github.com/navarch-io/navarch/internal/fleetview"
	"github.com/navarch-io/navarch/internal/membership"
)

func newStatusCommand() *cobra.Command {
	var (
		kube      kubeFlags
		namespace string
		output    string
		systemNS  string
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the fleet: every application on every cluster, Synced and Healthy or not",
		Long: `status prints a matrix with one row per application and one column per registered Cluster
(and in-cluster, when Applications deploy to the management cluster itself). The Applications an
ApplicationSet generates for one application are one row, <applicationset>:<name>, where the name
is their app.kubernetes.io/name label or else their source path; other Applications are a row
each. A cell is "-" where the application has no Application for that
cluster.

In the table, cells are shortened (Sync/OK is Synced/Healthy; a legend follows the table);
-o wide spells them out and adds the revision each cluster runs.`,
		Example: `  navarch status
  navarch status -o wide
  navarch status -n apps -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output, "table", "wide", "yaml", "json"); err != nil {
				return err
			}
			c, err := kube.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var apps navarchv1.ApplicationList
			var opts []client.ListOption
			if namespace != "" {
				opts = append(opts, client.InNamespace(namespace))
			}
			if err := c.List(ctx, &apps, opts...); err != nil {
				return fmt.Errorf("list Applications: %w", err)
			}
			var clusters navarchv1.ClusterList
			if err := c.List(ctx, &clusters); err != nil {
				return fmt.Errorf("list Clusters: %w", err)
			}
			m := buildFleetMatrix(apps.Items, clusters.Items)
			m.setOwners(replicaOwners(ctx, c, systemNS, cmd.ErrOrStderr()))
			out := cmd.OutOrStdout()
			switch output {
			case "json", "yaml":
				return printDocument(out, output, m)
			}
			return printFleetMatrix(out, m, output == "wide", paletteFor(out))
		},
	}
	kube.addTo(cmd.Flags())
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "only Applications in this namespace (default: every namespace)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table|wide|yaml|json")
	cmd.Flags().StringVar(&systemNS, "system-namespace", systemNamespace, "the controller's namespace, whose Leases say which replica syncs each Cluster")
	return cmd
}

// fleetMatrix is the fleet as status prints it; it is also its JSON form.
type fleetMatrix struct {
	Clusters []matrixColumn `json:"clusters"`
	Rows     []matrixRow    `json:"rows"`
	Summary  matrixSummary  `json:"summary"`
}

// matrixColumn is a destination cluster.
type matrixColumn struct {
	Name string `json:"name"`
	// Registered is false for destinations that no Cluster matches (and in-cluster).
	Registered bool `json:"registered"`
	// Replica, when replicas share the fleet, is the one syncing this cluster.
	Replica *membership.Holder `json:"replica,omitempty"`
}

// setOwners records which replica syncs each cluster.
func (m *fleetMatrix) setOwners(owners map[string]membership.Holder) {
	for i := range m.Clusters {
		if h, ok := owners[m.Clusters[i].Name]; ok {
			m.Clusters[i].Replica = &h
		}
	}
}

// matrixRow is one application: an ApplicationSet's source path, or a lone Application.
type matrixRow struct {
	Name           string `json:"name"`
	Namespace      string `json:"namespace"`
	ApplicationSet string `json:"applicationSet,omitempty"`
	Path           string `json:"path,omitempty"`
	// Cells are the row's Applications by cluster name; a missing cluster means none.
	Cells map[string][]matrixCell `json:"cells"`
}

// matrixCell is one Application.
type matrixCell struct {
	Application string                     `json:"application"`
	Sync        navarchv1.SyncStatusCode   `json:"sync"`
	Health      navarchv1.HealthStatusCode `json:"health"`
	Revision    string                     `json:"revision,omitempty"`
	Operation   navarchv1.OperationPhase   `json:"operation,omitempty"`
}

func (c matrixCell) ok() bool {
	return c.Sync == navarchv1.SyncStatusSynced && c.Health == navarchv1.HealthHealthy
}

type matrixSummary struct {
	Applications int `json:"applications"`
	Clusters     int `json:"clusters"`
	// Total counts Application objects; NotOK those not Synced and Healthy.
	Total int `json:"total"`
	NotOK int `json:"notSyncedHealthy"`
}

// buildFleetMatrix groups Applications into rows and places them in the column of the
// cluster their destination resolves to, as the controller resolves it.
func buildFleetMatrix(apps []navarchv1.Application, clusters []navarchv1.Cluster) fleetMatrix {
	registered := map[string]bool{}
	var m fleetMatrix
	for _, c := range clusters {
		registered[c.Name] = true
		m.Clusters = append(m.Clusters, matrixColumn{Name: c.Name, Registered: true})
	}

	namespaces := map[string]bool{}
	for _, app := range apps {
		namespaces[app.Namespace] = true
	}
	rows := map[string]*matrixRow{}
	extra := map[string]bool{}
	for i := range apps {
		app := &apps[i]
		column := fleetview.Column(app.Spec.Destination, clusters)
		if !registered[column] {
			extra[column] = true
		}
		name, set := fleetview.Row(app)
		if len(namespaces) > 1 {
			name = app.Namespace + "/" + name
		}
		row, ok := rows[name]
		if !ok {
			row = &matrixRow{Name: name, Namespace: app.Namespace, Cells: map[string][]matrixCell{}}
			if set != "" {
				row.ApplicationSet, row.Path = set, fleetview.SourcePath(app)
			}
			rows[name] = row
		}
		cell := matrixCell{
			Application: qualified(app.Namespace, app.Name),
			Sync:        orUnknownSync(app.Status.Sync.Status),
			Health:      orUnknownHealth(app.Status.Health.Status),
			Revision:    app.Status.Sync.Revision,
		}
		if st := app.Status.OperationState; st != nil {
			cell.Operation = st.Phase
		}
		row.Cells[column] = append(row.Cells[column], cell)
		m.Summary.Total++
		if !cell.ok() {
			m.Summary.NotOK++
		}
	}
	for name := range extra {
		m.Clusters = append(m.Clusters, matrixColumn{Name: name})
	}
	fleetview.SortColumns(m.Clusters, func(c matrixColumn) (string, bool) { return c.Name, c.Registered })
	for _, row := range rows {
		for _, cells := range row.Cells {
			slices.SortFunc(cells, func(a, b matrixCell) int { return strings.Compare(a.Application, b.Application) })
		}
		m.Rows = append(m.Rows, *row)
	}
	slices.SortFunc(m.Rows, func(a, b matrixRow) int { return strings.Compare(a.Name, b.Name) })
	m.Summary.Applications, m.Summary.Clusters = len(m.Rows), len(m.Clusters)
	return m
}

func orUnknownSync(s navarchv1.SyncStatusCode) navarchv1.SyncStatusCode {
	if s == "" {
		return navarchv1.SyncStatusUnknown
	}
	return s
}

func orUnknownHealth(h navarchv1.HealthStatusCode) navarchv1.HealthStatusCode {
	if h == "" {
		return navarchv1.HealthUnknown
	}
	return h
}

// Short forms of the table's cells.
var (
	shortSync = map[navarchv1.SyncStatusCode]string{
		navarchv1.SyncStatusSynced: "Sync", navarchv1.SyncStatusOutOfSync: "OOS", navarchv1.SyncStatusUnknown: "?",
	}
	shortHealth = map[navarchv1.HealthStatusCode]string{
		navarchv1.HealthHealthy: "OK", navarchv1.HealthProgressing: "Prog", navarchv1.HealthDegraded: "Degr",
		navarchv1.HealthSuspended: "Susp", navarchv1.HealthMissing: "Miss", navarchv1.HealthUnknown: "?",
	}
)

const matrixLegend = "Sync=Synced OOS=OutOfSync OK=Healthy Prog=Progressing Degr=Degraded Susp=Suspended Miss=Missing ?=Unknown -=none"

// worst is the cell that needs attention most: failed operations and broken health first.
func worst(cells []matrixCell) matrixCell {
	rank := func(c matrixCell) int {
		switch {
		case c.Health == navarchv1.HealthDegraded || c.Health == navarchv1.HealthMissing ||
			c.Operation == navarchv1.OperationFailed || c.Operation == navarchv1.OperationError:
			return 3
		case c.Sync != navarchv1.SyncStatusSynced:
			return 2
		case !c.ok():
			return 1
		}
		return 0
	}
	w := cells[0]
	for _, c := range cells[1:] {
		if rank(c) > rank(w) {
			w = c
		}
	}
	return w
}

// matrixCellText renders the Applications of one cell: the worst of them, and how many
// there are when more than one.
func matrixCellText(cells []matrixCell, wide bool, p palette) string {
	if len(cells) == 0 {
		return p.paint(ansiGrey, "-")
	}
	w := worst(cells)
	var text string
	if wide {
		text = string(w.Sync) + "/" + string(w.Health)
		if w.Revision != "" {
			text += "@" + source.ShortRevision(w.Revision)
		}
	} else {
		text = orDefault(shortSync[w.Sync], string(w.Sync)) + "/" + orDefault(shortHealth[w.Health], string(w.Health))
	}
	if len(cells) > 1 {
		text += fmt.Sprintf("(%d)", len(cells))
	}
	switch {
	case w.Health == navarchv1.HealthDegraded || w.Health == navarchv1.HealthMissing ||
		w.Operation == navarchv1.OperationFailed || w.Operation == navarchv1.OperationError:
		return p.paint(ansiRed, text)
	case w.ok():
		return p.paint(ansiGreen, text)
	}
	return p.paint(ansiYellow, text)
}

func printFleetMatrix(out io.Writer, m fleetMatrix, wide bool, p palette) error {
	if len(m.Rows) == 0 {
		fmt.Fprintf(out, "No Applications; %d %s registered.\n", len(m.Clusters), plural(len(m.Clusters), "Cluster", "Clusters"))
		return nil
	}
	header := []string{"APPLICATION"}
	var unregistered []string
	for _, c := range m.Clusters {
		name := c.Name
		if !c.Registered && c.Name != navarchv1.InClusterName {
			unregistered = append(unregistered, c.Name)
			name += "?"
		}
		header = append(header, name)
	}
	rows := [][]string{header}
	for _, r := range m.Rows {
		row := []string{r.Name}
		for _, c := range m.Clusters {
			row = append(row, matrixCellText(r.Cells[c.Name], wide, p))
		}
		rows = append(rows, row)
	}
	if err := printTable(out, rows); err != nil {
		return err
	}
	fmt.Fprintln(out)
	if !wide {
		fmt.Fprintln(out, matrixLegend)
	}
	s := m.Summary
	fmt.Fprintf(out, "%d %s, %d %s, %d of %d Applications not Synced/Healthy\n",
		s.Applications, plural(s.Applications, "application", "applications"),
		s.Clusters, plural(s.Clusters, "cluster", "clusters"), s.NotOK, s.Total)
	if len(unregistered) > 0 {
		fmt.Fprintf(out, "No Cluster is registered for %s (marked ?): see navarch cluster list\n", strings.Join(unregistered, ", "))
	}
	printReplicas(out, m.Clusters)
	return nil
}

// printReplicas says which replica syncs which clusters, when replicas share the fleet.
func printReplicas(out io.Writer, clusters []matrixColumn) {
	byReplica := map[string][]string{}
	for _, c := range clusters {
		if c.Replica != nil {
			byReplica[c.Replica.String()] = append(byReplica[c.Replica.String()], c.Name)
		}
	}
	if len(byReplica) == 0 {
		return
	}
	fmt.Fprintln(out, "Replicas:")
	for _, r := range slices.Sorted(maps.Keys(byReplica)) {
		fmt.Fprintf(out, "  %s: %s\n", r, strings.Join(byReplica[r], ", "))
	}
}
