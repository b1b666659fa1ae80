package jsontree

import (
	"reflect"
	"testing"
)

func TestParsePointer(t *testing.T) {
	tests := []struct {
		in      string
		want    []any
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "/", want: []any{""}},
		{in: "/spec/replicas", want: []any{"spec", "replicas"}},
		{in: "/metadata/labels/team~1owner", want: []any{"metadata", "labels", "team/owner"}},
		{in: "/a~0b", want: []any{"a~b"}},
		{in: "/a~01", want: []any{"a~1"}}, // ~1 is decoded first: ~01 is ~ then 1
		{in: "/spec/containers/0/image", want: []any{"spec", "containers", "0", "image"}},
		{in: "spec/replicas", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePointer(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParsePointer(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParsePointer(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestFormatPointer(t *testing.T) {
	tests := []struct {
		path []any
		want string
	}{
		{path: nil, want: ""},
		{path: []any{"spec", "template", "spec", "containers", 0, "image"}, want: "/spec/template/spec/containers/0/image"},
		{path: []any{"metadata", "annotations", "a/b~c"}, want: "/metadata/annotations/a~1b~0c"},
		{path: []any{""}, want: "/"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := FormatPointer(tt.path)
			if got != tt.want {
				t.Fatalf("FormatPointer(%#v) = %q, want %q", tt.path, got, tt.want)
			}
			back, err := ParsePointer(got)
			if err != nil {
				t.Fatal(err)
			}
			if FormatPointer(back) != got {
				t.Errorf("round trip of %q gave %q", got, FormatPointer(back))
			}
		})
	}
}

func FuzzParsePointer(f *testing.F) {
	for _, s := range []string{"", "/", "/a/b", "/a~1b/~0", "/~01", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		path, err := ParsePointer(s)
		if err != nil {
			return
		}
		if got := FormatPointer(path); got != s && canonical(s) {
			t.Errorf("FormatPointer(ParsePointer(%q)) = %q", s, got)
		}
	})
}

// canonical reports whether every ~ in s starts a valid escape, the only pointers that
// format back to themselves.
func canonical(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '~' && (i+1 == len(s) || s[i+1] != '0' && s[i+1] != '1') {
			return false
		}
	}
	return true
}
