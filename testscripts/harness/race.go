package harness

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// raceReports makes a data race in any jetctl the script runs fail the
// script. Under `go test -race` the jetctl of the scripts is the test binary
// built with the race detector, but a race it finds changes only an exit
// code of 0 (to 66): one in a command that is expected to fail (`exits 4`,
// `! exec`, an interrupt's 130) would be printed on a stderr nobody reads.
// So the race detector writes its reports under $WORK/.race, and the script
// fails at its end if there are any, showing them. Without -race nothing
// reads GORACE and the directory stays empty.
func raceReports(env *testscript.Env) error {
	dir := filepath.Join(env.WorkDir, ".race")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The caller's options (halt_on_error, history_size, …) first: the
	// last log_path wins.
	env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" log_path="+filepath.Join(dir, "report")))
	env.Defer(func() {
		files, _ := filepath.Glob(filepath.Join(dir, "report.*"))
		if len(files) == 0 {
			return
		}
		var b strings.Builder
		for _, f := range files {
			data, _ := os.ReadFile(f)
			b.Write(data)
		}
		env.T().Fatal("data race in a jetctl the script ran (the race detector's reports, one per process):\n" + b.String())
	})
	return nil
}
