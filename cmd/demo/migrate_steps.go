package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// migrateSteps change what the server cannot change in place: the
// FULFILMENT work queue becomes a limits stream (kept for audits) under
// its own name, with every message and both consumers' positions kept.
func migrateSteps() []Step {
	return []Step{
		{
			Title: "The warehouse gets 40 packing and 10 shipping tasks; the packers finish 30",
			Do:    fulfilmentWork,
		},
		{
			Title: "Audits want every task kept: FULFILMENT to limits retention, which the server cannot change in place",
			Args:  []string{"plan", "-f", "examples/migrate/fulfilment-audit.yaml", "--migrate"},
		},
		{
			Title: "Migrate it under its own name: copied, verified, consumers re-seated, a write outage of milliseconds",
			Args:  []string{"apply", "-f", "examples/migrate/fulfilment-audit.yaml", "--migrate", "--yes"},
		},
		{
			Title: "Nothing lost: 10 packing and 10 shipping tasks wait, where the consumers left off",
			Args:  []string{"consumer", "ls", "FULFILMENT", "--jq", `.[] | "\(.consumer): \(.unprocessed) tasks to do"`},
		},
	}
}

// fulfilmentWork publishes the warehouse's tasks and has the packers
// finish the first 30.
func fulfilmentWork(ctx context.Context, env *Env) (string, error) {
	for i := 1; i <= 40; i++ {
		if _, err := env.JS.Publish(ctx, "fulfilment.pack", fmt.Appendf(nil, `{"order_id":"ord-%05d","task":"pack"}`, i)); err != nil {
			return "", err
		}
	}
	for i := 1; i <= 10; i++ {
		if _, err := env.JS.Publish(ctx, "fulfilment.ship", fmt.Appendf(nil, `{"order_id":"ord-%05d","task":"ship"}`, i)); err != nil {
			return "", err
		}
	}
	cons, err := env.JS.Consumer(ctx, "FULFILMENT", "packers")
	if err != nil {
		return "", err
	}
	batch, err := cons.Fetch(30, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		return "", err
	}
	done := 0
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			return "", err
		}
		done++
	}
	return fmt.Sprintf("packed %d of 40; FULFILMENT (workqueue) removed them: 10 packing and 10 shipping tasks left", done), nil
}
