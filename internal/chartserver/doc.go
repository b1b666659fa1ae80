// Package chartserver runs real Helm chart servers on the loopback
// interface, for tests and for the dev fleet: a Helm chart repository
// (index.yaml and .tgz archives over HTTP) and an OCI registry holding
// charts pushed the way `helm push` pushes them.
//
// Charts are packaged with Helm's own loader and archiver ([Package],
// [PackageDir]), so the archives, digests and index entries are the ones
// `helm package` and `helm repo index` produce:
//
//	r, err := chartserver.StartRepository(chartserver.RepositoryOptions{})
//	defer r.Close()
//	_, err = r.AddChartFiles("web", "1.2.0", map[string]string{
//		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\n...",
//	})
//	// r.URL() is a repoURL; r.URL()+"/index.yaml" lists web 1.2.0.
//
// [StartRegistry] serves go-containerregistry's in-memory registry and
// [Registry.PushChartFiles] pushes with Helm's registry client; a chart
// pushed below "charts" is then at repoURL r.URL()+"/charts".
//
// Both servers can demand basic or bearer credentials ([Auth]) and count
// the requests they get per URL path, so a test can assert that a client
// downloads a chart version once. A server is stopped with Close.
package chartserver
