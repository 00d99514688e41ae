package exitcode

import (
	"fmt"
	"go/build"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jetctl/jetctl/pkg/errkind"
)

// TestEveryKindHasACode: a kind added to errkind without a code here would
// quietly exit 1.
func TestEveryKindHasACode(t *testing.T) {
	for _, k := range errkind.All() {
		found := false
		for _, m := range kinds {
			found = found || m.kind == k
		}
		if !found {
			t.Errorf("kind %q has no exit code", k)
		}
	}
}

// TestKindOrder: an error of two kinds takes the first in kinds (not
// found, invalid, busy, partial), the order pkg/'s sentinels were checked
// in before they had kinds.
func TestKindOrder(t *testing.T) {
	all := errkind.All()
	for i, a := range all {
		for _, b := range all[i+1:] {
			err := fmt.Errorf("%w: %w", errkind.New(b, "b"), errkind.New(a, "a"))
			if got, want := Of(err), Of(errkind.New(a, "a")); got != want {
				t.Errorf("Of(%s and %s) = %d, want %d (%s's)", b, a, got, want, a)
			}
		}
	}
}

// TestImportsNoDomainPackage: exitcode maps kinds, so that it need not
// import every package with an error of its own. Of jetctl's packages it
// imports pkg/errkind and nothing else, directly or not.
func TestImportsNoDomainPackage(t *testing.T) {
	const module = "github.com/jetctl/jetctl/"
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{module + "pkg/errkind": true}
	seen := map[string]bool{}
	var walk func(dir, path string)
	walk = func(dir, path string) {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, imp := range pkg.Imports {
			if !strings.HasPrefix(imp, module) || seen[imp] {
				continue
			}
			seen[imp] = true
			if !allowed[imp] {
				t.Errorf("%s imports %s", path, imp)
				continue
			}
			walk(filepath.Join(root, strings.TrimPrefix(imp, module)), imp)
		}
	}
	walk(".", module+"cmd/exitcode")
	if !seen[module+"pkg/errkind"] {
		t.Error("exitcode does not import pkg/errkind: is the walk reading the right files?")
	}
}
