package gitrepo

import "testing"

func TestParseLsTree(t *testing.T) {
	out := "040000 tree f115c6d5cfb15ca1a72429900dcaca0fd1057951       -\ta\x00" +
		"100644 blob c1b0730e0133447badcfd47fd144e254807b06e1      12\ta/x y.txt\x00" +
		"120000 blob 2222222222222222222222222222222222222222       9\ta/link\x00" +
		"160000 commit 3333333333333333333333333333333333333333       -\tvendor/lib\x00"
	got, err := parseLsTree([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []treeEntry{
		{"040000", "tree", "f115c6d5cfb15ca1a72429900dcaca0fd1057951", 0, "a"},
		{"100644", "blob", "c1b0730e0133447badcfd47fd144e254807b06e1", 12, "a/x y.txt"},
		{"120000", "blob", "2222222222222222222222222222222222222222", 9, "a/link"},
		{"160000", "commit", "3333333333333333333333333333333333333333", 0, "vendor/lib"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"100644 blob abc\tno-size\x00", "garbage\x00", "100644 blob abc x\tp\x00"} {
		if _, err := parseLsTree([]byte(bad)); err == nil {
			t.Errorf("parseLsTree(%q) succeeded", bad)
		}
	}
}

func FuzzParseLsTree(f *testing.F) {
	f.Add([]byte("040000 tree f115c6d5cfb15ca1a72429900dcaca0fd1057951       -\ta\x00"))
	f.Fuzz(func(t *testing.T, out []byte) {
		_, _ = parseLsTree(out)
	})
}
