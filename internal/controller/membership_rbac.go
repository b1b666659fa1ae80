package controller

// Replicas share the fleet through Leases in the system namespace (internal/membership): each
// holds a member Lease and one Lease per Cluster it syncs, creates and renews them, releases
// them, and deletes the member Leases of replicas that died. controller-gen scans this package
// only, so the markers of internal/membership live here.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=navarch-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
