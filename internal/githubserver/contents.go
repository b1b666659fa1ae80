package githubserver

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
)

// emptyBlobSHA is Git's name for the empty blob: every file the server knows
// is empty.
const emptyBlobSHA = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"

// contentLinksJSON is a content object's _links.
type contentLinksJSON struct {
	Self string `json:"self"`
	Git  string `json:"git"`
	HTML string `json:"html"`
}

// contentJSON is GitHub's content object: a file (with its content) or an
// entry of a directory listing (without).
type contentJSON struct {
	Type        string           `json:"type"`
	Encoding    string           `json:"encoding,omitempty"`
	Size        int              `json:"size"`
	Name        string           `json:"name"`
	Path        string           `json:"path"`
	Content     *string          `json:"content,omitempty"`
	SHA         string           `json:"sha"`
	URL         string           `json:"url"`
	GitURL      string           `json:"git_url"`
	HTMLURL     string           `json:"html_url"`
	DownloadURL *string          `json:"download_url"`
	Links       contentLinksJSON `json:"_links"`
}

// getContents serves GET (and HEAD) /repos/{owner}/{repo}/contents/{path}
// with an optional ref (default: the default branch): a file answers its
// content object, a directory (any prefix of a file's path, or the root) a
// listing of its entries, anything else 404.
func (s *Server) getContents(r *http.Request, c caller) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, denied := s.visibleRepoLocked(r, c)
	if denied != nil {
		return *denied
	}
	ref := r.URL.Query().Get("ref")
	branch, err := rp.resolveBranch(ref)
	if err != nil {
		return errorReply(http.StatusNotFound, fmt.Sprintf(messageNoCommitForRef, ref), docsREST)
	}
	p := strings.Trim(r.PathValue("path"), "/")
	files := rp.spec.Files[branch]
	if p != "" && slices.Contains(files, p) {
		return reply{status: http.StatusOK, body: s.contentJSONLocked(rp, branch, p, "file", true)}
	}

	prefix := p + "/"
	if p == "" {
		prefix = ""
	}
	entries := map[string]string{} // name → type
	for _, f := range files {
		rest, ok := strings.CutPrefix(f, prefix)
		if !ok {
			continue
		}
		name, _, isDir := strings.Cut(rest, "/")
		if isDir {
			entries[name] = "dir"
		} else if entries[name] == "" {
			entries[name] = "file"
		}
	}
	if len(entries) == 0 && p != "" {
		return notFoundReply()
	}
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	slices.Sort(names)
	body := make([]contentJSON, 0, len(names))
	for _, name := range names {
		body = append(body, s.contentJSONLocked(rp, branch, path.Join(p, name), entries[name], false))
	}
	return reply{status: http.StatusOK, body: body}
}

// contentJSONLocked renders the file or directory at p on a branch; withContent
// adds the (empty, base64) content of a file. s.mu must be held.
func (s *Server) contentJSONLocked(rp *repo, branch, p, kind string, withContent bool) contentJSON {
	api := s.url + apiPrefix + "/repos/" + rp.fullName()
	escaped := (&url.URL{Path: p}).EscapedPath()
	self := api + "/contents/" + escaped + "?ref=" + url.QueryEscape(branch)
	j := contentJSON{
		Type: kind,
		Name: path.Base(p),
		Path: p,
		URL:  self,
	}
	if kind == "file" {
		j.SHA = emptyBlobSHA
		j.GitURL = api + "/git/blobs/" + j.SHA
		j.HTMLURL = s.url + "/" + rp.fullName() + "/blob/" + branch + "/" + escaped
		download := s.url + "/" + rp.fullName() + "/raw/" + branch + "/" + escaped
		j.DownloadURL = &download
		if withContent {
			empty := ""
			j.Content = &empty
			j.Encoding = "base64"
		}
	} else {
		j.SHA = fakeSHA(rp.fullName(), branch, p)
		j.GitURL = api + "/git/trees/" + j.SHA
		j.HTMLURL = s.url + "/" + rp.fullName() + "/tree/" + branch + "/" + escaped
	}
	j.Links = contentLinksJSON{Self: j.URL, Git: j.GitURL, HTML: j.HTMLURL}
	return j
}
