// navarch dashboard: live updates over Server-Sent Events, and confirm() before actions.
// Every page works without this script: links navigate, action forms post to a
// confirmation page, and a reload shows the latest state.
(function () {
  "use strict";

  // Actions: ask in a dialog; when confirmed, post with confirmed=yes so that the server
  // runs the action directly instead of showing its confirmation page.
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    var question = form.getAttribute("data-confirm");
    if (!question) {
      return;
    }
    if (!window.confirm(question)) {
      ev.preventDefault();
      return;
    }
    var input = document.createElement("input");
    input.type = "hidden";
    input.name = "confirmed";
    input.value = "yes";
    form.appendChild(input);
  });

  var body = document.body;
  var url = body.getAttribute("data-live");
  if (!url || !window.EventSource) {
    return;
  }
  var status = document.getElementById("live-status");
  function setStatus(on) {
    status.hidden = false;
    status.textContent = on ? "live" : "reconnecting…";
    status.className = "live-status " + (on ? "on" : "off");
  }
  function stale() {
    document.getElementById("stale").hidden = false;
  }

  // The objects this page shows: "Kind/namespace/name", "Kind/namespace" or "Kind".
  var watch = (body.getAttribute("data-watch") || "").split(" ").filter(Boolean);
  function watched(ref) {
    var full = [ref.kind, ref.namespace, ref.name].filter(Boolean).join("/");
    return watch.some(function (w) {
      return full === w || full.indexOf(w + "/") === 0;
    });
  }

  // What each live element shows is at least the server's state number seq (data-seq of a
  // page, seq of a streamed fragment). A fetch answered after a newer streamed cell, or
  // after a later fetch, is older than what the element shows and is dropped.
  var pageSeq = Number(body.getAttribute("data-seq") || 0);
  var seqs = {}; // element id -> seq, for the fleet page's elements
  function seqOf(id) {
    return id in seqs ? seqs[id] : pageSeq;
  }
  // An element and the elements within it are replaced together (a matrix row and its
  // cells): newest is the latest seq any of them shows, mark records a new one for all.
  function withIds(el) {
    return [el].concat(Array.prototype.slice.call(el.querySelectorAll("[id]")));
  }
  function newest(el) {
    return Math.max.apply(null, withIds(el).map(function (e) { return seqOf(e.id); }));
  }
  function mark(el, seq) {
    withIds(el).forEach(function (e) { seqs[e.id] = seq; });
  }

  // A page's live part is re-fetched when an object it shows changes, and on each connection
  // of the stream; changes within 250 ms are fetched once.
  var pending = null;
  // refreshed counts the fetches the page has taken in (data-refreshed on the body): after
  // the first, the page shows what the stream's connection found, and stays in place until
  // the next change.
  var refreshed = 0;
  function refresh() {
    if (pending) {
      return;
    }
    pending = setTimeout(function () {
      pending = null;
      fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html", "X-Navarch-Live-Refresh": "1" } })
        .then(function (resp) {
          if (!resp.ok) {
            throw new Error(resp.status);
          }
          return resp.text();
        })
        .then(function (html) {
          takeIn(html);
          refreshed++;
          body.setAttribute("data-refreshed", String(refreshed));
        })
        .catch(stale);
    }, 250);
  }

  // takeIn puts the live part of a fetched page in place, unless it is older than what the
  // page shows.
  function takeIn(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var seq = Number(doc.body.getAttribute("data-seq") || 0);
    if (document.getElementById("matrix")) {
      // The fleet page: replace what changed, by id, as cell events do, so that the matrix
      // (and whatever the user is typing in the filters) stays in place.
      doc.querySelectorAll("#summary, #matrix [id]").forEach(function (n) {
        var el = document.getElementById(n.id);
        if (el && newest(el) <= seq) {
          mark(el, seq);
          if (el.outerHTML !== n.outerHTML) {
            el.outerHTML = n.outerHTML;
          }
        }
      });
      return;
    }
    if (seq < pageSeq) {
      return; // an earlier fetch, answered late
    }
    pageSeq = seq;
    var next = doc.getElementById("live");
    var current = document.getElementById("live");
    // Unchanged, the live part stays in place: replacing it would detach the button the user
    // is clicking (the stream's first connection refreshes every page).
    if (next && current && current.innerHTML !== next.innerHTML) {
      current.innerHTML = next.innerHTML;
    }
  }

  var source = new EventSource(url);
  // Changes between the page's rendering and the stream's (re)connection come in no event:
  // fetch the page's live part once on each connection.
  source.onopen = function () {
    setStatus(true);
    refresh();
  };
  source.onerror = function () {
    setStatus(false);
  };
  // A matrix cell, column head or summary, re-rendered by the server with this page's filter.
  source.addEventListener("cell", function (ev) {
    if (!document.getElementById("matrix")) {
      return; // only the fleet page has cells
    }
    var f = JSON.parse(ev.data);
    var el = document.getElementById(f.id);
    if (el && newest(el) > f.seq) {
      return; // the element shows a later state already
    }
    if (!el) {
      if (f.id.indexOf("c-") === 0 && f.html.indexOf("cell none") < 0) {
        stale(); // a new row or column: the page cannot place it
      }
      return;
    }
    mark(el, f.seq);
    if (el.outerHTML === f.html) {
      return;
    }
    el.outerHTML = f.html;
    var updated = document.getElementById(f.id);
    if (updated) {
      updated.setAttribute("data-updated", String(Date.now()));
    }
  });
  source.addEventListener("object", function (ev) {
    if (watch.length > 0 && watched(JSON.parse(ev.data))) {
      refresh();
    }
  });
  source.addEventListener("reload", stale);
})();
