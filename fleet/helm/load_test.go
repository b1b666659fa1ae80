package helm

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/navarch-io/navarch/fleet/render"
)

func TestReadChartDirectoryFollowsSymbolicLinks(t *testing.T) {
	fsys := addFiles(fstest.MapFS{}, "apps/app", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: app\nversion: 1.0.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
		".helmignore":       "ignored/\n",
		"ignored/big.bin":   "not part of the chart",
	})
	addFiles(fsys, "lib/common", map[string]string{
		"Chart.yaml":            "apiVersion: v2\nname: common\nversion: 1.0.0\n",
		"templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: common\n",
	})
	fsys["shared/service.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: shared\n")}
	fsys["apps/app/charts/common"] = &fstest.MapFile{Mode: fs.ModeSymlink, Data: []byte("../../../lib/common")}
	fsys["apps/app/templates/service.yaml"] = &fstest.MapFile{Mode: fs.ModeSymlink, Data: []byte("../../../shared/service.yaml")}

	files, err := readChartDirectory(fsys, "apps/app")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	want := []string{".helmignore", "Chart.yaml", "charts/common/Chart.yaml", "charts/common/templates/secret.yaml", "templates/cm.yaml", "templates/service.yaml"}
	if !slices.Equal(names, want) {
		t.Errorf("files %v, want %v", names, want)
	}

	objs, err := New(Options{}).RenderChart(t.Context(), render.HelmRequest{
		Chart:       render.HelmChart{FS: fsys, Dir: "apps/app"},
		ReleaseName: "app",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kindNames(objs), []string{"Secret/common", "ConfigMap/app", "Service/shared"}; !slices.Equal(got, want) {
		t.Errorf("objects %v, want %v", got, want)
	}

	// A link to its own directory ends, with an error.
	fsys["apps/app/templates/loop"] = &fstest.MapFile{Mode: fs.ModeSymlink, Data: []byte(".")}
	if _, err := readChartDirectory(fsys, "apps/app"); err == nil || !strings.Contains(err.Error(), "more than 32 levels of directories") {
		t.Errorf("err = %v, want the loop cut", err)
	}
}
