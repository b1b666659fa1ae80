package dashboard

import (
	"context"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/browser"
	"github.com/navarch-io/navarch/internal/testenv"
)

// holdFetches makes the pages the browser loads keep the answers of their own fetches until
// the test releases them (window.__release()), and count the fetched pages the script has
// parsed (window.__parsed): the script updates the page in the same task as it parses.
const holdFetches = `(() => {
	const fetch = window.fetch, parse = DOMParser.prototype.parseFromString;
	const held = [];
	window.__held = () => held.length;
	window.__release = () => { held.splice(0).forEach(release => release()); return true; };
	window.__parsed = 0;
	window.fetch = (...args) => fetch(...args).then(resp => new Promise(release => held.push(() => release(resp))));
	DOMParser.prototype.parseFromString = function (...args) { window.__parsed++; return parse.apply(this, args); };
})()`

// The fleet page fetches itself when its event stream connects. A fetch the server rendered
// before a change, answered after the streamed cell of that change, is older than what the
// cell shows: the page keeps the streamed cell.
func TestALateFetchDoesNotUndoAStreamedCell(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	app := createApp(t, ns, "web", "", "dev", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy)
	srv := startDashboard(t, Options{})
	key, _, _ := rowKey(app)
	cell := "#" + elementID("c", key, "dev")

	b := browser.New(t)
	b.SetTimeout(time.Minute)
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	if _, err := chromedp.Call(ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: holdFetches}); err != nil {
		t.Fatal(err)
	}
	b.Navigate(srv.URL + "/?selector=test%3D" + ns)
	b.WaitText(cell, "Synced · Healthy", time.Minute)
	testenv.EventuallyWithin(t, time.Minute, "the page's fetch of itself is answered and held", func() string {
		if browser.Eval[int](b, `window.__held()`) == 0 {
			return "no fetch answered yet"
		}
		return ""
	})

	setStatus(t, app, navarchv1.SyncStatusOutOfSync, navarchv1.HealthHealthy)
	b.WaitText(cell, "OutOfSync · Healthy", time.Minute)

	browser.Eval[bool](b, `window.__release()`)
	testenv.EventuallyWithin(t, time.Minute, "the page parses the late answer", func() string {
		if browser.Eval[int](b, `window.__parsed`) == 0 {
			return "not parsed yet"
		}
		return ""
	})
	if got := b.Text(cell); got != "OutOfSync · Healthy" {
		t.Errorf("after the late answer of the page's fetch, the cell shows %q, want the streamed OutOfSync · Healthy", got)
	}
}
