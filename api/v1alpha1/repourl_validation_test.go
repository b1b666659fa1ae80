package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestRepoURLMustNotCarryCredentials: a password in a repository URL would be stored in the
// spec and copied into status history, so the apiserver refuses it and names the field. The
// same rule holds for the Applications an ApplicationSet template describes.
func TestRepoURLMustNotCarryCredentials(t *testing.T) {
	for _, url := range []string{
		"http://alice:secret@git.example/r.git",
		"https://token@git.example/r.git",
		"HTTPS://x:y@git.example/r.git",
		"http://127.0.0.1:38503@127.0.0.1:18080/probe.git",
		"ssh://git:password@git.example/r.git",
	} {
		t.Run(url, func(t *testing.T) {
			for kind, y := range map[string]string{
				"Application": appHeader + `spec:
  source: {repoURL: '` + url + `', path: apps}
  destination: {name: in-cluster, namespace: default}`,
				"ApplicationSet": appSetHeader + `spec:
  generators: [{list: {elements: [{name: a}]}}]
  template:
    metadata: {name: '{{name}}'}
    spec:
      source: {repoURL: '` + url + `', path: apps}
      destination: {name: in-cluster, namespace: default}`,
			} {
				err := env.Client.Create(context.Background(), decode(t, y))
				if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "source.repoURL: Invalid value") || !strings.Contains(err.Error(), "must not carry user info") {
					t.Errorf("%s with repoURL %s: %v; want Invalid naming repoURL", kind, url, err)
				}
				if userinfo := url[strings.Index(url, "://")+3 : strings.LastIndex(url, "@")+1]; err != nil && strings.Contains(err.Error(), userinfo) {
					t.Errorf("%s: the error repeats the credentials: %v", kind, err)
				}
			}
		})
	}
	for i, url := range []string{"https://git.example/r.git", "http://127.0.0.1:8080/org/r.git", "ssh://git@git.example/r.git", "https://git.example/r@v1.git"} {
		obj := decode(t, appHeader+`spec:
  source: {repoURL: '`+url+`', path: apps}
  destination: {name: in-cluster, namespace: default}`)
		obj.SetName(fmt.Sprintf("valid-%d", i))
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Errorf("repoURL %s: %v; want it accepted", url, err)
			continue
		}
		_ = env.Client.Delete(context.Background(), obj)
	}
}
