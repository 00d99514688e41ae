package demo

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Steps is the demo, in order. A capability adds its steps here, next to
// the steps whose data it uses.
func Steps() []Step {
	return []Step{
		{
			Title: "Create the ORDERS stream, its consumers and the config bucket from examples/orders.yaml",
			Args:  []string{"apply", "-f", "examples/orders.yaml", "--yes"},
		},
		{
			Title: "Plan again: the server matches the file, nothing to change",
			Args:  []string{"plan", "-f", "examples/orders.yaml", "--detailed-exitcode"},
		},
		{
			Title: "An outbox relay publishes 200 order events",
			Do:    func(ctx context.Context, env *Env) (string, error) { return publishOrders(ctx, env.JS, 200) },
		},
		{
			Title: "See the account at a glance",
			Args:  []string{"status"},
		},
		{
			Title: "The same as JSON, narrowed with jq",
			Args:  []string{"status", "--jq", `.streams[] | {name, messages}`},
		},
	}
}

// Order is the event the demo's outbox relay publishes.
type Order struct {
	OrderID  string  `json:"order_id"`
	Customer string  `json:"customer"`
	Total    float64 `json:"total"`
	Currency string  `json:"currency"`
	Status   string  `json:"status"`
}

var statuses = []string{"created", "created", "paid", "shipped", "cancelled"}

// publishOrders publishes n order events asynchronously and waits for every
// acknowledgement.
func publishOrders(ctx context.Context, js jetstream.JetStream, n int) (string, error) {
	var futures []jetstream.PubAckFuture
	for i := 1; i <= n; i++ {
		o := Order{
			OrderID:  fmt.Sprintf("ord-%05d", i),
			Customer: fmt.Sprintf("cust-%03d", i%37),
			Total:    float64(i%50)*3.5 + 9.99,
			Currency: "EUR",
			Status:   statuses[i%len(statuses)],
		}
		data, err := json.Marshal(o)
		if err != nil {
			return "", err
		}
		f, err := js.PublishAsync("orders."+o.Status, data)
		if err != nil {
			return "", err
		}
		futures = append(futures, f)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return "", ctx.Err()
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return "", err
		}
	}
	return fmt.Sprintf("%d events on orders.created, orders.paid, orders.shipped, orders.cancelled", n), nil
}
