// Package lease is the part `jetctl dlq unlock` and `jetctl migrate
// unlock` share: showing who holds a lease of jetctl's lease bucket and
// removing it.
package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/cmd/auditlog"
	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/audit"
	pkglease "github.com/jetctl/jetctl/pkg/lease"
)

// Record is what an unlock prints.
type Record struct {
	Key     string `json:"key"`
	Holder  string `json:"holder"`
	PID     int    `json:"pid"`
	Since   string `json:"since"`
	Renewed string `json:"renewed"`
	TTL     string `json:"ttl"`
	// State: held, expired, or holder_gone (same host, process gone).
	State  string `json:"state"`
	Action string `json:"action"`
}

// Begin makes what an unlock needs once its flags are valid: the printer
// and the connection. Without --yes or --dry-run off a terminal it is a
// usage error, before connecting.
func Begin(ctx context.Context, f *factory.Factory, dryRun, yes bool) (*output.Printer, jetstream.JetStream, error) {
	p, err := f.Printer("table")
	if err != nil {
		return nil, nil, err
	}
	if !dryRun && !yes && !f.IO.CanPrompt() {
		return nil, nil, exitcode.UsageErrorf("unlock: pass --yes when not running in a terminal (or --dry-run to see who holds the lease); nothing was changed")
	}
	js, err := f.JetStream(ctx)
	if err != nil {
		return nil, nil, err
	}
	return p, js, nil
}

// Unlock shows who holds the lease key (of a sweep, redrive or migration
// of stream) and, unless dryRun, removes it, asking first unless yes. No
// lease is no error: it says so on stderr.
func Unlock(ctx context.Context, f *factory.Factory, p *output.Printer, js jetstream.JetStream, stream, key string, dryRun, yes bool) error {
	lease, err := pkglease.Get(ctx, js, key)
	if errors.Is(err, pkglease.ErrNone) {
		fmt.Fprintf(f.IO.ErrOut, "jetctl: nobody holds lease %s; nothing to unlock\n", key)
		return nil
	}
	if err != nil {
		return err
	}
	rec := Record{Key: key, Holder: lease.Holder, PID: lease.PID, Since: lease.Since.UTC().Format(time.RFC3339),
		Renewed: lease.Renewed.UTC().Format(time.RFC3339), TTL: lease.TTL.String(), State: "held", Action: "would unlock"}
	switch {
	case lease.HolderGone():
		rec.State = "holder_gone"
	case lease.Expired():
		rec.State = "expired"
	}
	if !dryRun {
		if !yes {
			question := fmt.Sprintf("Remove lease %s held by %s (%s)?", key, lease.Describe(), strings.ReplaceAll(rec.State, "_", " "))
			if !f.IO.Confirm(question, factory.AcceptYes) {
				return exitcode.UsageErrorf("cancelled; nothing was changed")
			}
		}
		if err := pkglease.Remove(ctx, js, lease); err != nil {
			return err
		}
		rec.Action = "unlocked"
		auditlog.Write(ctx, f, audit.Change{Stream: stream, Action: "unlock",
			Summary: fmt.Sprintf("removed lease %s held by %s (%s)", key, lease.Describe(), strings.ReplaceAll(rec.State, "_", " "))})
	}
	return p.Print(rec, func() []output.Table {
		t := output.Table{Header: []string{"lease", "holder", "pid", "since", "renewed", "ttl", "state", "action"}}
		t.Row(rec.Key, rec.Holder, rec.PID, rec.Since, rec.Renewed, rec.TTL, strings.ReplaceAll(rec.State, "_", " "), rec.Action)
		return []output.Table{t}
	})
}
