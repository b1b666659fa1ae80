package githubserver_test

import (
	"context"
	"fmt"

	"github.com/google/go-github/v57/github"

	"github.com/navarch-io/navarch/internal/githubserver"
)

// A test starts a server, describes the repositories it needs and points
// the real go-github client at it.
func Example() {
	s, err := githubserver.Start(githubserver.Options{})
	if err != nil {
		panic(err)
	}
	defer func() { _ = s.Close() }()

	s.AddRepo("acme", "app", githubserver.Repo{
		Branches: map[string]string{"main": "1111111111111111111111111111111111111111", "preview": "2222222222222222222222222222222222222222"},
	})
	s.OpenPR("acme", "app", githubserver.PullRequest{Title: "Add preview", Head: "preview", Labels: []string{"preview"}})

	client, err := github.NewClient(nil).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		panic(err)
	}
	prs, resp, err := client.PullRequests.List(context.Background(), "acme", "app", nil)
	if err != nil {
		panic(err)
	}
	for _, pr := range prs {
		fmt.Printf("#%d %q %s@%.7s\n", pr.GetNumber(), pr.GetTitle(), pr.GetHead().GetRef(), pr.GetHead().GetSHA())
	}
	fmt.Println("remaining:", resp.Rate.Remaining)
	// Output:
	// #1 "Add preview" preview@2222222
	// remaining: 59
}

// A process that did not start the server drives it through the admin API.
func ExampleRemote() {
	s, err := githubserver.Start(githubserver.Options{})
	if err != nil {
		panic(err)
	}
	defer func() { _ = s.Close() }()
	ctx := context.Background()

	rm := githubserver.Remote{URL: s.URL()}
	if err := rm.AddRepo(ctx, "acme", "app", githubserver.Repo{}); err != nil {
		panic(err)
	}
	n, err := rm.OpenPR(ctx, "acme", "app", githubserver.PullRequest{Title: "Fix", Head: "fix"})
	if err != nil {
		panic(err)
	}
	err = rm.EditPR(ctx, "acme", "app", n, func(pr *githubserver.PullRequest) {
		pr.Labels = append(pr.Labels, "preview")
	})
	fmt.Println(n, err)
	// Output: 1 <nil>
}
