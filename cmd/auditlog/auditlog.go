// Package auditlog is what every command that changes the server calls
// once its work is done: it builds the audit records of what the command
// did (pkg/audit) from the command's context (who, where, the command line)
// and publishes them on the command's connection. See docs/events.md,
// "Audit records".
package auditlog

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/nats-io/nuid"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/cmd/version"
	"github.com/jetctl/jetctl/pkg/audit"
)

// Write publishes one audit record per change, in order: none when there
// is no change (a dry run, a run that changed nothing), when audit records
// are off (--no-audit, JETCTL_NO_AUDIT), or when the command never
// connected. Where no stream captures the records nothing is written,
// silently. Any other failure is one warning on stderr; it never fails
// the command nor changes its exit code.
func Write(ctx context.Context, f *factory.Factory, changes ...audit.Change) {
	if len(changes) == 0 || f.NoAudit {
		return
	}
	js := f.Connected()
	if js == nil {
		return
	}
	origin, m := Origin(f)
	now := time.Now()
	records := make([]audit.Record, len(changes))
	for i, c := range changes {
		c.Err = message(c.Err)
		records[i] = origin.Record(c, nuid.Next(), now, m)
	}
	timeout := audit.DefaultTimeout
	if f.Conn.Timeout > 0 && f.Conn.Timeout < timeout {
		timeout = f.Conn.Timeout
	}
	n, err := audit.Publish(ctx, js, records, timeout)
	f.Logger().Debug("audit records", "stored", n, "records", len(records))
	if err != nil {
		fmt.Fprintf(f.IO.ErrOut, "jetctl: warning: audit record not written: %s (--no-audit or JETCTL_NO_AUDIT=1 turns audit records off)\n",
			output.Escape(err.Error()))
	}
}

// Origin is who runs the command and how, with the masker of its secrets:
// the values the connection really uses (flags, NATS_* variables, the
// natscli context) besides what the command line's own form shows.
func Origin(f *factory.Factory) (audit.Origin, audit.Masker) {
	var m audit.Masker
	natsUser := ""
	if r := f.Resolved(); r != nil {
		m.Secrets = append(m.Secrets, r.Password, r.Token, r.NKey)
		var pass string
		natsUser, pass, _ = strings.Cut(r.User, ":")
		m.Secrets = append(m.Secrets, pass)
		user, secrets := urlCredentials(r.Server)
		m.Secrets = append(m.Secrets, secrets...)
		if natsUser == "" {
			natsUser = user
		}
	}
	args := f.Args
	if args == nil {
		args = os.Args
	}
	host, _ := os.Hostname()
	return audit.Origin{
		Command:  f.Command,
		User:     osUser(),
		NATSUser: natsUser,
		Host:     host,
		Version:  version.Get().Version,
		Args:     m.Args(args),
	}, m
}

// osUser is the operating system user's name.
func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

// message is the error a record carries: the one line the user sees
// (without "jetctl: "), or for an error that prints nothing what its exit
// code means.
func message(err error) error {
	if err == nil {
		return nil
	}
	if msg := exitcode.Message(err); msg != "" {
		return errors.New(msg)
	}
	if exitcode.Of(err) == exitcode.Interrupted {
		return errors.New("interrupted")
	}
	return fmt.Errorf("exit %d", exitcode.Of(err))
}

// urlCredentials are the user name of the first server URL
// (nats://user:pw@host) and the secrets of every URL: the passwords, and
// the tokens (nats://token@host), which are no user names.
func urlCredentials(servers string) (user string, secrets []string) {
	for i, s := range strings.Split(servers, ",") {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || u.User == nil {
			continue
		}
		pass, hasPass := u.User.Password()
		if !hasPass {
			secrets = append(secrets, u.User.Username())
			continue
		}
		secrets = append(secrets, pass)
		if i == 0 {
			user = u.User.Username()
		}
	}
	return user, secrets
}
