package main

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The component config/replicas runs several controller replicas sharing the fleet: built as
// `kubectl apply -k` builds config/default with it, the Deployment has three replicas whose
// arguments `navarch controller` accepts, sharding on, each named after its Pod.
func TestReplicasComponentShardsTheClustersAmongPods(t *testing.T) {
	built := buildConfigWith(t, "replicas")
	var deployment *appsv1.Deployment
	for _, r := range built.Resources() {
		if r.GetKind() != "Deployment" {
			continue
		}
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		deployment = &appsv1.Deployment{}
		if err := yaml.Unmarshal(data, deployment); err != nil {
			t.Fatal(err)
		}
	}
	if deployment == nil {
		t.Fatal("the build has no Deployment")
	}
	if r := deployment.Spec.Replicas; r == nil || *r != 3 {
		t.Errorf("replicas %v, want 3", r)
	}
	c := deployment.Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--shard-clusters") {
		t.Errorf("the controller's arguments %v lack --shard-clusters", c.Args)
	}
	cmd := newControllerCommand()
	if err := cmd.ParseFlags(c.Args[1:]); err != nil {
		t.Errorf("navarch controller refuses the component's arguments %v: %v", c.Args, err)
	}
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_NAME" })
	if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.FieldRef == nil || c.Env[i].ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("POD_NAME is not the Pod's name: %+v", c.Env)
	}
}
