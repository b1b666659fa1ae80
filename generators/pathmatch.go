package generators

import (
	"errors"
	"path"
	"strings"
)

// Git path globs are matched segment by segment: the pattern and the path are split on "/", each
// pattern segment is matched against one path segment with path.Match (`*`, `?`, `[...]`, `\`
// escapes; none of them crosses a "/"), and a segment that is exactly `**` matches any number of
// whole segments. Following gitignore, a trailing `**` matches one or more segments ("apps/**" is
// everything below apps, not apps itself) and a leading or inner `**` matches zero or more
// ("**/base" matches "base", "a/**/b" matches "a/b").
//
// Argo CD matches directory globs with path.Match over the whole path, so a directory pattern
// without a `**` segment matches the same directories here; `**` there is only `*` (one
// segment), so "apps/**" lists every depth here and only apps' children there. Argo CD's file
// globs are `git ls-files` pathspecs by default (`*` crosses "/") and doublestar globs with its
// opt-in "new globbing", which match as here.

// doubleStar is the pattern segment that matches any number of path segments.
const doubleStar = "**"

// validatePattern reports why pattern cannot be used as a repository path glob: it must be
// relative, must not climb out of the repository with "..", and must be a well-formed glob.
func validatePattern(pattern string) error {
	switch {
	case pattern == "":
		return errors.New("must not be empty")
	case strings.HasPrefix(pattern, "/"):
		return errors.New("must be relative to the repository root, not absolute")
	}
	for _, seg := range strings.Split(pattern, "/") {
		if seg == ".." {
			return errors.New(`must not contain ".." segments`)
		}
		if _, err := path.Match(seg, ""); err != nil {
			return errors.New("malformed glob (check brackets and escapes)")
		}
	}
	return nil
}

// matchPath reports whether name, a "/"-separated path relative to the repository root,
// matches pattern. The only error is path.ErrBadPattern for a malformed pattern.
func matchPath(pattern, name string) (bool, error) {
	pat := strings.Split(pattern, "/")
	segs := strings.Split(name, "/")

	// Dynamic programming over (pattern segments consumed, name segments consumed) keeps `**`
	// linear in the number of segments instead of exponential in the number of `**`.
	// cur[j] reports whether pat[:i] matches segs[:j].
	cur := make([]bool, len(segs)+1)
	next := make([]bool, len(segs)+1)
	cur[0] = true
	for i, p := range pat {
		clear(next)
		if p == doubleStar {
			// `**` consumes zero or more segments, one or more when it ends the pattern.
			minimum := 0
			if i == len(pat)-1 {
				minimum = 1
			}
			for j := range cur {
				if !cur[j] {
					continue
				}
				for k := j + minimum; k <= len(segs); k++ {
					next[k] = true
				}
			}
		} else {
			for j := 0; j < len(segs); j++ {
				if !cur[j] {
					continue
				}
				ok, err := path.Match(p, segs[j])
				if err != nil {
					return false, err
				}
				if ok {
					next[j+1] = true
				}
			}
		}
		cur, next = next, cur
	}
	return cur[len(segs)], nil
}

// isHiddenPath reports whether any segment of p starts with a dot. Argo CD's repo server skips
// such directories (and everything below them) when listing directories, so ".github" or
// ".git" never become Applications.
func isHiddenPath(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if strings.HasPrefix(seg, ".") {
			return true
		}
	}
	return false
}

// pathSet is the include/exclude globs of one git generator; an exclude wins over any include.
type pathSet struct {
	include, exclude []string
}

// matches reports whether name is matched by an include glob and by no exclude glob.
func (s pathSet) matches(name string) bool {
	for _, p := range s.exclude {
		if ok, _ := matchPath(p, name); ok {
			return false
		}
	}
	for _, p := range s.include {
		if ok, _ := matchPath(p, name); ok {
			return true
		}
	}
	return false
}
