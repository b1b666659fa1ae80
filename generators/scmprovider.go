package generators

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// DefaultSCMProviderRequeueAfter is how often an scmProvider generator lists repositories
// when requeueAfterSeconds is not set (Argo CD's default).
const DefaultSCMProviderRequeueAfter = 30 * time.Minute

// SCMProvider lists the repositories of an organisation for scmProvider generators.
type SCMProvider interface {
	// ListRepositories returns one Repository per repository (its default branch), or per
	// branch when spec.github.allBranches is set. A missing organisation is an error.
	ListRepositories(ctx context.Context, spec *navarchv1.SCMProviderGenerator) ([]Repository, error)
	// PathExists reports whether path (a file or a directory) exists in repo's branch.
	PathExists(ctx context.Context, spec *navarchv1.SCMProviderGenerator, repo Repository, path string) (bool, error)
}

// Repository is one repository branch of an organisation.
type Repository struct {
	// Organization owns the repository.
	Organization string
	// Name is the repository's name.
	Name string
	// SSHURL and HTTPSURL are its clone URLs.
	SSHURL, HTTPSURL string
	// Branch is the branch, and SHA its head commit.
	Branch, SHA string
	// Labels are the repository's topics.
	Labels []string
}

// SCMProviders is the scmProvider generator: one parameter set per repository (or branch)
// that any of `filters` keeps (all when empty). It emits "organization", "repository", "url"
// (the SSH clone URL, or HTTPS with cloneProtocol https), "branch", "branch_normalized" (also
// as Argo CD's "branchNormalized"), "sha", "short_sha" (8 characters), "short_sha_7", "labels"
// (the topics, comma-separated; a []string in goTemplate mode), then its templated
// "values.<k>".
type SCMProviders struct {
	// Spec is the generator's spec.
	Spec *navarchv1.SCMProviderGenerator
	// Field is the spec's path, e.g. "spec.generators[0].scmProvider".
	Field string
}

// ErrNoSCMProvider is returned by an scmProvider generator run without Inputs.SCMProviders.
var ErrNoSCMProvider = errors.New("no SCM provider configured")

func (g SCMProviders) validate() error {
	if g.Spec.Github == nil {
		return fmt.Errorf("%s.github: must be set (the only supported provider)", g.Field)
	}
	if g.Spec.Github.Organization == "" {
		return fmt.Errorf("%s.github.organization: must be set", g.Field)
	}
	if p := g.Spec.CloneProtocol; p != "" && p != "ssh" && p != "https" {
		return fmt.Errorf("%s.cloneProtocol: must be ssh or https, not %q", g.Field, p)
	}
	if s := g.Spec.RequeueAfterSeconds; s != nil && *s < 1 {
		return fmt.Errorf("%s.requeueAfterSeconds: must be at least 1, not %d", g.Field, *s)
	}
	_, err := g.filters()
	return err
}

// RequeueAfter implements Generator.
func (g SCMProviders) RequeueAfter() time.Duration {
	if s := g.Spec.RequeueAfterSeconds; s != nil && *s > 0 {
		return time.Duration(*s) * time.Second
	}
	return DefaultSCMProviderRequeueAfter
}

// scmFilter is a compiled filter; a nil regexp matches anything.
type scmFilter struct {
	repository, label, branch   *regexp.Regexp
	pathsExist, pathsDoNotExist []string
}

func (g SCMProviders) filters() ([]scmFilter, error) {
	out := make([]scmFilter, len(g.Spec.Filters))
	for i, f := range g.Spec.Filters {
		field := fmt.Sprintf("%s.filters[%d]", g.Field, i)
		var err error
		if out[i].repository, err = compileRegexp(field+".repositoryMatch", f.RepositoryMatch); err != nil {
			return nil, err
		}
		if out[i].label, err = compileRegexp(field+".labelMatch", f.LabelMatch); err != nil {
			return nil, err
		}
		if out[i].branch, err = compileRegexp(field+".branchMatch", f.BranchMatch); err != nil {
			return nil, err
		}
		out[i].pathsExist, out[i].pathsDoNotExist = f.PathsExist, f.PathsDoNotExist
	}
	return out, nil
}

// Params implements Generator.
func (g SCMProviders) Params(ctx context.Context, in Inputs) ([]map[string]any, error) {
	if err := g.validate(); err != nil {
		return nil, err
	}
	filters, _ := g.filters()
	if in.SCMProviders == nil {
		return nil, fmt.Errorf("%s: %w", g.Field, ErrNoSCMProvider)
	}
	repos, err := in.SCMProviders.ListRepositories(ctx, g.Spec)
	if err != nil {
		return nil, fmt.Errorf("%s: list the repositories of %s: %w", g.Field, g.Spec.Github.Organization, err)
	}
	out := make([]map[string]any, 0, len(repos))
	for _, repo := range repos {
		keep, err := g.keep(ctx, in.SCMProviders, filters, repo)
		if err != nil {
			return nil, err
		}
		if !keep {
			continue
		}
		params := g.params(repo, in.GoTemplate)
		subject := fmt.Sprintf("repository %s/%s branch %s", repo.Organization, repo.Name, repo.Branch)
		if err := appendValues(in, g.Field, subject, g.Spec.Values, params); err != nil {
			return nil, err
		}
		out = append(out, params)
	}
	return out, nil
}

// keep applies the filters: the cheap expressions first, so paths are only looked up for
// repositories the expressions keep.
func (g SCMProviders) keep(ctx context.Context, scm SCMProvider, filters []scmFilter, repo Repository) (bool, error) {
	if len(filters) == 0 {
		return true, nil
	}
	for i, f := range filters {
		if (f.repository != nil && !f.repository.MatchString(repo.Name)) ||
			(f.branch != nil && !f.branch.MatchString(repo.Branch)) ||
			(f.label != nil && !slices.ContainsFunc(repo.Labels, f.label.MatchString)) {
			continue
		}
		ok, err := g.pathsMatch(ctx, scm, i, f, repo)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

func (g SCMProviders) pathsMatch(ctx context.Context, scm SCMProvider, i int, f scmFilter, repo Repository) (bool, error) {
	check := func(list string, paths []string, want bool) (bool, error) {
		for _, p := range paths {
			exists, err := scm.PathExists(ctx, g.Spec, repo, p)
			if err != nil {
				return false, fmt.Errorf("%s.filters[%d].%s: %s/%s branch %s: %w", g.Field, i, list, repo.Organization, repo.Name, repo.Branch, err)
			}
			if exists != want {
				return false, nil
			}
		}
		return true, nil
	}
	ok, err := check("pathsExist", f.pathsExist, true)
	if err != nil || !ok {
		return false, err
	}
	return check("pathsDoNotExist", f.pathsDoNotExist, false)
}

func (g SCMProviders) params(repo Repository, goTemplate bool) map[string]any {
	url := repo.SSHURL
	if g.Spec.CloneProtocol == "https" {
		url = repo.HTTPSURL
	}
	normalized := slugify(repo.Branch, 253)
	params := map[string]any{
		"organization":      repo.Organization,
		"repository":        repo.Name,
		"url":               url,
		"branch":            repo.Branch,
		"branch_normalized": normalized,
		"branchNormalized":  normalized,
		"sha":               repo.SHA,
		"short_sha":         prefix(repo.SHA, 8),
		"short_sha_7":       prefix(repo.SHA, 7),
	}
	if goTemplate {
		labels := repo.Labels
		if labels == nil {
			labels = []string{}
		}
		params["labels"] = labels
	} else {
		params["labels"] = strings.Join(repo.Labels, ",")
	}
	return params
}
