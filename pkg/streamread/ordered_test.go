package streamread

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestParseAckReply(t *testing.T) {
	cases := []struct {
		reply string
		want  ackMeta
		ok    bool
	}{
		{"$JS.ACK.KV_cfg.c1.1.42.7.1700000000000000001.3", ackMeta{sseq: 42, cseq: 7, ts: 1700000000000000001, pending: 3}, true},
		{"$JS.ACK.hub.ACCHASH.KV_cfg.c1.1.42.7.1700000000000000001.0.rand", ackMeta{sseq: 42, cseq: 7, ts: 1700000000000000001}, true},
		{"$JS.ACK._.ACCHASH.KV_cfg.c1.1.42.7.1700000000000000001.0", ackMeta{sseq: 42, cseq: 7, ts: 1700000000000000001}, true},
		{"$JS.ACK.KV_cfg.c1.1.x.7.1.3", ackMeta{}, false},
		{"$JS.ACK.KV_cfg.c1.1.42.7.1", ackMeta{}, false},
		{"_INBOX.abc", ackMeta{}, false},
	}
	for _, c := range cases {
		got, ok := parseAckReply(c.reply)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("%s: got %+v %v, want %+v %v", c.reply, got, ok, c.want, c.ok)
		}
	}
}

// Pull requests ask for fewer messages the larger they are, within bounds.
func TestBatchFor(t *testing.T) {
	for _, c := range []struct {
		msgs, bytes uint64
		want        int
	}{
		{0, 0, maxPullBatch},
		{1000, 200 * 1000, maxPullBatch},
		{1000, 8 << 10 * 1000, 1024},
		{10, 1 << 20 * 10, minPullBatch},
		{10, 64 << 20 * 10, minPullBatch},
	} {
		info := &jetstream.StreamInfo{State: jetstream.StreamState{Msgs: c.msgs, Bytes: c.bytes}}
		if got := batchFor(info, defaultPullBuffer); got != c.want {
			t.Errorf("%d messages, %d bytes: batch %d, want %d", c.msgs, c.bytes, got, c.want)
		}
	}
	if got := batchFor(nil, defaultPullBuffer); got != maxPullBatch {
		t.Errorf("no info: batch %d", got)
	}
}
