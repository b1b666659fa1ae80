package dashboard

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"html"
	"html/template"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/fleetview"
)

// state is how an Application looks in the matrix: its colour class and what it needs.
type state string

// The states of a cell, most urgent first. Colour is never the only signal: each cell also
// spells out its sync and health.
const (
	stateFailed      state = "failed"      // Degraded, or its operation failed: red
	stateOutOfSync   state = "outofsync"   // differs from Git: yellow
	stateUnknown     state = "unknown"     // Missing, Unknown, Suspended, not compared yet: grey
	stateProgressing state = "progressing" // a sync runs, or it is not Healthy yet: blue
	stateOK          state = "ok"          // Synced and Healthy: green
)

// states are the values of the state filter, in the order the filter offers them.
var states = []state{stateFailed, stateOutOfSync, stateProgressing, stateUnknown, stateOK}

// rank orders states by urgency: the higher, the sooner a user needs to look.
func (s state) rank() int {
	switch s {
	case stateFailed:
		return 4
	case stateOutOfSync:
		return 3
	case stateUnknown:
		return 2
	case stateProgressing:
		return 1
	}
	return 0
}

// appState classifies one Application.
func appState(app *navarchv1.Application) state {
	st := &app.Status
	var phase navarchv1.OperationPhase
	if st.OperationState != nil {
		phase = st.OperationState.Phase
	}
	switch {
	case st.Health.Status == navarchv1.HealthDegraded || phase == navarchv1.OperationFailed || phase == navarchv1.OperationError:
		return stateFailed
	case phase == navarchv1.OperationRunning || phase == navarchv1.OperationTerminating:
		return stateProgressing
	case st.Sync.Status == navarchv1.SyncStatusOutOfSync:
		return stateOutOfSync
	case st.Health.Status == navarchv1.HealthProgressing:
		return stateProgressing
	case st.Sync.Status == navarchv1.SyncStatusSynced && st.Health.Status == navarchv1.HealthHealthy:
		return stateOK
	}
	return stateUnknown
}

// filter selects the Applications the fleet page shows; its zero value selects all. It is
// read from the page's query parameters, so a filtered view is a link.
type filter struct {
	Selector       string
	ApplicationSet string
	Project        string
	State          string

	selector labels.Selector
}

// parseFilter reads a filter from query parameters; a bad label selector is an error that
// names the parameter.
func parseFilter(q url.Values) (filter, error) {
	f := filter{
		Selector:       strings.TrimSpace(q.Get("selector")),
		ApplicationSet: q.Get("applicationset"),
		Project:        q.Get("project"),
		State:          q.Get("state"),
	}
	if f.Selector != "" {
		sel, err := labels.Parse(f.Selector)
		if err != nil {
			return f, fmt.Errorf("selector: %w", err)
		}
		f.selector = sel
	}
	if f.State != "" && f.State != "problem" && !slices.Contains(states, state(f.State)) {
		return f, fmt.Errorf("state: %q is not one of problem, failed, outofsync, progressing, unknown, ok", f.State)
	}
	return f, nil
}

// query is the filter as query parameters, for links and the event stream.
func (f filter) query() string {
	q := url.Values{}
	for k, v := range map[string]string{"selector": f.Selector, "applicationset": f.ApplicationSet, "project": f.Project, "state": f.State} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q.Encode()
}

func (f filter) Active() bool { return f.query() != "" }

func (f filter) matches(app *navarchv1.Application) bool {
	if f.selector != nil && !f.selector.Matches(labels.Set(app.Labels)) {
		return false
	}
	if f.ApplicationSet != "" && app.Labels[navarchv1.LabelApplicationSet] != f.ApplicationSet {
		return false
	}
	if f.Project != "" && cmp.Or(app.Spec.Project, "default") != f.Project {
		return false
	}
	switch f.State {
	case "":
	case "problem":
		return appState(app) != stateOK
	default:
		return appState(app) == state(f.State)
	}
	return true
}

// rowKey is the matrix row of app, as navarch status groups rows (fleetview.Row), qualified
// by namespace; label is the row's name and set its ApplicationSet, "" when none.
func rowKey(app *navarchv1.Application) (key, label, set string) {
	label, set = fleetview.Row(app)
	return app.Namespace + "/" + label, label, set
}

// column names the cluster column of app, as navarch status does.
func column(app *navarchv1.Application, clusters []navarchv1.Cluster) string {
	return fleetview.Column(app.Spec.Destination, clusters)
}

// elementID is a stable HTML id for a matrix element (cell, row or column head), so that a
// live update can replace it in place.
func elementID(prefix string, parts ...string) string {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return fmt.Sprintf("%s-%x", prefix, h.Sum64())
}

// matrix is the fleet page's model.
type matrix struct {
	Columns []matrixColumn
	Rows    []*matrixRow
	Total   int
	NotOK   int
	ByState map[state]int
}

type matrixColumn struct {
	Name       string
	Registered bool
	Ready      string // the Cluster's Ready condition status, "" when unregistered
	Total      int
	NotOK      int
}

func (c matrixColumn) ID() string { return elementID("h", c.Name) }

type matrixRow struct {
	Key            string
	Label          string
	Namespace      string
	ApplicationSet string
	Cells          map[string][]*navarchv1.Application
	worst          state
	problems       int
}

func (r *matrixRow) ID() string { return elementID("r", r.Key) }

// buildMatrix groups the Applications that f selects into rows and cluster columns; rows
// with problems come first, then by name.
func buildMatrix(apps []*navarchv1.Application, clusters []navarchv1.Cluster, f filter) *matrix {
	m := &matrix{ByState: map[state]int{}}
	cols := map[string]*matrixColumn{}
	for i := range clusters {
		c := &clusters[i]
		ready := "Unknown"
		if cond := meta.FindStatusCondition(c.Status.Conditions, navarchv1.ConditionReady); cond != nil {
			ready = string(cond.Status)
		}
		cols[c.Name] = &matrixColumn{Name: c.Name, Registered: true, Ready: ready}
	}
	rows := map[string]*matrixRow{}
	for _, app := range apps {
		if !f.matches(app) {
			continue
		}
		name := column(app, clusters)
		col, ok := cols[name]
		if !ok {
			col = &matrixColumn{Name: name}
			cols[name] = col
		}
		key, label, set := rowKey(app)
		row, ok := rows[key]
		if !ok {
			row = &matrixRow{Key: key, Label: label, Namespace: app.Namespace, ApplicationSet: set,
				Cells: map[string][]*navarchv1.Application{}, worst: stateOK}
			rows[key] = row
		}
		row.Cells[name] = append(row.Cells[name], app)
		s := appState(app)
		m.ByState[s]++
		m.Total++
		col.Total++
		if s != stateOK {
			m.NotOK++
			col.NotOK++
			row.problems++
		}
		if s.rank() > row.worst.rank() {
			row.worst = s
		}
	}
	for _, c := range cols {
		m.Columns = append(m.Columns, *c)
	}
	fleetview.SortColumns(m.Columns, func(c matrixColumn) (string, bool) { return c.Name, c.Registered })
	m.Rows = make([]*matrixRow, 0, len(rows))
	for _, r := range rows {
		for _, cell := range r.Cells {
			slices.SortFunc(cell, func(a, b *navarchv1.Application) int { return strings.Compare(a.Name, b.Name) })
		}
		m.Rows = append(m.Rows, r)
	}
	slices.SortFunc(m.Rows, func(a, b *matrixRow) int {
		return cmp.Or(cmp.Compare(b.worst.rank(), a.worst.rank()), strings.Compare(a.Key, b.Key))
	})
	return m
}

// stateLabels are the words the legend and the state filter use.
var stateLabels = map[state]string{
	stateFailed:      "Degraded or failed",
	stateOutOfSync:   "OutOfSync",
	stateProgressing: "Progressing or syncing",
	stateUnknown:     "Missing or unknown",
	stateOK:          "Synced and Healthy",
}

// cellHTML renders one matrix cell: the most urgent of its Applications decides the colour;
// the text says sync and health (and the running operation), and links to the Application.
// It is written by hand rather than with html/template because the fleet page has up to
// rows × clusters cells and must render 1,000 Applications × 20 clusters within 300 ms.
func cellHTML(rowKey, cluster string, apps []*navarchv1.Application) template.HTML {
	id := elementID("c", rowKey, cluster)
	var b strings.Builder
	if len(apps) == 0 {
		b.WriteString(`<td id="`)
		b.WriteString(id)
		b.WriteString(`" class="cell none"><span aria-label="no Application">—</span></td>`)
		return template.HTML(b.String()) // every interpolated value is escaped
	}
	worst := apps[0]
	for _, a := range apps[1:] {
		if appState(a).rank() > appState(worst).rank() {
			worst = a
		}
	}
	s := appState(worst)
	b.WriteString(`<td id="`)
	b.WriteString(id)
	b.WriteString(`" class="cell `)
	b.WriteString(string(s))
	b.WriteString(`" data-state="`)
	b.WriteString(string(s))
	b.WriteString(`"><a href="`)
	b.WriteString(html.EscapeString(applicationPath(worst.Namespace, worst.Name)))
	b.WriteString(`" title="`)
	b.WriteString(html.EscapeString(worst.Namespace + "/" + worst.Name + ": " + stateLabels[s]))
	b.WriteString(`">`)
	b.WriteString(html.EscapeString(cellText(worst)))
	b.WriteString(`</a>`)
	for _, a := range apps[1:] {
		b.WriteString(` <a class="more" href="`)
		b.WriteString(html.EscapeString(applicationPath(a.Namespace, a.Name)))
		b.WriteString(`" title="`)
		b.WriteString(html.EscapeString(a.Namespace + "/" + a.Name + ": " + cellText(a)))
		b.WriteString(`">+1</a>`)
	}
	b.WriteString(`</td>`)
	return template.HTML(b.String()) // every interpolated value is escaped
}

// cellText is "Synced · Healthy", with the operation when one runs or failed.
func cellText(app *navarchv1.Application) string {
	st := &app.Status
	text := string(cmp.Or(st.Sync.Status, navarchv1.SyncStatusUnknown)) + " · " + string(cmp.Or(st.Health.Status, navarchv1.HealthUnknown))
	if op := st.OperationState; op != nil {
		switch op.Phase {
		case navarchv1.OperationRunning:
			text += " · syncing"
		case navarchv1.OperationTerminating:
			text += " · terminating"
		case navarchv1.OperationFailed, navarchv1.OperationError:
			text += " · sync " + strings.ToLower(string(op.Phase))
		}
	}
	return text
}

// columnHeadHTML renders a column head with its counts, replaced live like a cell.
func columnHeadHTML(c matrixColumn) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<th id="%s" scope="col" class="col" data-cluster="%s">`, c.ID(), html.EscapeString(c.Name))
	name := html.EscapeString(c.Name)
	switch {
	case c.Registered:
		fmt.Fprintf(&b, `<a href="/clusters#%s">%s</a>`, html.EscapeString(elementID("cl", c.Name)), name)
		if c.Ready != "True" {
			fmt.Fprintf(&b, ` <span class="badge failed" title="Cluster Ready=%s">not ready</span>`, html.EscapeString(c.Ready))
		}
	case c.Name == navarchv1.InClusterName:
		b.WriteString(name)
	default:
		fmt.Fprintf(&b, `%s <span class="badge unknown" title="no Cluster is registered for this destination">unregistered</span>`, name)
	}
	fmt.Fprintf(&b, `<br><span class="count">%d %s`, c.Total, plural(c.Total, "app", "apps"))
	if c.NotOK > 0 {
		fmt.Fprintf(&b, `, <strong>%d not OK</strong>`, c.NotOK)
	}
	b.WriteString(`</span></th>`)
	return template.HTML(b.String()) // every interpolated value is escaped
}

func applicationPath(namespace, name string) string {
	return "/applications/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

func applicationSetPath(namespace, name string) string {
	return "/applicationsets/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// summaryHTML is the line above the matrix: how many Applications, how many need attention.
func summaryHTML(m *matrix) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<p id="summary" class="summary">%d %s in %d %s on %d %s; `, m.Total, plural(m.Total, "Application", "Applications"),
		len(m.Rows), plural(len(m.Rows), "row", "rows"), len(m.Columns), plural(len(m.Columns), "cluster", "clusters"))
	if m.NotOK == 0 {
		b.WriteString(`<span class="badge ok">all Synced and Healthy</span>`)
	} else {
		fmt.Fprintf(&b, `<strong>%d not Synced and Healthy</strong>:`, m.NotOK)
		for _, s := range states {
			if n := m.ByState[s]; n > 0 && s != stateOK {
				fmt.Fprintf(&b, ` <span class="badge %s">%d %s</span>`, s, n, html.EscapeString(stateLabels[s]))
			}
		}
	}
	b.WriteString(`</p>`)
	return template.HTML(b.String()) // every interpolated value is escaped
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
