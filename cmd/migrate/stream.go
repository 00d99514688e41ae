package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/dustin/go-humanize/english"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/auditlog"
	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/pkg/audit"
	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	pkgmigrate "github.com/jetctl/jetctl/pkg/migrate"
	"github.com/jetctl/jetctl/pkg/natsconn"
)

type streamOptions struct {
	as         string
	toServer   string
	toContext  string
	toDomain   string
	cutover    bool
	dryRun     bool
	yes        bool
	noProgress bool
	ttl        string
}

func newCmdStream(f *factory.Factory) *cobra.Command {
	o := &streamOptions{}
	cmd := &cobra.Command{
		Use:   "stream STREAM (--as NAME | --to-server URL | --to-context C | --to-domain D) [--cutover]",
		Short: "copy a stream to another name, server or domain, and with --cutover move its subjects and consumers there",
		Long: `Copy STREAM to a target: another name on the same server (--as), or the
same name (or --as) on another server (--to-server, --to-context) or in
another JetStream domain (--to-domain, on the target's connection or on
this one). The target's server copies it as a mirror, keeping sequence
numbers, timestamps and headers, and jetctl compares the copy with the
source message by message while the source keeps taking writes. Without
--cutover the target stays a live, verified mirror of the source; run
again with --cutover to finish. A workqueue source, which a mirror would
drain, is copied by jetctl instead (as between servers with no route,
below), reading it without consuming anything. A counter stream
(allow_msg_counter), which the server does not mirror, is sourced by a
counter stream instead: every subject's total is kept and verified, the
timestamps are the copy's, and sequences are renumbered where the source
has gaps (the summary's sequences_kept says; consumer positions follow).

--cutover pauses the source's durable consumers and takes its subjects off
it (publishes get no stream: the write outage starts), waits for the last
messages, deletes from the target what the source deleted since it was
copied, and verifies: message count, first and last sequence, per-subject
counts, every message compared and a digest of them all. Then it creates
each durable on the target with its config and position (it delivers
again from the message after its ack floor), gives the target the
subjects (the outage ends), deletes the source and resumes the consumers.
On any difference the source gets its subjects and consumers back, the
target stays for inspection, and the exit code is 4.

A stream with a DLQ (jetctl dlq setup) moved to another name takes it
along at the cutover: the capture of the new name is made before it, the
advisories not yet swept are carried to it, and the DLQ stream keeps its
entries and becomes the new name's. A cutover to another server is
refused while the stream has a DLQ (nothing changed); the message says
what to run. The dry run says what happens to the DLQ.

Killed at any point (kill -9 included), run the same command again: the
move's state is kept in the target stream's metadata and it continues.
A second migration of the same stream is refused while one runs.

The target's server copies when it can read the source's: the same
server or cluster, or another JetStream domain reached through a leaf node
($JS.<domain>.API). Between two servers with no route jetctl copies
itself: sequence numbers, gaps, subjects, headers and payloads are kept,
the timestamps are not (each copy has the time it was stored; the original
is in its Jetctl-Migrate-Time header), and headers the server acts on
(Nats-Msg-Id, Nats-Rollup, ...) are kept renamed Jetctl-Orig-<Name>. Without
--cutover the copy is not kept current. After the cutover, point the
clients at the target's server. --ttl says what jetctl's copy gives a
message with a Nats-TTL: remaining (the default) what is left of it,
rounded up, so that the copy goes when its original does, never before;
keep the whole TTL again, from the copy's time; drop none (the copy never
expires). The original's stays readable as Jetctl-Orig-Nats-TTL. A mirror
keeps each TTL as stored; --ttl keep or drop is refused for one. A counter
stream is not copied by jetctl (each copy would be an increment again).

Streams that source or mirror STREAM are left as they are and named in
the summary: the cutover deletes STREAM, so they copy nothing more until
their source is the target, from the sequence the summary gives (a
mirror must be made again). Where STREAM is a workqueue or interest
stream, the cutover first waits for them to have read and acknowledged
what it holds (up to 10s; the server acknowledges for them about once a
second, which the write outage then includes). apply --migrate refuses a
stream that others source.

Safety: needs --yes when not run in a terminal; --dry-run checks the
target and shows what would be copied, and changes nothing.
Exit codes: 0 done, 2 bad input, a target that exists with other data or
a DLQ that cannot follow (nothing changed), 3 no such stream, 4 verification found a difference,
130 interrupted (run again to continue).`,
		Example: `  jetctl migrate stream ORDERS --as ORDERS_V2 --dry-run
  jetctl migrate stream ORDERS --as ORDERS_V2 --yes
  jetctl migrate stream ORDERS --as ORDERS_V2 --cutover --yes -o json
  jetctl migrate stream ORDERS --to-context dr-cluster --cutover --yes
  jetctl migrate stream ORDERS --to-server nats://dr:4222 --ttl keep --cutover --yes`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runStream(cmd.Context(), f, o, args[0]) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.as, "as", "", "the stream's name at the target (default: its own)")
	fl.StringVar(&o.toServer, "to-server", "", "the target server's URLs")
	fl.StringVar(&o.toContext, "to-context", "", "the target's natscli context")
	fl.StringVar(&o.toDomain, "to-domain", "", "the target's JetStream domain")
	fl.BoolVar(&o.cutover, "cutover", false, "move the subjects and consumers to the target and delete the source once verified")
	fl.BoolVar(&o.dryRun, "dry-run", false, "check and show what would be copied; change nothing")
	fl.BoolVar(&o.yes, "yes", false, "do not ask for confirmation (needed when not in a terminal)")
	fl.BoolVar(&o.noProgress, "no-progress", false, "no progress bar on stderr")
	fl.StringVar(&o.ttl, "ttl", "remaining", "what jetctl's copy gives a message with a Nats-TTL: remaining|keep|drop")
	_ = cmd.RegisterFlagCompletionFunc("ttl", cobra.FixedCompletions(envelope.TTLModes, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// validate checks the flags before anything is contacted.
func (o *streamOptions) validate(stream string) error {
	if err := jsapi.ValidateStreamName(stream); err != nil {
		return exitcode.UsageErrorf("%v", err)
	}
	if o.as != "" {
		if err := jsapi.ValidateStreamName(o.as); err != nil {
			return exitcode.UsageErrorf("--as: %v", err)
		}
	}
	if o.toServer != "" && o.toContext != "" {
		return exitcode.UsageErrorf("use --to-server or --to-context, not both")
	}
	if o.toServer == "" && o.toContext == "" && o.toDomain == "" && (o.as == "" || o.as == stream) {
		return exitcode.UsageErrorf("give the target: --as NAME (another name), --to-server, --to-context or --to-domain")
	}
	if _, err := envelope.ParseTTLMode(o.ttl); err != nil {
		return exitcode.UsageErrorf("%v", err)
	}
	return nil
}

func runStream(ctx context.Context, f *factory.Factory, o *streamOptions, stream string) error {
	if err := o.validate(stream); err != nil {
		return err
	}
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	var target *natsconn.Resolved
	if o.toServer != "" || o.toContext != "" {
		if target, err = natsconn.Resolve(natsconn.Options{Server: o.toServer, Context: o.toContext, Timeout: f.Conn.Timeout}); err != nil {
			return err
		}
	}
	if !o.dryRun {
		what := fmt.Sprintf("migrate copies stream %s to %s", stream, o.describeTarget(stream))
		if o.cutover {
			what += ", moves its subjects and consumers there and deletes it"
		}
		if err := f.IO.ConfirmChange(o.yes, what); err != nil {
			return err
		}
	}
	js, err := f.JetStream(ctx)
	if err != nil {
		return err
	}
	src := pkgmigrate.Endpoint{JS: js, Domain: f.Conn.JSDomain}
	dst := src
	if target != nil {
		nc, err := target.Connect(ctx, "jetctl-migrate-target")
		if err != nil {
			return err
		}
		defer nc.Close()
		if dst.JS, err = target.JetStream(nc); err != nil {
			return err
		}
		dst.Domain = target.JSDomain
	}
	if o.toDomain != "" {
		if dst.JS, err = jetstream.NewWithDomain(dst.JS.Conn(), o.toDomain); err != nil {
			return err
		}
		dst.Domain = o.toDomain
	}
	// The bar counts the target's last sequence against the source's, once
	// the copy reports them; a new bar when the phase changes.
	var bar *factory.Progress
	phase := ""
	ttl, _ := envelope.ParseTTLMode(o.ttl) // validated
	cfg := pkgmigrate.Config{Stream: stream, Target: o.as, Cutover: o.cutover, DryRun: o.dryRun, TTL: ttl,
		Progress: func(pr pkgmigrate.Progress) {
			if pr.Phase != phase {
				bar.Finish()
				bar, phase = f.NewProgress(int64(pr.Total), pr.Phase, o.noProgress), pr.Phase
			}
			bar.Set(int64(pr.Copied))
		}}
	cfg.AtStep = factory.KillAt(ctx, f)
	sum, err := pkgmigrate.Stream(ctx, src, dst, cfg)
	bar.Finish()
	auditStream(ctx, f, o, stream, sum, err)
	if err != nil {
		if natsconn.Interrupted(ctx) {
			fmt.Fprintln(f.IO.ErrOut, "jetctl: interrupted; the migration's state is kept on the server: run the same command again to continue")
			return exitcode.Silent(exitcode.Interrupted)
		}
		return err
	}
	if p.Format != "table" || f.Output.JQ != "" {
		return p.Print(sum, nil)
	}
	fmt.Fprintln(f.IO.Out, summaryLine(sum, o.describeTarget(stream)))
	if d := sum.DLQ; d != nil {
		fmt.Fprintln(f.IO.Out, dlqLine(d, sum.DryRun))
	}
	for _, d := range sum.Downstreams {
		fmt.Fprintln(f.IO.Out, d.Action)
	}
	return nil
}

// dlqLine says what a move to another name does (or would do) to the
// stream's DLQ.
func dlqLine(d *dlq.MovePlan, dryRun bool) string {
	if dryRun {
		return fmt.Sprintf("dry run: the DLQ of %s would move with it: capture %s created (subjects %s), %s kept with its entries and given %s (it becomes the DLQ of %s), %s not yet swept carried over, %s deleted",
			d.From, d.Capture, strings.Join(d.CaptureSubjects, ", "), d.DLQ, d.DLQSubject, d.To,
			english.Plural(int(d.Unswept), "advisory", "advisories"), d.FormerCapture)
	}
	return fmt.Sprintf("the DLQ of %s moved with it: %s captures the advisories of %s, %s is its DLQ (jetctl dlq sweep|ls|redrive --stream %s); %s not yet swept carried over, %d already swept left out; %s deleted",
		d.From, d.Capture, d.To, d.DLQ, d.To, english.Plural(d.Carried, "advisory", "advisories"), d.AlreadySwept, d.FormerCapture)
}

func (o *streamOptions) describeTarget(stream string) string {
	name := o.as
	if name == "" {
		name = stream
	}
	var where []string
	switch {
	case o.toServer != "":
		where = append(where, "server "+natsconn.RedactURL(o.toServer))
	case o.toContext != "":
		where = append(where, "context "+o.toContext)
	}
	if o.toDomain != "" {
		where = append(where, "domain "+o.toDomain)
	}
	if len(where) == 0 {
		return name
	}
	return name + " (" + strings.Join(where, ", ") + ")"
}

// how says, for a dry run, how the copy would be made when jetctl copies
// rather than a mirror: why, and that the timestamps do not travel.
func how(s *pkgmigrate.Summary) string {
	switch s.CopyReason {
	case "no-route":
		return " by copying with jetctl (no route between the servers, so no mirror: each copy gets the time it is stored, the original time travels in its Jetctl-Migrate-Time header)"
	case "workqueue":
		return " by copying with jetctl (a mirror would drain a workqueue source: each copy gets the time it is stored, the original time travels in its Jetctl-Migrate-Time header)"
	case pkgmigrate.CopyReasonCounter:
		return " by sourcing it into a counter stream (a counter stream cannot be mirrored: every subject's total is kept and verified; each message gets the time it is stored, and sequences are renumbered where the source has gaps)"
	}
	return ""
}

// sequences says whether the counter way kept the sequences.
func sequences(s *pkgmigrate.Summary) string {
	if s.SequencesKept {
		return "sequences kept"
	}
	return "sequences renumbered where the source had gaps"
}

func summaryLine(s *pkgmigrate.Summary, target string) string {
	msgs := fmt.Sprintf("%s (%s, seq %d..%d)", english.Plural(int(s.Messages), "message", "messages"), humanize.IBytes(s.Bytes), s.FirstSeq, s.LastSeq)
	var cons []string
	for _, c := range s.Consumers {
		note := ""
		if c.Changed != "" {
			note = "; " + c.Changed
		}
		cons = append(cons, fmt.Sprintf("%s (ack floor %d, %d ack pending%s)", c.Name, c.AckFloor, c.Pending, note))
	}
	consumers := english.Plural(len(s.Consumers), "consumer", "consumers")
	if len(cons) > 0 {
		consumers += ": " + strings.Join(cons, ", ")
	}
	switch {
	case s.AlreadyDone:
		return fmt.Sprintf("%s was migrated to %s already (verified, digest %.12s; %s); nothing to do",
			s.Stream, target, s.Digest, msgs)
	case s.DryRun && s.Cutover:
		return fmt.Sprintf("dry run: would copy %s of %s to %s%s, verify it, then move the subjects and re-seat %s; nothing was changed", msgs, s.Stream, target, how(s), consumers)
	case s.DryRun:
		return fmt.Sprintf("dry run: would copy %s of %s to %s%s and verify it; nothing was changed", msgs, s.Stream, target, how(s))
	case s.Cutover && s.CopyReason == "workqueue":
		return fmt.Sprintf("migrated %s to %s by copying (a mirror would drain a workqueue source; original times in the Jetctl-Migrate-Time header): %s, verified (digest %.12s); re-seated %s; write outage %s; took %s",
			s.Stream, target, msgs, s.Digest, consumers, s.WriteOutage.Round(time.Millisecond), s.Elapsed.Round(time.Millisecond))
	case s.Cutover && s.CopyReason == pkgmigrate.CopyReasonCounter:
		return fmt.Sprintf("migrated %s to %s by sourcing (a counter stream; each subject's total verified; %s): %s, verified (digest %.12s); re-seated %s; write outage %s; took %s",
			s.Stream, target, sequences(s), msgs, s.Digest, consumers, s.WriteOutage.Round(time.Millisecond), s.Elapsed.Round(time.Millisecond))
	case s.Cutover && s.Mechanism == "copy":
		return fmt.Sprintf("migrated %s to %s by copying (no route between the servers; original times in the Jetctl-Migrate-Time header): %s, verified (digest %.12s); re-seated %s; write outage %s; took %s; point the clients at the target's server",
			s.Stream, target, msgs, s.Digest, consumers, s.WriteOutage.Round(time.Millisecond), s.Elapsed.Round(time.Millisecond))
	case s.Cutover:
		return fmt.Sprintf("migrated %s to %s: %s, verified (digest %.12s); re-seated %s; write outage %s; took %s",
			s.Stream, target, msgs, s.Digest, consumers, s.WriteOutage.Round(time.Millisecond), s.Elapsed.Round(time.Millisecond))
	case s.CopyReason == "workqueue":
		return fmt.Sprintf("copied %s to %s (a workqueue source, which a mirror would drain: jetctl copied; original times in the Jetctl-Migrate-Time header): %s, verified; the source is unchanged; a run with --cutover copies what came since and moves the subjects and consumers; took %s",
			s.Stream, target, msgs, s.Elapsed.Round(time.Millisecond))
	case s.Mechanism == "copy":
		return fmt.Sprintf("copied %s to %s (no route between the servers: jetctl copied): %s, verified; a run with --cutover copies what came since and moves the subjects and consumers; took %s",
			s.Stream, target, msgs, s.Elapsed.Round(time.Millisecond))
	case s.CopyReason == pkgmigrate.CopyReasonCounter:
		return fmt.Sprintf("copied %s to %s (a counter stream: %s sources it; each subject's total verified): %s, verified; %s keeps sourcing %s until a run with --cutover; took %s",
			s.Stream, target, s.Target, msgs, s.Target, s.Stream, s.Elapsed.Round(time.Millisecond))
	}
	return fmt.Sprintf("copied %s to %s: %s, verified; %s stays a mirror of %s until a run with --cutover; took %s",
		s.Stream, target, msgs, s.Target, s.Stream, s.Elapsed.Round(time.Millisecond))
}

// auditStream records a migration that changed something: one that
// copied or cut over, or one that stopped midway (interrupted, or
// partly done: its state is kept on the server). A dry run, a migration
// found done already and one refused before it began write none.
func auditStream(ctx context.Context, f *factory.Factory, o *streamOptions, stream string, sum *pkgmigrate.Summary, err error) {
	action := "copy"
	if o.cutover {
		action = "cutover"
	}
	c := audit.Change{Stream: stream, Action: action, Target: o.describeTarget(stream)}
	switch {
	case err != nil:
		if code := exitcode.Of(err); code != exitcode.Partial && code != exitcode.Interrupted && !natsconn.Interrupted(ctx) {
			return
		}
		c.Err = err
		if natsconn.Interrupted(ctx) {
			c.Err = errors.New("interrupted")
		}
		c.Summary = "migration to " + c.Target + " stopped; its state is kept on the server: the same command run again continues it"
	case sum == nil || sum.DryRun || sum.AlreadyDone:
		return
	default:
		c.Summary = summaryLine(sum, c.Target)
		c.Counts = map[string]int64{
			"messages": int64(sum.Messages), "bytes": int64(sum.Bytes), "first_seq": int64(sum.FirstSeq), "last_seq": int64(sum.LastSeq),
			"consumers": int64(len(sum.Consumers)), "write_outage_ms": sum.WriteOutage.Milliseconds(),
		}
	}
	auditlog.Write(ctx, f, c)
}
