package gitserver

import "testing"

func TestSQDequote(t *testing.T) {
	for in, want := range map[string]string{
		`'/org/app.git'`: "/org/app.git",
		`'app.git'`:      "app.git",
		`'it'\''s.git'`:  "it's.git",
		`'wow'\!'.git'`:  "wow!.git",
		`'with space'`:   "with space",
		`''`:             "",
		`'a'\'''\!'b'`:   "a'!b",
	} {
		if got, ok := sqDequote(in); !ok || got != want {
			t.Errorf("sqDequote(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{``, `'`, `app.git`, `'a' 'b'`, `'a'b`, `'a`, `'a'\'`, `"a"`} {
		if got, ok := sqDequote(in); ok {
			t.Errorf("sqDequote(%s) = %q, want a refusal", in, got)
		}
	}
}
