// Package audit builds the audit records jetctl's changing commands write
// (what a command did, to which stream or consumer, by whom) and
// publishes them to JetStream, where a stream that captures
// jetctl.audit.> keeps them (see docs/events.md, "Audit records").
//
// A record says what was done, never what was attempted: a command writes
// one record per resource it changed, with the counts the server
// acknowledged, and none for a dry run or a run that changed nothing.
package audit

import (
	"strings"
	"time"
)

// Type is the type of every audit record, as advisories carry theirs.
const Type = "io.jetctl.audit.v1"

// SubjectPrefix is the first two tokens of every audit record's subject:
// jetctl.audit.<stream or _>.<consumer or _>.<verb tokens>.
const SubjectPrefix = "jetctl.audit"

// Results of a record.
const (
	ResultOK    = "ok"
	ResultError = "error"
)

// Record is one audit record: the JSON a stream capturing jetctl.audit.>
// stores. The field names are part of jetctl's interface (docs/events.md).
type Record struct {
	Type string `json:"type"`
	// ID is a NUID, also the message's Nats-Msg-Id.
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
	// Command is the command path without "jetctl": "consumer rewind".
	Command string `json:"command"`
	// Stream and Consumer name the resource changed ("" for none; the
	// subject says "_").
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	// Action is what was done to it: rewind, pause, create, delete, ...
	Action  string `json:"action"`
	Summary string `json:"summary"`
	// Counts are what the server acknowledged, as the command prints them.
	Counts map[string]int64 `json:"counts"`
	Result string           `json:"result"`
	Error  string           `json:"error"`
	// User is the operating system user; NATSUser the connection's user
	// name, when one was given.
	User     string `json:"user"`
	NATSUser string `json:"nats_user"`
	Host     string `json:"host"`
	Version  string `json:"version"`
	// Args is the command line, secrets masked (see Masker).
	Args []string `json:"args"`

	// Bucket names the KV bucket or object store when the stream is one's
	// (KV_<bucket>, OBJ_<store>).
	Bucket string `json:"bucket,omitempty"`
	// Target is where a command wrote to besides the stream: a replay's
	// --to subject, a migration's target stream.
	Target string `json:"target,omitempty"`
}

// Origin is who ran a command, and how: what every record of one run
// shares.
type Origin struct {
	// Command is the command path without "jetctl": "dlq redrive".
	Command  string
	User     string
	NATSUser string
	Host     string
	Version  string
	// Args is the command line, already masked.
	Args []string
}

// Change is one resource a command changed and what it did to it.
type Change struct {
	Stream   string
	Consumer string
	// Action is a verb: rewind, pause, sweep, create, migrate, ...
	Action  string
	Summary string
	Counts  map[string]int64
	// Err is why the command failed after making this change (it did
	// what Summary and Counts say, and no more): the record's result is
	// "error".
	Err    error
	Bucket string
	Target string
}

// Record builds the record of change c made by the run o at t, with the
// id given. Text that can carry a URL (the summary, the error) is masked
// by m.
func (o Origin) Record(c Change, id string, t time.Time, m Masker) Record {
	counts := c.Counts
	if counts == nil {
		counts = map[string]int64{}
	}
	r := Record{
		Type: Type, ID: id, Time: t.UTC(), Command: o.Command,
		Stream: c.Stream, Consumer: c.Consumer, Action: c.Action,
		Summary: m.Text(c.Summary), Counts: counts, Result: ResultOK,
		User: o.User, NATSUser: o.NATSUser, Host: o.Host, Version: o.Version,
		Args: o.Args, Bucket: c.Bucket, Target: m.Text(c.Target),
	}
	if r.Args == nil {
		r.Args = []string{}
	}
	if c.Err != nil {
		r.Result, r.Error = ResultError, m.Text(c.Err.Error())
	}
	return r
}

// Subject is where the record is published:
// jetctl.audit.<stream or _>.<consumer or _>.<command's words>, e.g.
// jetctl.audit.ORDERS.projector.consumer.rewind.
func (r *Record) Subject() string {
	parts := []string{SubjectPrefix, token(r.Stream), token(r.Consumer)}
	for _, w := range strings.Fields(r.Command) {
		parts = append(parts, token(w))
	}
	return strings.Join(parts, ".")
}

// token makes s one subject token: "_" for nothing; the characters a
// token cannot hold (stream and consumer names never have them) as "_".
func token(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.', '*', '>', ' ', '\t', '\r', '\n':
			return '_'
		}
		return r
	}, s)
}
