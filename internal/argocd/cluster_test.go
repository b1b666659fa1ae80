package argocd

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Fake PEM blocks: the converter checks the framing, the apiserver is never asked.
const (
	caPEM   = "-----BEGIN CERTIFICATE-----\nY2E=\n-----END CERTIFICATE-----\n"
	certPEM = "-----BEGIN CERTIFICATE-----\nY2VydA==\n-----END CERTIFICATE-----\n"
	keyPEM  = "-----BEGIN EC PRIVATE KEY-----\na2V5\n-----END EC PRIVATE KEY-----\n"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// clusterSecret is an Argo CD cluster Secret as the Argo CD documentation shows it, with the
// config JSON given in stringData.
func clusterSecret(name, server, config, extra string) string {
	return `
apiVersion: v1
kind: Secret
metadata:
  name: ` + name + `-secret
  namespace: argocd
  labels:
    argocd.argoproj.io/secret-type: cluster
    env: prod
    region: eu
  annotations:
    managed-by: argocd.argoproj.io
    team: payments
type: Opaque
stringData:
  name: ` + name + `
  server: ` + server + `
  config: |
    ` + config + extra
}

func TestClusterSecretBecomesAKubeconfigSecretAndACluster(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		wantUser clientcmdapi.AuthInfo
		check    func(t *testing.T, cl *clientcmdapi.Cluster)
		warnings []string // fields warned about
	}{
		{
			name: "bearer token with a CA",
			yaml: clusterSecret("prod-eu", "https://prod-eu.example.com:6443",
				`{"bearerToken": "s3cr3t", "tlsClientConfig": {"insecure": false, "caData": "`+b64(caPEM)+`", "serverName": "prod-eu"}}`,
				"\n  project: default\n  namespaces: apps,web\n"),
			wantUser: clientcmdapi.AuthInfo{Token: "s3cr3t"},
			check: func(t *testing.T, cl *clientcmdapi.Cluster) {
				if string(cl.CertificateAuthorityData) != caPEM || cl.TLSServerName != "prod-eu" || cl.InsecureSkipTLSVerify {
					t.Errorf("cluster TLS not carried over: %+v", cl)
				}
			},
			warnings: []string{"stringData.project", "stringData.namespaces", "metadata.annotations.managed-by"},
		},
		{
			name: "client certificates",
			yaml: clusterSecret("prod-us", "https://prod-us.example.com",
				`{"tlsClientConfig": {"caData": "`+b64(caPEM)+`", "certData": "`+b64(certPEM)+`", "keyData": "`+b64(keyPEM)+`"}}`, ""),
			wantUser: clientcmdapi.AuthInfo{ClientCertificateData: []byte(certPEM), ClientKeyData: []byte(keyPEM)},
			warnings: []string{"metadata.annotations.managed-by"},
		},
		{
			name: "basic auth, insecure, behind a proxy",
			yaml: clusterSecret("lab", "https://lab.example.com",
				`{"username": "admin", "password": "pw", "tlsClientConfig": {"insecure": true}, "proxyUrl": "http://proxy:3128"}`, ""),
			wantUser: clientcmdapi.AuthInfo{Username: "admin", Password: "pw"},
			check: func(t *testing.T, cl *clientcmdapi.Cluster) {
				if !cl.InsecureSkipTLSVerify || cl.ProxyURL != "http://proxy:3128" {
					t.Errorf("insecure or proxyUrl not carried over: %+v", cl)
				}
			},
			warnings: []string{"metadata.annotations.managed-by"},
		},
		{
			name: "an exec plugin",
			yaml: clusterSecret("gke", "https://gke.example.com",
				`{"execProviderConfig": {"command": "gke-gcloud-auth-plugin", "apiVersion": "client.authentication.k8s.io/v1beta1", "env": {"B": "2", "A": "1"}}, "tlsClientConfig": {"caData": "`+b64(caPEM)+`"}}`, ""),
			wantUser: clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "gke-gcloud-auth-plugin",
				APIVersion: "client.authentication.k8s.io/v1beta1", Env: []clientcmdapi.ExecEnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
				InteractiveMode: clientcmdapi.NeverExecInteractiveMode}},
			warnings: []string{"metadata.annotations.managed-by", "stringData.config.execProviderConfig"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster, secret, warnings, err := ClusterSecret(decode(t, tt.yaml), "navarch-system")
			if err != nil {
				t.Fatalf("does not convert: %v", err)
			}
			name := cluster.Name
			if cluster.APIVersion != "navarch.io/v1alpha1" || cluster.Kind != "Cluster" {
				t.Errorf("Cluster typed %s %s", cluster.APIVersion, cluster.Kind)
			}
			if cluster.Labels["env"] != "prod" || cluster.Labels["region"] != "eu" || len(cluster.Labels) != 2 {
				t.Errorf("labels %v, want env=prod, region=eu and not the secret-type label", cluster.Labels)
			}
			if cluster.Annotations["team"] != "payments" || len(cluster.Annotations) != 1 {
				t.Errorf("annotations %v, want team=payments only", cluster.Annotations)
			}
			if cluster.Spec.InCluster {
				t.Errorf("a remote cluster became inCluster")
			}
			ref := cluster.Spec.KubeconfigSecretRef
			if ref == nil || ref.Namespace != "navarch-system" || ref.Name != name+"-kubeconfig" || ref.Key != "value" {
				t.Fatalf("kubeconfigSecretRef %+v, want navarch-system/%s-kubeconfig key value", ref, name)
			}
			if secret.Namespace != ref.Namespace || secret.Name != ref.Name || secret.APIVersion != "v1" || secret.Kind != "Secret" {
				t.Errorf("Secret %s %s/%s does not match the reference", secret.Kind, secret.Namespace, secret.Name)
			}
			kc, err := clientcmd.Load(secret.Data["value"])
			if err != nil {
				t.Fatalf("the kubeconfig does not load: %v", err)
			}
			if err := clientcmd.Validate(*kc); err != nil {
				t.Errorf("the kubeconfig is not valid: %v", err)
			}
			kctx := kc.Contexts[kc.CurrentContext]
			cl, user := kc.Clusters[kctx.Cluster], kc.AuthInfos[kctx.AuthInfo]
			if cl.Server != cluster.Spec.Server {
				t.Errorf("kubeconfig server %s, Cluster server %s", cl.Server, cluster.Spec.Server)
			}
			if tt.check != nil {
				tt.check(t, cl)
			}
			got, want := *user, tt.wantUser
			got.LocationOfOrigin, got.Extensions = "", nil
			if got.Exec != nil {
				got.Exec.Config = nil
			}
			if !equalAuthInfo(got, want) {
				t.Errorf("user\n got %+v\nwant %+v", got, want)
			}
			assertWarnings(t, warnings, tt.warnings)
		})
	}
}

func equalAuthInfo(a, b clientcmdapi.AuthInfo) bool {
	if (a.Exec == nil) != (b.Exec == nil) {
		return false
	}
	if a.Exec != nil {
		ea, eb := *a.Exec, *b.Exec
		if ea.Command != eb.Command || ea.APIVersion != eb.APIVersion || ea.InteractiveMode != eb.InteractiveMode || len(ea.Env) != len(eb.Env) {
			return false
		}
		for i := range ea.Env {
			if ea.Env[i] != eb.Env[i] {
				return false
			}
		}
	}
	return a.Token == b.Token && a.Username == b.Username && a.Password == b.Password &&
		string(a.ClientCertificateData) == string(b.ClientCertificateData) && string(a.ClientKeyData) == string(b.ClientKeyData)
}

func assertWarnings(t *testing.T, got []Warning, fields []string) {
	t.Helper()
	warned := map[string]bool{}
	for _, w := range got {
		warned[w.Field] = true
	}
	for _, f := range fields {
		if !warned[f] {
			t.Errorf("no warning for %s; warnings: %v", f, got)
		}
	}
	if len(got) != len(fields) {
		t.Errorf("got %d warnings, want %d: %v", len(got), len(fields), got)
	}
}

func TestInClusterSecretBecomesAnInClusterCluster(t *testing.T) {
	cluster, secret, warnings, err := ClusterSecret(decode(t, `
apiVersion: v1
kind: Secret
metadata:
  name: in-cluster
  labels: {argocd.argoproj.io/secret-type: cluster, env: mgmt}
data:
  name: `+b64("in-cluster")+`
  server: `+b64("https://kubernetes.default.svc")+`
  config: `+b64(`{"tlsClientConfig": {"insecure": false}}`)), "navarch-system")
	if err != nil {
		t.Fatal(err)
	}
	if secret != nil {
		t.Errorf("an in-cluster Cluster got a kubeconfig Secret %s", secret.Name)
	}
	if !cluster.Spec.InCluster || cluster.Spec.KubeconfigSecretRef != nil || cluster.Name != "in-cluster" || cluster.Labels["env"] != "mgmt" {
		t.Errorf("Cluster %s %+v labels %v, want in-cluster with spec.inCluster", cluster.Name, cluster.Spec, cluster.Labels)
	}
	assertWarnings(t, warnings, []string{"data.config"})
}

func TestClusterSecretNameIsMadeAValidClusterName(t *testing.T) {
	cluster, secret, warnings, err := ClusterSecret(decode(t, clusterSecret("arn:aws:eks:eu-west-1:123456789012:cluster/Prod", "https://eks.example.com",
		`{"bearerToken": "t"}`, "")), "navarch-system")
	if err != nil {
		t.Fatal(err)
	}
	if want := "arn-aws-eks-eu-west-1-123456789012-cluster-prod"; cluster.Name != want || secret.Name != want+"-kubeconfig" {
		t.Errorf("Cluster %q, Secret %q; want %q", cluster.Name, secret.Name, want)
	}
	assertWarnings(t, warnings, []string{"stringData.name", "metadata.annotations.managed-by"})
	for _, w := range warnings {
		if w.Field == "stringData.name" && !strings.Contains(w.Message, "spec.destination.name") {
			t.Errorf("the rename warning does not say Applications need the new name: %v", w)
		}
	}
}

func TestClusterSecretRefusesCredentialsItCannotCarry(t *testing.T) {
	tests := []struct {
		name, config string
		fields       []string
	}{
		{"AWS IAM authentication", `{"awsAuthConfig": {"clusterName": "prod", "roleARN": "arn:aws:iam::1:role/x"}, "tlsClientConfig": {"caData": "` + b64(caPEM) + `"}}`,
			[]string{"stringData.config.awsAuthConfig"}},
		{"unknown fields", `{"bearerToken": "t", "tlsClientConfig": {"caDate": "x"}, "newAuth": {}}`,
			[]string{"stringData.config.newAuth", "stringData.config.tlsClientConfig.caDate"}},
		{"a certificate that is not PEM", `{"tlsClientConfig": {"certData": "` + b64("nope") + `", "keyData": "` + b64(keyPEM) + `"}}`,
			[]string{"stringData.config.tlsClientConfig.certData"}},
		{"a certificate without its key", `{"tlsClientConfig": {"certData": "` + b64(certPEM) + `"}}`,
			[]string{"stringData.config.tlsClientConfig"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, _, err := ClusterSecret(decode(t, clusterSecret("x", "https://x.example.com", tt.config, "")), "navarch-system")
			var errs ConvertErrors
			if !errors.As(err, &errs) {
				t.Fatalf("got %v, want ConvertErrors naming %v", err, tt.fields)
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
		})
	}
}

func TestOnlyClusterSecretsAreClusterSecrets(t *testing.T) {
	for _, y := range []string{
		"apiVersion: v1\nkind: Secret\nmetadata: {name: repo, labels: {argocd.argoproj.io/secret-type: repository}}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, labels: {argocd.argoproj.io/secret-type: cluster}}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: plain}\n",
	} {
		obj := decode(t, y)
		if IsClusterSecret(obj) {
			t.Errorf("IsClusterSecret(%s) = true", y)
		}
		if _, _, _, err := ClusterSecret(obj, "navarch-system"); err == nil {
			t.Errorf("ClusterSecret(%s) converted it", y)
		}
	}
}

func TestClusterSecretConfigThatIsNotJSONIsNotQuoted(t *testing.T) {
	_, _, _, err := ClusterSecret(decode(t, clusterSecret("x", "https://x.example.com", `{"bearerToken": Qx7secret}`, "")), "navarch-system")
	if err == nil || !strings.Contains(err.Error(), "stringData.config: not JSON") {
		t.Fatalf("got %v, want stringData.config: not JSON", err)
	}
	if strings.Contains(err.Error(), "Q") {
		t.Errorf("the error quotes the config: %v", err)
	}
}
