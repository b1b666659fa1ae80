package argocd

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// navarch's SSH known hosts: the host keys it trusts when it reads a repository over SSH.
const (
	// KnownHostsConfigMap is the name of the ConfigMap, in the system namespace.
	KnownHostsConfigMap = "navarch-ssh-known-hosts"
	// KnownHostsKey is the key of the ConfigMap holding the keys, in ssh_known_hosts format.
	KnownHostsKey = "ssh_known_hosts"
)

// Argo CD's ConfigMaps of repository trust.
const (
	argoKnownHostsConfigMap = "argocd-ssh-known-hosts-cm"
	argoTLSCertsConfigMap   = "argocd-tls-certs-cm"
)

func isConfigMap(obj map[string]any, name string) bool {
	meta, _ := obj["metadata"].(map[string]any)
	return obj["apiVersion"] == "v1" && obj["kind"] == "ConfigMap" && meta["name"] == name
}

// IsKnownHostsConfigMap reports whether a decoded document is Argo CD's SSH known hosts
// ConfigMap, argocd-ssh-known-hosts-cm.
func IsKnownHostsConfigMap(obj map[string]any) bool {
	return isConfigMap(obj, argoKnownHostsConfigMap)
}

// IsTLSCertsConfigMap reports whether a decoded document is Argo CD's ConfigMap of repository
// CA certificates by host, argocd-tls-certs-cm.
func IsTLSCertsConfigMap(obj map[string]any) bool {
	return isConfigMap(obj, argoTLSCertsConfigMap)
}

// KnownHosts converts Argo CD's argocd-ssh-known-hosts-cm into navarch's ConfigMap
// navarch-ssh-known-hosts in systemNamespace, with the same key, ssh_known_hosts. Other keys,
// and the labels and annotations of Argo CD's installation, are dropped with a warning.
func KnownHosts(obj map[string]any, systemNamespace string) (*corev1.ConfigMap, []Warning, error) {
	if !IsKnownHostsConfigMap(obj) {
		return nil, nil, fmt.Errorf("not Argo CD's SSH known hosts: want apiVersion v1, kind ConfigMap and name %s", argoKnownHostsConfigMap)
	}
	in, err := decodeConfigMap(obj)
	if err != nil {
		return nil, nil, err
	}
	f := &findings{}
	hosts, ok := in.Data[KnownHostsKey]
	if !ok || strings.TrimSpace(hosts) == "" {
		f.fail("data."+KnownHostsKey, "Required value: the SSH host keys")
	}
	for _, k := range sortedKeys(in.Data) {
		if k != KnownHostsKey {
			f.warn("data."+k, "dropped: navarch reads only %s", KnownHostsKey)
		}
	}
	for _, k := range sortedKeys(in.BinaryData) {
		f.warn("binaryData."+k, "dropped: navarch reads only data.%s", KnownHostsKey)
	}
	if len(in.Labels) > 0 {
		f.warn("metadata.labels", "dropped: they label Argo CD's installation")
	}
	if len(in.Annotations) > 0 {
		f.warn("metadata.annotations", "dropped: they annotate Argo CD's installation")
	}
	if err := f.err(); err != nil {
		return nil, f.warnings, err
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: KnownHostsConfigMap, Namespace: systemNamespace},
		Data:       map[string]string{KnownHostsKey: hosts},
	}, f.warnings, nil
}

// TLSCerts explains why Argo CD's argocd-tls-certs-cm is not converted: navarch keeps no CA
// certificates by host; each repository credential Secret carries the CA of its repository in
// caData. The error names the hosts the ConfigMap has certificates for.
func TLSCerts(obj map[string]any) error {
	if !IsTLSCertsConfigMap(obj) {
		return fmt.Errorf("not Argo CD's TLS certificates: want apiVersion v1, kind ConfigMap and name %s", argoTLSCertsConfigMap)
	}
	in, err := decodeConfigMap(obj)
	if err != nil {
		return err
	}
	hosts := sortedKeys(in.Data)
	msg := "not converted: navarch keeps no CA certificates by host; put the CA of a repository's host in caData of the repository credential Secret that applies to it"
	if len(hosts) > 0 {
		msg += " (this ConfigMap has certificates for " + strings.Join(hosts, ", ") + ")"
	}
	return &FieldError{Field: "data", Message: msg}
}

func decodeConfigMap(obj map[string]any) (*corev1.ConfigMap, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(raw, &cm); err != nil {
		return nil, fmt.Errorf("decode ConfigMap: %w", err)
	}
	return &cm, nil
}
