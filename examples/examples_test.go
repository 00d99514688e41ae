package examples_test

import (
	"io/fs"
	"path"
	"testing"

	"github.com/jetctl/jetctl/examples"
	"github.com/jetctl/jetctl/pkg/lint"
	"github.com/jetctl/jetctl/pkg/plan"
)

// Each directory of examples, on disk as a checkout has it, loads as one
// set of plan files (as `jetctl plan -f examples/` reads it: nothing
// declared twice) and has no lint finding at warning or above; and the
// built-in copy holds the same files.
func TestEachExampleDirectoryPlansAsOne(t *testing.T) {
	dirs := map[string]bool{}
	err := fs.WalkDir(examples.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			dirs[path.Dir(p)] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !dirs["."] || !dirs["migrate"] {
		t.Fatalf("embedded example directories: %v", dirs)
	}
	for dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			sources, err := plan.ReadSources([]string{dir})
			if err != nil {
				t.Fatal(err)
			}
			for _, src := range sources {
				embedded, err := fs.ReadFile(examples.FS, path.Clean(src.Name))
				if err != nil || string(embedded) != string(src.Data) {
					t.Errorf("%s: the built-in copy differs from the file on disk (%v)", src.Name, err)
				}
			}
			d, err := plan.Load(sources, func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatalf("%s/ does not load as a directory: %v", dir, err)
			}
			if len(d.Resources) == 0 {
				t.Fatalf("%s/ declares nothing", dir)
			}
			if res := lint.Lint(d, lint.Env{}); res.Count(lint.Warning) > 0 {
				t.Errorf("%s/: lint findings: %v", dir, res.Findings)
			}
		})
	}
}
