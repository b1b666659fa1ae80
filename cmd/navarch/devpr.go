package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/google/go-github/v57/github"
	"github.com/spf13/cobra"

	"github.com/navarch-io/navarch/internal/devfleet"
	"github.com/navarch-io/navarch/internal/githubserver"
	"github.com/navarch-io/navarch/internal/gitserver"
)

// newDevPRCommand simulates pull requests on the dev fleet: a branch in its Git server, a pull
// request in its GitHub-compatible server, and the webhooks GitHub would deliver.
func newDevPRCommand(stateDir *string) *cobra.Command {
	pr := &cobra.Command{
		Use:   "pr",
		Short: "Simulate pull requests on the dev fleet's examples repository",
		Long: `pr opens, pushes to and closes pull requests of the repository navarch/examples of the dev
fleet's GitHub-compatible server, whose branches live in the Git server's repository "examples"
(published by "navarch demo"). Each change delivers the webhooks GitHub would send, so a
pullRequest ApplicationSet follows it at once. See docs/pull-request-previews.md.`,
	}
	pr.AddCommand(newDevPROpenCommand(stateDir), newDevPRPushCommand(stateDir),
		newDevPRCloseCommand(stateDir), newDevPRStatusCommand(stateDir))
	return pr
}

// devPR is what the pr commands need of a running dev fleet.
type devPR struct {
	git    *gitserver.Server
	github githubserver.Remote
	api    *github.Client
}

func openDevPR(stateDir string) (*devPR, error) {
	s, err := devfleet.ReadState(stateDir)
	if errors.Is(err, devfleet.ErrNotRunning) {
		return nil, fmt.Errorf("no dev fleet is running in %s; start one with \"navarch dev up\" or \"make demo\"", stateDir)
	}
	if err != nil {
		return nil, err
	}
	if s.GitHub.URL == "" {
		return nil, errors.New("this dev fleet has no GitHub-compatible server: restart it with a newer navarch (navarch dev down, then up)")
	}
	git := gitserver.Remote(s.Git.Root, s.Git.URL)
	if _, err := git.Resolve(devfleet.ExamplesRepo, "main"); err != nil {
		return nil, fmt.Errorf("the Git server has no repository %q yet: run \"navarch demo\" (make demo) to publish the examples", devfleet.ExamplesRepo)
	}
	api, err := github.NewClient(http.DefaultClient).WithAuthToken(s.GitHub.Token).WithEnterpriseURLs(s.GitHub.URL, s.GitHub.URL)
	if err != nil {
		return nil, err
	}
	return &devPR{git: git, github: githubserver.Remote{URL: s.GitHub.URL}, api: api}, nil
}

// commit adds a commit to branch of the examples repository, writing files given as
// path=content, or an empty commit, and tells the GitHub server about it.
func (d *devPR) commit(ctx context.Context, branch, message string, files map[string]string) (string, error) {
	sha, err := d.git.Update(devfleet.ExamplesRepo, message, func(dir string) error {
		if _, err := gitserver.Git(dir, "checkout", "--quiet", branch); err != nil {
			return err
		}
		for path, content := range files {
			target := filepath.Join(dir, filepath.FromSlash(path))
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(target, []byte(content), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return sha, d.github.Push(ctx, devfleet.GitHubOwner, devfleet.ExamplesRepo, branch, sha)
}

func (d *devPR) pull(ctx context.Context, number int) (*github.PullRequest, error) {
	pr, _, err := d.api.PullRequests.Get(ctx, devfleet.GitHubOwner, devfleet.ExamplesRepo, number)
	if err != nil {
		return nil, fmt.Errorf("pull request #%d: %w", number, err)
	}
	return pr, nil
}

// openDevPRNumber parses a pull request number argument and opens the dev fleet.
func openDevPRNumber(stateDir, arg string) (int, *devPR, error) {
	n, err := strconv.Atoi(arg)
	if err != nil || n < 1 {
		return 0, nil, usageError{fmt.Errorf("NUMBER must be a pull request number, got %q", arg)}
	}
	d, err := openDevPR(stateDir)
	return n, d, err
}

func parseFiles(pairs []string) (map[string]string, error) {
	files := map[string]string{}
	for _, p := range pairs {
		path, content, ok := strings.Cut(p, "=")
		if !ok || path == "" || filepath.IsAbs(path) {
			return nil, usageError{fmt.Errorf("--file must be PATH=CONTENT with a relative path, got %q", p)}
		}
		files[path] = content
	}
	return files, nil
}

func newDevPROpenCommand(stateDir *string) *cobra.Command {
	var title, branch, base, author string
	var labels, files []string
	cmd := &cobra.Command{
		Use:   "open",
		Short: "Open a pull request from a new branch with one commit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			changes, err := parseFiles(files)
			if err != nil {
				return err
			}
			if branch == "" {
				return usageError{errors.New(`required flag "--branch" not set`)}
			}
			d, err := openDevPR(*stateDir)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if _, err := d.git.Branch(devfleet.ExamplesRepo, branch, base); err != nil {
				return err
			}
			sha, err := d.commit(ctx, branch, cmp.Or(title, "Open "+branch), changes)
			if err != nil {
				return err
			}
			n, err := d.github.OpenPR(ctx, devfleet.GitHubOwner, devfleet.ExamplesRepo, githubserver.PullRequest{
				Title: cmp.Or(title, branch), Head: branch, Base: base, HeadSHA: sha, Author: author, Labels: labels,
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Opened pull request #%d %q: %s → %s at %s (webhooks delivered)\n", n, cmp.Or(title, branch), branch, base, sha[:8])
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&branch, "branch", "", "the head branch to create (required)")
	f.StringVar(&base, "base", "main", "the base branch")
	f.StringVar(&title, "title", "", "the title (default: the branch)")
	f.StringVar(&author, "author", "dev", "the author's login")
	f.StringArrayVar(&labels, "label", nil, "a label; repeatable")
	f.StringArrayVar(&files, "file", nil, "PATH=CONTENT to write in the commit; repeatable (default: an empty commit)")
	return cmd
}

func newDevPRPushCommand(stateDir *string) *cobra.Command {
	var message string
	var files []string
	cmd := &cobra.Command{
		Use:   "push NUMBER",
		Short: "Push a new commit to a pull request's branch",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			changes, err := parseFiles(files)
			if err != nil {
				return err
			}
			n, d, err := openDevPRNumber(*stateDir, args[0])
			if err != nil {
				return err
			}
			pr, err := d.pull(cmd.Context(), n)
			if err != nil {
				return err
			}
			sha, err := d.commit(cmd.Context(), pr.GetHead().GetRef(), cmp.Or(message, "Update "+pr.GetHead().GetRef()), changes)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Pushed %s to pull request #%d (%s) (webhooks delivered)\n", sha[:8], n, pr.GetHead().GetRef())
			return nil
		},
	}
	cmd.Flags().StringVarP(&message, "message", "m", "", "the commit message")
	cmd.Flags().StringArrayVar(&files, "file", nil, "PATH=CONTENT to write in the commit; repeatable (default: an empty commit)")
	return cmd
}

func newDevPRCloseCommand(stateDir *string) *cobra.Command {
	var merge bool
	cmd := &cobra.Command{
		Use:   "close NUMBER",
		Short: "Close a pull request (--merge to merge it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, d, err := openDevPRNumber(*stateDir, args[0])
			if err != nil {
				return err
			}
			if err := d.github.ClosePR(cmd.Context(), devfleet.GitHubOwner, devfleet.ExamplesRepo, n, merge); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Closed pull request #%d (webhooks delivered)\n", n)
			return nil
		},
	}
	cmd.Flags().BoolVar(&merge, "merge", false, "mark it merged (the branch is not merged into the base)")
	return cmd
}

func newDevPRStatusCommand(stateDir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "status NUMBER",
		Short: "Show a pull request and the commit statuses of its head commit",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, d, err := openDevPRNumber(*stateDir, args[0])
			if err != nil {
				return err
			}
			pr, err := d.pull(cmd.Context(), n)
			if err != nil {
				return err
			}
			statuses, err := d.github.Statuses(cmd.Context(), devfleet.GitHubOwner, devfleet.ExamplesRepo, pr.GetHead().GetSHA())
			if err != nil {
				return err
			}
			return printPRStatus(cmd.OutOrStdout(), pr, statuses)
		},
	}
}

// printPRStatus prints a pull request and the latest status of each context on its head.
func printPRStatus(out io.Writer, pr *github.PullRequest, statuses []githubserver.Status) error {
	fmt.Fprintf(out, "#%d %s (%s) %s → %s at %s\n", pr.GetNumber(), pr.GetTitle(), pr.GetState(),
		pr.GetHead().GetRef(), pr.GetBase().GetRef(), pr.GetHead().GetSHA())
	latest := map[string]githubserver.Status{}
	var contexts []string
	for _, s := range statuses { // oldest first: the last one of a context wins
		if _, ok := latest[s.Context]; !ok {
			contexts = append(contexts, s.Context)
		}
		latest[s.Context] = s
	}
	if len(contexts) == 0 {
		fmt.Fprintln(out, "No commit status yet.")
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(w, "CONTEXT\tSTATE\tDESCRIPTION")
	for _, c := range contexts {
		fmt.Fprintf(w, "%s\t%s\t%s\n", c, latest[c].State, latest[c].Description)
	}
	return w.Flush()
}
