package controller

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// The probes answer anyone who reaches them, so by default they listen on loopback only; an
// address that is set, "0" (off) included, is kept.
func TestProbesListenOnLoopbackByDefault(t *testing.T) {
	var o Options
	o.defaults()
	host, _, err := net.SplitHostPort(o.ProbeAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		t.Errorf("default ProbeAddr %q, want a loopback address", o.ProbeAddr)
	}
	for _, addr := range []string{"0", "10.1.2.3:8081"} {
		o := Options{ProbeAddr: addr}
		o.defaults()
		if o.ProbeAddr != addr {
			t.Errorf("ProbeAddr %q became %q", addr, o.ProbeAddr)
		}
	}
}

// The Deployment of config/manager binds the probes to the Pod's IP, where the kubelet probes,
// rather than to every interface, and no Service of config/ exposes them.
func TestDeploymentBindsProbesToThePodIP(t *testing.T) {
	data, err := os.ReadFile("../../config/manager/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		t.Fatal(err)
	}
	var c *corev1.Container
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == "controller" {
			c = &d.Spec.Template.Spec.Containers[i]
		}
	}
	if c == nil {
		t.Fatal("config/manager/deployment.yaml has no container named controller")
	}

	var addr string
	for i, arg := range c.Args {
		if v, ok := strings.CutPrefix(arg, "--health-probe-bind-address="); ok {
			addr = v
		} else if arg == "--health-probe-bind-address" && i+1 < len(c.Args) {
			addr = c.Args[i+1]
		}
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("--health-probe-bind-address is %q, want $(VAR):PORT naming the Pod's IP: %v", addr, err)
	}
	podIP := false
	if v, ok := strings.CutPrefix(host, "$("); ok {
		name := strings.TrimSuffix(v, ")")
		for _, e := range c.Env {
			if e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP" {
				podIP = true
			}
		}
	}
	if !podIP {
		t.Errorf("the probes bind %q, want the Pod's IP: $(VAR) of an env var from the field status.podIP", addr)
	}

	// The kubelet probes the port the probes listen on.
	for name, p := range map[string]*corev1.Probe{"livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s: want an HTTP probe", name)
			continue
		}
		if got := containerPort(c, p.HTTPGet.Port); got != port {
			t.Errorf("%s probes port %s (%s), want the probes' port %s", name, got, p.HTTPGet.Port.String(), port)
		}
	}

	// No Service exposes the probes' port.
	err = filepath.WalkDir("../../config", func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			var svc corev1.Service
			if yaml.Unmarshal([]byte(doc), &svc) != nil || svc.Kind != "Service" {
				continue
			}
			for _, sp := range svc.Spec.Ports {
				target := sp.TargetPort
				if target == (intstr.IntOrString{}) {
					target = intstr.FromInt32(sp.Port) // an unset targetPort is port
				}
				if containerPort(c, target) == port {
					t.Errorf("%s: Service %s exposes the probes' port %s", path, svc.Name, port)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// containerPort is the number of a port of c, named or numbered, as a string.
func containerPort(c *corev1.Container, p intstr.IntOrString) string {
	if p.Type == intstr.String {
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				return strconv.Itoa(int(cp.ContainerPort))
			}
		}
		return ""
	}
	return strconv.Itoa(p.IntValue())
}
