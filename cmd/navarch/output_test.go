package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/source"
)

func TestPrintTableAlignsByVisibleWidth(t *testing.T) {
	colour := palette{enabled: true}
	tests := []struct {
		name string
		rows [][]string
		want string
	}{
		{
			name: "plain",
			rows: [][]string{{"NAME", "SYNC", "HEALTH"}, {"api", "Synced", "Healthy"}, {"web-frontend", "OutOfSync", "-"}},
			want: "NAME           SYNC        HEALTH\n" +
				"api            Synced      Healthy\n" +
				"web-frontend   OutOfSync   -\n",
		},
		{
			name: "coloured cells take their visible width",
			rows: [][]string{{"NAME", "SYNC", "HEALTH"}, {"api", colour.sync(navarchv1.SyncStatusSynced, "Synced"), "ok"}},
			want: "NAME   SYNC     HEALTH\n" +
				"api    \x1b[32mSynced\x1b[0m   ok\n",
		},
		{
			name: "no trailing spaces after an empty last cell",
			rows: [][]string{{"A", "B"}, {"x", ""}},
			want: "A   B\nx\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := printTable(&b, tt.rows); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tt.want)
			}
		})
	}
}

func TestColourOnlyOnATerminalWithoutNoColor(t *testing.T) {
	var b bytes.Buffer
	if paletteFor(&b).enabled {
		t.Error("colour for a buffer")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if paletteFor(f).enabled {
		t.Error("colour for a regular file")
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		t.Setenv("NO_COLOR", "")
		if !paletteFor(tty).enabled {
			t.Error("no colour for a terminal")
		}
		t.Setenv("NO_COLOR", "1")
		if paletteFor(tty).enabled {
			t.Error("colour for a terminal with NO_COLOR set")
		}
	}
	if got := (palette{}).health(navarchv1.HealthDegraded, "Degraded"); got != "Degraded" {
		t.Errorf("the zero palette coloured %q", got)
	}
}

func TestCheckOutputIsAUsageError(t *testing.T) {
	err := checkOutput("xml", "table", "wide", "json")
	var u usageError
	if !errors.As(err, &u) || err.Error() != `--output must be table, wide or json, got "xml"` {
		t.Errorf("checkOutput(xml) = %v", err)
	}
	if err := checkOutput("wide", "table", "wide"); err != nil {
		t.Errorf("checkOutput(wide) = %v", err)
	}
}

func TestPrintObjectsLikeKubectlGet(t *testing.T) {
	app := &navarchv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "apps",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	var one, list bytes.Buffer
	if err := printObjects(&one, "yaml", false, app); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"apiVersion: navarch.io/v1alpha1\n", "kind: Application\n", "  name: api\n"} {
		if !strings.Contains(one.String(), want) {
			t.Errorf("yaml lacks %q:\n%s", want, one.String())
		}
	}
	if strings.Contains(one.String(), "managedFields") || strings.Contains(one.String(), "creationTimestamp") {
		t.Errorf("yaml shows managedFields or a null creationTimestamp:\n%s", one.String())
	}
	if err := printObjects(&list, "json", true, app, app); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(list.String(), "{\n  \"apiVersion\": \"v1\",\n  \"items\": [") || !strings.Contains(list.String(), `"kind": "List"`) {
		t.Errorf("json list:\n%s", list.String())
	}
}

func TestShortRevision(t *testing.T) {
	for in, want := range map[string]string{
		"1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b": "1a2b3c4d",
		"main":   "main",
		"v1.2.3": "v1.2.3",
		"":       "",
	} {
		if got := source.ShortRevision(in); got != want {
			t.Errorf("source.ShortRevision(%q) = %q, want %q", in, got, want)
		}
	}
}

// An Application stored before user info was refused may still hold a password in its source
// or its history: no output shows it.
func TestOutputsRedactUserInfo(t *testing.T) {
	const secret = "hunter2"
	src := navarchv1.ApplicationSource{RepoURL: "http://alice:" + secret + "@git.example/r.git", Path: "apps"}
	app := &navarchv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "apps"},
		Spec:       navarchv1.ApplicationSpec{Source: src},
		Status:     navarchv1.ApplicationStatus{History: []navarchv1.RevisionHistory{{ID: 1, Source: src}}},
	}
	for _, format := range []string{"yaml", "json"} {
		var out bytes.Buffer
		if err := printObjects(&out, format, false, app); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), secret) || strings.Contains(out.String(), "alice") {
			t.Errorf("-o %s shows the user info:\n%s", format, out.String())
		}
		if !strings.Contains(out.String(), "http://git.example/r.git") {
			t.Errorf("-o %s lost the URL itself:\n%s", format, out.String())
		}
	}
	var table, fields bytes.Buffer
	if err := printTable(&table, [][]string{{"NAME", "REPO"}, {"api", src.RepoURL}}); err != nil {
		t.Fatal(err)
	}
	if err := printFields(&fields, [][]string{{"Source:", src.RepoURL + ", path apps"}, {"Message:", "fetch https://bot:tok3n@h/x.git failed"}}); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"table": table.String(), "description": fields.String()} {
		if strings.Contains(out, secret) || strings.Contains(out, "tok3n") {
			t.Errorf("%s shows the user info:\n%s", name, out)
		}
	}
	for in, want := range map[string]string{
		"https://git.example/r.git":             "https://git.example/r.git",
		"ssh://git@git.example/r.git":           "ssh://git.example/r.git",
		"see http://u:p@h:80/x and https://a@b": "see http://h:80/x and https://b",
		"mail alice@example.com":                "mail alice@example.com",
	} {
		if got := redactUserInfo(in); got != want {
			t.Errorf("redactUserInfo(%q) = %q, want %q", in, got, want)
		}
	}
}
