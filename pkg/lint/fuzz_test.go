package lint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/jetctl/jetctl/pkg/plan"
)

// FuzzLint loads arbitrary plan files and lints what loads, offline and
// live (against a server with a workqueue stream): nothing may panic, and
// every finding names a rule and a position in the file. The seeds are
// the fixtures in testdata.
func FuzzLint(f *testing.F) {
	fixtures, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil || len(fixtures) == 0 {
		f.Fatalf("no fixtures: %v", err)
	}
	for _, p := range fixtures {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	server := load(f, plan.Source{Name: "server", Data: []byte(serverWithWorkqueue)})
	live := liveEnv()
	live.Server = server
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := plan.Load([]plan.Source{{Name: "fuzz.yaml", Data: data}}, noVars)
		if err != nil {
			return
		}
		for _, env := range []Env{{}, live} {
			res := Lint(d, env)
			for _, fd := range append(res.Findings, res.Suppressed...) {
				if _, ok := RuleByID(fd.Rule); !ok || fd.Message == "" || fd.Pos.File != "fuzz.yaml" || fd.Pos.Line < 1 || fd.Pos.Column < 1 {
					t.Fatalf("finding %+v", fd)
				}
			}
		}
	})
}
