package kv

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/cmd/tailflags"
	"github.com/jetctl/jetctl/pkg/kv"
)

// tailFlags are `kv tail`'s flags as given.
type tailFlags struct {
	history, updatesOnly, deletes bool
	filter                        string
	since                         time.Duration
	fromRev                       uint64
	tail                          tailflags.Flags
}

func newTailCmd(f *factory.Factory) *cobra.Command {
	var fl tailFlags
	c := &cobra.Command{
		Use:   "tail BUCKET [KEY_PATTERN]...",
		Short: "follow a bucket as JSON lines, with a jq filter, --count and --wait",
		Long: `Follow a bucket and print each revision as a JSON line:

  {"bucket":"cfg","key":"deploy.status","revision":7,"op":"PUT",
   "time":"2025-06-01T12:00:00Z","size":18,"value":{"state":"ready"}}

value is the JSON document when the value is JSON, else the text; a binary
value is value_b64 instead. A subject delete marker (a key that expired in a
bucket with limit markers) is the delete it stands for, with its reason:
"op":"PURGE","reason":"MaxAge". KEY_PATTERNs (app.*, app.>) narrow the keys.

By default the tail starts with each key's current value, then follows
updates (like "nats kv watch"); --updates-only skips the current values,
--history starts from every revision the bucket keeps, --since D from the
revisions of the last D, --from-rev N from revision N. DEL and PURGE are
left out unless --deletes.

--filter keeps the revisions for which the jq program is true (neither false
nor null); a revision on which it fails (e.g. .value.state on a text value)
does not match, with one warning. The global --jq then transforms what is
printed, or --raw prints each value alone, one a line. --count N exits 0
after N matches; --wait D gives up after D with exit 5. Together they make
a CI step that waits for a condition; without them the tail runs until
interrupted. --wait without --count bounds the tail: it stops after D,
exit 0 when at least one revision matched, 5 when none did. --wait counts
from the start and is exit 5 whenever it runs out, also before the first
revision was read; connecting is bounded by --timeout, not --wait: a
server that cannot be reached is exit 1.`,
		Example: `  jetctl kv tail cfg
  jetctl kv tail cfg 'app.>' 'deploy.*' --history
  jetctl kv tail cfg deploy.status --filter '.value.state == "ready"' --count 1 --wait 5m
  jetctl kv tail cfg --since 1h --deletes --jq '[.key, .op] | @tsv'`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: bucketArg(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := fl.config(f, args)
			if err != nil {
				return err
			}
			if cfg.Match != nil {
				relaxGC(f)
			}
			p, err := f.Printer("jsonl")
			if err != nil {
				return err
			}
			if err := p.RequireLines("kv tail"); err != nil {
				return err
			}
			parent := cmd.Context()
			ctx, cancel := fl.tail.WithWait(parent)
			defer cancel()
			js, err := tailflags.JetStream(parent, f)
			matched := 0
			if err == nil {
				out := output.NewLineWriter(f.IO.Out)
				defer out.Close()
				p.Out = out
				var line []byte
				matched, err = kv.Tail(ctx, js, cfg, func(e kv.Entry) error {
					var err error
					switch {
					case fl.tail.Raw:
						line = tailflags.Line(line[:0], e.Value)
					case f.Output.JQ != "":
						return p.Item(e)
					default:
						if line, err = e.AppendJSON(line[:0]); err != nil {
							return err
						}
					}
					_, err = out.Write(line)
					return err
				})
			}
			return fl.tail.End(parent, ctx, err, tailflags.Revisions, fmt.Sprintf("bucket %q", cfg.Bucket), matched)
		},
	}
	fs := c.Flags()
	fs.BoolVar(&fl.history, "history", false, "start from every revision the bucket keeps")
	factory.DurationVar(fs, &fl.since, "since", 0, "start from the revisions of this last period (90s, 30m, 7d)").Positive()
	fs.Uint64Var(&fl.fromRev, "from-rev", 0, "start from this revision")
	fs.BoolVar(&fl.updatesOnly, "updates-only", false, "skip the current values: only revisions written from now on")
	fs.BoolVar(&fl.deletes, "deletes", false, "include DEL and PURGE revisions")
	fs.StringVar(&fl.filter, "filter", "", "keep revisions for which this jq program is true")
	fl.tail.Bind(fs, "matches", "values")
	return c
}

// config checks the flags before anything connects.
func (fl *tailFlags) config(f *factory.Factory, args []string) (kv.TailConfig, error) {
	cfg := kv.TailConfig{Bucket: args[0], Keys: args[1:], Deletes: fl.deletes, Count: fl.tail.Count}
	if err := checkBucket(cfg.Bucket); err != nil {
		return cfg, err
	}
	if err := checkKeys(cfg.Keys, true); err != nil {
		return cfg, err
	}
	var starts []string
	if fl.history {
		starts, cfg.Start = append(starts, "--history"), kv.StartHistory
	}
	if fl.since > 0 {
		starts, cfg.Start, cfg.Since = append(starts, "--since"), kv.StartTime, time.Now().Add(-fl.since)
	}
	if fl.fromRev > 0 {
		starts, cfg.Start, cfg.FromRev = append(starts, "--from-rev"), kv.StartRevision, fl.fromRev
	}
	if fl.updatesOnly {
		starts, cfg.Start = append(starts, "--updates-only"), kv.StartNew
	}
	if len(starts) > 1 {
		return cfg, exitcode.UsageErrorf("%s and %s cannot be used together", starts[0], starts[1])
	}
	if err := fl.tail.Validate(); err != nil {
		return cfg, err
	}
	// A program that fails on a revision does not match it: buckets mix
	// JSON and text, and a tail waiting for one key's state must not die on
	// another's value. The first failure is reported with its revision.
	filter, err := output.CompileFilter(fl.filter, "such revisions")
	if err != nil {
		return cfg, err
	}
	if filter != nil {
		// Called from several goroutines: kv.Tail filters in parallel and
		// keeps the output, and the failures it reports, in stream order.
		cfg.Match = func(ctx context.Context, e *kv.Entry) (bool, error) {
			return filter.Keep(ctx, e, e.Generic)
		}
		warn := filter.WarnOnce(f.IO.ErrOut)
		cfg.OnMatchError = func(e *kv.Entry, err error) {
			warn(fmt.Sprintf("key %q revision %d", e.Key, e.Revision), err)
		}
	}
	return cfg, nil
}

// relaxGC lets a filtered tail's garbage grow to five times the live heap
// (capped at 256 MiB) before collecting: decoding every revision for jq
// makes short-lived garbage, and on two cores the collector otherwise takes
// a fifth of the time. A GOGC or GOMEMLIMIT the user set wins.
func relaxGC(f *factory.Factory) {
	if f.Getenv("GOGC") != "" || f.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(400)
	debug.SetMemoryLimit(256 << 20)
}
