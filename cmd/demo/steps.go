package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Steps is the demo, in order. A capability adds its steps here, next to
// the steps whose data it uses.
func Steps() []Step {
	return []Step{
		{
			// plan/apply will declare this from examples/ once it lands.
			Title: "Create the ORDERS stream and the config bucket",
			Do:    createOrders,
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

func createOrders(ctx context.Context, env *Env) (string, error) {
	_, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{
		Name:     "ORDERS",
		Subjects: []string{"orders.>"},
		Storage:  jetstream.FileStorage,
		MaxAge:   7 * 24 * time.Hour,
	})
	if err != nil {
		return "", err
	}
	_, err = env.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "config", History: 10})
	if err != nil {
		return "", err
	}
	return "stream ORDERS on orders.>, KV bucket config", nil
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
