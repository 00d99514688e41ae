package mover

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestParseAck(t *testing.T) {
	tests := []struct {
		data string
		want pubAck
	}{
		{`{"stream":"COPY","seq":7}`, pubAck{stream: "COPY", seq: 7}},
		{`{"stream":"COPY","seq":7,"duplicate":true}`, pubAck{stream: "COPY", seq: 7, duplicate: true}},
		{`{"stream":"COPY","domain":"hub","seq":9}`, pubAck{stream: "COPY", seq: 9}},
		{`{"stream":"C\"X","seq":3,"duplicate":true}`, pubAck{stream: `C"X`, seq: 3, duplicate: true}},
	}
	for _, tt := range tests {
		if got := parseAck(&nats.Msg{Data: []byte(tt.data)}); got != tt.want {
			t.Errorf("parseAck(%s) = %+v, want %+v", tt.data, got, tt.want)
		}
	}
	refused := &nats.Msg{Data: []byte(`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"}}`)}
	if err := parseAck(refused).err; err == nil || !strings.Contains(err.Error(), "wrong last sequence") {
		t.Errorf("refused: %v", err)
	}
	noStream := &nats.Msg{Header: nats.Header{"Status": {"503"}}}
	if !errors.Is(parseAck(noStream).err, jetstream.ErrNoStreamResponse) {
		t.Error("503 is no stream response")
	}
}
