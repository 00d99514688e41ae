// Package demo implements `jetctl demo`: an embedded server in a temporary
// directory and a walk through jetctl's capabilities on the ORDERS pipeline.
// The steps are listed in steps.go; each capability adds its own there.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/pkg/embedded"
	"github.com/jetctl/jetctl/pkg/natsconn"
)

// Runner runs a jetctl command line in this process against url, writing its
// output to out.
type Runner func(ctx context.Context, url string, args []string, out io.Writer) error

// Env is what a step works with.
type Env struct {
	// URL is the demo server's client URL.
	URL string
	// JS is a JetStream handle on the demo server, for steps written in Go.
	JS  jetstream.JetStream
	out io.Writer
	run Runner
	// tmp is a scratch directory for files steps write; "{tmp}" in a
	// step's arguments stands for it.
	tmp string
}

// Step is one step of the demo: a jetctl command line, or Go code standing
// for the user's applications (a publisher, a worker).
type Step struct {
	Title string
	// Args is a jetctl command line (without "jetctl") to show and run.
	Args []string
	// Do runs Go code and returns a one-line result.
	Do func(ctx context.Context, env *Env) (string, error)
	// Exit is the exit code the command line ends with, when it is not 0
	// (check's nagios codes): the step fails with any other.
	Exit int
}

// NewCmd returns `jetctl demo`.
func NewCmd(f *factory.Factory, run Runner) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "walk through jetctl on an embedded server with the ORDERS pipeline",
		Long: `Start a JetStream server inside jetctl, in a temporary directory, and walk
through jetctl's capabilities on realistic data: the ORDERS pipeline from
examples/. Each step prints the command it runs and its result. Nothing is
left behind: the server stops and its directory is removed, whatever
happens.`,
		Example: `  jetctl demo
  go run . demo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return Run(cmd.Context(), f.IO.Out, run, Steps())
		},
	}
}

// Run starts the server and runs steps in order, stopping at the first
// failure.
func Run(ctx context.Context, out io.Writer, run Runner, steps []Step) error {
	start := time.Now()
	srv, err := embedded.Start(embedded.Config{Port: 0})
	if err != nil {
		return err
	}
	defer srv.Shutdown()
	fmt.Fprintf(out, "jetctl demo: JetStream server at %s (store %s)\n", srv.URL(), srv.StoreDir())

	r, err := natsconn.Resolve(natsconn.Options{Server: srv.URL(), NoContext: true})
	if err != nil {
		return err
	}
	nc, err := r.Connect(ctx, "jetctl-demo")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := r.JetStream(nc)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "jetctl-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	env := &Env{URL: srv.URL(), JS: js, out: out, run: run, tmp: tmp}

	for i, s := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		fmt.Fprintf(out, "\n[%d/%d] %s\n", i+1, len(steps), s.Title)
		if err := env.runStep(ctx, s); err != nil {
			return fmt.Errorf("demo step %d (%s): %w", i+1, s.Title, err)
		}
	}
	fmt.Fprintf(out, "\ndemo finished: %d steps in %s; server stopped, temporary files removed\n",
		len(steps), time.Since(start).Round(time.Millisecond))
	return nil
}

func (env *Env) runStep(ctx context.Context, s Step) error {
	if s.Do != nil {
		result, err := s.Do(ctx, env)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.out, "      %s\n", result)
	}
	if len(s.Args) > 0 {
		args := make([]string, len(s.Args))
		for i, a := range s.Args {
			args[i] = strings.ReplaceAll(a, "{tmp}", env.tmp)
		}
		fmt.Fprintf(env.out, "$ jetctl %s\n", shellJoin(args))
		err := env.run(ctx, env.URL, args, env.out)
		if s.Exit == 0 {
			return err
		}
		if code := exitcode.Of(err); code != s.Exit {
			return fmt.Errorf("jetctl %s exited %d, want %d (%v)", shellJoin(args), code, s.Exit, err)
		}
		fmt.Fprintf(env.out, "(exit %d)\n", s.Exit)
	}
	return nil
}

// shellJoin quotes arguments the way a user would type them.
func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@") == "" {
			quoted[i] = a
			continue
		}
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}
