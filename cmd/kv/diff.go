package kv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/kv"
	"github.com/jetctl/jetctl/pkg/natsconn"
)

// diffValueWidth is where text output cuts the values of added and
// deleted keys; -o json shows them whole.
const diffValueWidth = 120

// diffFlags are `kv diff`'s flags as given.
type diffFlags struct {
	fromRev, toRev                         uint64
	since                                  time.Duration
	at, to                                 time.Time
	keys                                   []string
	against, againstServer, againstContext string
	exitCode, noProgress                   bool
}

// diffMode is what a `kv diff` compares, checked and typed.
type diffMode struct {
	revisions *kv.RevisionDiffConfig
	times     *kv.TimeDiffConfig
	buckets   *kv.BucketsDiffConfig
	// other is the connection for --against-server or --against-context.
	other *natsconn.Options
}

func newDiffCmd(f *factory.Factory) *cobra.Command {
	var fl diffFlags
	c := &cobra.Command{
		Use:   "diff BUCKET [KEY]",
		Short: "compare two revisions of a key, a bucket at two times, or two buckets",
		Long: `Compare values, JSON-aware, in one of three ways.

Two revisions of a key (KEY given): --from-rev and --to-rev pick them; by
default the revision before the latest against the latest. A revision that
does not exist, or that belongs to another key, is exit 3. A key with only
one revision left (a new key, or a bucket with history 1) is compared
against no value.

A bucket at two times: --since 1h (or --at TIME) against now, or against
--to TIME. Shows keys added, deleted and changed; KEY or --key narrows the
keys. The state at a time is each key's last revision before it; a bucket
that keeps few revisions per key may no longer hold that state, and jetctl
warns when it cannot tell. A key that expired in between (in a bucket with
limit markers, the server's marker with reason MaxAge) is deleted, with its
reason and no value: the server no longer holds it.

Two buckets: --against OTHER, on the same server, on --against-server URL or
on the server of --against-context NAME (a natscli context). Shows keys
only in BUCKET, only in OTHER, different, and a count of identical keys.

JSON values are diffed by path (~ .spec.replicas: 3 → 5, + added keys,
- removed keys, array elements by index); JSON documents equal but for
spacing or key order are equal. Other text gets a unified diff, binary values
their sizes and SHA-256 hashes. -o json gives the changes as
{path, op, before, after} objects (see docs/kv.md).

--exit-code exits 8 when there are differences and 0 when there are none;
errors stay 1 (or 2, 3).`,
		Example: `  jetctl kv diff cfg app.config
  jetctl kv diff cfg app.config --from-rev 12 --to-rev 15 -o json
  jetctl kv diff cfg --since 1h
  jetctl kv diff cfg --at 2025-06-01T12:00:00Z --to 2025-06-02T12:00:00Z --key 'app.>'
  jetctl kv diff cfg --against cfg-backup --exit-code
  jetctl kv diff cfg --against cfg --against-context staging`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: bucketArg(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := fl.mode(cmd, args)
			if err != nil {
				return err
			}
			p, err := f.Printer("table")
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			js, err := f.JetStream(ctx)
			if err != nil {
				return err
			}
			var differs bool
			switch {
			case mode.revisions != nil:
				differs, err = runRevisionDiff(ctx, f, p, js, mode.revisions)
			case mode.times != nil:
				bar := f.NewProgress(-1, "reading revisions", fl.noProgress)
				mode.times.Progress = func(n int) { bar.Set(int64(n)) }
				differs, err = runTimeDiff(ctx, f, p, js, mode.times, bar)
			default:
				other := js
				if mode.other != nil {
					if other, err = connectOther(ctx, f, *mode.other); err != nil {
						return err
					}
				}
				bar := f.NewProgress(-1, "reading revisions", fl.noProgress)
				mode.buckets.Progress = func(n int) { bar.Set(int64(n)) }
				differs, err = runBucketsDiff(ctx, f, p, js, other, mode, bar)
			}
			if err != nil {
				return err
			}
			if differs && fl.exitCode {
				return exitcode.Silent(exitcode.Changes)
			}
			return nil
		},
	}
	fs := c.Flags()
	fs.Uint64Var(&fl.fromRev, "from-rev", 0, "older revision of KEY (default: the one before --to-rev)")
	fs.Uint64Var(&fl.toRev, "to-rev", 0, "newer revision of KEY (default: the latest)")
	factory.DurationVar(fs, &fl.since, "since", 0, "compare the bucket as it was this long ago (90s, 30m, 7d) with now").Positive()
	factory.TimeVar(fs, &fl.at, "at", "compare the bucket as it was at this RFC 3339 time with now")
	factory.TimeVar(fs, &fl.to, "to", "with --since or --at: compare with this RFC 3339 time instead of now")
	fs.StringArrayVar(&fl.keys, "key", nil, "with --since, --at or --against: only keys matching this pattern (repeatable)")
	fs.StringVar(&fl.against, "against", "", "compare with this bucket's current state")
	fs.StringVar(&fl.againstServer, "against-server", "", "with --against: the other bucket is on this server")
	fs.StringVar(&fl.againstContext, "against-context", "", "with --against: the other bucket is on this natscli context's server")
	fs.BoolVar(&fl.exitCode, "exit-code", false, "exit 8 when there are differences, 0 when there are none")
	fs.BoolVar(&fl.noProgress, "no-progress", false, "with --since, --at or --against: no progress bar on stderr")
	_ = c.RegisterFlagCompletionFunc("against", f.CompleteBuckets())
	return c
}

// mode checks the flags and arguments, before anything connects, and
// decides what to compare.
func (fl *diffFlags) mode(cmd *cobra.Command, args []string) (*diffMode, error) {
	bucket := args[0]
	if err := checkBucket(bucket); err != nil {
		return nil, err
	}
	keys := fl.keys
	if len(args) == 2 {
		keys = append([]string{args[1]}, keys...)
	}
	changed := func(names ...string) string {
		for _, n := range names {
			if cmd.Flags().Changed(n) {
				return "--" + n
			}
		}
		return ""
	}
	timeFlag := changed("since", "at")
	revFlag := changed("from-rev", "to-rev")
	conflict := func(a, b string) error {
		return exitcode.UsageErrorf("%s and %s cannot be used together", a, b)
	}
	if fl.since != 0 && !fl.at.IsZero() {
		return nil, conflict("--since", "--at")
	}
	if fl.againstServer != "" && fl.againstContext != "" {
		return nil, conflict("--against-server", "--against-context")
	}
	if f := changed("against-server", "against-context"); f != "" && fl.against == "" {
		return nil, exitcode.UsageErrorf("%s needs --against BUCKET", f)
	}
	if !fl.to.IsZero() && timeFlag == "" {
		return nil, exitcode.UsageErrorf("--to needs --since or --at")
	}

	switch {
	case fl.against != "":
		if timeFlag != "" {
			return nil, conflict("--against", timeFlag)
		}
		if revFlag != "" {
			return nil, conflict("--against", revFlag)
		}
		if err := checkBucket(fl.against); err != nil {
			return nil, err
		}
		if err := checkKeys(keys, true); err != nil {
			return nil, err
		}
		m := &diffMode{buckets: &kv.BucketsDiffConfig{Left: bucket, Right: fl.against, Keys: keys}}
		if fl.againstServer != "" {
			m.other = &natsconn.Options{Server: fl.againstServer, NoContext: true}
		} else if fl.againstContext != "" {
			m.other = &natsconn.Options{Context: fl.againstContext}
		}
		m.buckets.RightPlace = m.rightSide().place()
		return m, nil

	case timeFlag != "":
		if revFlag != "" {
			return nil, conflict(timeFlag, revFlag)
		}
		if err := checkKeys(keys, true); err != nil {
			return nil, err
		}
		cfg := &kv.TimeDiffConfig{Bucket: bucket, Keys: keys}
		now := time.Now()
		if fl.since != 0 {
			cfg.From = now.Add(-fl.since)
		} else {
			cfg.From = fl.at
		}
		if t := fl.to; !t.IsZero() {
			if !t.After(cfg.From) {
				return nil, exitcode.UsageErrorf("--to %s is not after %s", t.Format(time.RFC3339Nano), cfg.From.UTC().Format(time.RFC3339))
			}
			cfg.To = t
		}
		return &diffMode{times: cfg}, nil
	}

	if len(fl.keys) > 0 {
		return nil, exitcode.UsageErrorf("--key needs --since, --at or --against; to compare revisions give KEY as an argument")
	}
	if len(args) < 2 {
		return nil, exitcode.UsageErrorf("give a KEY to compare its revisions, or --since, --at or --against to compare buckets (see 'jetctl kv diff --help')")
	}
	if err := checkKeys(keys, false); err != nil {
		return nil, err
	}
	return &diffMode{revisions: &kv.RevisionDiffConfig{Bucket: bucket, Key: args[1], FromRev: fl.fromRev, ToRev: fl.toRev}}, nil
}

// connectOther opens the connection to the server of the other bucket; it
// closes with the command.
func connectOther(ctx context.Context, f *factory.Factory, o natsconn.Options) (jetstream.JetStream, error) {
	o.Timeout = f.Conn.Timeout
	r, err := natsconn.Resolve(o)
	if err != nil {
		return nil, err
	}
	nc, err := r.Connect(ctx, "jetctl")
	if err != nil {
		return nil, err
	}
	f.OnClose(nc.Close)
	return r.JetStream(nc)
}

func runRevisionDiff(ctx context.Context, f *factory.Factory, p *output.Printer, js jetstream.JetStream, cfg *kv.RevisionDiffConfig) (bool, error) {
	d, err := kv.DiffRevisions(ctx, js, *cfg)
	if err != nil {
		return false, err
	}
	if d.From == nil {
		fmt.Fprintf(f.IO.ErrOut, "jetctl: note: bucket %q holds no revision of key %q before %d; comparing with no value\n", d.Bucket, d.Key, d.To.Revision)
	}
	changes := d.Changes
	if changes == nil {
		changes = []kv.Change{}
	}
	return len(changes) > 0, printItems(f, p, changes, func(w io.Writer) {
		if len(changes) == 0 {
			return
		}
		if changes[0].Unified == "" {
			fmt.Fprintf(w, "--- %s\n+++ %s\n", revisionLabel(d.Bucket, d.Key, d.From), revisionLabel(d.Bucket, d.Key, d.To))
		}
		for _, c := range changes {
			fmt.Fprintln(w, c.String())
		}
	})
}

func revisionLabel(bucket, key string, e *kv.Entry) string {
	if e == nil {
		return fmt.Sprintf("%s/%s (no value)", bucket, key)
	}
	label := fmt.Sprintf("%s/%s@%d", bucket, key, e.Revision)
	switch {
	case e.Reason != "":
		label += " (" + string(e.Op) + ": " + e.Reason + ")"
	case e.Op != kv.OpPut:
		label += " (" + string(e.Op) + ")"
	}
	return label
}

func runTimeDiff(ctx context.Context, f *factory.Factory, p *output.Printer, js jetstream.JetStream, cfg *kv.TimeDiffConfig, bar *factory.Progress) (bool, error) {
	c, err := kv.CompareTimes(ctx, js, *cfg)
	bar.Finish()
	if err != nil {
		return false, err
	}
	to := cfg.To
	if to.IsZero() {
		to = time.Now()
	}
	doc := []output.DocField{
		{Name: "bucket", Value: cfg.Bucket},
		{Name: "from", Value: cfg.From.UTC().Format(time.RFC3339Nano)},
		{Name: "to", Value: to.UTC().Format(time.RFC3339Nano)},
		{Name: "added", List: keyValues(ctx, c.OnlyRight)},
		{Name: "deleted", List: keyValues(ctx, c.OnlyLeft)},
		{Name: "changed", List: func(item func(any) error) error {
			return c.Changed(ctx, func(d kv.KeyDiff) error {
				return item(changedJSON{Key: d.Key, FromRevision: d.Left.Revision, ToRevision: d.Right.Revision, Changes: d.Changes})
			})
		}},
	}
	summary := func() string {
		deleted, added, changed := c.Counts()
		return fmt.Sprintf("%d added, %d deleted, %d changed", added, deleted, changed)
	}
	return report(ctx, f, p, c, doc, summary)
}

func runBucketsDiff(ctx context.Context, f *factory.Factory, p *output.Printer, js, other jetstream.JetStream, mode *diffMode, bar *factory.Progress) (bool, error) {
	cfg := mode.buckets
	left, right := sideJSON{Bucket: cfg.Left}, mode.rightSide()
	if mode.other != nil {
		// Two connections: the left side is named by its own.
		r, err := f.Resolve()
		if err != nil {
			return false, err
		}
		if r.Context != "" {
			left.Context = r.Context
		} else {
			left.Server = natsconn.RedactURL(r.Server)
		}
		cfg.LeftPlace = left.place()
	}
	c, err := kv.CompareBuckets(ctx, js, other, *cfg)
	bar.Finish()
	if err != nil {
		return false, err
	}
	leftLabel, rightLabel := left.label(), right.label()
	if leftLabel == rightLabel {
		// A bucket against itself: the counts still need two names.
		leftLabel, rightLabel = leftLabel+" (left)", rightLabel+" (right)"
	}
	doc := []output.DocField{
		{Name: "left", Value: left},
		{Name: "right", Value: right},
		{Name: "only_left", List: keyValues(ctx, c.OnlyLeft)},
		{Name: "only_right", List: keyValues(ctx, c.OnlyRight)},
		{Name: "different", List: func(item func(any) error) error {
			return c.Changed(ctx, func(d kv.KeyDiff) error {
				return item(differentJSON{Key: d.Key, LeftRevision: d.Left.Revision, RightRevision: d.Right.Revision, Changes: d.Changes})
			})
		}},
		{Name: "identical", After: func() any { return c.Identical() }},
	}
	summary := func() string {
		onlyLeft, onlyRight, changed := c.Counts()
		return fmt.Sprintf("%d only in %s, %d only in %s, %d different, %d identical",
			onlyLeft, leftLabel, onlyRight, rightLabel, changed, c.Identical())
	}
	return report(ctx, f, p, c, doc, summary)
}

// report prints a bucket diff as it is computed, key by key: its warnings
// on stderr, the diff on stdout, then what it read on stderr. In text, +
// is a key only on the right (added), - only on the left (deleted), ~ a
// key whose value differs, then the summary line. -o json and -o jsonl
// write the document doc describes as it goes, so that a diff of any size
// is never held whole; --jq and -o yaml need it whole and get it so.
func report(ctx context.Context, f *factory.Factory, p *output.Printer, c *kv.Comparison, doc []output.DocField, summary func() string) (bool, error) {
	for _, w := range c.Warnings {
		fmt.Fprintf(f.IO.ErrOut, "jetctl: warning: %s\n", w)
	}
	var err error
	switch {
	case p.Format == "table" && f.Output.JQ == "":
		// A diff of a big bucket is many lines: write them in blocks.
		w := bufio.NewWriterSize(f.IO.Out, 64<<10)
		err = writeDiffText(ctx, w, c, summary)
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
	case (p.Format == "json" || p.Format == "jsonl") && f.Output.JQ == "":
		w := bufio.NewWriterSize(f.IO.Out, 64<<10)
		err = output.WriteDoc(w, doc, p.Format == "json")
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
	default:
		var buf bytes.Buffer
		if err = output.WriteDoc(&buf, doc, false); err == nil {
			err = p.Print(json.RawMessage(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil)
		}
	}
	s := c.Stats()
	rate := ""
	if secs := s.Elapsed.Seconds(); secs > 0 {
		rate = fmt.Sprintf(" (%s revisions/s)", humanize.Comma(int64(float64(s.Messages)/secs)))
	}
	fmt.Fprintf(f.IO.ErrOut, "jetctl: read %s, %s, in %s%s\n",
		plural(s.Messages, "revision", "revisions"), humanize.IBytes(uint64(s.Bytes)), s.Elapsed.Round(time.Millisecond), rate)
	return c.Differs(), err
}

// writeDiffText writes a bucket diff for people, key by key.
func writeDiffText(ctx context.Context, w io.Writer, c *kv.Comparison, summary func() string) error {
	err := c.OnlyRight(ctx, func(k kv.KeyState) error {
		_, err := fmt.Fprintf(w, "+ %s: %s\n", k.Key, oneLine(k.Value, diffValueWidth))
		return err
	})
	if err != nil {
		return err
	}
	err = c.OnlyLeft(ctx, func(k kv.KeyState) error {
		var err error
		switch {
		case k.Gone:
			_, err = fmt.Fprintf(w, "- %s: (expired at %s; the server no longer holds its value)\n", k.Key, timeText(k.Time))
		case k.Reason != "":
			_, err = fmt.Fprintf(w, "- %s: %s (%s)\n", k.Key, oneLine(k.Value, diffValueWidth), k.Reason)
		default:
			_, err = fmt.Fprintf(w, "- %s: %s\n", k.Key, oneLine(k.Value, diffValueWidth))
		}
		return err
	})
	if err != nil {
		return err
	}
	err = c.Changed(ctx, func(d kv.KeyDiff) error {
		fmt.Fprintf(w, "~ %s\n", d.Key)
		for _, ch := range d.Changes {
			if _, err := fmt.Fprintln(w, indent(ch.String(), "    ")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, summary())
	return err
}

// plural is "1 revision", "0 revisions", "1,234 revisions".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return humanize.Comma(int64(n)) + " " + many
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// The JSON forms of bucket diffs (documented in docs/kv.md). The commands
// stream timeDiffJSON and bucketsDiffJSON field by field (see output.WriteDoc and
// its test, which checks the stream against these whole documents); the
// item types are encoded as they are.
type (
	timeDiffJSON struct {
		Bucket  string         `json:"bucket"`
		From    string         `json:"from"`
		To      string         `json:"to"`
		Added   []keyValueJSON `json:"added"`
		Deleted []keyValueJSON `json:"deleted"`
		Changed []changedJSON  `json:"changed"`
	}
	changedJSON struct {
		Key          string      `json:"key"`
		FromRevision uint64      `json:"from_revision"`
		ToRevision   uint64      `json:"to_revision"`
		Changes      []kv.Change `json:"changes"`
	}
	bucketsDiffJSON struct {
		Left      sideJSON        `json:"left"`
		Right     sideJSON        `json:"right"`
		OnlyLeft  []keyValueJSON  `json:"only_left"`
		OnlyRight []keyValueJSON  `json:"only_right"`
		Different []differentJSON `json:"different"`
		Identical int             `json:"identical"`
	}
	sideJSON struct {
		Bucket  string `json:"bucket"`
		Server  string `json:"server,omitempty"`
		Context string `json:"context,omitempty"`
	}
	differentJSON struct {
		Key           string      `json:"key"`
		LeftRevision  uint64      `json:"left_revision"`
		RightRevision uint64      `json:"right_revision"`
		Changes       []kv.Change `json:"changes"`
	}
	// keyValueJSON is a key on one side only; value is decoded JSON, text,
	// or {size, sha256} for binary values. A deleted key that a subject
	// delete marker deleted has its reason (MaxAge: it expired); one whose
	// value the server no longer holds has value null, and the marker's
	// revision and time.
	keyValueJSON struct {
		Key      string `json:"key"`
		Revision uint64 `json:"revision"`
		Time     string `json:"time"`
		Value    any    `json:"value"`
		Reason   string `json:"reason,omitempty"`
	}
)

// keyValues lists the keys of one walk of a comparison as keyValueJSON.
func keyValues(ctx context.Context, walk func(context.Context, func(kv.KeyState) error) error) func(item func(any) error) error {
	return func(item func(any) error) error {
		return walk(ctx, func(s kv.KeyState) error {
			kj := keyValueJSON{Key: s.Key, Revision: s.Revision, Time: s.Time.UTC().Format(time.RFC3339Nano), Value: kv.Raw(s.Value), Reason: s.Reason}
			if s.Gone {
				kj.Value = nil
			}
			return item(kj)
		})
	}
}

// rightSide is the other bucket of a two-bucket diff, with its server or
// context when it is on another connection.
func (m *diffMode) rightSide() sideJSON {
	s := sideJSON{Bucket: m.buckets.Right}
	if o := m.other; o != nil {
		s.Server = natsconn.RedactURL(o.Server)
		s.Context = o.Context
	}
	return s
}

// place is where a side's bucket is when not on the main connection:
// "context dr" or its server's URL; "" otherwise.
func (s sideJSON) place() string {
	switch {
	case s.Server != "":
		return s.Server
	case s.Context != "":
		return "context " + s.Context
	}
	return ""
}

// label names a side in the text summary: the bucket, and its server or
// context when it is not the main connection's.
func (s sideJSON) label() string {
	if p := s.place(); p != "" {
		return s.Bucket + " (" + p + ")"
	}
	return s.Bucket
}
