// Package factory gives commands what they share: the IO streams, the
// connection (made lazily, on first use), the output printer and the logger.
package factory

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/natsconn"
	"github.com/jetctl/jetctl/pkg/units"
)

// Factory is built once per process by cmd.Main and handed to every command.
type Factory struct {
	IO *IOStreams
	// Conn holds the connection flags, defaulted from NATS_* variables.
	Conn   natsconn.Options
	Output output.Options
	// Verbose and Trace are the logging flags.
	Verbose bool
	Trace   bool
	// Getenv reads the environment; tests replace it.
	Getenv func(string) string
	// NoAudit turns off the audit records of the commands that change the
	// server (--no-audit, $JETCTL_NO_AUDIT).
	NoAudit bool
	// Args is the command line as given (jetctl first), for audit
	// records; Main and the demo set it (os.Args when not set).
	Args []string
	// Command is the running command's path without "jetctl" ("consumer
	// rewind"); the root sets it before the command runs.
	Command string
	// ExtraFormats are the -o values the running command renders itself
	// besides output.Formats (check's nagios and prometheus); the root
	// sets them from the command's FormatsAnnotation.
	ExtraFormats []string

	ctx      context.Context
	logger   *slog.Logger
	resolved *natsconn.Resolved
	nc       *nats.Conn
	js       jetstream.JetStream
	closers  []func()
}

// New returns a Factory on the given streams.
func New(ios *IOStreams) *Factory {
	return &Factory{IO: ios, Getenv: os.Getenv}
}

// BindFlags adds the global connection, output and logging flags, with
// their defaults taken from the same environment variables natscli reads.
func (f *Factory) BindFlags(fs *pflag.FlagSet) {
	env := func(name, def string) string {
		if v := f.Getenv(name); v != "" {
			return v
		}
		return def
	}
	timeout := natsconn.DefaultTimeout
	if v := f.Getenv("NATS_TIMEOUT"); v != "" {
		if d, err := units.ParseDuration(v); err == nil {
			timeout = d
		}
	}
	tlsFirst, _ := strconv.ParseBool(f.Getenv("NATS_TLSFIRST"))
	noAudit, _ := strconv.ParseBool(f.Getenv("JETCTL_NO_AUDIT"))
	c := &f.Conn
	fs.StringVarP(&c.Server, "server", "s", env("NATS_URL", ""), "NATS server URLs, comma separated ($NATS_URL)")
	fs.StringVar(&c.Context, "context", env("NATS_CONTEXT", ""), "natscli context to use ($NATS_CONTEXT)")
	fs.StringVar(&c.Creds, "creds", env("NATS_CREDS", ""), "user credentials file ($NATS_CREDS)")
	fs.StringVar(&c.NKey, "nkey", env("NATS_NKEY", ""), "user NKey seed file ($NATS_NKEY)")
	fs.StringVar(&c.User, "user", env("NATS_USER", ""), "user name ($NATS_USER)")
	fs.StringVar(&c.Password, "password", env("NATS_PASSWORD", ""), "password ($NATS_PASSWORD)")
	fs.StringVar(&c.Token, "token", env("NATS_TOKEN", ""), "authentication token ($NATS_TOKEN)")
	fs.StringVar(&c.TLSCert, "tlscert", env("NATS_CERT", ""), "TLS client certificate file ($NATS_CERT)")
	fs.StringVar(&c.TLSKey, "tlskey", env("NATS_KEY", ""), "TLS client key file ($NATS_KEY)")
	fs.StringVar(&c.TLSCA, "tlsca", env("NATS_CA", ""), "TLS certificate authority file ($NATS_CA)")
	fs.BoolVar(&c.TLSFirst, "tlsfirst", tlsFirst, "perform the TLS handshake before the server greeting ($NATS_TLSFIRST)")
	fs.StringVar(&c.JSDomain, "js-domain", env("NATS_JS_DOMAIN", ""), "JetStream domain ($NATS_JS_DOMAIN)")
	fs.StringVar(&c.JSAPIPrefix, "js-api-prefix", env("NATS_JS_API_PREFIX", ""), "JetStream API subject prefix ($NATS_JS_API_PREFIX)")
	DurationVar(fs, &c.Timeout, "timeout", timeout, "time to wait for the server and for each request ($NATS_TIMEOUT)")

	fs.StringVarP(&f.Output.Format, "output", "o", "", "output format: table, json, jsonl or yaml")
	fs.StringVar(&f.Output.JQ, "jq", "", "jq program applied to the JSON output")
	fs.BoolVar(&f.Verbose, "verbose", false, "log what jetctl does to stderr")
	fs.BoolVar(&f.Trace, "trace", false, "log jetctl's JetStream API requests and replies to stderr (values masked)")
	fs.BoolVar(&f.NoAudit, "no-audit", noAudit, "write no audit record of what this command changes on the server ($JETCTL_NO_AUDIT=1)")
}

// Logger logs to stderr: warnings always, debug with --verbose or --trace.
func (f *Factory) Logger() *slog.Logger {
	if f.logger == nil {
		level := slog.LevelWarn
		if f.Verbose || f.Trace {
			level = slog.LevelDebug
		}
		f.logger = slog.New(slog.NewTextHandler(f.IO.ErrOut, &slog.HandlerOptions{Level: level}))
	}
	return f.logger
}

// Resolve merges the connection flags with the natscli context.
func (f *Factory) Resolve() (*natsconn.Resolved, error) {
	if f.resolved == nil {
		r, err := natsconn.Resolve(f.Conn)
		if err != nil {
			return nil, err
		}
		f.resolved = r
	}
	return f.resolved, nil
}

// NATS connects on first use and returns the connection.
func (f *Factory) NATS(ctx context.Context) (*nats.Conn, error) {
	if f.nc != nil {
		return f.nc, nil
	}
	r, err := f.Resolve()
	if err != nil {
		return nil, err
	}
	f.Logger().Debug("connecting", "server", natsconn.RedactURL(r.Server), "context", r.Context)
	nc, err := r.Connect(ctx, "jetctl")
	if err != nil {
		return nil, err
	}
	f.nc = nc
	f.closers = append(f.closers, nc.Close)
	return nc, nil
}

// JetStream connects on first use and returns the JetStream API.
func (f *Factory) JetStream(ctx context.Context) (jetstream.JetStream, error) {
	if f.js != nil {
		return f.js, nil
	}
	nc, err := f.NATS(ctx)
	if err != nil {
		return nil, err
	}
	var opts []jetstream.JetStreamOpt
	if f.Trace {
		opts = append(opts, jetstream.WithClientTrace(apiTrace(f.Logger())))
	}
	js, err := f.resolved.JetStream(nc, opts...)
	if err != nil {
		return nil, err
	}
	f.js = js
	return js, nil
}

// Connected returns the JetStream API when the command has connected,
// else nil; it never connects: for what a command writes after its work
// (audit records), which a command that never connected has no cause for.
func (f *Factory) Connected() jetstream.JetStream { return f.js }

// Resolved returns the connection settings once resolved (by connecting),
// else nil.
func (f *Factory) Resolved() *natsconn.Resolved { return f.resolved }

// DropClosedConnection forgets a connection that nats.go has closed for
// good (it gave up reconnecting), so that the next use connects afresh:
// for commands that run for days (check --listen).
func (f *Factory) DropClosedConnection() {
	if f.nc != nil && f.nc.IsClosed() {
		f.nc, f.js = nil, nil
	}
}

// SetContext records the running command's context (cancelled by SIGINT
// and SIGTERM); the root command sets it before any command runs.
func (f *Factory) SetContext(ctx context.Context) { f.ctx = ctx }

// Context is the running command's context: what stops jq programs and
// other long work when the command is interrupted.
func (f *Factory) Context() context.Context {
	if f.ctx == nil {
		return context.Background()
	}
	return f.ctx
}

// Printer returns the output printer, whose --jq program runs with the
// command's context; defaultFormat applies when -o is not given.
func (f *Factory) Printer(defaultFormat string) (*output.Printer, error) {
	p, err := output.NewPrinter(f.Output, f.IO.Out, f.IO.ColorOut(), defaultFormat)
	if err != nil {
		return nil, err
	}
	p.Context = f.Context()
	return p, nil
}

// Validate checks the global flags that can be checked without a server,
// so that bad input fails before anything is contacted.
func (f *Factory) Validate() error {
	if f.Output.JQ != "" {
		if _, err := output.CompileJQ(f.Output.JQ); err != nil {
			return err
		}
	}
	if f.Output.Format != "" && !slices.Contains(f.ExtraFormats, f.Output.Format) {
		if _, err := output.NewPrinter(output.Options{Format: f.Output.Format}, nil, false, ""); err != nil {
			if len(f.ExtraFormats) > 0 {
				return exitcode.UsageErrorf("invalid output format %q: use one of %s", f.Output.Format,
					strings.Join(append(slices.Clone(output.Formats), f.ExtraFormats...), ", "))
			}
			return err
		}
	}
	if f.Conn.Timeout <= 0 {
		return exitcode.UsageErrorf("--timeout must be positive, got %s", f.Conn.Timeout)
	}
	return nil
}

// FormatsAnnotation is the cobra annotation with which a command names the
// -o values it renders itself, comma separated (see ExtraFormats).
const FormatsAnnotation = "jetctl-formats"

// OnClose registers cleanup to run when the command ends.
func (f *Factory) OnClose(fn func()) { f.closers = append(f.closers, fn) }

// Close releases what the command opened, newest first.
func (f *Factory) Close() {
	for i := len(f.closers) - 1; i >= 0; i-- {
		f.closers[i]()
	}
	f.closers = nil
	f.nc, f.js = nil, nil
}
