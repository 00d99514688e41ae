package dlq

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/lease"
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
	p, js, err := lease.Begin(ctx, f, o.dryRun, o.yes)
	if err != nil {
		return err
	}
	key, stream := "", o.stream
	if o.redrive {
		dlqStream, err := oneDLQ(ctx, js, o.streamFlags)
		if err != nil {
			return err
		}
		key = pkgdlq.RedriveLockKey(dlqStream)
		if stream == "" {
			stream = dlqStream
		}
	} else {
		if _, err := js.Stream(ctx, o.stream); err != nil {
			return fmt.Errorf("stream %q: %w", o.stream, err)
		}
		key = pkgdlq.SweepLockKey(o.stream)
	}
	return lease.Unlock(ctx, f, p, js, stream, key, o.dryRun, o.yes)
}
