package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every REIN_* name spelled in the code that builds the binary (variables,
// and the stream names that look like them) is listed in rein --help.
func TestHelpListsEveryVariable(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	lit := regexp.MustCompile(`"(REIN_[A-Z0-9_]+)"`)
	seen := map[string]bool{}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "testutil") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
			seen[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 5 {
		t.Fatalf("found only %v: is the walk right?", seen)
	}
	for name := range seen {
		if !strings.Contains(help, name) {
			t.Errorf("rein --help does not list %s", name)
		}
	}
	for _, name := range []string{"REIN_REPLAY", "REIN_LLM_PROVIDER", "REIN_LLM_API_KEY", "REIN_CONFIG", "REIN_<FLAG>"} {
		if !strings.Contains(help, name) {
			t.Errorf("rein --help does not list %s", name)
		}
	}
}
