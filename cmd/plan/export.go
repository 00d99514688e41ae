package plan

import (
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	pkgplan "github.com/jetctl/jetctl/pkg/plan"
)

// NewCmdExport returns `jetctl export`.
func NewCmdExport(f *factory.Factory) *cobra.Command {
	o := pkgplan.ExportOptions{}
	c := &cobra.Command{
		Use:   "export [--stream NAME]... [--kv BUCKET]... [--object-store NAME]... [--all]",
		Short: "write live streams, consumers and buckets as a plan file",
		Long: `Write live resources as a YAML plan file on stdout: streams with their
durable consumers nested under them, KV buckets and object stores. Server
defaults and metadata (_nats.*, io.jetctl.*) are left out; durations and
sizes are written as 7d and 1GiB. Planning the exported file against the
same server shows no changes.

Export only reads. -o json writes the same document as JSON (also a plan
file: YAML reads JSON), and --jq runs on that JSON; -o table is refused.`,
		Example: `  jetctl export --all > live.yaml
  jetctl export --stream ORDERS --kv config
  jetctl export --all | jetctl plan -f /dev/stdin
  jetctl export --all --jq '.streams[].name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !o.All && len(o.Streams)+len(o.KV)+len(o.ObjectStores) == 0 {
				return exitcode.UsageErrorf("choose what to export: --stream, --kv, --object-store or --all")
			}
			p, err := f.Printer("yaml")
			if err != nil {
				return err
			}
			if p.Format == "table" {
				return exitcode.UsageErrorf("export writes a plan file: -o table is not supported (use yaml or json)")
			}
			o.LeaderWait = f.Conn.Timeout
			js, err := f.JetStream(cmd.Context())
			if err != nil {
				return err
			}
			if p.Format == "yaml" && f.Output.JQ == "" {
				// The YAML as a person would write it: flow-style lists,
				// no quotes where none are needed.
				data, err := pkgplan.Export(cmd.Context(), js, o)
				if err != nil {
					return err
				}
				_, err = f.IO.Out.Write(data)
				return err
			}
			data, err := pkgplan.ExportJSON(cmd.Context(), js, o)
			if err != nil {
				return err
			}
			return p.Print(data, nil)
		},
	}
	fl := c.Flags()
	fl.StringArrayVar(&o.Streams, "stream", nil, "stream to export, with its consumers (repeatable)")
	fl.StringArrayVar(&o.KV, "kv", nil, "KV bucket to export (repeatable)")
	fl.StringArrayVar(&o.ObjectStores, "object-store", nil, "object store to export (repeatable)")
	fl.BoolVar(&o.All, "all", false, "export every stream, KV bucket and object store")
	return c
}
