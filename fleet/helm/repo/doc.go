// Package repo fetches packaged Helm charts from Helm chart repositories
// (https:// or http://, an index.yaml and .tgz archives) and OCI registries
// (oci://), for the fleet sync engine that renders Applications whose
// source is a chart.
//
// A process shares one [Client], made with [New]:
//
//	c := repo.New(repo.Options{CacheDir: dir, Credentials: lookup})
//	version, err := c.Resolve(ctx, "https://charts.example.com", "web", "^1.2", false)
//	chart, err := c.Fetch(ctx, "oci://registry.example.com/charts", "web", version)
//
// [Client.Resolve] turns a version constraint into an exact version, from
// the repository's index.yaml or the registry's tag list, which it trusts
// for Options.IndexTTL (refresh forces a new look; index.yaml is re-fetched
// conditionally, with its ETag or Last-Modified). [Client.Fetch] returns the
// archive and its digest; [Client.FetchChart] is the same for fleet/helm's
// renderer, with an Application's passCredentials. Each chart version is downloaded once: archives
// are kept in memory (bounded) and under Options.CacheDir by digest, and
// concurrent fetches of one version share a download. Archives are checked
// against the digest the index lists.
//
// Credentials come from Options.Credentials, by repository URL, and are
// sent to the repository's own origin only: a chart URL in index.yaml on
// another host, or a redirect to one, gets none unless
// Credentials.PassCredentials says so. They never appear in errors or logs.
//
// Every failure is an [*Error] naming the repository, chart and version,
// wrapping one of the kinds ErrChartNotFound, ErrVersionNotFound,
// ErrUnauthorized, ErrUnreachable and so on, to be told apart with
// errors.Is.
//
// OCI access goes through Helm's own registry client
// (helm.sh/helm/v4/pkg/registry), so charts pushed with `helm push` are read
// exactly as helm reads them; index parsing and version matching use Helm's
// repo.IndexFile.
package repo
