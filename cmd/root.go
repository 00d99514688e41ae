// Package cmd builds jetctl's command tree and runs it. Main is the only
// place that turns an error into an exit code and a message.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jetctl/jetctl/cmd/check"
	"github.com/jetctl/jetctl/cmd/completion"
	"github.com/jetctl/jetctl/cmd/consumer"
	"github.com/jetctl/jetctl/cmd/demo"
	"github.com/jetctl/jetctl/cmd/dlq"
	"github.com/jetctl/jetctl/cmd/events"
	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/kv"
	"github.com/jetctl/jetctl/cmd/migrate"
	"github.com/jetctl/jetctl/cmd/plan"
	"github.com/jetctl/jetctl/cmd/plugin"
	"github.com/jetctl/jetctl/cmd/replay"
	"github.com/jetctl/jetctl/cmd/server"
	"github.com/jetctl/jetctl/cmd/status"
	"github.com/jetctl/jetctl/cmd/stream"
	"github.com/jetctl/jetctl/cmd/version"
	"github.com/jetctl/jetctl/pkg/logctx"
	"github.com/jetctl/jetctl/pkg/natsconn"
)

const (
	groupJetStream = "jetstream"
	groupServer    = "server"
	groupPlugins   = "plugins"
)

// NewRoot builds the command tree on f. Nothing here connects or reads
// anything: commands connect lazily, through f, when they run.
func NewRoot(f *factory.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "jetctl",
		Short: "the command-line toolkit for NATS JetStream operations",
		Long: `jetctl is a scriptable toolkit for NATS JetStream operations: declarative
streams, consumers and buckets, replay, dead letters and KV history.

Connection flags and NATS_* variables work as in natscli, and so do natscli
contexts. Data goes to stdout (-o table|json|jsonl|yaml, --jq), everything
else to stderr. Exit codes are the same for every command: see
"jetctl help exit-codes".`,
		Example: `  jetctl demo
  jetctl status -s nats://127.0.0.1:4222
  jetctl status --context prod -o json --jq '.streams[].name'`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %q?)", s[0])
			}
			return &exitcode.Error{Code: exitcode.Usage, Err: errors.New(msg)}
		},
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			// pkg/ logs what it does, at debug level, to the logger the
			// context carries: the one --verbose and --trace turn up.
			cmd.SetContext(logctx.With(cmd.Context(), f.Logger()))
			f.SetContext(cmd.Context())
			f.Command = strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
			if formats := cmd.Annotations[factory.FormatsAnnotation]; formats != "" {
				f.ExtraFormats = strings.Split(formats, ",")
			}
			return f.Validate()
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SuggestionsMinimumDistance = 2
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// The typed flag values of cmd/factory say in full what is wrong.
		var coded *exitcode.Error
		if errors.As(err, &coded) {
			return coded
		}
		return &exitcode.Error{Code: exitcode.Usage, Err: fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
	})
	f.BindFlags(root.PersistentFlags())

	root.AddGroup(
		&cobra.Group{ID: groupJetStream, Title: "JetStream commands:"},
		&cobra.Group{ID: groupServer, Title: "Local servers:"},
	)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add(groupJetStream, status.NewCmd(f), replay.NewCmd(f), stream.NewCmd(f))
	add(groupJetStream, kv.NewCmd(f))
	add(groupJetStream, dlq.NewCmd(f), events.NewCmd(f))
	add(groupJetStream, consumer.NewCmd(f), check.NewCmd(f))
	add(groupJetStream, migrate.NewCmd(f))
	add(groupJetStream, plan.NewCmdPlan(f), plan.NewCmdApply(f), plan.NewCmdExport(f), plan.NewCmdLint(f))
	add(groupServer, server.NewCmd(f), demo.NewCmd(f, runInProcess))
	root.AddCommand(
		version.NewCmd(f),
		completion.NewCmd(f.IO.Out),
		plugin.NewCmd(f, isBuiltin(root)),
		exitCodesTopic(),
	)

	usageErrorsFromArgs(root)

	defaultHelp := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c == root {
			addPluginCommands(root, f)
		}
		defaultHelp(c, args)
	})
	return root
}

// usageErrorsFromArgs makes every positional-argument error a usage error
// (exit 2), whichever cobra validator produced it.
func usageErrorsFromArgs(c *cobra.Command) {
	if validate := c.Args; validate != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := validate(cmd, args)
			var coded *exitcode.Error
			if err == nil || errors.As(err, &coded) {
				return err
			}
			return &exitcode.Error{Code: exitcode.Usage, Err: fmt.Errorf("%w (see '%s --help')", err, cmd.CommandPath())}
		}
	}
	for _, sub := range c.Commands() {
		usageErrorsFromArgs(sub)
	}
}

// exitCodesTopic is `jetctl help exit-codes`.
func exitCodesTopic() *cobra.Command {
	c := &cobra.Command{
		Use:   "exit-codes",
		Short: "the exit codes every jetctl command uses",
		Long:  exitcode.TableText(),
	}
	c.SetHelpFunc(func(c *cobra.Command, _ []string) { fmt.Fprint(c.OutOrStdout(), c.Long) })
	return c
}

// isBuiltin reports whether a command path names one of root's commands.
func isBuiltin(root *cobra.Command) plugin.IsBuiltin {
	return func(path []string) bool {
		c, rest, err := root.Find(path)
		return err == nil && c != root && len(rest) == 0
	}
}

// addPluginCommands lists the plugins on PATH in their own help group. It
// runs only when the root help is shown, so no other command pays for the
// PATH scan.
func addPluginCommands(root *cobra.Command, f *factory.Factory) {
	plugins := plugin.List(f.Getenv("PATH"), isBuiltin(root))
	seen := map[string]bool{}
	var cmds []*cobra.Command
	for _, p := range plugins {
		if len(p.Warnings) > 0 || seen[p.Name] {
			continue
		}
		seen[p.Name] = true
		cmds = append(cmds, &cobra.Command{
			Use:                strings.ReplaceAll(p.Name, " ", "-"),
			Short:              "plugin: " + p.Path,
			GroupID:            groupPlugins,
			DisableFlagParsing: true,
			Run:                func(*cobra.Command, []string) {},
		})
	}
	if len(cmds) == 0 {
		return
	}
	root.AddGroup(&cobra.Group{ID: groupPlugins, Title: "Plugins (jetctl-* on PATH):"})
	root.AddCommand(cmds...)
}

// GenerateCompletion writes the completion script for shell, as
// `jetctl completion SHELL` does, for the checked-in completions/.
func GenerateCompletion(shell string, w io.Writer) error {
	ios := &factory.IOStreams{In: strings.NewReader(""), Out: w, ErrOut: io.Discard}
	f := factory.New(ios)
	f.Getenv = func(string) string { return "" }
	return completion.Generate(NewRoot(f), shell, w)
}

// Main runs jetctl with the process's arguments and returns its exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ios := factory.System()
	defer startProfiles(ios)()
	err := run(ctx, os.Args[1:], ios, [3]*os.File{os.Stdin, os.Stdout, os.Stderr})
	if msg := exitcode.Message(err); msg != "" {
		fmt.Fprintf(ios.ErrOut, "jetctl: %s\n", msg)
	}
	return exitcode.Of(err)
}

// startProfiles writes a CPU profile of the whole command to the file
// $JETCTL_CPUPROFILE names, and at its end the allocations it made to
// $JETCTL_MEMPROFILE, for `go tool pprof` (bench/dlq.sh profiles a sweep
// and the `jetctl server` answering it this way); it returns what stops
// them.
func startProfiles(ios *factory.IOStreams) func() {
	stop := func() {}
	if path := os.Getenv("JETCTL_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(ios.ErrOut, "jetctl: warning: JETCTL_CPUPROFILE: %v\n", err)
		} else {
			stop = func() {
				pprof.StopCPUProfile()
				_ = f.Close()
			}
		}
	}
	path := os.Getenv("JETCTL_MEMPROFILE")
	if path == "" {
		return stop
	}
	return func() {
		stop()
		f, err := os.Create(path)
		if err == nil {
			err = pprof.Lookup("allocs").WriteTo(f, 0)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(ios.ErrOut, "jetctl: warning: JETCTL_MEMPROFILE: %v\n", err)
		}
	}
}

func run(ctx context.Context, args []string, ios *factory.IOStreams, files [3]*os.File) (err error) {
	// A permission violation anywhere stops the command at once, and is
	// what it reports (exit 1), whatever the command made of the
	// cancellation; unless the command reported the refusal itself with
	// a code of its own (check: UNKNOWN, 3).
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	ctx = natsconn.WithAbort(ctx, abort)
	defer func() {
		var perr, reported *natsconn.PermissionError
		var coded *exitcode.Error
		if errors.As(context.Cause(ctx), &perr) && !(errors.As(err, &coded) && errors.As(err, &reported)) {
			err = perr
		}
	}()
	f := factory.New(ios)
	f.Args = append([]string{"jetctl"}, args...)
	defer f.Close()
	root := NewRoot(f)
	if name, pluginArgs, globals, ok := findPlugin(root, f, args); ok {
		if err := root.PersistentFlags().Parse(globals); err != nil {
			return &exitcode.Error{Code: exitcode.Usage, Err: err}
		}
		r, err := f.Resolve()
		if err != nil {
			return err
		}
		return plugin.Run(name, pluginArgs, r.Env(), files)
	}
	root.SetArgs(args)
	return didYouMean(ctx, f, root.ExecuteContext(ctx))
}

// findPlugin returns the plugin that args name, when they name no built-in
// command: leading global flags are kept for jetctl, the first other
// argument starts the plugin's name.
func findPlugin(root *cobra.Command, f *factory.Factory, args []string) (string, []string, []string, bool) {
	globals, rest := splitGlobalFlags(root.PersistentFlags(), args)
	if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		return "", nil, nil, false
	}
	if c, _, err := root.Find(rest); err == nil && c != root {
		return "", nil, nil, false
	}
	if rest[0] == "help" || rest[0] == cobra.ShellCompRequestCmd || rest[0] == cobra.ShellCompNoDescRequestCmd {
		return "", nil, nil, false
	}
	path, pluginArgs, ok := plugin.Lookup(f.Getenv("PATH"), rest)
	return path, pluginArgs, globals, ok
}

// splitGlobalFlags separates the leading global flags (and their values)
// from the rest of args.
func splitGlobalFlags(fs *pflag.FlagSet, args []string) ([]string, []string) {
	i := 0
	for i < len(args) {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			break
		}
		name := strings.TrimLeft(a, "-")
		hasValue := strings.Contains(name, "=")
		name, _, _ = strings.Cut(name, "=")
		var fl *pflag.Flag
		if strings.HasPrefix(a, "--") {
			fl = fs.Lookup(name)
		} else if len(name) == 1 {
			fl = fs.ShorthandLookup(name)
		}
		if fl == nil {
			break
		}
		i++
		if !hasValue && fl.NoOptDefVal == "" && i < len(args) {
			i++
		}
	}
	return args[:i], args[i:]
}

// runInProcess runs a jetctl command line against url in this process, as
// `jetctl demo` does for each step. The user's contexts and NATS_*
// variables are ignored: the demo talks only to its own server.
func runInProcess(ctx context.Context, url string, args []string, out io.Writer) error {
	ios := &factory.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: out}
	f := factory.New(ios)
	f.Getenv = func(name string) string {
		if name == "NATS_URL" {
			return url
		}
		if strings.HasPrefix(name, "NATS_") {
			return ""
		}
		return os.Getenv(name)
	}
	f.Conn.NoContext = true
	f.Args = append([]string{"jetctl"}, args...)
	defer f.Close()
	root := NewRoot(f)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}
