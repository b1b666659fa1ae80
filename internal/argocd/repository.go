package argocd

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/navarch-io/navarch/internal/credentials"
)

// Repository types of navarch repository credential Secrets (key `type`).
const (
	RepositoryTypeGit  = "git"
	RepositoryTypeHelm = "helm"
	RepositoryTypeOCI  = "oci"
)

// repositorySecretPrefix starts the name of every converted repository Secret. Prefixing the
// Argo CD name, which is unique in its namespace, keeps the converted names unique too, even
// when Argo CD's own names start with "repo-".
const repositorySecretPrefix = "repo-"

// IsRepositorySecret reports whether a decoded document is an Argo CD repository Secret
// (label argocd.argoproj.io/secret-type: repository) or credential template (repo-creds).
func IsRepositorySecret(obj map[string]any) bool {
	t := argoSecretType(obj)
	return t == SecretTypeRepository || t == SecretTypeRepoCreds
}

// RepositorySecret converts an Argo CD repository Secret (the credentials of one repository)
// or credential template (repo-creds: the credentials of every repository whose URL starts
// with a prefix) into a navarch repository credential Secret `repo-<name>` in
// systemNamespace, labelled navarch.io/secret-type: repository, written as stringData. The
// URL becomes the Secret's scope; navarch matches it on whole path segments, where Argo CD
// matches a repo-creds prefix as a string.
//
// Settings navarch does not have (a proxy, Git LFS, skipping TLS or host key checks, GitHub
// App credentials, a project) are dropped with a warning; credentials it cannot use (Google
// Cloud service account keys, Azure workload identity) are errors. An Argo CD Secret with no
// credentials navarch can use converts to nothing, with a warning: navarch reads a repository
// anonymously when no Secret applies, and an empty one would hide broader credentials.
//
// No message ever contains a value of the Secret.
func RepositorySecret(obj map[string]any, systemNamespace string) (*corev1.Secret, []Warning, error) {
	if !IsRepositorySecret(obj) {
		return nil, nil, fmt.Errorf("not an Argo CD repository Secret: want apiVersion v1, kind Secret and label %s: %s or %s",
			LabelSecretType, SecretTypeRepository, SecretTypeRepoCreds)
	}
	in, err := decodeSecret(obj)
	if err != nil {
		return nil, nil, err
	}
	c := &repositoryConverter{template: argoSecretType(obj) == SecretTypeRepoCreds}
	out := c.convert(in, secretValues(in), systemNamespace)
	if err := c.err(); err != nil {
		return nil, c.warnings, err
	}
	return out, c.warnings, nil
}

type repositoryConverter struct {
	findings
	// template is true for a repo-creds Secret, whose url is a prefix.
	template bool
}

// carriedKeys are the Argo CD keys navarch's Secret has under the same name.
var carriedKeys = []string{"username", "password", "bearerToken", "sshPrivateKey", "tlsClientCertData", "tlsClientCertKey"}

// pemKeys hold PEM blocks.
var pemKeys = []string{"sshPrivateKey", "tlsClientCertData", "tlsClientCertKey"}

// droppedRepositoryKeys are Argo CD settings navarch does not have, with what the warning
// says when they are set.
var droppedRepositoryKeys = map[string]string{
	"enableLfs":                  "dropped: Git LFS is not supported; LFS pointers are read as they are committed",
	"proxy":                      "dropped: a proxy per repository is not supported",
	"noProxy":                    "dropped: a proxy per repository is not supported",
	"forceHttpBasicAuth":         "dropped: forcing HTTP basic authentication is not supported",
	"githubAppID":                "dropped: GitHub App credentials are not supported for repositories; use a token as password",
	"githubAppInstallationID":    "dropped: GitHub App credentials are not supported for repositories; use a token as password",
	"githubAppPrivateKey":        "dropped: GitHub App credentials are not supported for repositories; use a token as password",
	"githubAppEnterpriseBaseUrl": "dropped: GitHub App credentials are not supported for repositories; use a token as password",
	"depth":                      "dropped: a clone depth per repository is not supported",
}

func (c *repositoryConverter) convert(in *corev1.Secret, data map[string]secretValue, systemNamespace string) *corev1.Secret {
	name := c.secretName(in)
	out := map[string]string{}
	for _, k := range sortedKeys(data) {
		v := data[k]
		if slices.Contains(carriedKeys, k) {
			continue // carried over below
		}
		switch k {
		case "url", "type", "enableOCI", "insecureOCIForceHttp":
			// They decide the scope and type together, below.
		case "name":
			c.warn(v.field, "dropped: informational only (the repository's name in Argo CD)")
		case "project":
			if strings.TrimSpace(v.value) != "" {
				c.warn(v.field, "dropped: navarch repository credentials are not per project yet; these apply to every Application and ApplicationSet whose repoURL they cover")
			}
		case "insecure":
			if c.boolean(v) {
				if isSSH(data["url"].value) {
					c.warn(v.field, "not carried over: %s", knownHostsAdvice)
				} else {
					c.warn(v.field, "not carried over: navarch always verifies TLS certificates; add the repository's CA to caData instead")
				}
			}
		case "insecureIgnoreHostKey":
			if c.boolean(v) {
				c.warn(v.field, "not carried over: %s", knownHostsAdvice)
			}
		case "gcpServiceAccountKey":
			if v.value != "" {
				c.fail(v.field, "Google Cloud service account keys are not supported; use an access token as password")
			}
		case "useAzureWorkloadIdentity":
			if c.boolean(v) {
				c.fail(v.field, "Azure workload identity is not supported; use username and password (an access token)")
			}
		default:
			why, known := droppedRepositoryKeys[k]
			switch {
			case !known:
				c.warn(v.field, "dropped: not an Argo CD repository field navarch knows")
			case isSet(v.value):
				c.warn(v.field, "%s", why)
			}
		}
	}

	for _, k := range carriedKeys {
		if v := data[k]; v.value != "" {
			out[k] = v.value
		}
	}
	for _, k := range pemKeys {
		if v, ok := out[k]; ok && !strings.Contains(v, "-----BEGIN ") {
			c.fail(data[k].field, "not a PEM block")
		}
	}
	if (out["tlsClientCertData"] == "") != (out["tlsClientCertKey"] == "") {
		c.fail("data", "tlsClientCertData and tlsClientCertKey go together")
	}
	if out["password"] != "" && out["bearerToken"] != "" {
		c.fail("data", "both password and bearerToken are set; Argo CD refuses that")
	}

	repoType := c.repositoryType(data)
	scope := c.scope(data, repoType)
	if scope == "" {
		return nil
	}
	out["url"], out["type"] = scope, repoType
	if v, ok := data["insecureOCIForceHttp"]; ok && c.boolean(v) {
		if repoType == RepositoryTypeOCI {
			out["plainHTTP"] = "true"
		} else {
			c.warn(v.field, "dropped: plain HTTP applies to OCI registries only")
		}
	}

	if !holdsCredentials(out) {
		if out["plainHTTP"] == "" {
			c.warn("data", "not converted: no credentials navarch can use. navarch reads a repository anonymously when no Secret applies to it; a Secret without credentials would only hide broader ones")
			return nil
		}
		if !c.template {
			c.warn("data", "no credentials, only plainHTTP: navarch uses the most specific Secret alone, so where Argo CD took this repository's credentials from a repo-creds Secret, add them here")
		}
	}
	if name == "" || len(c.errs) > 0 {
		return nil
	}
	labels := userLabels(in)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[credentials.LabelSecretType] = credentials.SecretTypeRepository
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: systemNamespace, Labels: labels,
			Annotations: c.userAnnotations(in.Annotations)},
		Type:       corev1.SecretTypeOpaque,
		StringData: out,
	}
}

// knownHostsAdvice says how navarch trusts an SSH host instead of not checking its key.
const knownHostsAdvice = "navarch always checks SSH host keys; put the host's key in the ConfigMap " +
	KnownHostsConfigMap + " (key " + KnownHostsKey + ") of the system namespace"

func (c *repositoryConverter) secretName(in *corev1.Secret) string {
	if in.Name == "" {
		c.fail("metadata.name", "Required value")
		return ""
	}
	name := repositorySecretPrefix + in.Name
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		c.fail("metadata.name", "%q is not a valid Secret name: %s", name, strings.Join(errs, "; "))
		return ""
	}
	return name
}

// repositoryType maps type and enableOCI to navarch's type.
func (c *repositoryConverter) repositoryType(data map[string]secretValue) string {
	t := data["type"]
	oci := false
	if v, ok := data["enableOCI"]; ok {
		oci = c.boolean(v)
	}
	switch strings.ToLower(strings.TrimSpace(t.value)) {
	case "", RepositoryTypeGit:
		if oci {
			return RepositoryTypeOCI
		}
		return RepositoryTypeGit
	case RepositoryTypeHelm:
		// Argo CD reads a Helm repository URL without a scheme as an OCI registry.
		if oci || !strings.Contains(data["url"].value, "://") {
			return RepositoryTypeOCI
		}
		return RepositoryTypeHelm
	case RepositoryTypeOCI:
		return RepositoryTypeOCI
	}
	c.fail(t.field, "want git, helm or oci")
	return RepositoryTypeGit
}

// scope turns the Argo CD url into navarch's url, or returns "" after failing.
func (c *repositoryConverter) scope(data map[string]secretValue, repoType string) string {
	v, ok := data["url"]
	raw := strings.TrimSpace(v.value)
	if !ok || raw == "" {
		c.fail("data.url", "Required value: the repository URL")
		return ""
	}
	field := v.field
	hasScheme := strings.Contains(raw, "://")
	if repoType == RepositoryTypeOCI && !strings.HasPrefix(strings.ToLower(raw), "oci://") {
		if hasScheme {
			c.fail(field, "an OCI registry URL starts with oci:// or has no scheme")
			return ""
		}
		raw, hasScheme = "oci://"+raw, true
		c.warn(field, "prefixed with oci://: navarch names OCI registries oci://, as in the repoURL of chart sources")
	}
	if hasScheme {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			// url.Parse's error quotes the URL, which may hold a password.
			c.fail(field, "not a URL with a host")
			return ""
		}
		if u.User != nil {
			_, hasPassword := u.User.Password()
			if hasPassword || !strings.EqualFold(u.Scheme, "ssh") {
				c.fail(field, "carries user info: navarch does not use credentials in a URL; put them in username and password")
				return ""
			}
		}
	}
	if c.template && strings.ContainsAny(raw[len(raw)-1:], "-_.") {
		c.warn(field, "the prefix ends inside a path segment: Argo CD matches it as a string, navarch matches whole path segments, "+
			"so this Secret applies only to repositories under a directory named exactly like its last segment; "+
			"write one Secret per repository, or scope one to the directory above")
	}
	return raw
}

// boolean reads an Argo CD boolean as Argo CD does (strconv.ParseBool); empty is false.
func (c *repositoryConverter) boolean(v secretValue) bool {
	s := strings.TrimSpace(v.value)
	if s == "" {
		return false
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		c.fail(v.field, "not a boolean")
		return false
	}
	return b
}

// isSet reports whether an optional Argo CD setting is set: not empty, false or zero.
func isSet(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && s != "false" && s != "0"
}

// isSSH reports whether a repository URL is reached over SSH: an ssh:// URL, or, as git
// decides, one without "://" that has a colon before any slash (user@host:path).
func isSSH(raw string) bool {
	raw = strings.TrimSpace(raw)
	if scheme, _, ok := strings.Cut(raw, "://"); ok {
		return strings.EqualFold(scheme, "ssh")
	}
	colon, slash := strings.IndexByte(raw, ':'), strings.IndexByte(raw, '/')
	return colon > 0 && (slash < 0 || colon < slash)
}

// holdsCredentials reports whether a converted Secret has something to authenticate with.
func holdsCredentials(out map[string]string) bool {
	for _, k := range carriedKeys {
		if out[k] != "" {
			return true
		}
	}
	return false
}
