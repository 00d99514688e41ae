// Package version implements `jetctl version`.
package version

import (
	"runtime"
	"runtime/debug"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
)

// Info is what `jetctl version -o json` prints.
type Info struct {
	Version       string `json:"version"`
	Commit        string `json:"commit"`
	NatsGoVersion string `json:"nats_go_version"`
	NatsServer    string `json:"embedded_server_version"`
	GoVersion     string `json:"go_version"`
	Platform      string `json:"platform"`
}

// Get reads the version from the build info; it does no I/O.
func Get() Info {
	info := Info{
		Version:       "(devel)",
		Commit:        "unknown",
		NatsGoVersion: nats.Version,
		NatsServer:    server.VERSION,
		GoVersion:     runtime.Version(),
		Platform:      runtime.GOOS + "/" + runtime.GOARCH,
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	if v := bi.Main.Version; v != "" {
		info.Version = v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			info.Commit = s.Value
		}
	}
	return info
}

// NewCmd returns `jetctl version`.
func NewCmd(f *factory.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version of jetctl and the libraries it is built with",
		Example: `  jetctl version
  jetctl version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := f.Printer("table")
			if err != nil {
				return err
			}
			info := Get()
			return p.Print(info, func() []output.Table {
				t := output.Table{Header: []string{"component", "version"}}
				t.Row("jetctl", info.Version)
				t.Row("commit", info.Commit)
				t.Row("nats.go", info.NatsGoVersion)
				t.Row("nats-server (embedded)", info.NatsServer)
				t.Row("go", info.GoVersion+" "+info.Platform)
				return []output.Table{t}
			})
		},
	}
}
