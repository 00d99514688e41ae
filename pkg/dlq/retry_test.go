package dlq

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
)

// route sends a dead letter to its original subject only where no other
// consumer takes that subject, else to its consumer's retry subject when
// one is set up, else refuses it naming the others.
func TestRouterRoute(t *testing.T) {
	info := func(name string, filters ...string) *jetstream.ConsumerInfo {
		return &jetstream.ConsumerInfo{Name: name, Config: jetstream.ConsumerConfig{Durable: name, FilterSubjects: filters}}
	}
	entry := func(consumer, subject string, h nats.Header) Entry {
		return Entry{Consumer: consumer, Subject: subject, Message: &envelope.Message{Subject: "dlq.ORDERS.1", Header: h}}
	}
	retry := RetryFilter("ORDERS", "mailer")
	for _, c := range []struct {
		name     string
		r        router
		e        Entry
		want     string
		wantTry  bool
		refusers string
	}{
		{name: "others take the subject, no retry subject: refused",
			r: router{stream: "ORDERS", infos: map[string]*jetstream.ConsumerInfo{"mailer": info("mailer", "orders.>"), "billing": info("billing", "orders.>"), "audit": info("audit")}},
			e: entry("mailer", "orders.created", nil), refusers: "[audit billing]"},
		{name: "nobody else takes this subject: the original",
			r: router{stream: "ORDERS", infos: map[string]*jetstream.ConsumerInfo{"mailer": info("mailer", "orders.>"), "billing": info("billing", "orders.paid")}},
			e: entry("mailer", "orders.created", nil), want: "orders.created"},
		{name: "retry subject set up",
			r: router{stream: "ORDERS", subjects: []string{"orders.>", retry}, infos: map[string]*jetstream.ConsumerInfo{"mailer": info("mailer", "orders.>", retry), "billing": info("billing", "orders.>")}},
			e: entry("mailer", "orders.created", nil), want: "_jetctl.retry.ORDERS.mailer.orders.created", wantTry: true},
		{name: "retry subject in the stream, not in the filter: refused",
			r: router{stream: "ORDERS", subjects: []string{"orders.>", retry}, infos: map[string]*jetstream.ConsumerInfo{"mailer": info("mailer", "orders.>"), "billing": info("billing", "orders.>")}},
			e: entry("mailer", "orders.created", nil), refusers: "[billing]"},
		{name: "died again on its retry subject: the original recovered",
			r: router{stream: "ORDERS", subjects: []string{"orders.>", retry}, infos: map[string]*jetstream.ConsumerInfo{"mailer": info("mailer", "orders.>", retry), "billing": info("billing", "orders.>")}},
			e: entry("mailer", "_jetctl.retry.ORDERS.mailer.orders.created", nats.Header{HeaderRedriveSubject: []string{"orders.created"}}), want: "_jetctl.retry.ORDERS.mailer.orders.created", wantTry: true},
		{name: "an unfiltered consumer would take the retry subject too: refused",
			r: router{stream: "ORDERS", subjects: []string{"orders.>", retry}, infos: map[string]*jetstream.ConsumerInfo{"mailer": info("mailer", "orders.>", retry), "billing": info("billing", "orders.>"), "audit": info("audit")}},
			e: entry("mailer", "orders.created", nil), refusers: "[audit]"},
		{name: "every consumer asked for",
			r: router{stream: "ORDERS", allConsumers: true, infos: map[string]*jetstream.ConsumerInfo{"mailer": info("mailer", "orders.>"), "billing": info("billing", "orders.>")}},
			e: entry("mailer", "_jetctl.retry.ORDERS.mailer.orders.created", nats.Header{HeaderRedriveSubject: []string{"orders.created"}}), want: "orders.created"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, try, others := c.r.route(c.e)
			if c.refusers != "" {
				if fmt.Sprint(others) != c.refusers || got != "" {
					t.Fatalf("route = %q, %v; want refused by %s", got, others, c.refusers)
				}
				return
			}
			if got != c.want || try != c.wantTry || len(others) > 0 {
				t.Fatalf("route = %q, %v, %v; want %q, %v", got, try, others, c.want, c.wantTry)
			}
		})
	}
}
