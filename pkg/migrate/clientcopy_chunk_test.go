package migrate

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// jetctl's copy goes copyChunk sequences at a time, each chunk compared
// while the next is copied: with small chunks, gaps across their
// boundaries, a rehearsal and then a cutover, every message arrives at its
// sequence, verified; a message lost from the target between the two runs
// is named by the comparison.
func TestClientCopyInChunks(t *testing.T) {
	defer func(n uint64) { copyChunk = n }(copyChunk)
	copyChunk = 700
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, lose := range []bool{false, true} {
		t.Run(fmt.Sprint("lose ", lose), func(t *testing.T) {
			sjs, djs := embeddedtest.JetStream(t), embeddedtest.JetStream(t)
			s, err := sjs.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
			if err != nil {
				t.Fatal(err)
			}
			const n = 5000
			for i := 1; i <= n; i++ {
				if _, err := sjs.PublishAsync(fmt.Sprintf("orders.%d", i%7), []byte(fmt.Sprint("order ", i))); err != nil {
					t.Fatal(err)
				}
				if i%500 == 0 {
					<-sjs.PublishAsyncComplete()
				}
			}
			<-sjs.PublishAsyncComplete()
			deleted := []uint64{1, 699, 700, 701, 1400, 2222, 4999, 5000}
			for _, seq := range deleted {
				if err := s.DeleteMsg(ctx, seq); err != nil {
					t.Fatal(err)
				}
			}
			src, dst := Endpoint{JS: sjs}, Endpoint{JS: djs}
			sum, err := Stream(ctx, src, dst, Config{Stream: "ORDERS"})
			if err != nil || !sum.Verified || sum.Mechanism != "copy" {
				t.Fatalf("rehearsal: %+v %v", sum, err)
			}
			if lose {
				d, err := djs.Stream(ctx, "ORDERS")
				if err != nil {
					t.Fatal(err)
				}
				if err := d.DeleteMsg(ctx, 3000); err != nil {
					t.Fatal(err)
				}
			}
			sum, err = Stream(ctx, src, dst, Config{Stream: "ORDERS", Cutover: true})
			if lose {
				var ve *VerifyError
				if !errors.As(err, &ve) || ve.What != "seq 3000 is missing" {
					t.Fatalf("with seq 3000 lost from the target: %v, want it named", err)
				}
				return
			}
			if err != nil || !sum.Verified || sum.Messages != n-uint64(len(deleted)) || len(sum.Digest) != 64 {
				t.Fatalf("cutover: %+v %v", sum, err)
			}
			d, err := djs.Stream(ctx, "ORDERS")
			if err != nil {
				t.Fatal(err)
			}
			if st := d.CachedInfo().State; st.Msgs != sum.Messages || st.LastSeq != n {
				t.Fatalf("target holds %d messages, last seq %d", st.Msgs, st.LastSeq)
			}
			for _, seq := range []uint64{2, 698, 702, 1399, 1401, 2221, 2223, 4998} {
				m, err := d.GetMsg(ctx, seq)
				if err != nil || string(m.Data) != fmt.Sprint("order ", seq) {
					t.Fatalf("seq %d: %v %v", seq, m, err)
				}
			}
		})
	}
}
