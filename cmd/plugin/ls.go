package plugin

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
)

// NewCmd returns `jetctl plugin` with its `ls` verb.
func NewCmd(f *factory.Factory, builtin IsBuiltin) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "list the plugins jetctl can run",
		Long: `Plugins are executables named jetctl-NAME on PATH; jetctl runs them as
"jetctl NAME". Built-in commands win over plugins of the same name, and
"jetctl foo bar" tries jetctl-foo-bar before jetctl-foo (a dash inside an
argument becomes an underscore in the file name).

A plugin gets the resolved connection in its environment (NATS_URL,
NATS_CONTEXT, NATS_CREDS, ...) and the path of jetctl in JETCTL_BIN. Its
exit code is jetctl's.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newCmdLs(f, builtin))
	return cmd
}

func newCmdLs(f *factory.Factory, builtin IsBuiltin) *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "list plugins found on PATH and warn about those that cannot run",
		Long: `List every jetctl-* file on PATH. Warnings (on stderr, exit 4) name plugins
that are shadowed by an earlier PATH entry, not executable, or named like a
built-in command.`,
		Example: `  jetctl plugin ls
  jetctl plugin ls -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			plugins := List(f.Getenv("PATH"), builtin)
			p, err := f.Printer("table")
			if err != nil {
				return err
			}
			if plugins == nil {
				plugins = []Plugin{}
			}
			err = p.Print(plugins, func() []output.Table {
				t := output.Table{Header: []string{"name", "path", "warnings"}}
				for _, pl := range plugins {
					t.Row(pl.Name, pl.Path, strings.Join(pl.Warnings, "; "))
				}
				return []output.Table{t}
			})
			if err != nil {
				return err
			}
			warned := 0
			for _, pl := range plugins {
				for _, w := range pl.Warnings {
					fmt.Fprintf(f.IO.ErrOut, "warning: %s: %s\n", pl.Path, w)
					warned++
				}
			}
			if warned > 0 {
				return exitcode.Silent(exitcode.Partial)
			}
			return nil
		},
	}
}
