package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// heartbeat keeps idle event streams (and the proxies in front of them) open.
const heartbeat = 15 * time.Second

// streamWriteTimeout ends a stream whose reader does not take a write within it: a stalled
// client then frees its goroutine and its place among the streams. Its missed changes never
// block the others: the store drops them for it and tells it to reload.
const streamWriteTimeout = 30 * time.Second

// fragment is a live update of the fleet page: the element with ID is replaced by HTML.
type fragment struct {
	ID   string `json:"id"`
	HTML string `json:"html"`
	Seq  uint64 `json:"seq"` // the store's version it shows, at least
}

// objectRef names a changed object; pages that show it reload their live part.
type objectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// events is the Server-Sent Events stream of the pages. For each batch of watch events it
// sends the re-rendered matrix cells and column heads the changed Applications touch (event
// "cell", rendered with the page's filter, which the stream's query repeats), and a reference
// to every changed object (event "object") that the other pages use to refresh themselves.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		// EventSource retries; the page still works, without live updates.
		w.Header().Set("Retry-After", "30")
		http.Error(w, "503 service unavailable: too many open live pages; close some", http.StatusServiceUnavailable)
		return
	}
	f, err := parseFilter(r.URL.Query())
	if err != nil {
		f = filter{}
	}
	ch := s.store.subscribe()
	defer s.store.unsubscribe(ch)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	// flush sends what was written, or fails when the client does not take it in time.
	flush := func() error {
		if err := rc.Flush(); err != nil {
			return err
		}
		if err := rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		return nil
	}
	if err := rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "retry: 2000\n\n")
	if err := flush(); err != nil {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	ctx := r.Context()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if !s.stillAuthenticated(r) {
				return
			}
			_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			if _, err := io.WriteString(w, ": ping\n\n"); err != nil {
				return
			}
			if err := flush(); err != nil {
				return
			}
		case c := <-ch:
			if !s.stillAuthenticated(r) {
				return
			}
			batch := []change{c}
		drain:
			for len(batch) < subscriberBuffer {
				select {
				case c := <-ch:
					batch = append(batch, c)
				default:
					break drain
				}
			}
			_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			if err := s.sendBatch(w, r, f, batch); err != nil {
				return
			}
			if err := flush(); err != nil {
				return
			}
		}
	}
}

// sendBatch writes the events of a batch of changes.
func (s *Server) sendBatch(w io.Writer, r *http.Request, f filter, batch []change) error {
	touched := map[string]bool{} // matrix rows
	var refs []objectRef
	seen := map[objectRef]bool{}
	for _, c := range batch {
		if c.Kind == overflow.Kind {
			return writeEvent(w, "reload", objectRef{})
		}
		obj := c.object()
		resource := strings.ToLower(c.Kind) + "s"
		if c.Kind == "Cluster" {
			if !s.clients.canList(r.Context(), identityOf(r), resource, "") {
				continue
			}
		} else if !s.allowedNamespace(r, resource, obj.GetNamespace()) {
			continue
		}
		ref := objectRef{Kind: c.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if !seen[ref] {
			seen[ref] = true
			refs = append(refs, ref)
		}
		if c.Kind != "Application" {
			continue
		}
		for _, o := range []any{c.Old, c.New} {
			if app, ok := o.(*navarchv1.Application); ok && app != nil {
				key, _, _ := rowKey(app)
				touched[key] = true
			}
		}
	}
	if len(touched) > 0 {
		seq := s.store.version() // before the listing: the fragments show at least this
		v, err := s.fleetData(r, f)
		if err != nil {
			return nil //nolint:nilerr // a failed listing skips this update; the next one catches up
		}
		m := v.Matrix
		// Every cell of a touched row: an Application may have moved between columns.
		rows := map[string]*matrixRow{}
		for _, row := range m.Rows {
			rows[row.Key] = row
		}
		for key := range touched {
			row := rows[key]
			for _, col := range m.Columns {
				var apps []*navarchv1.Application
				if row != nil {
					apps = row.Cells[col.Name]
				}
				if err := writeEvent(w, "cell", fragment{ID: elementID("c", key, col.Name), HTML: string(cellHTML(key, col.Name, apps)), Seq: seq}); err != nil {
					return err
				}
			}
		}
		for _, col := range m.Columns {
			if err := writeEvent(w, "cell", fragment{ID: col.ID(), HTML: string(columnHeadHTML(col)), Seq: seq}); err != nil {
				return err
			}
		}
		if err := writeEvent(w, "cell", fragment{ID: "summary", HTML: string(summaryHTML(m)), Seq: seq}); err != nil {
			return err
		}
	}
	for _, ref := range refs {
		if err := writeEvent(w, "object", ref); err != nil {
			return err
		}
	}
	return nil
}

func writeEvent(w io.Writer, event string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	return err
}
