package migrate_test

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/migrate"
)

// payloads is every payload stream holds, sorted, duplicates included.
func payloads(t *testing.T, js jetstream.JetStream, stream string) []string {
	t.Helper()
	s, err := js.Stream(ctx(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	si, err := s.Info(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for seq := si.State.FirstSeq; seq <= si.State.LastSeq && si.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx(t), seq)
		if err != nil {
			continue
		}
		out = append(out, string(m.Data))
	}
	sort.Strings(out)
	return out
}

// waitMsgs waits until stream holds n messages (20 s at most).
func waitMsgs(t *testing.T, js jetstream.JetStream, stream string, n uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		si := streamInfo(t, js, stream)
		if si.State.Msgs == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d messages after 20 s, want %d", stream, si.State.Msgs, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A stream that sources a workqueue or an interest stream (DOWN) reads it
// through a durable the server made on it (TestFactSourceDurableMetadata).
// Migrating the origin (migrate stream X --as X2 --cutover) leaves that
// durable alone: it is not re-seated on X2, and the cutover waits for it
// to have read what X held, so the messages it takes out of X during the
// move fail nothing. X is deleted, and with it DOWN's consumer: DOWN then
// copies nothing more (its source reports the origin gone), and the
// summary names it with the sequence of X2 to source from. Pointed there
// (as the summary says), DOWN has every message once: none lost, none
// twice.
func TestMoveOriginOfASourcingStream(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retention jetstream.RetentionPolicy
		user      bool // X has a user's durable too
		mech      string
	}{
		{"workqueue", jetstream.WorkQueuePolicy, false, "copy"},
		{"interest", jetstream.InterestPolicy, true, "mirror"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := embeddedtest.JetStream(t)
			if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "X", Subjects: []string{"x.>"}, Retention: tc.retention}); err != nil {
				t.Fatal(err)
			}
			if tc.user {
				if _, err := js.CreateOrUpdateConsumer(ctx(t), "X", jetstream.ConsumerConfig{Durable: "proj", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "DOWN", Sources: []*jetstream.StreamSource{{Name: "X"}}}); err != nil {
				t.Fatal(err)
			}
			rc := replicationConsumer(t, js, "X", "DOWN")
			publish(t, js, "x.a", 100)
			waitMsgs(t, js, "DOWN", 100)
			sum, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: js}, migrate.Endpoint{JS: js}, migrate.Config{Stream: "X", Target: "X2", Cutover: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("summary %+v downstreams %+v", sum, sum.Downstreams)
			if sum.Mechanism != tc.mech || !sum.Verified {
				t.Fatalf("summary %+v", sum)
			}
			for _, c := range sum.Consumers {
				if strings.HasPrefix(c.Name, "JS_SRC_") {
					t.Fatalf("the replication durable %s was re-seated as a user's consumer", c.Name)
				}
			}
			s2, err := js.Stream(ctx(t), "X2")
			if err != nil {
				t.Fatal(err)
			}
			for ci := range s2.ListConsumers(ctx(t)).Info() {
				if ci.Name == rc.Name {
					t.Fatalf("X2 has the replication durable %s", rc.Name)
				}
			}
			if len(sum.Downstreams) != 1 || sum.Downstreams[0].Stream != "DOWN" || !sum.Downstreams[0].Exact || sum.Downstreams[0].FromSeq != 101 {
				t.Fatalf("downstreams %+v, want DOWN, to source X2 from seq 101, exactly", sum.Downstreams)
			}
			if a := sum.Downstreams[0].Action; !strings.Contains(a, "becomes X2 with opt_start_seq 101") {
				t.Errorf("DOWN's action: %q", a)
			}
			from := sum.Downstreams[0].FromSeq
			// DOWN's source names a stream that is gone: it copies nothing,
			// and says so (the server looks again every 10 s or so).
			publish(t, js, "x.b", 5)
			start := time.Now()
			for {
				di := streamInfo(t, js, "DOWN")
				if len(di.Sources) == 1 && di.Sources[0].Error != nil {
					if di.Sources[0].Error.ErrorCode != 10059 {
						t.Fatalf("DOWN's source reports %+v, want 10059 stream not found", di.Sources[0].Error)
					}
					t.Logf("DOWN's source reports %q %s after the cutover", di.Sources[0].Error.Description, time.Since(start).Round(time.Second))
					break
				}
				if time.Since(start) > time.Minute {
					t.Fatalf("DOWN's source reports no error a minute after the cutover: %+v", di.Sources)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if n := streamInfo(t, js, "DOWN").State.Msgs; n != 100 {
				t.Fatalf("DOWN holds %d messages, want the 100 sourced before the move", n)
			}
			// Pointed at X2 from the summary's sequence, as a user would.
			dc := streamInfo(t, js, "DOWN").Config
			dc.Sources = []*jetstream.StreamSource{{Name: "X2", OptStartSeq: from}}
			if _, err := js.UpdateStream(ctx(t), dc); err != nil {
				t.Fatal(err)
			}
			waitMsgs(t, js, "DOWN", 105)
			publish(t, js, "x.c", 5)
			waitMsgs(t, js, "DOWN", 110)
			var want []string
			for _, p := range []struct{ n int }{{100}, {5}, {5}} { // x.a, x.b, x.c
				for i := range p.n {
					want = append(want, fmt.Sprintf("m%d", i))
				}
			}
			sort.Strings(want)
			if got := payloads(t, js, "DOWN"); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("DOWN holds %v, want %v", got, want)
			}
		})
	}
}

// replicationConsumer is the consumer on stream through which down reads
// it, waiting for it (20 s at most).
func replicationConsumer(t *testing.T, js jetstream.JetStream, stream, down string) *jetstream.ConsumerInfo {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := js.Stream(ctx(t), stream)
		if err != nil {
			t.Fatal(err)
		}
		for ci := range s.ListConsumers(ctx(t)).Info() {
			if ci.Config.Metadata["_nats.src.stream"] == down {
				return ci
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no consumer of %s on %s after 20 s", down, stream)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// apply --migrate (a replacement under the stream's own name) of a stream
// that another sources is refused before anything changes: the sourcing
// stream would copy the remade stream again from its start.
func TestReplaceRefusesASourcedStream(t *testing.T) {
	js := embeddedtest.JetStream(t)
	cfg := jetstream.StreamConfig{Name: "X", Subjects: []string{"x.>"}}
	if _, err := js.CreateStream(ctx(t), cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "DOWN", Sources: []*jetstream.StreamSource{{Name: "X"}}}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "x.a", 3)
	cfg.Storage = jetstream.MemoryStorage
	for _, dry := range []bool{true, false} {
		_, err := migrate.Replace(ctx(t), js, cfg, migrate.ReplaceOptions{DryRun: dry})
		if !errors.Is(err, migrate.ErrInvalid) || !strings.Contains(err.Error(), "is read by DOWN") {
			t.Fatalf("dry run %v: %v, want the refusal naming DOWN", dry, err)
		}
	}
	if si := streamInfo(t, js, "X"); si.Config.Storage != jetstream.FileStorage || si.State.Msgs != 3 {
		t.Fatalf("X changed: %+v %+v", si.Config, si.State)
	}
	if _, err := js.Stream(ctx(t), migrate.TempName("X")); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the temporary stream: %v, want none", err)
	}
}
