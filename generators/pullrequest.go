package generators

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/unicode/norm"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// DefaultPullRequestRequeueAfter is how often a pullRequest generator lists pull requests when
// requeueAfterSeconds is not set (Argo CD's default).
const DefaultPullRequestRequeueAfter = 30 * time.Minute

// PullRequestLister lists the open pull requests a pullRequest generator selects. It may
// filter by spec.github.labels itself; the generator filters again either way. A repository
// that does not exist (or that the credentials cannot see) is an error wrapping
// ErrRepositoryNotFound.
type PullRequestLister interface {
	ListPullRequests(ctx context.Context, spec *navarchv1.PullRequestGenerator) ([]PullRequest, error)
}

// ErrRepositoryNotFound is wrapped by listers when the repository or organisation does not
// exist; a pullRequest generator with continueOnRepoNotFoundError then generates nothing.
var ErrRepositoryNotFound = errors.New("repository not found")

// ParamPullRequest is a parameter every pullRequest parameter set carries besides Argo CD's:
// "<owner>/<repo>#<number>@<head sha>". The ApplicationSet controller copies it to the
// generated Application's AnnotationPullRequest, which is how a preview's commit status finds
// its pull request. Templates may ignore it.
const ParamPullRequest = "navarch.io/pull-request"

// PullRequestRef formats the value of ParamPullRequest.
func PullRequestRef(owner, repo string, number int, sha string) string {
	return fmt.Sprintf("%s/%s#%d@%s", owner, repo, number, sha)
}

// ParsePullRequestRef parses a value of ParamPullRequest.
func ParsePullRequestRef(ref string) (owner, repo string, number int, sha string, err error) {
	fullName, rest, ok1 := strings.Cut(ref, "#")
	num, sha, ok2 := strings.Cut(rest, "@")
	owner, repo, ok3 := strings.Cut(fullName, "/")
	if !ok1 || !ok2 || !ok3 || owner == "" || repo == "" || sha == "" {
		return "", "", 0, "", fmt.Errorf("%q is not <owner>/<repo>#<number>@<sha>", ref)
	}
	if number, err = strconv.Atoi(num); err != nil || number < 1 {
		return "", "", 0, "", fmt.Errorf("%q is not <owner>/<repo>#<number>@<sha>", ref)
	}
	return owner, repo, number, sha, nil
}

// PullRequest is one open pull request.
type PullRequest struct {
	// Number is the pull request's number.
	Number int
	// Title is its title.
	Title string
	// Branch is the head branch.
	Branch string
	// TargetBranch is the base branch.
	TargetBranch string
	// HeadSHA is the head commit.
	HeadSHA string
	// Author is the login of the author.
	Author string
	// Labels are the label names.
	Labels []string
}

// PullRequests is the pullRequest generator: one parameter set per open pull request that
// carries every label of spec.github.labels and matches any of `filters` (all filters when
// empty). It emits "number", "title", "branch", "branch_slug", "target_branch",
// "target_branch_slug", "head_sha", "head_short_sha" (8 characters), "head_short_sha_7",
// "author", and in goTemplate mode "labels" ([]string), as Argo CD does, then its templated
// "values.<k>", and ParamPullRequest. Slugs are DNS-safe and at most 50 characters, leaving
// room for a prefix or suffix in an Application name.
type PullRequests struct {
	// Spec is the generator's spec.
	Spec *navarchv1.PullRequestGenerator
	// Field is the spec's path, e.g. "spec.generators[0].pullRequest".
	Field string
}

func (g PullRequests) validate() error {
	if g.Spec.Github == nil {
		return fmt.Errorf("%s.github: must be set (the only supported provider)", g.Field)
	}
	if g.Spec.Github.Owner == "" {
		return fmt.Errorf("%s.github.owner: must be set", g.Field)
	}
	if g.Spec.Github.Repo == "" {
		return fmt.Errorf("%s.github.repo: must be set", g.Field)
	}
	if s := g.Spec.RequeueAfterSeconds; s != nil && *s < 1 {
		return fmt.Errorf("%s.requeueAfterSeconds: must be at least 1, not %d", g.Field, *s)
	}
	_, err := g.filters()
	return err
}

// RequeueAfter implements Generator.
func (g PullRequests) RequeueAfter() time.Duration {
	if s := g.Spec.RequeueAfterSeconds; s != nil && *s > 0 {
		return time.Duration(*s) * time.Second
	}
	return DefaultPullRequestRequeueAfter
}

// prFilter is a compiled filter; a nil regexp matches anything.
type prFilter struct {
	branch, targetBranch, title *regexp.Regexp
}

func (f prFilter) matches(pr PullRequest) bool {
	return (f.branch == nil || f.branch.MatchString(pr.Branch)) &&
		(f.targetBranch == nil || f.targetBranch.MatchString(pr.TargetBranch)) &&
		(f.title == nil || f.title.MatchString(pr.Title))
}

func (g PullRequests) filters() ([]prFilter, error) {
	out := make([]prFilter, len(g.Spec.Filters))
	for i, f := range g.Spec.Filters {
		field := fmt.Sprintf("%s.filters[%d]", g.Field, i)
		var err error
		if out[i].branch, err = compileRegexp(field+".branchMatch", f.BranchMatch); err != nil {
			return nil, err
		}
		if out[i].targetBranch, err = compileRegexp(field+".targetBranchMatch", f.TargetBranchMatch); err != nil {
			return nil, err
		}
		if out[i].title, err = compileRegexp(field+".titleMatch", f.TitleMatch); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func compileRegexp(field string, expr *string) (*regexp.Regexp, error) {
	if expr == nil {
		return nil, nil
	}
	re, err := regexp.Compile(*expr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return re, nil
}

// Params implements Generator.
func (g PullRequests) Params(ctx context.Context, in Inputs) ([]map[string]any, error) {
	if err := g.validate(); err != nil {
		return nil, err
	}
	filters, _ := g.filters()
	if in.PullRequests == nil {
		return nil, fmt.Errorf("%s: %w", g.Field, ErrNoPullRequestLister)
	}
	gh := g.Spec.Github
	prs, err := in.PullRequests.ListPullRequests(ctx, g.Spec)
	if errors.Is(err, ErrRepositoryNotFound) && g.Spec.ContinueOnRepoNotFoundError {
		return []map[string]any{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: list pull requests of %s/%s: %w", g.Field, gh.Owner, gh.Repo, err)
	}
	out := make([]map[string]any, 0, len(prs))
	for _, pr := range prs {
		if !hasAllLabels(pr.Labels, gh.Labels) || !matchesAnyFilter(pr, filters) {
			continue
		}
		params := pullRequestParams(pr, in.GoTemplate)
		if err := appendValues(in, g.Field, fmt.Sprintf("pull request #%d", pr.Number), g.Spec.Values, params); err != nil {
			return nil, err
		}
		params[ParamPullRequest] = PullRequestRef(gh.Owner, gh.Repo, pr.Number, pr.HeadSHA)
		out = append(out, params)
	}
	return out, nil
}

// ErrNoPullRequestLister is returned by a pullRequest generator run without Inputs.PullRequests.
var ErrNoPullRequestLister = errors.New("no pull-request lister configured")

func hasAllLabels(have, want []string) bool {
	for _, l := range want {
		if !slices.Contains(have, l) {
			return false
		}
	}
	return true
}

func matchesAnyFilter(pr PullRequest, filters []prFilter) bool {
	if len(filters) == 0 {
		return true
	}
	for _, f := range filters {
		if f.matches(pr) {
			return true
		}
	}
	return false
}

func pullRequestParams(pr PullRequest, goTemplate bool) map[string]any {
	params := map[string]any{
		"number":             strconv.Itoa(pr.Number),
		"title":              pr.Title,
		"branch":             pr.Branch,
		"branch_slug":        slugify(pr.Branch, slugMaxLength),
		"target_branch":      pr.TargetBranch,
		"target_branch_slug": slugify(pr.TargetBranch, slugMaxLength),
		"head_sha":           pr.HeadSHA,
		"head_short_sha":     prefix(pr.HeadSHA, 8),
		"head_short_sha_7":   prefix(pr.HeadSHA, 7),
		"author":             pr.Author,
	}
	// Labels are a list, which fasttemplate cannot substitute; Argo CD emits them only in
	// goTemplate mode too.
	if goTemplate {
		labels := pr.Labels
		if labels == nil {
			labels = []string{}
		}
		params["labels"] = labels
	}
	return params
}

func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// slugMaxLength leaves 13 characters of a 63-character DNS label for a prefix or suffix.
const slugMaxLength = 50

// slugify makes a branch name DNS-label-safe the way Argo CD does (gosimple/slug with "_" as
// "-" and English substitutions): trimmed, "&" → "and", "@" → "at", accents dropped,
// lower-case, runs of other characters → one "-", no leading or trailing "-", then cut at
// the last "-" within maxLen (or at maxLen for one long word). Argo CD transliterates other
// scripts (e.g. Cyrillic) to Latin; here they become "-".
func slugify(s string, maxLen int) string {
	s = strings.TrimSpace(s)
	var b strings.Builder
	for _, r := range norm.NFKD.String(s) {
		switch {
		case r == '&':
			b.WriteString("and")
		case r == '@':
			b.WriteString("at")
		case unicode.Is(unicode.Mn, r):
			// A combining accent left by the decomposition: drop it, keep its letter.
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteByte('-')
		}
	}
	slug := b.String()
	for strings.Contains(slug, "--") {
		slug = strings.ReplaceAll(slug, "--", "-")
	}
	slug = strings.Trim(slug, "-")
	if len(slug) <= maxLen {
		return slug
	}
	if i := strings.LastIndexByte(slug[:maxLen+1], '-'); i > 0 {
		return slug[:i]
	}
	return slug[:maxLen]
}
