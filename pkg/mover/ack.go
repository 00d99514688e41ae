package mover

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pubAck is what an acknowledgement says.
type pubAck struct {
	stream    string
	seq       uint64
	duplicate bool
	err       error
}

// parseAck reads a publish acknowledgement without decoding the usual
// {"stream":"S","seq":N} or {"stream":"S","seq":N,"duplicate":true} in
// full (at hundreds of thousands of copies, the client's CPU is the
// server's too: the machine is shared); anything else is decoded as JSON.
func parseAck(m *nats.Msg) pubAck {
	if len(m.Data) == 0 {
		if m.Header.Get("Status") == "503" {
			return pubAck{err: jetstream.ErrNoStreamResponse}
		}
		return pubAck{err: fmt.Errorf("empty acknowledgement (status %s %s)", m.Header.Get("Status"), m.Header.Get("Description"))}
	}
	if !bytes.Contains(m.Data, []byte(`"error"`)) {
		if ack, ok := quickAck(m.Data); ok {
			return ack
		}
	}
	var resp struct {
		Stream    string              `json:"stream"`
		Seq       uint64              `json:"seq"`
		Duplicate bool                `json:"duplicate"`
		Error     *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return pubAck{err: fmt.Errorf("bad acknowledgement: %w", err)}
	}
	if resp.Error != nil {
		return pubAck{err: resp.Error}
	}
	return pubAck{stream: resp.Stream, seq: resp.Seq, duplicate: resp.Duplicate}
}

func quickAck(data []byte) (pubAck, bool) {
	const streamKey, seqKey = `{"stream":"`, `,"seq":`
	if !bytes.HasPrefix(data, []byte(streamKey)) {
		return pubAck{}, false
	}
	rest := data[len(streamKey):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return pubAck{}, false
	}
	ack := pubAck{stream: string(rest[:end])}
	rest = rest[end+1:]
	if !bytes.HasPrefix(rest, []byte(seqKey)) {
		return pubAck{}, false
	}
	rest = rest[len(seqKey):]
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	seq, err := strconv.ParseUint(string(rest[:n]), 10, 64)
	if err != nil {
		return pubAck{}, false
	}
	ack.seq = seq
	rest = rest[n:]
	switch {
	case bytes.Equal(rest, []byte(`}`)):
	case bytes.HasPrefix(rest, []byte(`,"duplicate":true`)):
		ack.duplicate = true
	default:
		// Other fields (domain, batch, ...): decode them properly.
		return pubAck{}, false
	}
	return ack, true
}
