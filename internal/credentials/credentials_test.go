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
	}
	for _, tc := range tests {
		if got := Applies(tc.secret, tc.repo); got != tc.want {
			t.Errorf("Applies(%q, %q) = %v, want %v", tc.secret, tc.repo, got, tc.want)
		}
	}
}

func secret(name, url, user string) corev1.Secret {
	return corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "navarch-system", Labels: map[string]string{LabelSecretType: SecretTypeRepository}},
		Data:       map[string][]byte{"url": []byte(url), "username": []byte(user), "password": []byte(user + "-password")},
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
