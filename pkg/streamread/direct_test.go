package streamread_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// DirectGet's multi_last gives each subject's last message up to a
// sequence, with its headers as stored (the ones the server appends are
// removed), and ErrStop ends a batch early without an error.
func TestDirectGet(t *testing.T) {
	js := embeddedtest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{"s.a", "s.b", "s.a", "s.b"} { // seqs 1-4
		m := nats.NewMsg(subj)
		m.Header.Set("App", subj)
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	var got []*envelope.Message
	err := streamread.DirectGet(ctx, js, "S", jsapi.MsgGetRequest{MultiLastFor: []string{"s.a", "s.b"}, UpToSeq: 3}, func(m *envelope.Message) error {
		got = append(got, m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Seq != 2 || got[1].Seq != 3 || got[1].Subject != "s.a" {
		t.Fatalf("got %+v", got)
	}
	if len(got[1].Header) != 1 || got[1].Header.Get("App") != "s.a" {
		t.Errorf("headers %v, want only App", got[1].Header)
	}

	n := 0
	err = streamread.DirectGet(ctx, js, "S", jsapi.MsgGetRequest{Seq: 1, Batch: 4}, func(*envelope.Message) error {
		n++
		return streamread.ErrStop
	})
	if err != nil || n != 1 {
		t.Errorf("stopped batch: %d messages, %v", n, err)
	}
	err = streamread.DirectGet(ctx, js, "S", jsapi.MsgGetRequest{MultiLastFor: []string{"s.none"}}, func(*envelope.Message) error {
		t.Error("a message for no subject")
		return nil
	})
	if err != nil {
		t.Errorf("no messages: %v", err)
	}
}
