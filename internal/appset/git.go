package appset

import (
	"context"

	"github.com/navarch-io/navarch/generators"
	"github.com/navarch-io/navarch/internal/gitrepo"
)

// CredentialsFunc returns the credentials for a repository URL, or nil for none.
type CredentialsFunc func(ctx context.Context, repoURL string) (*gitrepo.Credentials, error)

// GitReader adapts a gitrepo.Reader to the generators' GitReader, looking up credentials per
// repository with creds (which may be nil).
func GitReader(r *gitrepo.Reader, creds CredentialsFunc) generators.GitReader {
	return &gitReader{r: r, creds: creds}
}

type gitReader struct {
	r     *gitrepo.Reader
	creds CredentialsFunc
}

func (g *gitReader) Snapshot(ctx context.Context, repoURL, revision string) (generators.GitTree, error) {
	var c *gitrepo.Credentials
	if g.creds != nil {
		var err error
		if c, err = g.creds(ctx, repoURL); err != nil {
			return nil, err
		}
	}
	return g.r.Snapshot(ctx, repoURL, revision, c)
}
