package argocd

import (
	"errors"
	"strings"
	"testing"
)

const argoKnownHosts = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-ssh-known-hosts-cm
  namespace: argocd
  labels: {app.kubernetes.io/name: argocd-ssh-known-hosts-cm, app.kubernetes.io/part-of: argocd}
data:
  ssh_known_hosts: |
    github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl
    git.example.com:2222 ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTY=
  notes: kept by the platform team
`

func TestKnownHostsBecomeNavarchsConfigMap(t *testing.T) {
	obj := decode(t, argoKnownHosts)
	if !IsKnownHostsConfigMap(obj) || IsTLSCertsConfigMap(obj) {
		t.Fatal("argocd-ssh-known-hosts-cm not recognised")
	}
	cm, warnings, err := KnownHosts(obj, "navarch-system")
	if err != nil {
		t.Fatal(err)
	}
	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Name != "navarch-ssh-known-hosts" || cm.Namespace != "navarch-system" || len(cm.Labels) != 0 {
		t.Errorf("got %s %s %s/%s labels %v", cm.APIVersion, cm.Kind, cm.Namespace, cm.Name, cm.Labels)
	}
	want := decode(t, argoKnownHosts)["data"].(map[string]any)["ssh_known_hosts"]
	if len(cm.Data) != 1 || cm.Data["ssh_known_hosts"] != want {
		t.Errorf("data %q, want ssh_known_hosts only, unchanged", cm.Data)
	}
	assertWarnings(t, warnings, []string{"data.notes", "metadata.labels"})
}

func TestKnownHostsWithoutHostsAreRefused(t *testing.T) {
	_, _, err := KnownHosts(decode(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-ssh-known-hosts-cm}\ndata: {}\n"), "navarch-system")
	var errs ConvertErrors
	if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Field != "data.ssh_known_hosts" {
		t.Errorf("got %v, want an error naming data.ssh_known_hosts", err)
	}
}

func TestTLSCertsAreNotConvertedAndSaySo(t *testing.T) {
	obj := decode(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-tls-certs-cm, namespace: argocd}
data:
  git.example.com: |
    -----BEGIN CERTIFICATE-----
    Y2E=
    -----END CERTIFICATE-----
  charts.example.com: |
    -----BEGIN CERTIFICATE-----
    Y2E=
    -----END CERTIFICATE-----
`)
	if !IsTLSCertsConfigMap(obj) || IsKnownHostsConfigMap(obj) {
		t.Fatal("argocd-tls-certs-cm not recognised")
	}
	err := TLSCerts(obj)
	if err == nil {
		t.Fatal("converted")
	}
	for _, want := range []string{"not converted", "caData", "charts.example.com, git.example.com"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}
