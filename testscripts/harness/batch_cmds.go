package harness

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rogpeppe/go-internal/testscript"
)

// fast-batch SUBJECT N
//
// Publishes N messages ("batch {i}") to SUBJECT as one fast batch
// (allow_batched, 2.12+): the batch is in each message's reply subject,
// <inbox>.<id>.<flow>.<gap>.<seq>.<op>.$FI, the last one committing it,
// and the server stores the messages with no batch header. It waits for
// the commit's acknowledgement and prints "committed at seq S".
func cmdFastBatch(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: fast-batch SUBJECT N")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 2 {
		ts.Fatalf("fast-batch: N must be a number from 2")
	}
	nc, _ := jsFor(ts)
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox + ".>")
	ts.Check(err)
	id := nats.NewInbox()[len("_INBOX."):]
	for i := 1; i <= n; i++ {
		op := 1 // append
		switch i {
		case 1:
			op = 0 // start
		case n:
			op = 2 // commit
		}
		// Flow 1000: no acknowledgement before the commit's.
		reply := fmt.Sprintf("%s.%s.%d.fail.%d.%d.$FI", inbox, id, 1000, i, op)
		ts.Check(nc.PublishMsg(&nats.Msg{Subject: args[0], Reply: reply, Data: []byte(fmt.Sprintf("batch %d", i))}))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			ts.Fatalf("fast-batch: no acknowledgement of the commit: %v", err)
		}
		var ack struct {
			Seq   uint64          `json:"seq"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(m.Data, &ack) != nil {
			continue
		}
		if len(ack.Error) > 0 {
			ts.Fatalf("fast-batch: %s", m.Data)
		}
		if ack.Seq > 0 {
			fmt.Fprintf(ts.Stdout(), "committed at seq %d\n", ack.Seq)
			return
		}
	}
}
