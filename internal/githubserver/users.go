package githubserver

import (
	"hash/fnv"
	"strings"
)

// userJSON is GitHub's simple user: the owner of a repository, the author of
// a pull request, the sender of a webhook.
type userJSON struct {
	Login      string `json:"login"`
	ID         int64  `json:"id"`
	NodeID     string `json:"node_id"`
	AvatarURL  string `json:"avatar_url"`
	GravatarID string `json:"gravatar_id"`
	URL        string `json:"url"`
	HTMLURL    string `json:"html_url"`
	ReposURL   string `json:"repos_url"`
	Type       string `json:"type"`
	SiteAdmin  bool   `json:"site_admin"`
}

// userID derives a stable user ID from a login, since the server keeps no
// user accounts.
func userID(login string) int64 {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(login)))
	return int64(h.Sum32()&0x7fffffff) + 1
}

// user returns the JSON of the user called login.
func (s *Server) user(login string) userJSON {
	id := userID(login)
	kind := "User"
	if strings.HasSuffix(login, "[bot]") {
		kind = "Bot"
	}
	api := s.url + apiPrefix + "/users/" + login
	return userJSON{
		Login:     login,
		ID:        id,
		NodeID:    nodeID("User", id),
		AvatarURL: s.url + "/avatars/u/" + login,
		URL:       api,
		HTMLURL:   s.url + "/" + login,
		ReposURL:  api + "/repos",
		Type:      kind,
	}
}
