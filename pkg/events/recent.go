package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/audit"
	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/recorder"
	"github.com/jetctl/jetctl/pkg/units"
)

// RecentWindow is how far back Recent looks unless told.
const RecentWindow = time.Hour

// maxRecent bounds the events Recent reads: past it, its counts say "at
// least" (Truncated).
const maxRecent = 100_000

// RecentConfig selects what Recent sums up: a consumer, a stream (and its
// consumers), or the account (neither).
type RecentConfig struct {
	Stream, Consumer string
	// Window is how far back to look (default RecentWindow).
	Window time.Duration
}

// Recent is what the record says happened lately: what `consumer explain`
// and `status` show next to the server's state.
type Recent struct {
	Since time.Time `json:"since"`
	// LeaderElections counts the stream's and consumers' leader elections.
	LeaderElections int `json:"leader_elections"`
	// DeadLetters counts the messages over max deliveries or terminated
	// by a consumer (once each), since FirstDeadLetter.
	DeadLetters     int        `json:"dead_letters"`
	FirstDeadLetter *time.Time `json:"first_dead_letter,omitempty"`
	// LastChange is the last audit record: what an operator did.
	LastChange *Change `json:"last_change,omitempty"`
	// Truncated: more events than Recent reads (its counts are at least).
	Truncated bool `json:"truncated"`
}

// Change is an audit record as Recent shows it.
type Change struct {
	Time    time.Time `json:"time"`
	User    string    `json:"user"`
	Command string    `json:"command"`
	Summary string    `json:"summary"`
	Result  string    `json:"result"`
}

// ReadRecent reads what happened in the window to what cfg names: nil,
// and no error, when the account has no recorder. It reads the leader
// elections, dead letters and audit records only, filtered by the server.
func ReadRecent(ctx context.Context, js jetstream.JetStream, cfg RecentConfig) (*Recent, error) {
	window := cfg.Window
	if window <= 0 {
		window = RecentWindow
	}
	r := &Recent{Since: time.Now().Add(-window)}
	tc := TimelineConfig{From: r.Since, subjects: recentSubjects(cfg.Stream, cfg.Consumer)}
	type key struct {
		stream string
		seq    uint64
	}
	dead := map[key]bool{}
	read := 0
	errEnough := errors.New("enough")
	err := Timeline(ctx, js, tc, func(e *Event) error {
		if read++; read > maxRecent {
			r.Truncated = true
			return errEnough
		}
		switch e.Type {
		case TypeStreamLeaderElected, TypeConsumerLeaderElected:
			r.LeaderElections++
		case TypeMaxDeliveries, TypeTerminated:
			if e.Type == TypeTerminated && (dlq.Advisory{Type: dlq.TypeTerminated, Reason: e.Reason}).ServerCaused() {
				return nil
			}
			if k := (key{e.Stream, e.Seq}); !dead[k] {
				dead[k] = true
				r.DeadLetters++
				if r.FirstDeadLetter == nil {
					t := e.Time
					r.FirstDeadLetter = &t
				}
			}
		case TypeAudit:
			var c Change
			if a := decodeAuditRecord(e.Audit); a != nil {
				c = Change{Time: e.Time, User: a.User, Command: a.Command, Summary: a.Summary, Result: a.Result}
			}
			r.LastChange = &c
		}
		return nil
	})
	switch {
	case errors.Is(err, ErrNoRecorder):
		return nil, nil
	case err != nil && !errors.Is(err, errEnough):
		return nil, err
	}
	return r, nil
}

// streamWideCommands are the commands whose record of a stream (one that
// names no consumer) changes the stream itself, which every consumer of
// it reads: its config (apply) or where it is (migrate stream). The other
// stream records are of a command run for the stream's dead letters or
// its messages (dlq sweep, redrive, purge, setup's subjects; replay; a
// lease removed): no one consumer's change (docs/events.md, "Audit
// records").
var streamWideCommands = []string{"apply", "migrate stream"}

// recentSubjects are the recorder's subjects of the elections, dead
// letters and audit records of stream and consumer ("" for any). Of a
// consumer, the audit records are those naming it and its stream's
// streamWideCommands records: this is where a change is decided to be a
// consumer's.
func recentSubjects(stream, consumer string) []string {
	s, c := or(stream, "*"), or(consumer, "*")
	subjects := []string{
		advisoryPrefix + "STREAM.LEADER_ELECTED." + s,
		advisoryPrefix + "CONSUMER.LEADER_ELECTED." + s + "." + c,
		advisoryPrefix + "CONSUMER.MAX_DELIVERIES." + s + "." + c,
		advisoryPrefix + "CONSUMER.MSG_TERMINATED." + s + "." + c,
		recorder.AuditPrefix + "." + s + "." + c + ".>",
	}
	if consumer != "" {
		for _, command := range streamWideCommands {
			rec := audit.Record{Stream: stream, Command: command}
			subjects = append(subjects, rec.Subject())
		}
	}
	return subjects
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// Lines say the summary for people, one fact a line, times in UTC:
// "3 leader elections in the last hour", "12 dead letters since 14:02",
// "rewound to seq 5000 by alice at 14:10". None when nothing happened.
func (r *Recent) Lines(window time.Duration) []string {
	if window <= 0 {
		window = RecentWindow
	}
	atLeast := ""
	if r.Truncated {
		atLeast = "at least "
	}
	var out []string
	if r.LeaderElections > 0 {
		out = append(out, fmt.Sprintf("%s%s in the last %s", atLeast, plural(r.LeaderElections, "leader election"), windowText(window)))
	}
	if r.DeadLetters > 0 {
		out = append(out, fmt.Sprintf("%s%s since %s", atLeast, plural(r.DeadLetters, "dead letter"), r.FirstDeadLetter.UTC().Format("15:04")))
	}
	if c := r.LastChange; c != nil {
		what := c.Summary
		if what == "" {
			what = or(c.Command, "a change")
		}
		if c.Result == "error" {
			what = c.Command + " failed"
		}
		out = append(out, fmt.Sprintf("%s by %s at %s (jetctl %s)", what, or(c.User, "someone"), c.Time.UTC().Format("15:04"), or(c.Command, "?")))
	}
	return out
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return humanize.Comma(int64(n)) + " " + noun + "s"
}

func windowText(d time.Duration) string {
	if d == time.Hour {
		return "hour"
	}
	return units.FormatDuration(d)
}

func decodeAuditRecord(data []byte) *audit.Record {
	var a audit.Record
	if err := json.Unmarshal(data, &a); err != nil {
		return nil
	}
	return &a
}
