package dashboard

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/actions"
)

// action describes one action for its confirmation page.
type action struct {
	Verb     string // sync, refresh, ...
	Question string
	Detail   string
	Kind     string
	Path     string // the object's page, where the result is shown
	Post     string // where the confirmed form posts
	Fields   map[string]string
}

var applicationActions = map[string]string{
	"sync":      "Sync Application %s/%s with Git now?",
	"refresh":   "Compare Application %s/%s with Git again (fetching Git afresh)?",
	"rollback":  "Roll Application %s/%s back to history entry %s?",
	"terminate": "Terminate the running operation of Application %s/%s?",
}

var applicationSetActions = map[string]string{
	"promote": "Promote step %[3]s of ApplicationSet %[1]s/%[2]s's rollout?",
	"pause":   "Pause the rollout of ApplicationSet %s/%s? No new sync starts; syncs already started finish.",
	"resume":  "Resume the rollout of ApplicationSet %s/%s?",
}

// actionRequest is an action request read from its URL, /<kind>s/<namespace>/<name>/<verb>,
// and its form: the object, the verb's question, and the verb's argument, if it takes one.
type actionRequest struct {
	action
	key      types.NamespacedName
	question string
	arg      string
}

// readAction reads an action request on an object of kind, whose verbs' questions are
// questions, whose page is at path and whose argument, when a verb has one, is the form field
// argField. An unknown verb, or an object the dashboard does not show (another namespace than
// --namespace, or one the proxy's user may not list), is answered with a 404 page and ok
// false: the dashboard's own credentials must not reach past what it shows.
func (s *Server) readAction(w http.ResponseWriter, r *http.Request, kind string, questions map[string]string,
	path func(namespace, name string) string, argField string) (req actionRequest, ok bool) {
	ns, name, verb := r.PathValue("namespace"), r.PathValue("name"), r.PathValue("action")
	question, ok := questions[verb]
	if !ok {
		s.errorPage(w, r, http.StatusNotFound, fmt.Errorf("no action %q on %ss", verb, kind))
		return req, false
	}
	if !s.allowedNamespace(r, strings.ToLower(kind)+"s", ns) {
		s.errorPage(w, r, http.StatusNotFound, fmt.Errorf("%s %s/%s not found", kind, ns, name))
		return req, false
	}
	return actionRequest{
		action:   action{Verb: verb, Kind: kind, Path: path(ns, name), Post: path(ns, name) + "/" + verb},
		key:      types.NamespacedName{Namespace: ns, Name: name},
		question: question,
		arg:      r.PostFormValue(argField),
	}, true
}

func (s *Server) applicationAction(w http.ResponseWriter, r *http.Request) {
	req, ok := s.readAction(w, r, "Application", applicationActions, applicationPath, "id")
	if !ok {
		return
	}
	a, key, verb, question, arg := req.action, req.key, req.Verb, req.question, req.arg
	ns, name := key.Namespace, key.Name
	if verb == "rollback" {
		if _, err := strconv.ParseInt(arg, 10, 64); err != nil {
			s.errorPage(w, r, http.StatusBadRequest, fmt.Errorf("rollback: id must be a history entry's number, got %q", arg))
			return
		}
		a.Fields = map[string]string{"id": arg}
		a.Question = fmt.Sprintf(question, ns, name, arg)
	} else {
		a.Question = fmt.Sprintf(question, ns, name)
	}
	prune := verb == "sync" && r.PostFormValue("prune") == "yes"
	if prune {
		a.Fields = map[string]string{"prune": "yes"}
		a.Question = fmt.Sprintf("Sync Application %s/%s with Git now, deleting the resources no longer in Git (prune)?", ns, name)
	}
	s.runAction(w, r, a, func(ctx context.Context, c client.Client, user string) (string, error) {
		switch verb {
		case "sync":
			op, err := actions.Sync(ctx, c, key, navarchv1.SyncOperation{Prune: prune}, user)
			if err != nil {
				return "", err
			}
			return requested(op, "the controller starts it shortly"), nil
		case "rollback":
			id, _ := strconv.ParseInt(arg, 10, 64)
			op, err := actions.Rollback(ctx, c, key, id, user)
			if err != nil {
				return "", err
			}
			return requested(op, "the controller starts it shortly"), nil
		case "refresh":
			if _, err := actions.Refresh(ctx, c, key); err != nil {
				return "", err
			}
			return fmt.Sprintf("Requested a refresh of Application %s: the controller compares it with Git again.", key), nil
		}
		if _, err := actions.Terminate(ctx, c, key); err != nil {
			return "", err
		}
		return fmt.Sprintf("Requested the termination of Application %s's running operation.", key), nil
	})
}

func (s *Server) applicationSetAction(w http.ResponseWriter, r *http.Request) {
	req, ok := s.readAction(w, r, "ApplicationSet", applicationSetActions, applicationSetPath, "step")
	if !ok {
		return
	}
	a, key, verb, arg := req.action, req.key, req.Verb, req.arg
	var step int64
	if verb == "promote" {
		var err error
		if step, err = strconv.ParseInt(arg, 10, 32); err != nil || step < 1 {
			s.errorPage(w, r, http.StatusBadRequest, fmt.Errorf("promote: step must be a step's number, got %q", arg))
			return
		}
		a.Fields = map[string]string{"step": arg}
	}
	a.Question = fmt.Sprintf(req.question, key.Namespace, key.Name, arg)
	s.runAction(w, r, a, func(ctx context.Context, c client.Client, _ string) (string, error) {
		var res actions.Result
		var err error
		switch verb {
		case "promote":
			res, err = actions.Promote(ctx, c, key, int32(step))
		case "pause":
			res, err = actions.Pause(ctx, c, key)
		default:
			res, err = actions.Resume(ctx, c, key)
		}
		return res.Message, err
	})
}

// runAction asks for confirmation (a page with the confirmed form, for browsers without
// JavaScript; the script's confirm() dialog sets confirmed=yes itself), then runs the action
// with the requester's client and redirects to the object's page with the result.
func (s *Server) runAction(w http.ResponseWriter, r *http.Request, a action, run func(context.Context, client.Client, string) (string, error)) {
	if s.opts.ReadOnly {
		s.errorPage(w, r, http.StatusForbidden, errors.New("this dashboard is read-only (--read-only)"))
		return
	}
	if r.PostFormValue("confirmed") != "yes" {
		s.render(w, r, http.StatusOK, "confirm", page{Title: "Confirm " + a.Verb, Data: a})
		return
	}
	id := identityOf(r)
	c, err := s.clients.forIdentity(id)
	if err == nil {
		var msg string
		msg, err = run(r.Context(), c, cmpUser(id.User))
		if err == nil {
			s.log.Info("Action done", "action", a.Verb, "kind", a.Kind, "path", a.Path, "user", id.User, "result", msg)
			setFlash(w, r, true, msg)
		}
	}
	if err != nil {
		s.log.Info("Action failed", "action", a.Verb, "kind", a.Kind, "path", a.Path, "user", id.User, "error", err.Error())
		setFlash(w, r, false, a.Verb+" failed: "+err.Error())
	}
	http.Redirect(w, r, a.Path, http.StatusSeeOther)
}

// requested says what an operation request asked for, and what replaced.
func requested(req *actions.Request, next string) string {
	app := req.Application
	msg := fmt.Sprintf("Requested a %s of Application %s/%s; %s.", actions.OperationSummary(&navarchv1.OperationState{Operation: *req.Operation}), app.Namespace, app.Name, next)
	if req.Replaced != nil {
		msg += " It replaces an earlier request the controller had not started."
	}
	return msg
}

func cmpUser(u string) string {
	if u == "" {
		return "dashboard"
	}
	return u
}

// setFlash leaves a one-time message for the next page: the result of an action.
func setFlash(w http.ResponseWriter, r *http.Request, ok bool, msg string) {
	prefix := "-"
	if ok {
		prefix = "+"
	}
	if len(msg) > 2000 {
		msg = msg[:2000] + "…"
	}
	setCookie(w, r, flashCookie, base64.RawURLEncoding.EncodeToString([]byte(prefix+msg)), 60)
}

// liveRefreshHeader marks the script's fetch of the page it shows, which only takes the live
// part and so must not take the flash message either.
const liveRefreshHeader = "X-Navarch-Live-Refresh"

// readFlash returns the flash message ("+" or "-" then the text) and clears it.
func readFlash(w http.ResponseWriter, r *http.Request) (string, bool) {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return "", false
	}
	setCookie(w, r, flashCookie, "", -1)
	data, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil || len(data) < 2 {
		return "", false
	}
	return string(data), true
}
