package dlq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	pkgdlq "github.com/jetctl/jetctl/pkg/dlq"
)

type unlockOptions struct {
	streamFlags
	redrive bool
	dryRun  bool
	yes     bool
}

func newCmdUnlock(f *factory.Factory) *cobra.Command {
	o := &unlockOptions{}
	cmd := &cobra.Command{
		Use:   "unlock --stream S [--redrive] [--dry-run] --yes",
		Short: "remove the lease a dead sweep or redrive left behind",
		Long: `Remove the lease of a sweep (or with --redrive, of a redrive) that died
without releasing it, so the next run starts at once.

A sweep takes over a lease by itself when its holder ran on the same host
and its process is gone (e.g. after kill -9), or when the holder has not
renewed it for the holder's --lock-ttl. Unlock is for the other cases: a
holder on another host or container that is known to be dead. A holder
that is still running loses its lease and stops with exit 1 at its next
renewal.

Safety: unlock needs --yes when not run in a terminal; --dry-run shows who
holds the lease and changes nothing. No lease is no error (exit 0).`,
		Example: `  jetctl dlq unlock --stream ORDERS --dry-run
  jetctl dlq unlock --stream ORDERS --yes
  jetctl dlq unlock --stream ORDERS --redrive --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runUnlock(cmd.Context(), f, o) },
	}
	o.streamFlags.bind(cmd, f)
	fl := cmd.Flags()
	fl.BoolVar(&o.redrive, "redrive", false, "remove the redrive lease of the DLQ stream instead of the sweep lease")
	fl.BoolVar(&o.dryRun, "dry-run", false, "show who holds the lease; change nothing")
	fl.BoolVar(&o.yes, "yes", false, "do not ask for confirmation")
	return cmd
}

// unlockRecord is what unlock prints.
type unlockRecord struct {
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

func runUnlock(ctx context.Context, f *factory.Factory, o *unlockOptions) error {
	switch {
	case o.stream == "" && o.dlqStream == "":
		return exitcode.UsageErrorf("--stream is required")
	case o.dlqStream != "" && !o.redrive:
		return exitcode.UsageErrorf("--dlq-stream names a redrive lease: add --redrive, or use --stream for the sweep lease")
	}
	if err := o.streamFlags.validate(); err != nil {
		return err
	}
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	if !o.dryRun && !o.yes && !f.IO.CanPrompt() {
		return exitcode.UsageErrorf("unlock: pass --yes when not running in a terminal (or --dry-run to see who holds the lease); nothing was changed")
	}
	js, err := f.JetStream(ctx)
	if err != nil {
		return err
	}
	var key string
	if o.redrive {
		stream, err := oneDLQ(ctx, js, o.streamFlags)
		if err != nil {
			return err
		}
		key = pkgdlq.RedriveLockKey(stream)
	} else {
		if _, err := js.Stream(ctx, o.stream); err != nil {
			return fmt.Errorf("stream %q: %w", o.stream, err)
		}
		key = pkgdlq.SweepLockKey(o.stream)
	}
	lease, err := pkgdlq.GetLease(ctx, js, key)
	if errors.Is(err, pkgdlq.ErrNoLease) {
		fmt.Fprintf(f.IO.ErrOut, "jetctl: nobody holds lease %s; nothing to unlock\n", key)
		return nil
	}
	if err != nil {
		return err
	}
	rec := unlockRecord{Key: key, Holder: lease.Holder, PID: lease.PID, Since: lease.Since.UTC().Format(time.RFC3339),
		Renewed: lease.Renewed.UTC().Format(time.RFC3339), TTL: lease.TTL.String(), State: "held", Action: "would unlock"}
	switch {
	case lease.HolderGone():
		rec.State = "holder_gone"
	case lease.Expired(time.Now()):
		rec.State = "expired"
	}
	if !o.dryRun {
		if !o.yes {
			question := fmt.Sprintf("Remove lease %s held by %s (%s)?", key, lease.Describe(), strings.ReplaceAll(rec.State, "_", " "))
			if !f.IO.Confirm(question, factory.AcceptYes) {
				return exitcode.UsageErrorf("cancelled; nothing was changed")
			}
		}
		if err := pkgdlq.Unlock(ctx, js, lease); err != nil {
			return err
		}
		rec.Action = "unlocked"
	}
	return p.Print(rec, func() []output.Table {
		t := output.Table{Header: []string{"lease", "holder", "pid", "since", "renewed", "ttl", "state", "action"}}
		t.Row(rec.Key, rec.Holder, rec.PID, rec.Since, rec.Renewed, rec.TTL, strings.ReplaceAll(rec.State, "_", " "), rec.Action)
		return []output.Table{t}
	})
}
