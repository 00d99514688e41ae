package replay

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/streamread"
)

func TestStreamOrigins(t *testing.T) {
	ttlStream := jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>", "u.*"}, AllowMsgTTL: true}
	sourcing := jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Sources: []*jetstream.StreamSource{{Name: "T"}}}
	plain := jetstream.StreamConfig{Name: "P", Subjects: []string{"p.>"}}
	for _, tc := range []struct {
		name     string
		cfg      jetstream.StreamConfig
		subjects []string
		mode     envelope.TTLMode
		want     []origin
	}{
		{"a TTL stream's subjects", ttlStream, nil, envelope.TTLRemaining, []origin{{"t.>", true}, {"u.*", true}}},
		{"--ttl drop", ttlStream, nil, envelope.TTLDrop, []origin{{"t.>", false}, {"u.*", false}}},
		{"--subject narrows", ttlStream, []string{"t.a"}, envelope.TTLKeep, []origin{{"t.a", true}}},
		{"a plain stream", plain, nil, envelope.TTLRemaining, []origin{{"p.>", false}}},
		{"a sourcing stream: any subject, any TTL", sourcing, nil, envelope.TTLRemaining, []origin{{">", true}}},
		{"a sourcing stream, --subject", sourcing, []string{"t.x"}, envelope.TTLRemaining, []origin{{"t.x", true}}},
	} {
		got := streamOrigins(streamread.Range{Subjects: tc.subjects, StreamConfig: tc.cfg}, tc.mode)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDumpInfoOrigins(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var d DumpInfo
	add := func(subject, ttl string, age time.Duration) {
		t.Helper()
		m := &envelope.Message{Subject: subject, Time: now.Add(-age)}
		if ttl != "" {
			m.Header = nats.Header{"Nats-TTL": {ttl}}
		}
		if err := d.add(m); err != nil {
			t.Fatal(err)
		}
	}
	add("plain", "", 0)
	add("expired", "1m", time.Hour)
	add("live", "1m", time.Hour)
	add("live", "2h", time.Hour)
	add("forever", "never", 1000*time.Hour)
	want := map[envelope.TTLMode]map[string]bool{
		envelope.TTLRemaining: {"plain": false, "expired": false, "live": true, "forever": true},
		envelope.TTLKeep:      {"plain": false, "expired": true, "live": true, "forever": true},
		envelope.TTLDrop:      {"plain": false, "expired": false, "live": false, "forever": false},
	}
	for mode, subjects := range want {
		got := map[string]bool{}
		for _, o := range d.origins(mode, now) {
			got[o.subject] = o.ttl
		}
		for subject, ttl := range subjects {
			if v, ok := got[subject]; !ok || v != ttl {
				t.Errorf("--ttl %s: %s carries a TTL: %v (listed %v), want %v", mode, subject, v, ok, ttl)
			}
		}
	}
	if d.Messages != 5 {
		t.Errorf("%d messages, want 5", d.Messages)
	}
	// Past maxDumpSubjects, any subject stands for all.
	for i := range maxDumpSubjects {
		add("s."+strings.Repeat("x", i+1), "", 0)
	}
	if got := d.origins(envelope.TTLRemaining, now); !slices.Equal(got, []origin{{">", true}}) {
		t.Errorf("origins of a dump with many subjects: %v", got)
	}
	if err := d.add(&envelope.Message{Subject: "bad", Header: nats.Header{"Nats-TTL": {"soon"}}}); err == nil {
		t.Error("a Nats-TTL the server would refuse was taken")
	}
}

// targetServer makes the target streams of the tests below on a server
// of their own.
func targetServer(t *testing.T) (context.Context, jetstream.JetStream) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	js := embeddedtest.JetStream(t)
	for _, cfg := range []jetstream.StreamConfig{
		{Name: "PLAIN", Subjects: []string{"plain.>"}},
		{Name: "TTL", Subjects: []string{"ttl.>"}, AllowMsgTTL: true},
		{Name: "COUNT", Subjects: []string{"count.>"}, AllowMsgCounter: true},
		{Name: "MIXED_A", Subjects: []string{"mixed.a.>"}, AllowMsgTTL: true},
		{Name: "MIXED_B", Subjects: []string{"mixed.b.>"}},
	} {
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	for _, bucket := range []string{"B1", "B2"} {
		if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket}); err != nil {
			t.Fatal(err)
		}
	}
	return ctx, js
}

func TestCheckTargets(t *testing.T) {
	ctx, js := targetServer(t)
	ttl := []origin{{"orders.>", true}}
	noTTL := []origin{{"orders.>", false}}
	for _, tc := range []struct {
		name    string
		to      string
		markers MarkersMode
		origins []origin
		want    MarkersMode
		refused string
	}{
		{name: "a plain stream, no TTLs", to: "plain.>", origins: noTTL, want: MarkersSkip},
		{name: "a plain stream, TTLs", to: "plain.>", origins: ttl, refused: `--ttl remaining: target stream "PLAIN" does not allow per-message TTLs (allow_msg_ttl), and copies of stream "ORDERS" may carry one, which the server refuses; use --ttl drop to copy without TTLs, or allow TTLs on "PLAIN"`},
		{name: "a TTL stream", to: "ttl.{subject}", origins: ttl, want: MarkersSkip},
		{name: "a counter stream", to: "count.x", origins: noTTL, refused: `target stream "COUNT" is a counter stream (allow_msg_counter): it stores only increments (Nats-Incr), and a copy never applies an increment again; replay into a stream that is not a counter`},
		{name: "only the streams the copies reach", to: "mixed.{subject}", origins: []origin{{"a.x", true}, {"b.x", false}}, want: MarkersSkip},
		{name: "one of them refuses", to: "mixed.{subject}", origins: []origin{{"a.x", true}, {"b.x", true}}, refused: `--ttl remaining: target stream "MIXED_B" does not allow`},
		{name: "a KV bucket's stream", to: "$KV.B1.>", origins: noTTL, want: MarkersKeep},
		{name: "two buckets", to: "{subject}", origins: []origin{{"$KV.B1.>", false}, {"$KV.B2.k", false}}, want: MarkersKeep},
		{name: "a bucket and a stream", to: "{subject}", origins: []origin{{"$KV.B1.>", false}, {"plain.x", false}}, want: MarkersSkip},
		{name: "--markers skip into a bucket", to: "$KV.B1.>", markers: MarkersSkip, origins: noTTL, want: MarkersSkip},
		{name: "--markers keep", to: "plain.>", markers: MarkersKeep, origins: noTTL, want: MarkersKeep},
		{name: "no stream captures the copies", to: "nowhere.>", origins: ttl, want: MarkersSkip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pc := &PublishConfig{To: tc.to, Markers: tc.markers}
			got, err := checkTargets(ctx, js, pc, tc.origins, `copies of stream "ORDERS"`)
			if tc.refused != "" {
				if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), tc.refused) {
					t.Fatalf("err %v, want ErrInvalid: %s", err, tc.refused)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("markers %v, err %v; want %v", got, err, tc.want)
			}
		})
	}
}

// Run refuses a target before anything is read or sent, in a dry run
// too; --ttl drop copies a TTL stream into a plain one.
func TestRunChecksTargetsFirst(t *testing.T) {
	ctx, js := targetServer(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, AllowMsgTTL: true}); err != nil {
		t.Fatal(err)
	}
	for _, h := range []nats.Header{{"Nats-TTL": {"1h"}}, nil, {"Nats-Marker-Reason": {"Remove"}}} {
		if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: "orders.a", Header: h}); err != nil {
			t.Fatal(err)
		}
	}
	for _, dry := range []bool{true, false} {
		for _, to := range []string{"plain.>", "count.>"} {
			cfg := Config{Range: streamread.Config{Stream: "ORDERS"}, DryRun: dry, Publish: &PublishConfig{To: to}}
			cfg.Started = func(Summary) { t.Errorf("--to %s (dry run %v): started", to, dry) }
			if _, err := Run(ctx, js, cfg); !errors.Is(err, ErrInvalid) {
				t.Errorf("--to %s (dry run %v): %v, want refused", to, dry, err)
			}
		}
	}
	for _, name := range []string{"PLAIN", "COUNT"} {
		s, _ := js.Stream(ctx, name)
		if n := s.CachedInfo().State.Msgs; n != 0 {
			t.Errorf("%s holds %d messages after the refusals", name, n)
		}
	}
	// The last message is a marker, skipped: the checkpoint passes it.
	ckpt := filepath.Join(t.TempDir(), "ck.json")
	sum, err := Run(ctx, js, Config{Range: streamread.Config{Stream: "ORDERS"}, Publish: &PublishConfig{To: "plain.>", TTL: envelope.TTLDrop}, CheckpointPath: ckpt})
	if err != nil || sum.Messages != 2 || sum.SkippedMarkers != 1 || sum.SkippedExpired != 0 {
		t.Fatalf("--ttl drop: %+v, %v; want 2 copied and the marker skipped", sum, err)
	}
	if cp, err := LoadCheckpoint(ckpt); err != nil || cp.LastSeq != 3 {
		t.Fatalf("checkpoint %+v, %v; want last_seq 3", cp, err)
	}
	m, err := js.Stream(ctx, "PLAIN")
	if err != nil {
		t.Fatal(err)
	}
	first, err := m.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if first.Header.Get("Nats-TTL") != "" || first.Header.Get(envelope.OrigPrefix+"Nats-TTL") != "1h" {
		t.Errorf("--ttl drop: copy's headers %v", first.Header)
	}
}
