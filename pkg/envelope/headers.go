package envelope

import (
	"fmt"
	"strings"
)

// Command is a way jetctl moves or reads stored messages: a column of the
// header table (docs/headers.md).
type Command int

const (
	// CmdDump writes messages out: replay to a file or stdout, stream
	// tail, dlq show.
	CmdDump Command = iota
	// CmdRepublish publishes copies: replay --to, replay --from-file.
	CmdRepublish
	// CmdMirror is migrate's mirror way: the server copies.
	CmdMirror
	// CmdCopy is migrate's copy way (jetctl copies, keeping sequences).
	CmdCopy
	// CmdDLQ stores dead letters: dlq sweep and dlq take.
	CmdDLQ
	// CmdRedrive publishes dead letters back: dlq redrive.
	CmdRedrive
	// CmdKV reads buckets: kv history, kv diff, kv tail.
	CmdKV
	numCommands
)

// Commands are the table's columns, in order.
var Commands = []Command{CmdDump, CmdRepublish, CmdMirror, CmdCopy, CmdDLQ, CmdRedrive, CmdKV}

func (c Command) String() string {
	return [...]string{"replay to file, stream tail, dlq show", "replay --to, replay --from-file", "migrate (mirror way)", "migrate (copy way)", "dlq sweep, dlq take", "dlq redrive", "kv history, diff, tail"}[c]
}

// Fate is what one command does with one header.
type Fate int

const (
	// Keep: the header goes (or is shown) under its own name.
	Keep Fate = iota
	// Rename: the header is kept as Jetctl-Orig-<Name>, where the server
	// does not act on it and a reader still finds it.
	Rename
	// Drop: the header is not copied.
	Drop
	// Own: jetctl sets the header itself (its own Nats-Msg-Id), the
	// original's is renamed.
	Own
	// TTL: the header is rewritten by the command's --ttl choice
	// (remaining by default: what is left of it; an expired message is
	// skipped and counted).
	TTL
	// Markers: a message with the header is a subject delete marker,
	// skipped or kept by the command's --markers choice.
	Markers
	// Read: the command reads the header for its own answer.
	Read
	// Server: the server copies the message; the cell's note says what
	// it does with the header.
	Server
	// Refuse: the command refuses before it sends anything, with a line
	// saying why.
	Refuse
)

func (f Fate) String() string {
	return [...]string{"keep", "rename", "drop", "own", "ttl", "markers", "read", "server", "refuse"}[f]
}

// Cell is one command's fate for one header, with what it means there.
type Cell struct {
	Fate Fate
	Note string
}

// HeaderRule is one row of the header table: a header (or a family of
// headers, Name ending in '*') the server acts on or writes, what the
// server does with it, each command's fate, and the fact tests that pin
// the server's behaviour.
type HeaderRule struct {
	Name   string
	Server string
	Cells  [numCommands]Cell
	Facts  []string
}

// Prefix reports whether the rule names a family of headers.
func (r HeaderRule) Prefix() bool { return strings.HasSuffix(r.Name, "*") }

// Matches reports whether header name (exact case, as the server matches
// it) falls under the rule.
func (r HeaderRule) Matches(name string) bool {
	if r.Prefix() {
		return strings.HasPrefix(name, strings.TrimSuffix(r.Name, "*"))
	}
	return name == r.Name
}

func c(f Fate, note string) Cell { return Cell{f, note} }

var (
	dumpKeep  = c(Keep, "shown as stored")
	mirrorCp  = c(Server, "the server copies it as stored")
	dlqRename = c(Rename, "")
	kvKeep    = c(Keep, "shown as stored")
)

// HeaderTable is the one list of headers the 2.11–2.15 servers act on when
// a message is published, or write on stored messages, and what every
// jetctl command that moves or reads messages does with each. The code
// asks it (FateOf, Renames, CopyHeaderInto); docs/headers.md is generated from it
// (TestHeaderDoc); the fact tests named pin each server behaviour.
var HeaderTable = []HeaderRule{
	{
		Name:   "Nats-Msg-Id",
		Server: "deduplicates: a second message with the same id inside the stream's duplicate window is acknowledged as a duplicate and not stored",
		Cells: [numCommands]Cell{
			dumpKeep,
			c(Own, "each copy carries jetctl's own id (prefix:stream:seq:subject), so a rerun stores nothing twice"),
			mirrorCp,
			c(Rename, "sequences are kept, so no id is needed"),
			c(Own, "the dead letter's id is jetctl's (stream, consumer, sequence); a redriven message's own id is dropped, the application's stays renamed (TestCopyHeaderKeepsTheEarlierOriginal)"),
			c(Own, "the redrive's id is jetctl's (dlq stream and sequence, redrive count): a rerun inside the window stores nothing twice"),
			kvKeep,
		},
		Facts: []string{"TestFactMsgIDStoredVerbatim"},
	},
	{
		Name:   "Nats-Expected-*",
		Server: "a condition on the stream's state (stream name, last sequence, last subject sequence, last id); the publish is refused when it does not hold",
		Cells: [numCommands]Cell{
			dumpKeep,
			c(Rename, "the condition held when the original was stored; it would refuse the copy"),
			c(Server, "the server drops them; the verification leaves them out"),
			c(Drop, "as a mirror does"),
			c(Own, "the dead letter's publish carries its own expectation (written once per subject); the original's are renamed"),
			c(Rename, "stay renamed"),
			kvKeep,
		},
		Facts: []string{"TestFactExpectedHeadersStoredVerbatim"},
	},
	{
		Name:   "Nats-Rollup",
		Server: "with allow_rollup_hdrs, sub purges every other message on the subject and all purges the stream",
		Cells: [numCommands]Cell{
			dumpKeep,
			c(Rename, "a copy never purges the target"),
			mirrorCp,
			c(Rename, "the messages it purged are already gone from the source"),
			dlqRename,
			c(Rename, "stays renamed: a redrive never purges the messages published since"),
			kvKeep,
		},
		Facts: []string{"TestFactRollupPurgesSubject"},
	},
	{
		Name:   "Nats-TTL",
		Server: "with allow_msg_ttl, the message expires that long after it was stored (never: never); under 1s is refused (10165), and so is any TTL on a stream without allow_msg_ttl (10166)",
		Cells: [numCommands]Cell{
			dumpKeep,
			c(TTL, "--ttl remaining (default): what is left of it, an expired message skipped and counted; keep: as stored; drop: renamed"),
			c(Server, "the server copies it as stored; where the target allows TTLs (allow_msg_ttl, the source's) the copy expires when the original does, else never"),
			c(TTL, "--ttl remaining (default): what is left of it, rounded up and at least 1s, so that no copy goes before its original (none is skipped: sequences are kept); keep: the whole TTL again from the copy's time; drop: none. The original stays as Jetctl-Orig-Nats-TTL, which the verification compares"),
			c(Rename, "a dead letter does not expire before someone looks at it"),
			c(TTL, "what is left of it; a dead letter whose TTL has passed is skipped and reported unless --include-expired (then the original TTL)"),
			c(Read, "a key's TTL"),
		},
		Facts: []string{"TestFactTTLExpiresFromStoredTime", "TestFactTTLRefusedUnderOneSecond", "TestFactTTLRefusedWithoutAllowMsgTTL", "TestFactRenamedTTLNeverExpires", "TestFactSourcedTTLKeptWithoutAllowMsgTTL", "TestFactMirrorKeepsAndHonoursTTL"},
	},
	{
		Name:   "Nats-Marker-Reason",
		Server: "written by the server on the subject delete marker it leaves when a message ages out (MaxAge; 2.15 defines Purge and Remove and writes neither: a delete or a purge leaves no marker), with the marker's own Nats-TTL and Nats-Rollup: sub; stored as it is when a client sends it",
		Cells: [numCommands]Cell{
			dumpKeep,
			c(Markers, "--markers skip (default unless the target is a KV bucket's stream): markers are not copied; keep: copied with their reason (their Nats-Rollup renamed, their Nats-TTL by --ttl), so a KV target reads the delete"),
			mirrorCp,
			c(Keep, "the stream's deletes stay deletes"),
			c(Keep, "the server stores a client's as it is"),
			c(Keep, ""),
			c(Read, "a marker is a DEL (Remove) or PURGE (MaxAge, Purge), as nats.go reads it"),
		},
		Facts: []string{"TestFactMarkerReasonStoredVerbatim", "TestFactServerMarkerHeaders", "TestFactKeyTTLLeavesMaxAgeMarker", "TestFactOnlyExpiryWritesMarkers", "TestFactKVReadsCopiedMarkerAsDelete"},
	},
	{
		Name:   "Nats-Incr",
		Server: "on a stream with allow_msg_counter, adds to the subject's total (required there: 10169); refused elsewhere",
		Cells: [numCommands]Cell{
			dumpKeep,
			c(Rename, "an increment is never applied twice; a counter stream as the target is refused before the first copy"),
			c(Server, "a counter stream cannot be mirrored: migrate makes the target a counter stream sourcing it, which stores the difference from the last total it had as Nats-Incr (each subject's total is kept and verified; sequences only where the source has no gaps)"),
			c(Refuse, "a counter stream is not copied message by message: its increments would be applied again (another stream's message that carries one, sourced from a counter, has it renamed)"),
			dlqRename,
			c(Refuse, "a dead letter of a counter stream is refused before anything is sent: the increment was applied"),
			kvKeep,
		},
		Facts: []string{"TestFactCounterNeedsIncr", "TestFactCounterRefusesCopies", "TestFactCounterSourced"},
	},
	{
		Name:   "Nats-Counter-Sources",
		Server: "on a counter stream, the per-source totals a sourced counter carries; stored as it is when a client sends it",
		Cells:  [numCommands]Cell{dumpKeep, c(Rename, ""), c(Server, "the counter stream sourcing a counter stream writes its own: the source's totals under the source's name"), c(Refuse, "as Nats-Incr"), dlqRename, c(Rename, "stays renamed"), kvKeep},
		Facts:  []string{"TestFactCounterSourcesStoredVerbatim", "TestFactCounterSourced", "TestFactCounterSourceRenamedCountsAgain"},
	},
	{
		Name:   "Nats-Batch-*",
		Server: "opens, continues or commits an atomic batch (allow_atomic) or a fast batch (allow_batched); a batch that never commits stores nothing",
		Cells: [numCommands]Cell{
			dumpKeep,
			c(Rename, "a copy is never part of a batch"),
			c(Server, "the server drops them, as it drops Nats-Expected-*; the verification leaves them out (a fast batch's messages carry none)"),
			c(Rename, ""),
			dlqRename,
			c(Rename, "stays renamed: a redrive never opens a batch"),
			kvKeep,
		},
		Facts: []string{"TestFactLoneBatchMessageStoresNothing", "TestFactMirrorDropsBatchHeaders", "TestFactFastBatchStoredPlain"},
	},
	{
		Name:   "Nats-Schedule*",
		Server: "with allow_msg_schedules, defines a schedule (Nats-Schedule, -Target, -Source, -TTL, -Time-Zone, -Rollup) that publishes to its target; the server stores a schedule with Nats-Rollup: sub, and a generated message carries Nats-Schedule-Next",
		Cells: [numCommands]Cell{
			dumpKeep,
			c(Rename, "a copy never starts a schedule"),
			mirrorCp,
			c(Rename, ""),
			dlqRename,
			c(Rename, "stays renamed: a redrive never starts or purges a schedule"),
			kvKeep,
		},
		Facts: []string{"TestFactScheduleNextPurgePurgesSchedule"},
	},
	{
		Name:   "Nats-Scheduler",
		Server: "names the schedule a generated message came from; with Nats-Schedule-Next: purge the server purges that schedule, and alone it is refused (10212)",
		Cells:  [numCommands]Cell{dumpKeep, c(Rename, ""), mirrorCp, c(Rename, ""), dlqRename, c(Rename, "stays renamed"), kvKeep},
		Facts:  []string{"TestFactScheduleNextPurgePurgesSchedule", "TestFactSchedulerAloneRefused"},
	},
	{
		Name:   "Nats-Stream-Source",
		Server: "written by the server on a sourced message (where it came from); a client's publish with it is refused (10227)",
		Cells: [numCommands]Cell{
			dumpKeep,
			c(Rename, "else the target refuses the copy of a sourced stream's message"),
			c(Server, "the server copies it as stored; the counter way's target writes its own (where it sourced each message from, which pairs it with the source's)"),
			c(Rename, ""),
			dlqRename,
			c(Rename, "stays renamed"),
			kvKeep,
		},
		Facts: []string{"TestFactStreamSourceRefusedOnPublish"},
	},
	{
		Name:   "Nats-Trace-*",
		Server: "message tracing: Nats-Trace-Dest sends a trace of the publish to that subject (stored as \"trace disabled\"), Nats-Trace-Only: true traces without storing the message",
		Cells: [numCommands]Cell{
			dumpKeep,
			c(Rename, "else a copy with Nats-Trace-Only would be acknowledged and not stored"),
			mirrorCp,
			c(Rename, ""),
			dlqRename,
			c(Rename, "stays renamed"),
			kvKeep,
		},
		Facts: []string{"TestFactTraceOnlyStoresNothing"},
	},
	{
		Name:   "Nats-Required-Api-Level",
		Server: "checked on JetStream API requests; on a publish it is stored as it is, not checked",
		Cells:  [numCommands]Cell{dumpKeep, c(Keep, ""), mirrorCp, c(Keep, ""), c(Keep, ""), c(Keep, ""), kvKeep},
		Facts:  []string{"TestFactRequiredAPILevelNotCheckedOnPublish"},
	},
}

// Rule is the row of the header table header name falls under, and
// whether there is one.
func Rule(name string) (HeaderRule, bool) {
	for _, r := range HeaderTable {
		if r.Matches(name) {
			return r, true
		}
	}
	return HeaderRule{}, false
}

// FateOf is what cmd does with header name: Keep for a header the table
// does not name.
func FateOf(cmd Command, name string) Fate {
	if r, ok := Rule(name); ok {
		return r.Cells[cmd].Fate
	}
	return Keep
}

// Table renders the header table as Markdown: one row per header, a
// column per command, each cell its fate and note.
func Table() string {
	var b strings.Builder
	b.WriteString("| header | the server | ")
	for _, cmd := range Commands {
		fmt.Fprintf(&b, "%s | ", cmd)
	}
	b.WriteString("fact tests |\n|")
	for range len(Commands) + 3 {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, r := range HeaderTable {
		fmt.Fprintf(&b, "| `%s` | %s | ", r.Name, r.Server)
		for _, cmd := range Commands {
			cell := r.Cells[cmd]
			if cell.Note == "" {
				fmt.Fprintf(&b, "%s | ", cell.Fate)
			} else {
				fmt.Fprintf(&b, "%s: %s | ", cell.Fate, cell.Note)
			}
		}
		facts := make([]string, len(r.Facts))
		for i, f := range r.Facts {
			facts[i] = "`" + f + "`"
		}
		fmt.Fprintf(&b, "%s |\n", strings.Join(facts, ", "))
	}
	return b.String()
}
