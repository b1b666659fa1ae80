package credentials

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/navarch-io/navarch/internal/gitrepo"
)

func TestApplies(t *testing.T) {
	tests := []struct {
		secret, repo string
		want         bool
	}{
		{"https://git.example.com", "https://git.example.com/org/apps.git", true},
		{"https://git.example.com/", "https://git.example.com/org/apps.git", true},
		{"https://git.example.com/org", "https://git.example.com/org/apps.git", true},
		{"https://git.example.com/org/apps", "https://git.example.com/org/apps.git", true},
		{"https://git.example.com/org/apps.git", "https://git.example.com/org/apps", true},
		{"HTTPS://Git.Example.com/org", "https://git.example.com/org/apps.git", true},
		{"https://git.example.com:443/org", "https://git.example.com/org/apps.git", true},
		{"http://127.0.0.1:8080/private", "http://127.0.0.1:8080/private/repo.git", true},
		// Path on segment boundaries only.
		{"http://127.0.0.1:8080/private", "http://127.0.0.1:8080/privateXYZ/repo.git", false},
		{"https://git.example.com/org/apps", "https://git.example.com/org/apps-secret.git", false},
		{"https://git.example.com/org/apps.git", "https://git.example.com/org/apps.git/../other.git", false},
		// Paths are case-sensitive on most servers.
		{"https://git.example.com/Org", "https://git.example.com/org/apps.git", false},
		// Scheme, host and port exactly.
		{"https://git.example.com", "http://git.example.com/org/apps.git", false},
		{"https://git.example.com", "https://git.example.com:8443/org/apps.git", false},
		{"https://git.example.com", "https://git.example.com.evil.test/org/apps.git", false},
		{"http://127.0.0.1:38503", "http://127.0.0.1:18080/probe.git", false},
		// User info that reads like the Secret's host names another host; refused anyway.
		{"http://127.0.0.1:38503", "http://127.0.0.1:38503@127.0.0.1:18080/probe.git", false},
		{"http://127.0.0.1:38503", "http://x@127.0.0.1:38503/probe.git", false},
		// A Secret URL with user info, or that is no URL, applies to nothing.
		{"http://u:p@127.0.0.1:38503", "http://127.0.0.1:38503/probe.git", false},
		{"127.0.0.1:38503", "http://127.0.0.1:38503/probe.git", false},
		{"", "http://127.0.0.1:38503/probe.git", false},
		// Longer than the repository's path.
		{"https://git.example.com/org/apps/sub", "https://git.example.com/org/apps", false},

		// SSH: both forms are scheme ssh, port 22 unless named, the user name is ignored.
		{"ssh://git@git.example.com", "git@git.example.com:org/apps.git", true},
		{"ssh://git@git.example.com", "ssh://git@git.example.com/org/apps.git", true},
		{"ssh://git.example.com", "git@git.example.com:org/apps.git", true},
		{"ssh://git@git.example.com:22/org", "git@git.example.com:org/apps.git", true},
		{"git@git.example.com:org", "ssh://git@git.example.com/org/apps.git", true},
		{"git@git.example.com:org/apps", "git@git.example.com:org/apps.git", true},
		{"git@git.example.com:org/apps.git", "ssh://git@git.example.com:22/org/apps", true},
		{"git@git.example.com:/org", "git@git.example.com:org/apps.git", true},
		{"ssh://deploy@git.example.com/org", "git@git.example.com:org/apps.git", true},
		{"git@Git.Example.COM:org", "git@git.example.com:org/apps.git", true},
		{"ssh://git@git.example.com:2222/org", "git@[git.example.com:2222]:org/apps.git", true},
		{"git@[127.0.0.1:2222]:", "ssh://git@127.0.0.1:2222/apps.git", true},
		// SSH: path on segment boundaries, case-sensitive, no dot-segment escapes.
		{"git@git.example.com:org/apps", "git@git.example.com:org/apps-secret.git", false},
		{"git@git.example.com:org", "git@git.example.com:orgXYZ/apps.git", false},
		{"git@git.example.com:Org", "git@git.example.com:org/apps.git", false},
		{"git@git.example.com:org/apps.git", "git@git.example.com:org/apps.git/../other.git", false},
		{"git@git.example.com:org/apps/sub", "git@git.example.com:org/apps", false},
		// SSH: host and port exactly.
		{"ssh://git@git.example.com:2222/org", "git@git.example.com:org/apps.git", false},
		{"ssh://git@git.example.com/org", "git@[git.example.com:2222]:org/apps.git", false},
		{"git@git.example.com:org", "git@git.example.com.evil.test:org/apps.git", false},
		{"git@git.example.com:org", "git@other.example.com:org/apps.git", false},
		// Never across transports, on the same host.
		{"https://git.example.com", "git@git.example.com:org/apps.git", false},
		{"https://git.example.com", "ssh://git@git.example.com/org/apps.git", false},
		{"ssh://git@git.example.com", "https://git.example.com/org/apps.git", false},
		{"git@git.example.com:org", "https://git.example.com/org/apps.git", false},
		{"ssh://git@git.example.com:443", "https://git.example.com/org/apps.git", false},
		{"http://git.example.com:22", "ssh://git@git.example.com/org/apps.git", false},
		// SSH URLs with a password, or scp-like without a user, apply to nothing and get nothing.
		{"ssh://git:pw@git.example.com", "git@git.example.com:org/apps.git", false},
		{"git:pw@git.example.com:org", "git@git.example.com:org/apps.git", false},
		{"ssh://git@git.example.com", "ssh://git:pw@git.example.com/org/apps.git", false},
		{"git.example.com:org", "git@git.example.com:org/apps.git", false},
		{"ssh://git@git.example.com", "git.example.com:org/apps.git", false},
	}
	for _, tc := range tests {
		if got := Applies(tc.secret, tc.repo); got != tc.want {
			t.Errorf("Applies(%q, %q) = %v, want %v", tc.secret, tc.repo, got, tc.want)
		}
	}
}

func sshSecret(name, url, key string) corev1.Secret {
	return corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "navarch-system", Labels: map[string]string{LabelSecretType: SecretTypeRepository}},
		Data:       map[string][]byte{KeyURL: []byte(url), KeySSHPrivateKey: []byte(key)},
	}
}

func secret(name, url, user string) corev1.Secret {
	return corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "navarch-system", Labels: map[string]string{LabelSecretType: SecretTypeRepository}},
		Data:       map[string][]byte{KeyURL: []byte(url), KeyUsername: []byte(user), KeyPassword: []byte(user + "-password")},
	}
}

// listed is a client.Reader holding a fixed list of Secrets: Lookup's choice among Secrets is
// pure logic; the controller tests exercise it against a real cluster.
type listed []corev1.Secret

func (l listed) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("not used")
}

func (l listed) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	list.(*corev1.SecretList).Items = append([]corev1.Secret(nil), l...)
	return nil
}

func TestLookupPicksTheLongestMatch(t *testing.T) {
	store := &Store{Namespace: "navarch-system", Reader: listed{
		secret("host", "https://git.example.com", "host-wide"),
		secret("team", "https://git.example.com/team", "team"),
		secret("team-apps", "https://git.example.com/team/apps.git", "team-apps"),
		secret("other", "https://git.other.test/team", "other"),
	}}
	for repo, want := range map[string]string{
		"https://git.example.com/team/apps.git":  "team-apps",
		"https://git.example.com/team/apps":      "team-apps",
		"https://git.example.com/team/infra.git": "team",
		"https://git.example.com/teamXYZ/a.git":  "host-wide",
		"https://git.example.com/a.git":          "host-wide",
		"https://git.other.test/team/a.git":      "other",
		"https://git.third.test/team/a.git":      "",
	} {
		creds, err := store.Lookup(context.Background(), repo)
		if err != nil {
			t.Errorf("Lookup(%q): %v", repo, err)
			continue
		}
		got := ""
		if creds != nil {
			got = creds.Username
		}
		if got != want {
			t.Errorf("Lookup(%q) = credentials of %q, want %q", repo, got, want)
		}
	}
}

func TestLookupRefusesUserInfo(t *testing.T) {
	store := &Store{Namespace: "navarch-system", Reader: listed{secret("a", "http://127.0.0.1:38503", "a")}}
	for _, repo := range []string{
		"http://127.0.0.1:38503@127.0.0.1:18080/probe.git",
		"http://alice:secret@127.0.0.1:38503/repo.git",
	} {
		creds, err := store.Lookup(context.Background(), repo)
		if !errors.Is(err, gitrepo.ErrInvalidURL) || creds != nil {
			t.Errorf("Lookup(%q) = %v, %v; want no credentials and ErrInvalidURL", repo, creds, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret@") {
			t.Errorf("Lookup(%q): the error reveals the password: %v", repo, err)
		}
	}
}

func TestLookupSSH(t *testing.T) {
	store := &Store{Namespace: "navarch-system", Reader: listed{
		secret("https-host", "https://git.example.com", "https-host"),
		sshSecret("ssh-host", "ssh://git@git.example.com", "ssh-host-key"),
		sshSecret("ssh-team", "git@git.example.com:team", "ssh-team-key"),
		sshSecret("ssh-team-apps", "ssh://git@git.example.com/team/apps.git", "ssh-team-apps-key"),
		sshSecret("ssh-other-port", "ssh://git@git.example.com:2222", "ssh-other-port-key"),
	}}
	for repo, want := range map[string]string{
		"git@git.example.com:team/apps.git":         "key ssh-team-apps-key",
		"ssh://git@git.example.com/team/apps":       "key ssh-team-apps-key",
		"git@git.example.com:/team/infra.git":       "key ssh-team-key",
		"ssh://git.example.com/team/infra.git":      "key ssh-team-key",
		"git@git.example.com:teamXYZ/a.git":         "key ssh-host-key",
		"git@[git.example.com:2222]:team/apps.git":  "key ssh-other-port-key",
		"https://git.example.com/team/apps.git":     "user https-host",
		"git@git.other.test:team/apps.git":          "none",
		"ssh://git@git.example.com:2200/team/a.git": "none",
	} {
		creds, err := store.Lookup(context.Background(), repo)
		if err != nil {
			t.Errorf("Lookup(%q): %v", repo, err)
			continue
		}
		got := "none"
		switch {
		case creds != nil && len(creds.SSHPrivateKey) > 0:
			if creds.Username != "" || creds.Password != "" {
				t.Errorf("Lookup(%q) = %v, want a key alone", repo, creds)
			}
			got = "key " + string(creds.SSHPrivateKey)
		case creds != nil:
			got = "user " + creds.Username
		}
		if got != want {
			t.Errorf("Lookup(%q) = %s, want %s", repo, got, want)
		}
	}
}

func TestLookupWrongKindOfCredentials(t *testing.T) {
	store := &Store{Namespace: "navarch-system", Reader: listed{
		// An SSH URL with a password but no key.
		secret("ssh-without-key", "ssh://git@ssh.example.com", "bot"),
		// A key for an https URL.
		sshSecret("key-for-https", "https://https.example.com", "a-key"),
	}}
	for repo, secretName := range map[string]string{
		"git@ssh.example.com:org/a.git":       "ssh-without-key",
		"https://https.example.com/org/a.git": "key-for-https",
	} {
		creds, err := store.Lookup(context.Background(), repo)
		if err == nil || creds != nil || !strings.Contains(err.Error(), "navarch-system/"+secretName) {
			t.Errorf("Lookup(%q) = %v, %v; want an error naming the Secret %s", repo, creds, err, secretName)
		}
		if err != nil && (strings.Contains(err.Error(), "a-key") || strings.Contains(err.Error(), "bot-password")) {
			t.Errorf("Lookup(%q): the error reveals the credentials: %v", repo, err)
		}
	}
}

func TestLookupRefusesSSHPasswords(t *testing.T) {
	store := &Store{Namespace: "navarch-system", Reader: listed{sshSecret("a", "ssh://git@git.example.com", "a-key")}}
	for _, repo := range []string{
		"ssh://git:hunter2@git.example.com/org/a.git",
		"git:hunter2@git.example.com:org/a.git",
	} {
		creds, err := store.Lookup(context.Background(), repo)
		if !errors.Is(err, gitrepo.ErrInvalidURL) || creds != nil {
			t.Errorf("Lookup(%q) = %v, %v; want no credentials and ErrInvalidURL", repo, creds, err)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Lookup(%q): the error reveals the password: %v", repo, err)
		}
	}
}
