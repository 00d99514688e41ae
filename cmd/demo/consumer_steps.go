package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// consumerSteps show the delivery state machines: the seed pipeline's
// consumers, a stalled worker found by `consumer explain`, and a search
// projection rebuilt with `consumer rewind`.
func consumerSteps() []Step {
	// The messages the hung indexer holds, acknowledged once it is fixed.
	var held []jetstream.Msg
	return []Step{
		{
			Title: "The seed pipeline's consumers: billing has charged everything it could (--inactive 0s: the demo cannot wait the default minute for a worker to count as gone)",
			Args:  []string{"consumer", "explain", "ORDERS", "billing", "--inactive", "0s"},
		},
		{
			Title: "...but nothing ships: no shipping worker is deployed yet ",
			Args:  []string{"consumer", "explain", "ORDERS", "shipping", "--inactive", "0s"},
		},
		{
			Title: "Two consumers on one stream diverge: billing is caught up, shipping holds the backlog (the same health word as explain)",
			Args:  []string{"consumer", "ls", "ORDERS", "--inactive", "0s"},
		},
		{
			Title: "The search indexer (max_ack_pending 25) hangs after taking 25 orders: it never acknowledges them",
			Do: func(ctx context.Context, env *Env) (string, error) {
				var err error
				held, err = hangIndexer(ctx, env.JS)
				return fmt.Sprintf("search holds %d orders unacknowledged; the server delivers it nothing more", len(held)), err
			},
		},
		{
			Title: "Why is the search index behind? explain names the stall and the evidence",
			Args:  []string{"consumer", "explain", "ORDERS", "search"},
		},
		{
			Title: "The fixed indexer finishes its batch and catches up",
			Do: func(ctx context.Context, env *Env) (string, error) {
				for _, m := range held {
					if err := m.DoubleAck(ctx); err != nil {
						return "", err
					}
				}
				n, err := indexOrders(ctx, env.JS)
				return fmt.Sprintf("indexed %d held and %d further orders", len(held), n), err
			},
		},
		{
			Title: "The CI gate after the fix: wait until search has caught up",
			Args:  []string{"consumer", "wait", "ORDERS", "search", "--caught-up", "--wait", "10s"},
		},
		{
			Title: "explain again: healthy, in one line",
			Args:  []string{"consumer", "explain", "ORDERS", "search", "--exit-code"},
		},
		{
			Title: "The index schema changed: how much would a rebuild from the start redeliver?",
			Args:  []string{"consumer", "rewind", "ORDERS", "search", "--to-start", "--dry-run"},
		},
		{
			Title: "Rewind the indexer to the start (the consumer reset API keeps its config)",
			Args:  []string{"consumer", "rewind", "ORDERS", "search", "--to-start", "--yes"},
		},
		{
			Title: "The indexer rebuilds the projection",
			Do: func(ctx context.Context, env *Env) (string, error) {
				n, err := indexOrders(ctx, env.JS)
				return fmt.Sprintf("re-indexed %d orders", n), err
			},
		},
	}
}

// hangIndexer creates the search consumer and takes as many orders as its
// max_ack_pending allows without acknowledging them, as a hung worker
// would.
func hangIndexer(ctx context.Context, js jetstream.JetStream) ([]jetstream.Msg, error) {
	cons, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable: "search", Description: "Builds the order search index",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 5 * time.Minute, MaxAckPending: 25,
	})
	if err != nil {
		return nil, err
	}
	var held []jetstream.Msg
	for len(held) < 25 {
		batch, err := cons.Fetch(25-len(held), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, err
		}
		for m := range batch.Messages() {
			held = append(held, m)
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
	}
	return held, nil
}

// indexOrders stands for the search indexer: it acknowledges every order
// until the server has nothing left to deliver and no ack outstanding.
func indexOrders(ctx context.Context, js jetstream.JetStream) (int, error) {
	cons, err := js.Consumer(ctx, "ORDERS", "search")
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		batch, err := cons.FetchNoWait(200)
		if err != nil {
			return n, err
		}
		got := 0
		for m := range batch.Messages() {
			if err := m.Ack(); err != nil {
				return n, err
			}
			got++
		}
		n += got
		if got > 0 {
			continue
		}
		info, err := cons.Info(ctx)
		if err != nil {
			return n, err
		}
		if info.NumPending == 0 && info.NumAckPending == 0 {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
