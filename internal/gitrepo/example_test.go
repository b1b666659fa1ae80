package gitrepo_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/navarch-io/navarch/internal/gitrepo"
	"github.com/navarch-io/navarch/internal/gitserver"
)

// A git directories generator lists the directories under apps/ and reads
// a file from one of them.
func ExampleReader_Snapshot() {
	if err := listApps(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// [apps/billing apps/guestbook]
	// {"app":"guestbook"}
}

func listApps() error {
	tmp, err := os.MkdirTemp("", "gitrepo-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	server, err := exampleServer(tmp)
	if err != nil {
		return err
	}
	defer server.Close()

	r, err := gitrepo.New(gitrepo.Options{CacheDir: filepath.Join(tmp, "cache")})
	if err != nil {
		return err
	}
	defer r.Close()

	snap, err := r.Snapshot(context.Background(), server.RepoURL("platform"), "main", nil)
	if err != nil {
		return err
	}
	apps, err := fs.Glob(snap.FS(), "apps/*")
	if err != nil {
		return err
	}
	fmt.Println(apps)
	config, err := snap.ReadFile("apps/guestbook/config.json")
	if err != nil {
		return err
	}
	fmt.Println(string(config))
	return nil
}

// exampleServer serves the repository "platform", holding two apps, from
// below tmp.
func exampleServer(tmp string) (*gitserver.Server, error) {
	src := filepath.Join(tmp, "src")
	for _, app := range []string{"guestbook", "billing"} {
		if err := os.MkdirAll(filepath.Join(src, "apps", app), 0o755); err != nil {
			return nil, err
		}
		config := []byte(`{"app":"` + app + `"}`)
		if err := os.WriteFile(filepath.Join(src, "apps", app, "config.json"), config, 0o644); err != nil {
			return nil, err
		}
	}
	server, err := gitserver.Start(gitserver.Options{Root: filepath.Join(tmp, "server")})
	if err != nil {
		return nil, err
	}
	if _, err := server.CreateRepo("platform", src); err != nil {
		server.Close()
		return nil, err
	}
	return server, nil
}
