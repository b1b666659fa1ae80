package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/navarch-io/navarch/internal/webhook"
)

// A Handler serves the endpoint; a worker takes the events it queued.
func ExampleHandler() {
	secret := []byte("s3cr3t")
	h := webhook.New(webhook.Options{Secret: func(context.Context) ([]byte, error) { return secret, nil }})
	srv := httptest.NewServer(h)
	defer srv.Close()

	body := `{"ref": "refs/heads/main", "repository": {"full_name": "acme/platform",
	  "clone_url": "https://github.com/acme/platform.git", "default_branch": "main"}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+webhook.Path, strings.NewReader(body))
	req.Header.Set(webhook.HeaderEvent, webhook.EventPush)
	req.Header.Set(webhook.HeaderSignature, webhook.Sign(secret, []byte(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status)

	ctx, cancel := context.WithCancel(context.Background())
	_ = h.Run(ctx, func(_ context.Context, ev webhook.Event) {
		fmt.Println(ev.Name, ev.Push.Repository.Keys(), ev.Push.Revisions())
		cancel()
	})
	// Output:
	// 202 Accepted
	// push [github.com/acme/platform] [main HEAD]
}

func ExampleRepoKey() {
	for _, u := range []string{"https://github.com/Acme/Platform.git", "git@github.com:acme/platform", "ssh://git@github.com/acme/platform/"} {
		fmt.Println(webhook.RepoKey(u))
	}
	// Output:
	// github.com/acme/platform
	// github.com/acme/platform
	// github.com/acme/platform
}
