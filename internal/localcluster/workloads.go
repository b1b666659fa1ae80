package localcluster

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// kwokStages is the kwok configuration: the Stages that stand in for kubelets.
//
//go:embed kwok-stages.yaml
var kwokStages []byte

// Fake nodes: kwok manages every node (--manage-all-nodes); these labels and the annotation
// mark the ones localcluster creates, the way kwok's own examples do.
const (
	NodeNamePrefix   = "kwok-node-"
	nodeAnnotation   = "kwok.x-k8s.io/node"
	nodeTypeLabel    = "type"
	nodeTypeKwok     = "kwok"
	workloadsTimeout = 60 * time.Second
	// maxNodes keeps the per-node pod CIDRs (10.244.0.0/24, 10.244.1.0/24, ...) inside 10/8.
	maxNodes = 2048
)

// Controller-manager and scheduler client rate limits, above the defaults (20/30) so that
// benchmarks measure navarch rather than client-side throttling.
const (
	componentQPS   = "200"
	componentBurst = "400"
)

// nodeCapacity is what each fake node offers. Pods cost nothing on a fake node, so it takes
// far more than a kubelet's default 110: benchmarks run hundreds of Deployments per cluster.
var nodeCapacity = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("256"),
	corev1.ResourceMemory: resource.MustParse("1Ti"),
	corev1.ResourcePods:   resource.MustParse("2000"),
}

// startWorkloads starts kube-controller-manager, kube-scheduler and kwok, creates the fake
// nodes and waits until they are usable.
func (c *Cluster) startWorkloads(ctx context.Context, bins binaries, nodes int) error {
	stagesPath := filepath.Join(c.dir, "kwok-stages.yaml")
	if err := os.WriteFile(stagesPath, kwokStages, 0o644); err != nil {
		return fmt.Errorf("writing kwok stages: %w", err)
	}
	kubeconfig := "--kubeconfig=" + c.kubeconfigPath
	components := []struct {
		name, path string
		args, env  []string
	}{
		{
			name: kubeControllerManagerBinary,
			path: bins.controllerManager,
			args: []string{
				kubeconfig,
				"--leader-elect=false",
				"--secure-port=0",
				// nodeipam needs a cluster CIDR (nodes get spec.podCIDR on creation instead);
				// serviceaccount-token needs the signing key and pods need no token secrets.
				// The serviceaccount controller stays: it creates each namespace's default
				// ServiceAccount, which the ServiceAccount admission plugin requires.
				"--controllers=*,-nodeipam,-serviceaccount-token",
				"--use-service-account-credentials=false",
				"--kube-api-qps=" + componentQPS,
				"--kube-api-burst=" + componentBurst,
			},
		},
		{
			name: kubeSchedulerBinary,
			path: bins.scheduler,
			args: []string{
				kubeconfig,
				"--leader-elect=false",
				"--secure-port=0",
				"--kube-api-qps=" + componentQPS,
				"--kube-api-burst=" + componentBurst,
			},
		},
		{
			name: kwokBinary,
			path: bins.kwok,
			args: []string{
				kubeconfig,
				"--manage-all-nodes=true",
				"--config=" + stagesPath,
				// kwok renews each node's Lease like a kubelet, so the node-lifecycle
				// controller keeps the nodes Ready.
				"--node-lease-duration-seconds=40",
			},
			// kwok also reads $KWOK_WORKDIR/kwok.yaml (default ~/.kwok); keep it to our own.
			env: []string{"KWOK_WORKDIR=" + filepath.Join(c.dir, "kwok")},
		},
	}
	for _, comp := range components {
		if _, err := c.run(comp.name, comp.path, comp.args, comp.env); err != nil {
			return err
		}
	}

	client, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	names := make([]string, nodes)
	for i := range nodes {
		node := fakeNode(i)
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating node %s: %w", node.Name, err)
		}
		names[i] = node.Name
	}

	// kwok marks the nodes Ready, then the node-lifecycle controller lifts the not-ready taint
	// the TaintNodesByCondition admission plugin put on them; only then do pods schedule.
	if err := c.waitUntil(ctx, "nodes to become Ready and untainted", workloadsTimeout, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if !nodeUsable(node) {
				return false, fmt.Errorf("node %s: conditions %v, taints %v", name, node.Status.Conditions, node.Spec.Taints)
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	return c.waitUntil(ctx, "the default ServiceAccount", workloadsTimeout, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// fakeNode is the i-th node kwok plays kubelet for. It brings its own pod CIDR (nodeipam is
// off) and address, which kwok uses for pod and host IPs.
func fakeNode(i int) *corev1.Node {
	name := NodeNamePrefix + strconv.Itoa(i)
	podCIDR := fmt.Sprintf("10.%d.%d.0/24", 244+i/256, i%256)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				nodeTypeLabel:                   nodeTypeKwok,
				corev1.LabelHostname:            name,
				corev1.LabelOSStable:            "linux",
				corev1.LabelArchStable:          "amd64",
				"node-role.kubernetes.io/agent": "",
			},
			Annotations: map[string]string{nodeAnnotation: "fake"},
		},
		Spec: corev1.NodeSpec{
			PodCIDR:  podCIDR,
			PodCIDRs: []string{podCIDR},
		},
		Status: corev1.NodeStatus{
			Capacity:    nodeCapacity.DeepCopy(),
			Allocatable: nodeCapacity.DeepCopy(),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.200.%d.%d", i/250, i%250+1)},
				{Type: corev1.NodeHostName, Address: name},
			},
		},
	}
}

// nodeUsable reports whether node is Ready and free of the taints that keep pods off it.
func nodeUsable(node *corev1.Node) bool {
	ready := slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
	tainted := slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
	})
	return ready && !tainted
}
