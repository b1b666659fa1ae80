package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/navarch-io/navarch/internal/dashboard"
)

// The component config/dashboard adds the dashboard to the controller's Pod for a team: bound
// to the Pod's IP, behind the token of the Secret navarch-dashboard, with a Service. Built as
// `kubectl apply -k` builds config/default with the component enabled, its container's
// arguments are ones `navarch dashboard` accepts, and without the token flag they are refused.
func TestDashboardComponentServesBehindATokenOnThePodIP(t *testing.T) {
	built := buildConfigWith(t, "dashboard")

	var deployment *appsv1.Deployment
	var service *corev1.Service
	for _, r := range built.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		switch r.GetKind() {
		case "Deployment":
			deployment = &appsv1.Deployment{}
			err = yaml.Unmarshal(data, deployment)
		case "Service":
			if r.GetName() == "navarch-dashboard" {
				service = &corev1.Service{}
				err = yaml.Unmarshal(data, service)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if deployment == nil || service == nil {
		t.Fatalf("the build has no Deployment or no Service navarch-dashboard")
	}
	pod := deployment.Spec.Template.Spec
	i := slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == "dashboard" })
	if i < 0 {
		t.Fatalf("the controller's Pod has no dashboard container: %v", pod.Containers)
	}
	c := pod.Containers[i]
	if len(c.Args) == 0 || c.Args[0] != "dashboard" {
		t.Fatalf("the dashboard container runs %v, want navarch dashboard", c.Args)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.MountPath == "/etc/navarch/dashboard" && slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
			return v.Name == m.Name && v.Secret != nil && v.Secret.SecretName == "navarch-dashboard"
		})
	}) {
		t.Errorf("the token is not mounted from the Secret navarch-dashboard: %+v", c.VolumeMounts)
	}
	if got := service.Spec.Selector; got["app.kubernetes.io/component"] != deployment.Spec.Template.Labels["app.kubernetes.io/component"] {
		t.Errorf("the Service selects %v, not the controller's Pod (%v)", got, deployment.Spec.Template.Labels)
	}

	// The kubelet expands $(POD_IP); the command must accept what it then runs.
	args := strings.ReplaceAll(strings.Join(c.Args[1:], "\n"), "$(POD_IP)", "10.0.3.7")
	cmd := newDashboardCommand()
	if err := cmd.ParseFlags(strings.Split(args, "\n")); err != nil {
		t.Fatalf("navarch dashboard refuses the container's arguments: %v", err)
	}
	opts := dashboard.Options{}
	opts.Address, _ = cmd.Flags().GetString("address")
	opts.TokenFile, _ = cmd.Flags().GetString("auth-token-file")
	if opts.Address != "10.0.3.7:8080" || opts.TokenFile != "/etc/navarch/dashboard/token" {
		t.Errorf("the dashboard listens on %q with token file %q, want the Pod's IP and the mounted token", opts.Address, opts.TokenFile)
	}
	if err := dashboard.CheckAuth(opts); err != nil {
		t.Errorf("the component's address and token are refused: %v", err)
	}
	opts.TokenFile = ""
	if err := dashboard.CheckAuth(opts); err == nil {
		t.Errorf("the Pod's IP without a token is accepted; it must need authentication")
	}
}

// buildConfigWith builds config/default with the component config/<component> enabled, as a
// team's overlay does and as `kubectl apply -k` builds it.
func buildConfigWith(t *testing.T, component string) resmap.ResMap {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	root := filepath.Join("..", "..", "config")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		return mem.WriteFile(filepath.Join("/config", rel), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	overlay := "resources: [../config/default]\ncomponents: [../config/" + component + "]\n"
	if err := mem.WriteFile("/team/kustomization.yaml", []byte(overlay)); err != nil {
		t.Fatal(err)
	}
	built, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/team")
	if err != nil {
		t.Fatalf("build config/default with the %s component: %v", component, err)
	}
	return built
}
