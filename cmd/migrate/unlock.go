package migrate

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/lease"
	"github.com/jetctl/jetctl/pkg/jsapi"
	pkgmigrate "github.com/jetctl/jetctl/pkg/migrate"
)

type unlockOptions struct {
	stream string
	dryRun bool
	yes    bool
}

func newCmdUnlock(f *factory.Factory) *cobra.Command {
	o := &unlockOptions{}
	cmd := &cobra.Command{
		Use:   "unlock --stream S [--dry-run] --yes",
		Short: "remove the lease a dead migration left behind",
		Long: `Remove the lease of a migration of stream S that died without releasing it
on another host, so that the next run starts at once. A run takes over by
itself a lease whose holder ran on the same host and is gone (kill -9), or
that was not renewed for 30s. A holder still running stops at its next
renewal.

Safety: needs --yes when not run in a terminal; --dry-run shows who holds
the lease and changes nothing. No lease is no error (exit 0).`,
		Example: `  jetctl migrate unlock --stream ORDERS --dry-run
  jetctl migrate unlock --stream ORDERS --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runUnlock(cmd.Context(), f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.stream, "stream", "", "the stream being migrated")
	fl.BoolVar(&o.dryRun, "dry-run", false, "show who holds the lease; change nothing")
	fl.BoolVar(&o.yes, "yes", false, "do not ask for confirmation")
	return cmd
}

func runUnlock(ctx context.Context, f *factory.Factory, o *unlockOptions) error {
	if o.stream == "" {
		return exitcode.UsageErrorf("--stream is required")
	}
	if err := jsapi.ValidateStreamName(o.stream); err != nil {
		return exitcode.UsageErrorf("--stream: %v", err)
	}
	p, js, err := lease.Begin(ctx, f, o.dryRun, o.yes)
	if err != nil {
		return err
	}
	return lease.Unlock(ctx, f, p, js, o.stream, pkgmigrate.LockKey(o.stream), o.dryRun, o.yes)
}
