package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/credentials"
	"github.com/navarch-io/navarch/internal/gitserver"
	"github.com/navarch-io/navarch/internal/testenv"
)

// setKnownHosts writes the SSH known hosts the controller trusts.
func setKnownHosts(t *testing.T, content string) {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: testenv.SystemNamespace, Name: credentials.KnownHostsConfigMap},
		Data:       map[string]string{credentials.KnownHostsKey: content},
	}
	err := mgmt.Create(ctx, cm)
	if apierrors.IsAlreadyExists(err) {
		testenv.Update(t, mgmt, cm, func(c *corev1.ConfigMap) { c.Data = map[string]string{credentials.KnownHostsKey: content} })
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Delete(context.Background(), cm) })
}

// repositorySecret creates a repository credential Secret for url holding data.
func repositorySecret(t *testing.T, name, url string, data map[string]string) {
	t.Helper()
	data[credentials.KeyURL] = url
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: testenv.SystemNamespace, Name: name,
			Labels: map[string]string{credentials.LabelSecretType: credentials.SecretTypeRepository}},
		StringData: data,
	}
	if err := mgmt.Create(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Delete(context.Background(), sec) })
}

// An Application reads its repository over SSH with a deploy key. A host key that does not
// match the known hosts is an error naming the host, never accepted; once the right key is
// known, the Application syncs.
func TestSSHRepositoryWithDeployKey(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-app"
	repo(t, map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: over-ssh}\ndata: {via: ssh}\n"})
	name := testenv.Name(t)
	url := git.SCPLikeURL(name)
	key, pub, err := gitserver.GenerateSSHKey()
	if err != nil {
		t.Fatal(err)
	}
	git.AuthorizeKey(pub)
	repositorySecret(t, ns+"-deploy-key", url, map[string]string{credentials.KeySSHPrivateKey: string(key)})

	// Another server's host key, under this server's address.
	other, err := gitserver.Start(gitserver.Options{Root: t.TempDir(), SSHAddr: gitserver.DefaultAddr})
	if err != nil {
		t.Fatal(err)
	}
	otherLine := other.KnownHostsLine()
	_ = other.Close()
	host, _, _ := strings.Cut(git.KnownHostsLine(), " ")
	_, keyPart, _ := strings.Cut(otherLine, " ")
	setKnownHosts(t, host+" "+keyPart+"\n")

	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: ssh}
spec:
  source: {repoURL: '%s', targetRevision: main, path: app}
  destination: {name: east, namespace: %s}
  syncPolicy:
    automated: {}
    syncOptions: [CreateNamespace=true]
`, url, target))
	waitForComparisonError(t, app, "host key of "+git.SSHAddr())
	if data := configMapData(t, target, "over-ssh"); data != nil {
		t.Fatalf("applied %v from a host whose key does not match", data)
	}

	setKnownHosts(t, git.KnownHostsLine()+"\n")
	refresh(t, app)
	got := waitForApp(t, app, "Synced and Healthy over SSH", syncedAndHealthy)
	if c := meta.FindStatusCondition(got.Status.Conditions, navarchv1.ApplicationComparisonError); c != nil && c.Status == metav1.ConditionTrue {
		t.Errorf("ComparisonError still set: %s", c.Message)
	}
	waitForConfigMap(t, target, "over-ssh", map[string]string{"via": "ssh"})
}

// A kustomization whose base lives in a second repository follows that repository: a commit to
// the base's branch is seen at the next refresh (or poll), and selfHeal applies it (the
// Application's own commit has not changed, so plain automated sync would not).
func TestRemoteKustomizeBase(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-app"
	baseURL := repo(t, map[string]string{
		"web/kustomization.yaml": "resources: [cm.yaml]\n",
		"web/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {tier: base-v1}\n",
	})
	baseName := testenv.Name(t)
	overlay := t.TempDir()
	writeFiles(t, overlay, map[string]string{
		"prod/kustomization.yaml": fmt.Sprintf("resources:\n- %s//web?ref=main\nnamePrefix: prod-\n", baseURL),
	})
	overlayName := baseName + "-overlay"
	if _, err := git.CreateRepo(overlayName, overlay); err != nil {
		t.Fatal(err)
	}
	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: remote-base}
spec:
  source: {repoURL: '%s', targetRevision: main, path: prod}
  destination: {name: east, namespace: %s}
  syncPolicy:
    automated: {selfHeal: true}
    syncOptions: [CreateNamespace=true]
`, git.RepoURL(overlayName), target))
	waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)
	waitForConfigMap(t, target, "prod-web", map[string]string{"tier": "base-v1"})

	push(t, "base v2", map[string]string{"web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {tier: base-v2}\n"})
	refresh(t, app)
	waitForConfigMap(t, target, "prod-web", map[string]string{"tier": "base-v2"})

	// A base that cannot be fetched names the kustomization and the URL, and nothing of the
	// last good rendering is pruned.
	if _, err := git.Update(overlayName, "pin a missing ref", func(dir string) error {
		writeFiles(t, dir, map[string]string{"prod/kustomization.yaml": fmt.Sprintf("resources:\n- %s//web?ref=v9\n", baseURL)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	refresh(t, app)
	waitForComparisonError(t, app, fmt.Sprintf(`prod/kustomization.yaml: resources[0] "%s//web?ref=v9"`, baseURL))
	if data := configMapData(t, target, "prod-web"); data["tier"] != "base-v2" {
		t.Errorf("ConfigMap prod-web %v: want the last good rendering kept", data)
	}
}
