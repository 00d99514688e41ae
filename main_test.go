package main

import (
	"flag"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/jetctl/jetctl/cmd"
	"github.com/jetctl/jetctl/testscripts/harness"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testscripts")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"jetctl": func() { os.Exit(cmd.Main()) },
	})
}

// TestScripts runs testscripts/*.txtar, each against its own embedded
// JetStream server.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testscripts",
		Setup:               harness.Setup(1),
		Cmds:                harness.Cmds(),
		Condition:           harness.Condition,
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
	})
}

// TestClusterScripts runs testscripts/cluster/*.txtar, each against its own
// 3-node in-process cluster.
func TestClusterScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testscripts/cluster",
		Setup:               harness.Setup(3),
		Cmds:                harness.Cmds(),
		Condition:           harness.Condition,
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
	})
}
