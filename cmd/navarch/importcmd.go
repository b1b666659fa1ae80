package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/argocd"
	"github.com/navarch-io/navarch/internal/gitrepo"
)

type importOptions struct {
	files           []string
	namespace       string
	systemNamespace string
}

func newImportCommand() *cobra.Command {
	o := &importOptions{}
	cmd := &cobra.Command{
		Use:   "import -f FILE",
		Short: "Convert Argo CD Applications, ApplicationSets, AppProjects, cluster and repository Secrets to navarch objects",
		Long: `import reads Argo CD YAML (several documents per file, or a List as kubectl get -o yaml
prints it) and prints the navarch objects to create, as YAML on stdout, for kubectl apply -f -.
Every field that is not carried over is named in a warning on stderr.

  Application, ApplicationSet    navarch.io/v1alpha1 Application, ApplicationSet; fields with no
                                 meaning in navarch (info, ...) are dropped with a warning,
                                 fields it cannot honour are errors. project, Helm charts
                                 (chart, helm) and several sources (sources, ref) are kept; a
                                 chart repoURL without a scheme gets oci://, and
                                 credentials in a repoURL are dropped.
  AppProject                     a Project of the same name in --system-namespace, its fields
                                 copied. roles and orphanedResources are dropped with a warning;
                                 signatureKeys, destinationServiceAccounts,
                                 permitOnlyProjectScopedClusters and a sync window's
                                 andOperator are errors. Only Applications in
                                 --system-namespace or in its sourceNamespaces may name it.
  cluster Secret                 a Secret <name>-kubeconfig in --system-namespace holding a
  (argocd.argoproj.io/           kubeconfig built from the config JSON (bearerToken,
   secret-type: cluster)         username/password, tlsClientConfig, execProviderConfig), and a
                                 Cluster <name> with the Secret's labels. The in-cluster server
                                 https://kubernetes.default.svc becomes spec.inCluster: true.
  repository Secret              a Secret repo-<name> in --system-namespace labelled
  (secret-type: repository       navarch.io/secret-type: repository: url (a repo-creds prefix
   or repo-creds)                becomes the scope, matched on whole path segments), type (git,
                                 helm, oci; enableOCI makes oci), username, password,
                                 bearerToken, sshPrivateKey, tlsClientCertData/Key, plainHTTP
                                 (from insecureOCIForceHttp). insecure, insecureIgnoreHostKey,
                                 project, proxy, enableLfs, githubApp* are dropped with a
                                 warning; a Secret without credentials converts to nothing.
  ConfigMap                      the ConfigMap navarch-ssh-known-hosts in --system-namespace,
  argocd-ssh-known-hosts-cm      same key (ssh_known_hosts).
  ConfigMap argocd-tls-certs-cm  not converted: put a repository's CA in caData of its
                                 repository Secret.

Messages never show a value of a Secret. A document that cannot be converted is reported on
stderr and skipped; the others are still printed, and the exit code is 1.`,
		Example: `  navarch import -f argocd-apps.yaml > navarch.yaml
  kubectl get applications,applicationsets -n argocd -o yaml | navarch import -f - -n apps
  kubectl get appprojects -n argocd -o yaml | navarch import -f -
  navarch import -f clusters.yaml | kubectl apply -f -
  kubectl get secrets -n argocd -l 'argocd.argoproj.io/secret-type in (repository,repo-creds)' -o yaml | navarch import -f -`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(o.files) == 0 {
				return usageError{errors.New(`required flag "--filename" (-f) not set`)}
			}
			return o.run(cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "Argo CD YAML file (several documents allowed; - for stdin); repeatable")
	f.StringVarP(&o.namespace, "namespace", "n", "", "put Applications and ApplicationSets in this namespace (default: the one they name)")
	f.StringVar(&o.systemNamespace, "system-namespace", systemNamespace, "navarch's controller namespace, where Projects live and the Secrets and ConfigMaps it reads: kubeconfigs of Clusters, repository credentials, SSH known hosts")
	return cmd
}

func (o *importOptions) run(stdout, stderr io.Writer) error {
	var docs []importDoc
	failed, unreadable := 0, 0
	for _, file := range o.files {
		objs, err := readDocuments(file)
		if err != nil {
			fmt.Fprintln(stderr, redactUserInfo(fmt.Sprintf("error: %v", err)))
			unreadable++
			continue
		}
		for i, obj := range objs {
			docs = append(docs, flattenLists(importDoc{file: file, index: i + 1, obj: obj})...)
		}
	}
	if len(docs) == 0 && unreadable == 0 {
		return usageError{errors.New("no documents in the given files")}
	}
	printed := 0
	for _, d := range docs {
		objs, warnings, err := o.convert(d.obj)
		var maps []map[string]any
		for _, obj := range objs {
			m, dropped, mapErr := importedMap(obj)
			if mapErr != nil {
				return mapErr
			}
			maps = append(maps, m)
			warnings = append(warnings, dropped...)
		}
		label := d.label()
		for _, w := range warnings {
			fmt.Fprintln(stderr, redactUserInfo(fmt.Sprintf("warning: %s: %s", label, w)))
		}
		if err != nil {
			fmt.Fprintln(stderr, redactUserInfo(fmt.Sprintf("error: %s: %s", label, indentLines(err.Error()))))
			failed++
			continue
		}
		for _, m := range maps {
			if err := printImported(stdout, m, printed > 0); err != nil {
				return err
			}
			printed++
		}
	}
	switch {
	case unreadable > 0:
		return fmt.Errorf("%d of %d files could not be read and %d of %d documents could not be converted (see above); the others are printed",
			unreadable, len(o.files), failed, len(docs))
	case failed > 0:
		return fmt.Errorf("%d of %d documents could not be converted (see above); the others are printed", failed, len(docs))
	}
	return nil
}

// importDoc is one document of an input file.
type importDoc struct {
	file  string
	index int
	item  int // 1-based index in a List; 0 when not from a List
	obj   map[string]any
}

// label names a document in messages: its kind and name, and where it is.
func (d importDoc) label() string {
	kind, _ := d.obj["kind"].(string)
	meta, _ := d.obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	where := fmt.Sprintf("%s document %d", d.file, d.index)
	if d.item > 0 {
		where += fmt.Sprintf(" item %d", d.item)
	}
	if kind == "" {
		return where
	}
	return fmt.Sprintf("%s %s (%s)", kind, qualified(ns, name), where)
}

// flattenLists expands a List (as kubectl get -o yaml prints) into its items.
func flattenLists(d importDoc) []importDoc {
	items, isList := d.obj["items"].([]any)
	if kind, _ := d.obj["kind"].(string); !isList || !strings.HasSuffix(kind, "List") {
		return []importDoc{d}
	}
	var out []importDoc
	for i, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, importDoc{file: d.file, index: d.index, item: i + 1, obj: m})
		}
	}
	return out
}

// convert turns one Argo CD document into navarch objects.
func (o *importOptions) convert(obj map[string]any) ([]client.Object, []argocd.Warning, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	argo := apiVersion == argocd.APIVersion || apiVersion == navarchv1.GroupVersion.String()
	switch {
	case argo && kind == "Application":
		app, warnings, err := argocd.Application(obj)
		if err != nil {
			return nil, warnings, err
		}
		warnings = append(warnings, o.placeIn(app, obj)...)
		return []client.Object{app}, warnings, nil
	case argo && kind == "ApplicationSet":
		set, warnings, err := argocd.ApplicationSet(obj)
		if err != nil {
			return nil, warnings, err
		}
		warnings = append(warnings, o.placeIn(set, obj)...)
		return []client.Object{set}, warnings, nil
	case argo && (kind == argocd.AppProjectKind || kind == "Project"):
		proj, warnings, err := argocd.Project(obj, o.systemNamespace)
		if err != nil {
			return nil, warnings, err
		}
		if _, ok := obj["status"]; ok {
			// Argo CD records the tokens of project roles there.
			warnings = append(warnings, argocd.Warning{Field: "status", Message: "dropped: a navarch Project has no status"})
		}
		return []client.Object{proj}, warnings, nil
	case argocd.IsClusterSecret(obj):
		cluster, secret, warnings, err := argocd.ClusterSecret(obj, o.systemNamespace)
		if err != nil {
			return nil, warnings, err
		}
		if secret == nil {
			return []client.Object{cluster}, warnings, nil
		}
		return []client.Object{secret, cluster}, warnings, nil
	case argocd.IsRepositorySecret(obj):
		secret, warnings, err := argocd.RepositorySecret(obj, o.systemNamespace)
		if err != nil || secret == nil {
			return nil, warnings, err
		}
		return []client.Object{secret}, warnings, nil
	case argocd.IsKnownHostsConfigMap(obj):
		cm, warnings, err := argocd.KnownHosts(obj, o.systemNamespace)
		if err != nil {
			return nil, warnings, err
		}
		return []client.Object{cm}, warnings, nil
	case argocd.IsTLSCertsConfigMap(obj):
		return nil, nil, argocd.TLSCerts(obj)
	case apiVersion == "v1" && kind == "Secret":
		meta, _ := obj["metadata"].(map[string]any)
		labels, _ := meta["labels"].(map[string]any)
		if t, ok := labels[argocd.LabelSecretType].(string); ok {
			return nil, nil, fmt.Errorf("only Argo CD cluster, repository and repo-creds Secrets are converted, not %s Secrets", t)
		}
	}
	return nil, nil, fmt.Errorf("not an Argo CD Application, ApplicationSet, AppProject, cluster or repository Secret, or SSH known hosts ConfigMap (apiVersion %q, kind %q)", apiVersion, kind)
}

// placeIn applies --namespace and accounts for the status navarch does not carry over.
func (o *importOptions) placeIn(obj client.Object, in map[string]any) []argocd.Warning {
	var warnings []argocd.Warning
	if _, ok := in["status"]; ok {
		warnings = append(warnings, argocd.Warning{Field: "status", Message: "dropped: the navarch controller writes it"})
	}
	if o.namespace != "" && obj.GetNamespace() != o.namespace {
		if old := obj.GetNamespace(); old != "" {
			warnings = append(warnings, argocd.Warning{Field: "metadata.namespace",
				Message: fmt.Sprintf("%q becomes %q (--namespace)", old, o.namespace)})
		}
		obj.SetNamespace(o.namespace)
	}
	return warnings
}

// importedMap is one converted object as it is printed: without status, and without the user
// info of its repoURLs, with a warning for each. navarch refuses credentials in a repository
// URL, and import never prints them.
func importedMap(obj client.Object) (map[string]any, []argocd.Warning, error) {
	m, err := objectMap(obj)
	if err != nil {
		return nil, nil, err
	}
	delete(m, "status")
	var warnings []argocd.Warning
	redactRepoURLs(m, "", &warnings)
	return m, warnings, nil
}

// redactRepoURLs removes the user info of every repoURL in v, a generic object below the
// field path, keeping an SSH user name, which is no secret.
func redactRepoURLs(v any, path string, warnings *[]argocd.Warning) {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			field := k
			if path != "" {
				field = path + "." + k
			}
			s, ok := t[k].(string)
			if !ok || k != "repoURL" {
				redactRepoURLs(t[k], field, warnings)
				continue
			}
			if redacted := gitrepo.RedactURL(s); redacted != s {
				t[k] = redacted
				*warnings = append(*warnings, argocd.Warning{Field: field, Message: "credentials removed: navarch refuses " +
					"them in a URL; keep them in a repository Secret (navarch import converts Argo CD's)"})
			}
		}
	case []any:
		for i, e := range t {
			redactRepoURLs(e, fmt.Sprintf("%s[%d]", path, i), warnings)
		}
	}
}

// printImported prints one converted object as a YAML document.
func printImported(out io.Writer, m map[string]any, separate bool) error {
	data, err := yaml.Marshal(m)
	if err != nil {
		return err
	}
	if separate {
		if _, err := io.WriteString(out, "---\n"); err != nil {
			return err
		}
	}
	_, err = out.Write(data)
	return err
}

// indentLines indents the lines after the first, so a multi-line error stays readable.
func indentLines(s string) string {
	return strings.ReplaceAll(s, "\n", "\n  ")
}
