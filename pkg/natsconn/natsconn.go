// Package natsconn resolves a NATS connection the way natscli does: explicit
// settings first, then the natscli context (~/.config/nats/context, or
// $XDG_CONFIG_HOME/nats/context), then the default URL. Settings taken from
// the environment are the caller's business: they arrive here as explicit
// values.
package natsconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/jsm.go/natscontext"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/errkind"
)

// DefaultTimeout bounds connecting and each JetStream API request.
const DefaultTimeout = 5 * time.Second

// Options are the connection settings a user gave, by flag or environment.
// Empty fields are filled from the context.
type Options struct {
	Server      string
	Context     string
	Creds       string
	NKey        string
	User        string
	Password    string
	Token       string
	TLSCert     string
	TLSKey      string
	TLSCA       string
	TLSFirst    bool
	JSDomain    string
	JSAPIPrefix string
	Timeout     time.Duration
	// NoContext ignores natscli contexts altogether, e.g. for a server
	// jetctl started itself.
	NoContext bool
}

// ErrContext marks a problem with the selected natscli context (missing,
// unreadable) or another connection setting (a credentials or nkey file
// that is missing or malformed: see SettingError), which is bad input
// rather than a connection failure.
var ErrContext = errkind.New(errkind.Invalid, "nats context")

// Resolved is a connection whose settings have been merged with the context.
type Resolved struct {
	// Options holds the effective settings after the merge.
	Options
	ctx *natscontext.Context
}

// Resolve merges o with its natscli context: the one o names, else the
// selected one, else none.
func Resolve(o Options) (*Resolved, error) {
	var copts []natscontext.Option
	add := func(v string, f func(string) natscontext.Option) {
		if v != "" {
			copts = append(copts, f(v))
		}
	}
	add(o.Server, natscontext.WithServerURL)
	add(o.Creds, natscontext.WithCreds)
	add(o.NKey, natscontext.WithNKey)
	add(o.User, natscontext.WithUser)
	add(o.Password, natscontext.WithPassword)
	add(o.Token, natscontext.WithToken)
	add(o.TLSCert, natscontext.WithCertificate)
	add(o.TLSKey, natscontext.WithKey)
	add(o.TLSCA, natscontext.WithCA)
	add(o.JSDomain, natscontext.WithJSDomain)
	add(o.JSAPIPrefix, natscontext.WithJSAPIPrefix)
	if o.TLSFirst {
		copts = append(copts, natscontext.WithTLSHandshakeFirst())
	}
	nctx, err := natscontext.New(o.Context, !o.NoContext, copts...)
	if err != nil {
		name := o.Context
		if errors.Is(err, natscontext.ErrNotFound) {
			return nil, fmt.Errorf("%w %q: not found (known: %s)", ErrContext, name, knownContexts())
		}
		return nil, fmt.Errorf("%w %q: %v", ErrContext, name, err)
	}
	r := &Resolved{ctx: nctx, Options: Options{
		Server:      nctx.ServerURL(),
		Context:     nctx.Name,
		Creds:       nctx.Creds(),
		NKey:        nctx.NKey(),
		User:        nctx.User(),
		Password:    nctx.Password(),
		Token:       nctx.Token(),
		TLSCert:     nctx.Certificate(),
		TLSKey:      nctx.Key(),
		TLSCA:       nctx.CA(),
		TLSFirst:    nctx.TLSHandshakeFirst(),
		JSDomain:    nctx.JSDomain(),
		JSAPIPrefix: nctx.JSAPIPrefix(),
		Timeout:     o.Timeout,
	}}
	if r.Timeout <= 0 {
		r.Timeout = DefaultTimeout
	}
	if err := r.checkFiles(); err != nil {
		return nil, err
	}
	return r, nil
}

func knownContexts() string {
	names := natscontext.KnownContexts()
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// ConnectError is returned when no server could be reached.
type ConnectError struct {
	URL string
	Err error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("cannot connect to %s: %v", e.URL, e.Err)
}

func (e *ConnectError) Unwrap() error { return e.Err }

// Connect opens a connection named name. It gives up after the timeout. A
// permission violation later on is the connection's Refusal (see
// RefusalOf) and calls the abort function of ctx, if any (see WithAbort).
func (r *Resolved) Connect(ctx context.Context, name string) (*nats.Conn, error) {
	ref := newRefusal()
	opts, err := r.ctx.NATSOptions(append([]nats.Option{nats.Name(name), nats.Timeout(r.Timeout)}, handlers(ctx, ref)...)...)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrContext, r.Context, err)
	}
	type result struct {
		nc  *nats.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := nats.Connect(r.Server, opts...)
		done <- result{nc, err}
	}()
	select {
	case <-ctx.Done():
		go func() {
			if res := <-done; res.nc != nil {
				res.nc.Close()
			}
		}()
		return nil, ctx.Err()
	case res := <-done:
		if res.err != nil {
			return nil, &ConnectError{URL: RedactURL(r.Server), Err: r.explain(res.err)}
		}
		refusals.Store(res.nc, ref)
		return res.nc, nil
	}
}

// explain replaces nats.go's "no servers available" with the reason the
// first server refused, which is what a user needs to see.
func (r *Resolved) explain(err error) error {
	if !errors.Is(err, nats.ErrNoServers) {
		return err
	}
	first := strings.TrimSpace(strings.Split(r.Server, ",")[0])
	u, perr := url.Parse(first)
	if perr != nil || u.Host == "" {
		return err
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "4222")
	}
	conn, derr := net.DialTimeout("tcp", host, r.Timeout)
	if derr != nil {
		var opErr *net.OpError
		if errors.As(derr, &opErr) && opErr.Err != nil {
			var sysErr interface{ Unwrap() error }
			if errors.As(opErr.Err, &sysErr) && sysErr.Unwrap() != nil {
				return sysErr.Unwrap()
			}
			return opErr.Err
		}
		return derr
	}
	conn.Close()
	return err
}

// JetStream returns a JetStream handle honouring the domain or API prefix,
// with any further options (e.g. a client trace).
func (r *Resolved) JetStream(nc *nats.Conn, extra ...jetstream.JetStreamOpt) (jetstream.JetStream, error) {
	opts := append([]jetstream.JetStreamOpt{jetstream.WithDefaultTimeout(r.Timeout)}, extra...)
	switch {
	case r.JSDomain != "":
		return jetstream.NewWithDomain(nc, r.JSDomain, opts...)
	case r.JSAPIPrefix != "":
		return jetstream.NewWithAPIPrefix(nc, r.JSAPIPrefix, opts...)
	default:
		return jetstream.New(nc, opts...)
	}
}

// Env is the resolved connection as the NATS_* variables natscli reads, for
// plugins. Only settings that are set appear.
func (r *Resolved) Env() []string {
	var env []string
	add := func(k, v string) {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	add("NATS_URL", r.Server)
	add("NATS_CONTEXT", r.Context)
	add("NATS_CREDS", r.Creds)
	add("NATS_NKEY", r.NKey)
	add("NATS_USER", r.User)
	add("NATS_PASSWORD", r.Password)
	add("NATS_TOKEN", r.Token)
	add("NATS_CERT", r.TLSCert)
	add("NATS_KEY", r.TLSKey)
	add("NATS_CA", r.TLSCA)
	add("NATS_JS_DOMAIN", r.JSDomain)
	add("NATS_JS_API_PREFIX", r.JSAPIPrefix)
	add("NATS_TIMEOUT", r.Timeout.String())
	if r.TLSFirst {
		add("NATS_TLSFIRST", "true")
	}
	return env
}

// RedactURL hides passwords and tokens in a comma-separated server list.
func RedactURL(servers string) string {
	parts := strings.Split(servers, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		u, err := url.Parse(p)
		if err != nil || u.User == nil {
			parts[i] = p
			continue
		}
		if _, hasPass := u.User.Password(); hasPass {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		} else {
			u.User = url.User("xxxxx")
		}
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}
