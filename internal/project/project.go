// Package project decides what a Project allows: which repositories an Application may
// render, which clusters and namespaces it may sync to, which kinds it may create, from which
// namespaces it may be declared, and when it may sync (sync windows).
//
// Every part of navarch that asks "may this Application do that?" asks here — the
// ApplicationSet controller before it writes a generated Application, the Application
// controller before it renders a source and before it applies each object, the CLI when it
// shows a Project — so they cannot disagree.
//
// The rules are Argo CD's AppProject's: patterns are globs in which `*` also matches `/`, a
// leading `!` denies, and a deny wins. Empty lists allow nothing, except that with neither a
// namespaced-kind whitelist nor blacklist every namespaced kind is allowed. navarch adds one
// rule of its own: an Application that does not live in the controller's namespace never
// writes into that namespace of the management cluster, whatever its Project says, because
// that namespace holds the controller's credentials and Projects.
package project

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gobwas/glob"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/destination"
)

// Policy is a compiled Project: what it allows, ready to be asked.
type Policy struct {
	// Name is the Project's name.
	Name string

	controlNamespace string
	sourceRepos      patterns
	sourceNamespaces patterns
	destinations     []compiledDestination
	clusterAllow     []groupKind
	clusterDeny      []groupKind
	namespacedAllow  []groupKind
	namespacedDeny   []groupKind
	windows          []window
}

// Destination is the cluster an Application syncs to, as a Project names it.
type Destination struct {
	// Name is the Cluster's name, navarchv1.InClusterName for the management cluster.
	Name string
	// Server is the cluster's API server URL.
	Server string
	// Management is true for the cluster the controller runs in.
	Management bool
}

// ManagementCluster is the Destination of the cluster the controller runs in.
var ManagementCluster = Destination{Name: navarchv1.InClusterName, Server: destination.InClusterServer, Management: true}

// ControlNamespace is the controller's namespace, where Projects live.
func (p *Policy) ControlNamespace() string { return p.controlNamespace }

// DestinationOf returns the cluster c registers as Projects name it.
func DestinationOf(c *navarchv1.Cluster) Destination {
	return Destination{Name: c.Name, Server: c.Spec.Server, Management: c.Spec.InCluster}
}

// Error is a refusal: what the Project does not allow.
type Error struct {
	// Project is the Project's name.
	Project string
	// Field is the Application field refused, e.g. "spec.destination"; empty for an object.
	Field string
	// Message says what is not allowed.
	Message string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// NotFoundError says that an Application names a Project that does not exist.
type NotFoundError struct {
	Name, Namespace string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("spec.project: Project %q does not exist in namespace %s", e.Name, e.Namespace)
}

// InvalidError says that an Application's Project cannot be compiled.
type InvalidError struct {
	Name string
	Err  error
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("spec.project: Project %s is invalid: %v", e.Name, e.Err)
}

func (e *InvalidError) Unwrap() error { return e.Err }

// IsRefusal reports whether err is a Project's refusal (*Error), a missing Project
// (*NotFoundError) or an invalid one (*InvalidError), rather than a failure to read.
func IsRefusal(err error) bool {
	var e *Error
	var nf *NotFoundError
	var inv *InvalidError
	return errors.As(err, &e) || errors.As(err, &nf) || errors.As(err, &inv)
}

// NameOf returns the Project an Application names: spec.project, or "default".
func NameOf(spec *navarchv1.ApplicationSpec) string {
	if spec.Project == "" {
		return navarchv1.DefaultProject
	}
	return spec.Project
}

// Compile checks a Project and compiles its patterns and windows. controlNamespace is the
// controller's namespace. An error names the field.
func Compile(p *navarchv1.Project, controlNamespace string) (*Policy, error) {
	s := &p.Spec
	pol := &Policy{Name: p.Name, controlNamespace: controlNamespace}
	var err error
	if pol.sourceRepos, err = compilePatterns("spec.sourceRepos", s.SourceRepos, normalizeRepo); err != nil {
		return nil, err
	}
	if pol.sourceNamespaces, err = compilePatterns("spec.sourceNamespaces", s.SourceNamespaces, nil); err != nil {
		return nil, err
	}
	for i, d := range s.Destinations {
		cd, err := compileDestination(fmt.Sprintf("spec.destinations[%d]", i), d)
		if err != nil {
			return nil, err
		}
		pol.destinations = append(pol.destinations, cd)
	}
	for _, l := range []struct {
		field string
		in    []navarchv1.GroupKind
		out   *[]groupKind
	}{
		{"spec.clusterResourceWhitelist", s.ClusterResourceWhitelist, &pol.clusterAllow},
		{"spec.clusterResourceBlacklist", s.ClusterResourceBlacklist, &pol.clusterDeny},
		{"spec.namespaceResourceWhitelist", s.NamespaceResourceWhitelist, &pol.namespacedAllow},
		{"spec.namespaceResourceBlacklist", s.NamespaceResourceBlacklist, &pol.namespacedDeny},
	} {
		if *l.out, err = compileGroupKinds(l.field, l.in); err != nil {
			return nil, err
		}
	}
	for i := range s.SyncWindows {
		w, err := compileWindow(fmt.Sprintf("spec.syncWindows[%d]", i), &s.SyncWindows[i])
		if err != nil {
			return nil, err
		}
		pol.windows = append(pol.windows, w)
	}
	return pol, nil
}

// CheckApplication says whether the Application in namespace ns, with spec, may be declared
// there and may sync its sources to dest.
func (p *Policy) CheckApplication(ns string, spec *navarchv1.ApplicationSpec, dest Destination) error {
	if err := p.CheckNamespace(ns); err != nil {
		return err
	}
	for i, src := range spec.GetSources() {
		field := "spec.source.repoURL"
		if len(spec.Sources) > 0 {
			field = fmt.Sprintf("spec.sources[%d].repoURL", i)
		}
		if problem := p.repositoryProblem(src.RepoURL); problem != "" {
			return p.refuse(field, "%s", problem)
		}
	}
	if !p.permitsDestination(dest, spec.Destination.Namespace) {
		return p.refuse("spec.destination", "the Project %s does not allow %s", p.Name, describe(dest, spec.Destination.Namespace))
	}
	return nil
}

// CheckRepository says whether the Project allows rendering the repository at url (Git, a
// Helm repository or an OCI registry), also when it is reached from a source: a remote
// kustomize base, a chart dependency. A URL with "." or ".." path segments is refused: the
// server would resolve it to another repository than the one its text matches.
func (p *Policy) CheckRepository(url string) error {
	if problem := p.repositoryProblem(url); problem != "" {
		return p.refuse("", "%s", problem)
	}
	return nil
}

func (p *Policy) repositoryProblem(url string) string {
	if hasDotSegment(url) {
		return fmt.Sprintf("the repository URL %s has a \".\" or \"..\" path segment; write the repository's own URL", url)
	}
	if !p.sourceRepos.match(normalizeRepo(url)) {
		return fmt.Sprintf("the Project %s does not allow the repository %s", p.Name, url)
	}
	return ""
}

// hasDotSegment reports whether a URL's path (or an scp-like address's) has a "." or ".."
// segment, percent-encoded or not.
func hasDotSegment(url string) bool {
	if _, rest, ok := strings.Cut(url, "://"); ok {
		url = rest
	}
	url, _, _ = strings.Cut(url, "?")
	url, _, _ = strings.Cut(url, "#")
	for seg := range strings.FieldsFuncSeq(strings.ToLower(url), func(r rune) bool { return r == '/' || r == ':' }) {
		seg = strings.ReplaceAll(seg, "%2e", ".")
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// CheckNamespace says whether Applications and ApplicationSets in namespace ns may name this
// Project.
func (p *Policy) CheckNamespace(ns string) error {
	if ns == p.controlNamespace || p.sourceNamespaces.match(ns) {
		return nil
	}
	return p.refuse("spec.project", "the Project %s does not allow Applications in namespace %s (its spec.sourceNamespaces)", p.Name, ns)
}

// Object is one object an Application renders, as the Project judges it.
type Object struct {
	Group, Kind, Name string
	// Namespace is the object's namespace; "" for a cluster-scoped object.
	Namespace string
}

// CheckObject says whether the Application in namespace appNamespace may create or change
// obj on dest. The message names the object.
func (p *Policy) CheckObject(appNamespace string, dest Destination, obj Object) error {
	what := obj.Kind + " " + obj.Name
	if obj.Namespace == "" {
		if !matchKind(p.clusterAllow, obj.Group, obj.Kind) || matchKind(p.clusterDeny, obj.Group, obj.Kind) {
			return p.refuse("", "%s: the Project %s does not allow cluster-scoped %s", what, p.Name, qualified(obj.Group, obj.Kind))
		}
		if obj.Group == "" && obj.Kind == "Namespace" {
			// A Namespace is the namespace it names: creating, changing or pruning it touches
			// everything in it.
			return p.checkNamespaceOf(appNamespace, dest, what, obj.Name)
		}
		return nil
	}
	what = obj.Kind + " " + obj.Namespace + "/" + obj.Name
	if (len(p.namespacedAllow) > 0 && !matchKind(p.namespacedAllow, obj.Group, obj.Kind)) || matchKind(p.namespacedDeny, obj.Group, obj.Kind) {
		return p.refuse("", "%s: the Project %s does not allow %s", what, p.Name, qualified(obj.Group, obj.Kind))
	}
	return p.checkNamespaceOf(appNamespace, dest, what, obj.Namespace)
}

// checkNamespaceOf says whether the Application in namespace appNamespace may write what,
// which is, or is in, namespace ns of dest.
func (p *Policy) checkNamespaceOf(appNamespace string, dest Destination, what, ns string) error {
	if dest.Management && ns == p.controlNamespace && appNamespace != p.controlNamespace {
		return p.refuse("", "%s: only Applications in namespace %s may write into it on the management cluster", what, p.controlNamespace)
	}
	if !p.permitsDestination(dest, ns) {
		return p.refuse("", "%s: the Project %s does not allow %s", what, p.Name, describe(dest, ns))
	}
	return nil
}

func (p *Policy) refuse(field, format string, args ...any) error {
	return &Error{Project: p.Name, Field: field, Message: fmt.Sprintf(format, args...)}
}

// permitsDestination applies Argo CD's rule: some entry matches the cluster (by name or
// server) and the namespace, and no entry denies either. A denying entry (`!` pattern)
// refuses what its other half matches: `{server: "*", namespace: "!kube-system"}` refuses
// kube-system on every cluster.
func (p *Policy) permitsDestination(dest Destination, namespace string) bool {
	matched := false
	for _, d := range p.destinations {
		nameOK := dest.Name != "" && d.name.matches(dest.Name)
		serverOK := dest.Server != "" && d.server.matches(destination.NormalizeServer(dest.Server))
		nsOK := d.namespace.matches(namespace)
		switch {
		case (nameOK || serverOK) && nsOK:
			matched = true
		case nsOK && ((!nameOK && d.name.deny) || (!serverOK && d.server.deny)):
			return false
		case !nsOK && d.namespace.deny && (serverOK || nameOK):
			return false
		}
	}
	return matched
}

func describe(dest Destination, namespace string) string {
	if namespace == "" {
		return "cluster " + dest.Name
	}
	return fmt.Sprintf("namespace %s on cluster %s", namespace, dest.Name)
}

func qualified(group, kind string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
}

// pattern is one glob, possibly negated. An empty pattern matches nothing.
type pattern struct {
	g     glob.Glob
	deny  bool
	empty bool
}

// matches reports whether s satisfies the pattern: for a negated one, that s is not what it
// names.
func (p pattern) matches(s string) bool {
	if p.empty {
		return false
	}
	return p.g.Match(s) != p.deny
}

func compilePattern(field, s string, normalize func(string) string) (pattern, error) {
	if s == "" {
		return pattern{empty: true}, nil
	}
	deny := strings.HasPrefix(s, "!")
	s = strings.TrimPrefix(s, "!")
	if normalize != nil {
		s = normalize(s)
	}
	g, err := glob.Compile(s)
	if err != nil {
		return pattern{}, fmt.Errorf("%s: %q is not a valid glob: %w", field, s, err)
	}
	return pattern{g: g, deny: deny}, nil
}

// patterns is a list of globs: a string matches when some allowing pattern names it and no
// denying pattern does.
type patterns []pattern

func (ps patterns) match(s string) bool {
	allowed := false
	for _, p := range ps {
		if p.deny && !p.matches(s) {
			return false
		}
		allowed = allowed || (!p.deny && p.matches(s))
	}
	return allowed
}

func compilePatterns(field string, list []string, normalize func(string) string) (patterns, error) {
	out := make(patterns, 0, len(list))
	for i, s := range list {
		p, err := compilePattern(fmt.Sprintf("%s[%d]", field, i), s, normalize)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

type compiledDestination struct {
	name, server, namespace pattern
}

func compileDestination(field string, d navarchv1.ProjectDestination) (compiledDestination, error) {
	var cd compiledDestination
	var err error
	if cd.name, err = compilePattern(field+".name", d.Name, nil); err != nil {
		return cd, err
	}
	if cd.server, err = compilePattern(field+".server", d.Server, serverPattern); err != nil {
		return cd, err
	}
	cd.namespace, err = compilePattern(field+".namespace", d.Namespace, nil)
	return cd, err
}

// serverPattern normalizes a server pattern like a server URL, unless it is a glob.
func serverPattern(s string) string {
	if strings.ContainsAny(s, "*?[{") {
		return s
	}
	return destination.NormalizeServer(s)
}

// normalizeRepo puts a repository URL in the form in which Projects compare them: lower
// case, without a trailing slash or ".git".
func normalizeRepo(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimSuffix(strings.TrimRight(s, "/"), ".git")
	return s
}

type groupKind struct{ group, kind glob.Glob }

func compileGroupKinds(field string, list []navarchv1.GroupKind) ([]groupKind, error) {
	out := make([]groupKind, 0, len(list))
	for i, gk := range list {
		g, err := glob.Compile(gk.Group)
		if err != nil {
			return nil, fmt.Errorf("%s[%d].group: %q is not a valid glob: %w", field, i, gk.Group, err)
		}
		k, err := glob.Compile(gk.Kind)
		if err != nil {
			return nil, fmt.Errorf("%s[%d].kind: %q is not a valid glob: %w", field, i, gk.Kind, err)
		}
		out = append(out, groupKind{group: g, kind: k})
	}
	return out, nil
}

func matchKind(list []groupKind, group, kind string) bool {
	return slices.ContainsFunc(list, func(gk groupKind) bool { return gk.group.Match(group) && gk.kind.Match(kind) })
}
