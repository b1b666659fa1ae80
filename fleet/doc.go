// Package fleet is navarch's per-cluster world. Its subpackages, used by the Application and
// Cluster controllers in internal/controller:
//
//   - clustercache: one connection per Cluster (client, RESTMapper, watches of managed objects,
//     its own work queue and workers) and the probes behind the Cluster's Ready condition;
//   - source: Git revision → commit → rendered manifests, cached per commit;
//   - render: plain YAML/JSON directories and kustomize overlays, in-process;
//   - diff: normalisation, ignoreDifferences and comparison of dry-run results with live objects;
//   - health: health assessments of live objects;
//   - engine: the comparison of an Application with its cluster and its sync operations.
//
// The tests in this directory run the whole controller against real local clusters and a real
// Git server.
package fleet
