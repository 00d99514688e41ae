// Package envelopetest holds every command's header handling to the one
// header table (envelope.HeaderTable, docs/headers.md): a test gives a
// command a message carrying every header the table names, and checks
// what the command sent against the command's column.
package envelopetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/envelope"
)

// examples are a header name and a value for each row of the table, as a
// client (or the server) would write them; a family's row gets one of its
// names.
var examples = map[string][2]string{
	"Nats-Msg-Id":             {"Nats-Msg-Id", "order-1"},
	"Nats-Expected-*":         {"Nats-Expected-Last-Subject-Sequence", "41"},
	"Nats-Rollup":             {"Nats-Rollup", "sub"},
	"Nats-TTL":                {"Nats-TTL", "1h"},
	"Nats-Marker-Reason":      {"Nats-Marker-Reason", "Remove"},
	"Nats-Incr":               {"Nats-Incr", "1"},
	"Nats-Counter-Sources":    {"Nats-Counter-Sources", `{"C":{"C.a":"1"}}`},
	"Nats-Batch-*":            {"Nats-Batch-Id", "b1"},
	"Nats-Schedule*":          {"Nats-Schedule", "@every 1m"},
	"Nats-Scheduler":          {"Nats-Scheduler", "ORDERS.schedule"},
	"Nats-Stream-Source":      {"Nats-Stream-Source", "ORDERS 1 > >"},
	"Nats-Trace-*":            {"Nats-Trace-Only", "true"},
	"Nats-Required-Api-Level": {"Nats-Required-Api-Level", "2"},
}

// Example is the header name and value the checks use for rule r.
func Example(r envelope.HeaderRule) (name, value string) {
	e, ok := examples[r.Name]
	if !ok {
		// A row added to the table without an example here: the family's
		// own name, with a value no server reads.
		return strings.TrimSuffix(r.Name, "*"), "x"
	}
	return e[0], e[1]
}

// EveryHeader is a header with one of each row's headers, and a header of
// the application's that every command keeps.
func EveryHeader() nats.Header {
	h := nats.Header{"App-Trace": {"t-1"}}
	for _, r := range envelope.HeaderTable {
		name, value := Example(r)
		h[name] = []string{value}
	}
	return h
}

// CheckFates checks got, the header a command (column cmd) made of orig,
// row by row against the table: keep leaves a header under its name,
// rename moves it to Jetctl-Orig-<Name>, drop leaves it out, own sets the
// command's value and renames the original. Other fates (ttl, markers,
// read, server, refuse) depend on the command's choices and are checked by
// the caller; skip names rows the caller checks itself. Headers the table
// does not name must be kept.
func CheckFates(t testing.TB, cmd envelope.Command, orig, got nats.Header, skip ...string) {
	t.Helper()
	for name, vs := range orig {
		r, ok := envelope.Rule(name)
		if !ok {
			if !slices.Equal(got[name], vs) {
				t.Errorf("%s: %s is no server header and must be kept: got %q, want %q", cmd, name, got[name], vs)
			}
			continue
		}
		if slices.Contains(skip, r.Name) {
			continue
		}
		renamed := got[envelope.OrigPrefix+name]
		switch fate := r.Cells[cmd].Fate; fate {
		case envelope.Keep:
			if !slices.Equal(got[name], vs) {
				t.Errorf("%s: %s's fate is keep: got %q, want %q", cmd, name, got[name], vs)
			}
		case envelope.Rename:
			if len(got[name]) > 0 || !slices.Equal(renamed, vs) {
				t.Errorf("%s: %s's fate is rename: got %s %q and %s%s %q", cmd, name, name, got[name], envelope.OrigPrefix, name, renamed)
			}
		case envelope.Drop:
			if len(got[name]) > 0 || len(renamed) > 0 {
				t.Errorf("%s: %s's fate is drop: got %q and renamed %q", cmd, name, got[name], renamed)
			}
		case envelope.Own:
			if len(got[name]) == 0 || slices.Equal(got[name], vs) || !slices.Equal(renamed, vs) {
				t.Errorf("%s: %s's fate is own: got %q (want the command's own) and renamed %q (want %q)", cmd, name, got[name], renamed, vs)
			}
		}
	}
}
