package argocd

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Fake SSH key: the converter checks the PEM framing only.
const sshKeyPEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nc3NoLWtleQ==\n-----END OPENSSH PRIVATE KEY-----\n"

// indent indents every line of a PEM block for a YAML block scalar.
func indent(pem, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(pem, "\n"), "\n", "\n"+prefix)
}

func TestRepositorySecretBecomesANavarchCredentialSecret(t *testing.T) {
	tests := []struct {
		name, yaml string
		wantName   string
		want       map[string]string // stringData
		warnings   []string          // fields warned about
		secrets    []string          // values no message may contain
	}{
		{
			name: "HTTPS with a token, Argo CD settings navarch does not have",
			yaml: `
apiVersion: v1
kind: Secret
metadata:
  name: private-repo
  namespace: argocd
  labels: {argocd.argoproj.io/secret-type: repository, team: web}
  annotations: {managed-by: argocd.argoproj.io, owner: web-team}
stringData:
  type: git
  name: private
  url: https://github.com/org/private-repo
  username: bot
  password: s3cr3t-t0ken
  project: web
  insecure: "true"
  forceHttpBasicAuth: "true"
  enableLfs: "false"
  proxy: http://proxy.internal:3128
`,
			wantName: "repo-private-repo",
			want:     map[string]string{"url": "https://github.com/org/private-repo", "type": "git", "username": "bot", "password": "s3cr3t-t0ken"},
			warnings: []string{"stringData.name", "stringData.project", "stringData.insecure", "stringData.forceHttpBasicAuth",
				"stringData.proxy", "metadata.annotations.managed-by"},
			secrets: []string{"s3cr3t-t0ken"},
		},
		{
			name: "SSH with a private key, given as data",
			yaml: `
apiVersion: v1
kind: Secret
metadata:
  name: ssh-repo
  labels: {argocd.argoproj.io/secret-type: repository}
data:
  url: ` + b64("git@github.com:org/deploy.git") + `
  sshPrivateKey: ` + b64(sshKeyPEM) + `
  insecureIgnoreHostKey: ` + b64("true") + `
`,
			wantName: "repo-ssh-repo",
			want:     map[string]string{"url": "git@github.com:org/deploy.git", "type": "git", "sshPrivateKey": sshKeyPEM},
			warnings: []string{"data.insecureIgnoreHostKey"},
			secrets:  []string{"c3NoLWtleQ=="},
		},
		{
			name: "a Helm repository with a TLS client certificate",
			yaml: `
apiVersion: v1
kind: Secret
metadata:
  name: charts
  labels: {argocd.argoproj.io/secret-type: repository}
stringData:
  type: helm
  name: internal
  url: https://charts.example.com/stable
  tlsClientCertData: |
` + indent(certPEM, "    ") + `
  tlsClientCertKey: |
` + indent(keyPEM, "    ") + `
`,
			wantName: "repo-charts",
			want: map[string]string{"url": "https://charts.example.com/stable", "type": "helm",
				"tlsClientCertData": certPEM, "tlsClientCertKey": keyPEM},
			warnings: []string{"stringData.name"},
			secrets:  []string{"Y2VydA==", "a2V5"},
		},
		{
			name: "an OCI registry (enableOCI) without a scheme, over plain HTTP",
			yaml: `
apiVersion: v1
kind: Secret
metadata:
  name: registry
  labels: {argocd.argoproj.io/secret-type: repository}
stringData:
  type: helm
  enableOCI: "true"
  insecureOCIForceHttp: "true"
  url: registry.example.com:5000/charts
  username: robot$ci
  password: hunter2hunter2
`,
			wantName: "repo-registry",
			want: map[string]string{"url": "oci://registry.example.com:5000/charts", "type": "oci", "plainHTTP": "true",
				"username": "robot$ci", "password": "hunter2hunter2"},
			warnings: []string{"stringData.url"},
			secrets:  []string{"hunter2hunter2"},
		},
		{
			name: "a repo-creds prefix that ends inside a path segment",
			yaml: `
apiVersion: v1
kind: Secret
metadata:
  name: creds-1234567
  labels: {argocd.argoproj.io/secret-type: repo-creds}
stringData:
  url: https://github.com/org/team-
  password: group-t0ken-abcdef
  githubAppID: "0"
`,
			wantName: "repo-creds-1234567",
			want:     map[string]string{"url": "https://github.com/org/team-", "type": "git", "password": "group-t0ken-abcdef"},
			warnings: []string{"stringData.url"},
			secrets:  []string{"group-t0ken-abcdef"},
		},
		{
			name: "a repo-creds prefix naming a directory, with a bearer token",
			yaml: `
apiVersion: v1
kind: Secret
metadata:
  name: bitbucket
  labels: {argocd.argoproj.io/secret-type: repo-creds}
stringData:
  url: https://bitbucket.example.com/scm/team/
  bearerToken: BBDC-t0k3n
`,
			wantName: "repo-bitbucket",
			want:     map[string]string{"url": "https://bitbucket.example.com/scm/team/", "type": "git", "bearerToken": "BBDC-t0k3n"},
			secrets:  []string{"BBDC-t0k3n"},
		},
		{
			name: "SSH credentials for a whole host, without a host key check",
			yaml: `
apiVersion: v1
kind: Secret
metadata:
  name: gitea
  labels: {argocd.argoproj.io/secret-type: repo-creds}
stringData:
  url: ssh://git@git.example.com:2222/
  insecure: "true"
  sshPrivateKey: "` + strings.ReplaceAll(sshKeyPEM, "\n", `\n`) + `"
`,
			wantName: "repo-gitea",
			want:     map[string]string{"url": "ssh://git@git.example.com:2222/", "type": "git", "sshPrivateKey": sshKeyPEM},
			warnings: []string{"stringData.insecure"},
			secrets:  []string{"c3NoLWtleQ=="},
		},
		{
			name: "an anonymous OCI registry over plain HTTP (type oci, Argo CD 3)",
			yaml: `
apiVersion: v1
kind: Secret
metadata:
  name: local-registry
  labels: {argocd.argoproj.io/secret-type: repository}
stringData: {type: oci, url: "oci://registry.local:5000/charts", insecureOCIForceHttp: "true"}
`,
			wantName: "repo-local-registry",
			want:     map[string]string{"url": "oci://registry.local:5000/charts", "type": "oci", "plainHTTP": "true"},
			warnings: []string{"data"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secret, warnings, err := RepositorySecret(decode(t, tt.yaml), "navarch-system")
			if err != nil {
				t.Fatalf("does not convert: %v", err)
			}
			if secret == nil {
				t.Fatalf("converted to nothing; warnings: %v", warnings)
			}
			if secret.APIVersion != "v1" || secret.Kind != "Secret" || secret.Name != tt.wantName || secret.Namespace != "navarch-system" {
				t.Errorf("got %s %s %s/%s, want v1 Secret navarch-system/%s", secret.APIVersion, secret.Kind, secret.Namespace, secret.Name, tt.wantName)
			}
			if secret.Labels["navarch.io/secret-type"] != "repository" || secret.Labels[LabelSecretType] != "" {
				t.Errorf("labels %v, want navarch.io/secret-type: repository and not Argo CD's", secret.Labels)
			}
			if len(secret.Data) != 0 {
				t.Errorf("data %v, want stringData only", secret.Data)
			}
			if !reflect.DeepEqual(secret.StringData, tt.want) {
				t.Errorf("stringData\n got %q\nwant %q", secret.StringData, tt.want)
			}
			assertWarnings(t, warnings, tt.warnings)
			assertNoSecretIn(t, warnings, nil, tt.secrets)
		})
	}
}

func TestRepositorySecretKeepsUserMetadata(t *testing.T) {
	secret, _, err := RepositorySecret(decode(t, `
apiVersion: v1
kind: Secret
metadata:
  name: r
  labels: {argocd.argoproj.io/secret-type: repository, team: web}
  annotations: {owner: web-team, argocd.argoproj.io/sync-wave: "1"}
stringData: {url: https://git.example.com/r.git, password: p}
`), "ops")
	if err != nil {
		t.Fatal(err)
	}
	if secret.Namespace != "ops" || secret.Labels["team"] != "web" || len(secret.Labels) != 2 || secret.Annotations["owner"] != "web-team" || len(secret.Annotations) != 1 {
		t.Errorf("Secret %s/%s labels %v annotations %v", secret.Namespace, secret.Name, secret.Labels, secret.Annotations)
	}
}

func TestRepositorySecretWithoutCredentialsConvertsToNothing(t *testing.T) {
	// Argo CD registers public Helm repositories like this; a navarch Secret without
	// credentials would hide a repo-creds Secret for the same host.
	secret, warnings, err := RepositorySecret(decode(t, `
apiVersion: v1
kind: Secret
metadata:
  name: bitnami
  labels: {argocd.argoproj.io/secret-type: repository}
stringData: {type: helm, name: bitnami, url: https://charts.bitnami.com/bitnami, githubAppPrivateKey: "x"}
`), "navarch-system")
	if err != nil || secret != nil {
		t.Fatalf("got %v, %v; want nothing and no error", secret, err)
	}
	assertWarnings(t, warnings, []string{"stringData.name", "stringData.githubAppPrivateKey", "data"})
}

func TestRepositorySecretRefusesWhatItCannotCarry(t *testing.T) {
	tests := []struct {
		name, stringData string
		fields           []string
		secrets          []string
	}{
		{"Google Cloud and Azure credentials", `{url: https://source.developers.google.com/p/x/r/y, gcpServiceAccountKey: '{"private_key": "gcpKEY"}', useAzureWorkloadIdentity: "true"}`,
			[]string{"stringData.gcpServiceAccountKey", "stringData.useAzureWorkloadIdentity"}, []string{"gcpKEY"}},
		{"an unknown type and a boolean that is not", `{url: https://x.example.com, type: svn, insecure: "maybe", password: pw0rd}`,
			[]string{"stringData.type", "stringData.insecure"}, []string{"pw0rd", "svn", "maybe"}},
		{"credentials in the URL", `{url: "https://bot:pa55w0rd@git.example.com/org", password: other}`,
			[]string{"stringData.url"}, []string{"pa55w0rd"}},
		{"a password in an SSH URL", `{url: "ssh://git:pa55w0rd@git.example.com/org", sshPrivateKey: "` + strings.ReplaceAll(sshKeyPEM, "\n", `\n`) + `"}`,
			[]string{"stringData.url"}, []string{"pa55w0rd"}},
		{"an OCI registry with an https URL", `{url: "https://registry.example.com", type: oci, password: pw0rd}`,
			[]string{"stringData.url"}, []string{"pw0rd"}},
		{"a certificate without its key, not PEM", `{url: https://x.example.com, tlsClientCertData: notPEMatall}`,
			[]string{"data", "stringData.tlsClientCertData"}, []string{"notPEMatall"}},
		{"a password and a bearer token", `{url: https://x.example.com, password: pw0rd, bearerToken: t0ken}`,
			[]string{"data"}, []string{"pw0rd", "t0ken"}},
		{"no url", `{password: pw0rd}`, []string{"data.url"}, []string{"pw0rd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := decode(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: r, labels: {argocd.argoproj.io/secret-type: repo-creds}}\nstringData: "+tt.stringData)
			secret, warnings, err := RepositorySecret(obj, "navarch-system")
			var errs ConvertErrors
			if !errors.As(err, &errs) {
				t.Fatalf("got %v, %v; want ConvertErrors naming %v", secret, err, tt.fields)
			}
			named := map[string]bool{}
			for _, fe := range errs {
				named[fe.Field] = true
			}
			for _, f := range tt.fields {
				if !named[f] {
					t.Errorf("no error names %s; errors:\n%v", f, err)
				}
			}
			if len(errs) != len(tt.fields) {
				t.Errorf("got %d errors, want %d:\n%v", len(errs), len(tt.fields), err)
			}
			assertNoSecretIn(t, warnings, err, tt.secrets)
		})
	}
}

// assertNoSecretIn fails when a warning or the error shows one of the values.
func assertNoSecretIn(t *testing.T, warnings []Warning, err error, values []string) {
	t.Helper()
	var msgs []string
	for _, w := range warnings {
		msgs = append(msgs, w.String())
	}
	if err != nil {
		msgs = append(msgs, err.Error())
	}
	for _, m := range msgs {
		for _, v := range values {
			if strings.Contains(m, v) {
				t.Errorf("a message shows a Secret value: %s", m)
			}
		}
	}
}

func TestOnlyRepositorySecretsAreRepositorySecrets(t *testing.T) {
	for _, y := range []string{
		"apiVersion: v1\nkind: Secret\nmetadata: {name: c, labels: {argocd.argoproj.io/secret-type: cluster}}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: w, labels: {argocd.argoproj.io/secret-type: repository-write}}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: r, labels: {argocd.argoproj.io/secret-type: repository}}\n",
	} {
		obj := decode(t, y)
		if IsRepositorySecret(obj) {
			t.Errorf("IsRepositorySecret(%s) = true", y)
		}
		if _, _, err := RepositorySecret(obj, "navarch-system"); err == nil {
			t.Errorf("RepositorySecret(%s) converted it", y)
		}
	}
}
