// Command eventsfill fills the event recorder (JETCTL_EVENTS, made by
// `jetctl events record`) with N advisories and audit records for
// bench/events.sh: publishing them is faster than provoking them. The mix
// is an incident's: mostly NAKs and dead letters of a few consumers, some
// consumers created and deleted, leader elections, audit records. Each
// payload is what the server (or jetctl) would send, with a unique id.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	n := flag.Int("n", 100000, "events to publish")
	flag.Parse()
	nc, err := nats.Connect(os.Getenv("NATS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4000))
	if err != nil {
		log.Fatal(err)
	}
	streams := []string{"ORDERS", "PAYMENTS", "SHIPPING"}
	consumers := []string{"billing", "projector", "mailer", "search"}
	start := time.Now()
	for i := 0; i < *n; i++ {
		s, c := streams[i%len(streams)], consumers[(i/len(streams))%len(consumers)]
		ts := time.Now().UTC().Format(time.RFC3339Nano)
		id := fmt.Sprintf("bench%017d", i)
		var subject, data string
		switch k := i % 20; {
		case k < 8:
			subject = "$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED." + s + "." + c
			data = fmt.Sprintf(`{"type":"io.nats.jetstream.advisory.v1.nak","id":%q,"timestamp":%q,"stream":%q,"consumer":%q,"consumer_seq":%d,"stream_seq":%d,"deliveries":%d}`, id, ts, s, c, i+7, i+1, 1+i%5)
		case k < 13:
			subject = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + s + "." + c
			data = fmt.Sprintf(`{"type":"io.nats.jetstream.advisory.v1.max_deliver","id":%q,"timestamp":%q,"stream":%q,"consumer":%q,"stream_seq":%d,"deliveries":5}`, id, ts, s, c, i+1)
		case k < 16:
			subject = "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED." + s + "." + c
			data = fmt.Sprintf(`{"type":"io.nats.jetstream.advisory.v1.terminated","id":%q,"timestamp":%q,"stream":%q,"consumer":%q,"consumer_seq":%d,"stream_seq":%d,"deliveries":1,"reason":"bad payload"}`, id, ts, s, c, i+7, i+1)
		case k == 16:
			subject = "$JS.EVENT.ADVISORY.CONSUMER.CREATED." + s + ".eph" + id[len(id)-8:]
			data = fmt.Sprintf(`{"type":"io.nats.jetstream.advisory.v1.consumer_action","id":%q,"timestamp":%q,"stream":%q,"consumer":"eph%s","action":"create"}`, id, ts, s, id[len(id)-8:])
		case k == 17:
			subject = "$JS.EVENT.ADVISORY.CONSUMER.DELETED." + s + ".eph" + id[len(id)-8:]
			data = fmt.Sprintf(`{"type":"io.nats.jetstream.advisory.v1.consumer_action","id":%q,"timestamp":%q,"stream":%q,"consumer":"eph%s","action":"delete"}`, id, ts, s, id[len(id)-8:])
		case k == 18:
			subject = "$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED." + s
			data = fmt.Sprintf(`{"type":"io.nats.jetstream.advisory.v1.stream_leader_elected","id":%q,"timestamp":%q,"stream":%q,"leader":"n%d","replicas":[{"name":"n1","current":true,"active":1000},{"name":"n2","current":true,"active":1000},{"name":"n3","current":true,"active":1000}]}`, id, ts, s, 1+i%3)
		default:
			subject = "jetctl.audit." + s + "." + c + ".consumer.rewind"
			data = fmt.Sprintf(`{"type":"io.jetctl.audit.v1","id":%q,"time":%q,"command":"consumer rewind","stream":%q,"consumer":%q,"action":"rewind","summary":"rewound to seq %d","counts":{"messages":%d},"result":"ok","error":"","user":"alice","nats_user":"","host":"ops1","version":"v0.9.0","args":["jetctl","consumer","rewind",%q,%q,"--to-seq","%d"]}`, id, ts, s, c, i, i, s, c, i)
		}
		if _, err := js.PublishAsync(subject, []byte(data), jetstream.WithStallWait(30*time.Second)); err != nil {
			log.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		log.Fatal("timed out waiting for acknowledgements")
	}
	fmt.Fprintf(os.Stderr, "eventsfill: %d events in %s\n", *n, time.Since(start).Round(time.Millisecond))
}
