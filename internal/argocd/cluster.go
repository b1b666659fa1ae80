package argocd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/destination"
)

// KubeconfigKey is the key of the kubeconfig in the Secrets ClusterSecret writes.
const KubeconfigKey = "value"

// IsClusterSecret reports whether a decoded document is an Argo CD cluster Secret.
func IsClusterSecret(obj map[string]any) bool {
	return argoSecretType(obj) == SecretTypeCluster
}

// ClusterSecret converts an Argo CD cluster Secret (label argocd.argoproj.io/secret-type:
// cluster; data name, server, config) into a navarch Cluster and the Secret holding its
// kubeconfig in secretNamespace. The cluster Argo CD runs in (server
// https://kubernetes.default.svc) becomes a Cluster with inCluster: true and no Secret.
// Labels are copied; data keys navarch has no use for are dropped with a warning; credentials
// it cannot use (AWS IAM authentication, unknown config fields) are errors.
func ClusterSecret(obj map[string]any, secretNamespace string) (*navarchv1.Cluster, *corev1.Secret, []Warning, error) {
	if !IsClusterSecret(obj) {
		return nil, nil, nil, fmt.Errorf("not an Argo CD cluster Secret: want apiVersion v1, kind Secret and label %s: cluster", LabelSecretType)
	}
	in, err := decodeSecret(obj)
	if err != nil {
		return nil, nil, nil, err
	}
	c := &clusterConverter{}
	cluster, secret := c.convert(in, secretValues(in), secretNamespace)
	if err := c.err(); err != nil {
		return nil, nil, c.warnings, err
	}
	return cluster, secret, c.warnings, nil
}

type clusterConverter struct {
	findings
}

// droppedKeys are data keys of Argo CD cluster Secrets navarch has no use for, with why
// dropping them is safe.
var droppedKeys = map[string]string{
	"namespaces":       "dropped: navarch does not limit a cluster to some namespaces; the credentials' RBAC still does",
	"clusterResources": "dropped: navarch does not limit a cluster to namespaced resources; the credentials' RBAC still does",
	"project":          "dropped: navarch Clusters belong to no Project; a Project restricts the clusters its Applications deploy to with spec.destinations",
	"shard":            "dropped: navarch does not shard clusters between controller replicas",
}

func (c *clusterConverter) convert(in *corev1.Secret, data map[string]secretValue, secretNamespace string) (*navarchv1.Cluster, *corev1.Secret) {
	name := c.clusterName(in, data)
	server := strings.TrimSpace(data["server"].value)
	if server == "" {
		c.fail("data.server", "Required value: the API server URL")
	}

	for _, k := range sortedKeys(data) {
		switch k {
		case "name", "server", "config":
		default:
			if why, ok := droppedKeys[k]; ok {
				c.warn(data[k].field, "%s", why)
			} else {
				c.warn(data[k].field, "dropped: not an Argo CD cluster field navarch knows")
			}
		}
	}

	cluster := &navarchv1.Cluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: navarchv1.GroupVersion.String(), Kind: "Cluster"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: userLabels(in), Annotations: c.userAnnotations(in.Annotations)},
		Spec:       navarchv1.ClusterSpec{Server: server},
	}
	if destination.NormalizeServer(server) == destination.InClusterServer {
		cluster.Spec.InCluster = true
		if cfg, ok := data["config"]; ok && hasCredentials(cfg.value) {
			c.warn(cfg.field, "dropped: navarch reaches the cluster it runs in with its own service account (spec.inCluster)")
		}
		return cluster, nil
	}
	cfg, ok := data["config"]
	if !ok {
		c.fail("data.config", "Required value: the credentials of the cluster")
		return nil, nil
	}
	kubeconfig := c.kubeconfig(cfg, name, server)
	if kubeconfig == nil {
		return nil, nil
	}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: secretNamespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{KubeconfigKey: kubeconfig},
	}
	cluster.Spec.KubeconfigSecretRef = &navarchv1.KubeconfigSecretRef{Namespace: secretNamespace, Name: secret.Name, Key: KubeconfigKey}
	return cluster, secret
}

var notDNSChars = regexp.MustCompile(`[^a-z0-9.-]+`)

// clusterName is the Argo CD cluster name as a valid Cluster name. Argo CD names clusters
// freely (e.g. an EKS ARN); a Cluster name must be a DNS subdomain.
func (c *clusterConverter) clusterName(in *corev1.Secret, data map[string]secretValue) string {
	v, ok := data["name"]
	name := strings.TrimSpace(v.value)
	field := v.field
	if !ok || name == "" {
		name, field = in.Name, "metadata.name"
		c.warn("data.name", "missing: the Cluster is named after the Secret, %q", name)
	}
	if len(validation.IsDNS1123Subdomain(name)) == 0 && len(validation.IsDNS1123Subdomain(name+"-kubeconfig")) == 0 {
		return name
	}
	fixed := strings.Trim(notDNSChars.ReplaceAllString(strings.ToLower(name), "-"), "-.")
	if len(fixed) > 242 {
		fixed = strings.Trim(fixed[:242], "-.")
	}
	if fixed == "" {
		c.fail(field, "%q cannot be made a valid Cluster name", name)
		return ""
	}
	c.warn(field, "%q is not a valid Cluster name: renamed %q; Applications that name the cluster need the new name in spec.destination.name", name, fixed)
	return fixed
}

// argoClusterConfig is the config JSON of an Argo CD cluster Secret.
type argoClusterConfig struct {
	Username           string                `json:"username"`
	Password           string                `json:"password"`
	BearerToken        string                `json:"bearerToken"`
	TLSClientConfig    argoTLSClientConfig   `json:"tlsClientConfig"`
	ExecProviderConfig *argoExecProviderConf `json:"execProviderConfig"`
	ProxyURL           string                `json:"proxyUrl"`
	DisableCompression bool                  `json:"disableCompression"`
}

type argoTLSClientConfig struct {
	Insecure   bool   `json:"insecure"`
	ServerName string `json:"serverName"`
	// CAData, CertData and KeyData are PEM, base64-encoded in the JSON ([]byte decodes it).
	CAData   []byte `json:"caData"`
	CertData []byte `json:"certData"`
	KeyData  []byte `json:"keyData"`
}

type argoExecProviderConf struct {
	Command     string            `json:"command"`
	Args        []string          `json:"args"`
	Env         map[string]string `json:"env"`
	APIVersion  string            `json:"apiVersion"`
	InstallHint string            `json:"installHint"`
}

// knownConfig lists the fields of the config JSON that kubeconfig carries over.
var knownConfig = map[string][]string{
	"":                   {"username", "password", "bearerToken", "tlsClientConfig", "execProviderConfig", "proxyUrl", "disableCompression"},
	"tlsClientConfig":    {"insecure", "serverName", "caData", "certData", "keyData"},
	"execProviderConfig": {"command", "args", "env", "apiVersion", "installHint"},
}

func hasCredentials(config string) bool {
	var m map[string]any
	return json.Unmarshal([]byte(config), &m) == nil && len(m) > 0
}

// kubeconfig turns the config JSON into a standalone kubeconfig.
func (c *clusterConverter) kubeconfig(v secretValue, name, server string) []byte {
	var generic map[string]any
	if err := json.Unmarshal([]byte(v.value), &generic); err != nil {
		// Not err itself: a syntax error quotes a character of the credentials.
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			c.fail(v.field, "not JSON: syntax error at byte %d", syntax.Offset)
		} else {
			c.fail(v.field, "not JSON")
		}
		return nil
	}
	n := len(c.errs)
	c.checkConfigFields(v.field, "", generic)
	var cfg argoClusterConfig
	if err := json.Unmarshal([]byte(v.value), &cfg); err != nil {
		c.fail(v.field, "%v", err)
	}
	if len(c.errs) > n {
		return nil
	}
	tls := cfg.TLSClientConfig
	for _, pem := range []struct {
		field string
		data  []byte
	}{{"caData", tls.CAData}, {"certData", tls.CertData}, {"keyData", tls.KeyData}} {
		if len(pem.data) > 0 && !bytes.Contains(pem.data, []byte("-----BEGIN")) {
			c.fail(v.field+".tlsClientConfig."+pem.field, "not a base64-encoded PEM block")
		}
	}
	if (len(tls.CertData) > 0) != (len(tls.KeyData) > 0) {
		c.fail(v.field+".tlsClientConfig", "certData and keyData go together")
	}
	if cfg.Username != "" && cfg.BearerToken != "" {
		c.fail(v.field, "both username and bearerToken are set; Argo CD would use the token only")
	}
	if cfg.BearerToken == "" && cfg.Username == "" && len(tls.CertData) == 0 && cfg.ExecProviderConfig == nil {
		c.warn(v.field, "no credentials (bearerToken, username/password, certData/keyData or execProviderConfig): the cluster is reached anonymously")
	}
	if tls.Insecure && len(tls.CAData) > 0 {
		c.fail(v.field+".tlsClientConfig", "insecure with caData: a kubeconfig cannot have both; remove one")
	}
	if len(c.errs) > n {
		return nil
	}

	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: tls.CAData,
		InsecureSkipTLSVerify:    tls.Insecure,
		TLSServerName:            tls.ServerName,
		ProxyURL:                 cfg.ProxyURL,
		DisableCompression:       cfg.DisableCompression,
	}
	user := &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		Username:              cfg.Username,
		Password:              cfg.Password,
		ClientCertificateData: tls.CertData,
		ClientKeyData:         tls.KeyData,
	}
	if e := cfg.ExecProviderConfig; e != nil {
		c.warn(v.field+".execProviderConfig", "carried over as the kubeconfig's exec plugin: the navarch controller must be able to run %q", e.Command)
		user.Exec = &clientcmdapi.ExecConfig{Command: e.Command, Args: e.Args, APIVersion: e.APIVersion,
			InstallHint: e.InstallHint, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
		keys := make([]string, 0, len(e.Env))
		for k := range e.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			user.Exec.Env = append(user.Exec.Env, clientcmdapi.ExecEnvVar{Name: k, Value: e.Env[k]})
		}
	}
	kc.AuthInfos[name] = user
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	data, err := clientcmd.Write(*kc)
	if err != nil {
		c.fail(v.field, "%v", err)
		return nil
	}
	return data
}

// checkConfigFields fails on config fields kubeconfig cannot carry, so that no credential
// setting is silently lost.
func (c *clusterConverter) checkConfigFields(field, section string, m map[string]any) {
	for _, k := range sortedKeys(m) {
		path := field + "." + strings.TrimPrefix(section+"."+k, ".")
		switch {
		case section == "" && k == "awsAuthConfig":
			c.fail(path, "AWS IAM authentication is not supported; use execProviderConfig with `aws eks get-token` or a bearerToken")
		case !slices.Contains(knownConfig[section], k):
			c.fail(path, "unknown field; navarch cannot carry it into a kubeconfig")
		case section == "" && (k == "tlsClientConfig" || k == "execProviderConfig"):
			if sub, ok := m[k].(map[string]any); ok {
				c.checkConfigFields(field, k, sub)
			}
		}
	}
}
