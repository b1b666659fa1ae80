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

// Both forms of SSH URL name a user, a host, a port and a path; the
// canonical form keeps the user name and leaves port 22 out.
func ExampleParseSSHURL() {
	for _, raw := range []string{
		"ssh://GitHub.com/org/apps.git",
		"git@github.com:org/apps.git",
		"git@[git.example.com:2222]:org/apps.git",
	} {
		u, err := gitrepo.ParseSSHURL(raw)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(u.User, u.HostPort(), u.Path, u)
	}
	_, err := gitrepo.ParseSSHURL("ssh://git:hunter2@github.com/org/apps.git")
	fmt.Println(err)
	fmt.Println(gitrepo.IsSSH("git@github.com:org/apps.git"), gitrepo.IsSSH("https://github.com/org/apps.git"))
	// Output:
	// git github.com:22 /org/apps.git ssh://git@github.com/org/apps.git
	// git github.com:22 org/apps.git git@github.com:org/apps.git
	// git git.example.com:2222 org/apps.git git@[git.example.com:2222]:org/apps.git
	// invalid repository URL: "ssh://git@github.com/org/apps.git": a password is not allowed in an SSH URL; authenticate with an SSH key kept in a repository credential Secret
	// true false
}
