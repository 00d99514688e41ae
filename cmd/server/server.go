// Package server implements `jetctl server`: an embedded JetStream
// nats-server in the foreground.
package server

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/pkg/embedded"
)

type options struct {
	store   string
	host    string
	port    int
	cluster int
	quiet   bool
}

// NewCmd returns `jetctl server`.
func NewCmd(f *factory.Factory) *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "run an embedded JetStream server in the foreground",
		Long: `Run a JetStream-enabled nats-server inside jetctl, in the foreground, until
SIGINT or SIGTERM. Once it accepts connections it prints the NATS_URL to use
on stdout (as a shell "export" line); its logs go to stderr.

Without --store the data lives in a fresh temporary directory that is
removed on exit. An existing --store directory is opened with its data, so a
copy of a production store can be inspected offline.

--cluster N runs N servers in this process, routed on loopback ports chosen
by the OS; the printed NATS_URL lists all of them. Stopping the server is
its normal end: it exits 0 as soon as the servers are down.

A --port that another process already listens on is exit 1 at once, with
nothing left on disk.`,
		Example: `  jetctl server
  jetctl server --store ./data --port 4333
  jetctl server --cluster 3 --port 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.port < 0 || o.port > 65535 {
				return exitcode.UsageErrorf("--port must be between 0 and 65535, got %d", o.port)
			}
			if o.cluster < 1 {
				return exitcode.UsageErrorf("--cluster must be at least 1, got %d", o.cluster)
			}
			c, err := embedded.Start(embedded.Config{
				StoreDir: o.store,
				Host:     o.host,
				Port:     o.port,
				Nodes:    o.cluster,
				Log:      !o.quiet,
			})
			var inUse *embedded.PortInUseError
			if errors.As(err, &inUse) && o.port != 0 {
				return fmt.Errorf("%w (--port 0 picks a free port)", err)
			}
			if err != nil {
				return err
			}
			defer c.Shutdown()
			fmt.Fprintf(f.IO.Out, "export NATS_URL=%s\n", c.ServerURLs())
			fmt.Fprintf(f.IO.ErrOut, "jetctl: JetStream server ready (store %s); stop with Ctrl-C\n", c.StoreDir())
			<-cmd.Context().Done()
			fmt.Fprintln(f.IO.ErrOut, "jetctl: shutting down")
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.store, "store", "", "JetStream store directory (default: a temporary directory removed on exit)")
	fl.StringVar(&o.host, "host", "127.0.0.1", "address to listen on")
	fl.IntVar(&o.port, "port", 4222, "client port of the first server; 0 picks a free port")
	fl.IntVar(&o.cluster, "cluster", 1, "number of servers to run as one cluster")
	fl.BoolVarP(&o.quiet, "quiet", "q", false, "do not print the servers' logs")
	return cmd
}
