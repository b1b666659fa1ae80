package templates

import (
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"in-cluster", "in-cluster"},
		{"UPPER-Case", "upper-case"},
		{"my_app.v1", "my-app.v1"},
		{"Hello World", "hello-world"},
		{"--leading and trailing--", "leading-and-trailing"},
		{".dots.", "dots"},
		{"-.-a.-.", "a"},
		{"ünïcode ñame", "n-code--ame"},
		{"İstanbul", "istanbul"},
		{"a\xffb", "a-b"},
		{"___", ""},
		{"", ""},
		{"https://Kubernetes.Default.svc:443", "https---kubernetes.default.svc-443"},
		{strings.Repeat("a", 300), strings.Repeat("a", 253)},
		{strings.Repeat("a", 252) + "_b", strings.Repeat("a", 252)},
	}
	for _, tt := range tests {
		if got := Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSlugify(t *testing.T) {
	const long = "feat/a_really+long_pull_request_name_to_test_argo_slugification_and_branch_name_shortening_feature"
	const oneWord = "feat/areallylongpullrequestnametotestargoslugificationandbranchnameshorteningfeature"
	tests := []struct {
		in     string
		max    int
		smart  bool
		want   string
		reason string
	}{
		// Argo CD's own test vectors.
		{long, 50, false, "feat-a-really-long-pull-request-name-to-test-argo", "hard cut, trailing dash trimmed"},
		{long, 53, true, "feat-a-really-long-pull-request-name-to-test-argo", "cut after the last whole word"},
		{oneWord, 50, true, "feat", "smart cut keeps whole words only"},
		{oneWord, 50, false, "feat-areallylongpullrequestnametotestargoslugifica", "hard cut"},
		// Edge cases.
		{"Feature/Add-Login_Page", 50, true, "feature-add-login-page", "uppercase, slash, underscore"},
		{"a..b--c", 50, true, "a-b-c", "dots and dash runs collapse"},
		{"--x--", 50, true, "x", "trimmed"},
		{"ünïcode", 50, true, "n-code", "non-ASCII becomes a dash"},
		{"___", 50, true, "", "nothing left"},
		{strings.Repeat("x", 60), 50, true, strings.Repeat("x", 50), "one long word is cut"},
		{"abcd-efgh", 5, false, "abcd", "hard cut then trimmed"},
		{"abc", 0, true, "abc", "no limit"},
		{"abc-def", -1, true, "abc-def", "no limit"},
	}
	for _, tt := range tests {
		if got := Slugify(tt.in, tt.max, tt.smart); got != tt.want {
			t.Errorf("Slugify(%q, %d, %v) = %q, want %q (%s)", tt.in, tt.max, tt.smart, got, tt.want, tt.reason)
		}
	}
}

func TestSlugifyTemplateFunction(t *testing.T) {
	params := map[string]any{"branch": "Feature/Add-Login_Page-for-Everyone", "n": 3}
	tests := []struct{ in, want, wantErr string }{
		{"{{ slugify .branch }}", "feature-add-login-page-for-everyone", ""},
		{"{{ slugify 20 .branch }}", "feature-add-login", ""},
		{"{{ .branch | slugify 20 }}", "feature-add-login", ""},
		{"{{ slugify 20 false .branch }}", "feature-add-login-pa", ""},
		{"{{ slugify 20 true .branch }}", "feature-add-login", ""},
		{`{{ slugify 7 true "ignored" .branch }}`, "feature", ""},
		{"{{ slugify 0 false .branch }}", "", ""},
		{"{{ slugify -1 true .branch }}", "feature-add-login-page-for-everyone", ""},
		{"{{ slugify }}", "", ""},
		{"{{ slugify .n }}", "", "slugify: the name (last argument) must be a string, got int"},
		{`{{ slugify "20" .branch }}`, "", "slugify: the maximum length (first argument) must be an integer, got string"},
		{`{{ slugify 20 "yes" .branch }}`, "", "slugify: smart truncation (second argument) must be a boolean, got string"},
		{"{{ slugify -1 false .branch }}", "", "slugify: the maximum length must not be negative, got -1"},
		{"{{ normalize .branch }}", "feature-add-login-page-for-everyone", ""},
	}
	for _, tt := range tests {
		got, err := RenderString(tt.in, params, Options{GoTemplate: true})
		if tt.wantErr != "" {
			if err == nil || !strings.HasSuffix(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
