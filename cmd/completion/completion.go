// Package completion implements `jetctl completion SHELL`.
package completion

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
)

// Shells lists the shells jetctl writes completion scripts for.
var Shells = []string{"bash", "zsh", "fish", "powershell"}

// FileName is the name of shell's script under completions/.
func FileName(shell string) string {
	if shell == "powershell" {
		return "jetctl.ps1"
	}
	return "jetctl." + shell
}

// Generate writes root's completion script for shell to w.
func Generate(root *cobra.Command, shell string, w io.Writer) error {
	switch shell {
	case "bash":
		return root.GenBashCompletionV2(w, true)
	case "zsh":
		return root.GenZshCompletion(w)
	case "fish":
		return root.GenFishCompletion(w, true)
	case "powershell":
		return root.GenPowerShellCompletionWithDesc(w)
	}
	return exitcode.UsageErrorf("unknown shell %q: use one of bash, zsh, fish, powershell", shell)
}

// NewCmd returns `jetctl completion`.
func NewCmd(out io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "print the shell completion script",
		Long: `Print the completion script for a shell. Stream, consumer and KV bucket
names are completed from the server (with a short timeout, silently
offering nothing when it cannot be reached).

The same scripts are checked in under completions/ (regenerate them with
"go generate ./completions").`,
		Example: `  source <(jetctl completion bash)
  jetctl completion zsh > "${fpath[1]}/_jetctl"
  jetctl completion fish > ~/.config/fish/completions/jetctl.fish
  jetctl completion powershell | Out-String | Invoke-Expression`,
		ValidArgs: Shells,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return exitcode.UsageErrorf("completion takes one shell: bash, zsh, fish or powershell")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return Generate(cmd.Root(), args[0], out)
		},
	}
}
