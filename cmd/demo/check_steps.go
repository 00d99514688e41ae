package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// stallCritical is the demo's --stall-critical: the default is 15 minutes,
// which a demo cannot wait.
const stallCritical = time.Second

// checkSteps show `jetctl check` finding the stall no other signal shows:
// an e-mail sender that keeps working but lost one acknowledgement, so
// its ack floor stands still; then the same check clear once the order is
// acknowledged.
func checkSteps() []Step {
	// The order whose ack the e-mail sender lost, acknowledged once fixed.
	var lost jetstream.Msg
	check := []string{"check", "--stream", "ORDERS", "--consumer", "emails", "--stall-critical", stallCritical.String(), "-o", "nagios"}
	return []Step{
		{
			Title: "The e-mail sender (consumer emails, ack_wait 10m) mails every order, but a bug swallows one acknowledgement: deliveries and acks go on, nothing is unprocessed, nothing redelivered",
			Do: func(ctx context.Context, env *Env) (string, error) {
				var sent int
				var err error
				lost, sent, err = emailOrders(ctx, env.JS, "ord-00042")
				return fmt.Sprintf("mailed %d orders; the ack of ord-00042 (seq %d) was lost", sent, seqOf(lost)), err
			},
		},
		{
			Title: fmt.Sprintf("On call, check finds the stall: work pending and the ack floor frozen (--stall-critical %s: the demo cannot wait the default 15 minutes; nagios' exit 2, CRITICAL)", stallCritical),
			Do: func(ctx context.Context, env *Env) (string, error) {
				return waitFloorFrozen(ctx, env.JS, "emails", stallCritical)
			},
			Args: check,
			Exit: 2,
		},
		{
			Title: "The fixed sender acknowledges the order it held",
			Do: func(ctx context.Context, env *Env) (string, error) {
				if err := lost.DoubleAck(ctx); err != nil {
					return "", err
				}
				return fmt.Sprintf("ord-00042 (seq %d) mailed and acknowledged", seqOf(lost)), nil
			},
		},
		{
			Title: "check again: OK, exit 0",
			Args:  check,
		},
	}
}

// emailOrders creates the emails consumer and stands for the e-mail
// sender: it acknowledges every order but lose, which it holds
// unacknowledged, as a worker that lost an ack would.
func emailOrders(ctx context.Context, js jetstream.JetStream, lose string) (jetstream.Msg, int, error) {
	cons, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable: "emails", Description: "Mails an order confirmation", FilterSubject: "orders.>",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 10 * time.Minute,
	})
	if err != nil {
		return nil, 0, err
	}
	var held jetstream.Msg
	sent := 0
	for {
		batch, err := cons.FetchNoWait(100)
		if err != nil {
			return nil, 0, err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			var o Order
			if err := json.Unmarshal(m.Data(), &o); err == nil && o.OrderID == lose {
				held = m
				continue
			}
			if err := m.DoubleAck(ctx); err != nil {
				return nil, 0, err
			}
			sent++
		}
		if err := batch.Error(); err != nil {
			return nil, 0, err
		}
		if got == 0 {
			break
		}
	}
	if held == nil {
		return nil, 0, errors.New("emails: order " + lose + " was not delivered")
	}
	return held, sent, nil
}

// waitFloorFrozen waits until the consumer's last acknowledgement is
// more than d old (10 s at most): its ack floor has then stood still for
// d, and a check with --stall-critical d calls it critical.
func waitFloorFrozen(ctx context.Context, js jetstream.JetStream, consumer string, d time.Duration) (string, error) {
	cons, err := js.Consumer(ctx, "ORDERS", consumer)
	if err != nil {
		return "", err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			return "", err
		}
		if last := info.AckFloor.Last; last != nil && time.Since(*last) > d+100*time.Millisecond {
			return fmt.Sprintf("%s later: ack floor still at seq %d, %d awaiting an ack", d, info.AckFloor.Stream, info.NumAckPending), nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("emails: the last ack is not %s old after 10s", d)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func seqOf(m jetstream.Msg) uint64 {
	if m == nil {
		return 0
	}
	md, err := m.Metadata()
	if err != nil {
		return 0
	}
	return md.Sequence.Stream
}
