package dlq

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/mover"
)

// PurgeConfig says which DLQ messages to delete.
type PurgeConfig struct {
	DLQStream string
	Select    Select
	DryRun    bool
	OnRecord  func(Entry)
}

// Purge deletes the selected DLQ messages and returns how many (and how
// many bytes) it deleted, or would delete. The deletes are pipelined
// behind the read (deleteWorkers at a time) and reported in order;
// interrupted or failing, it stops taking new messages and counts only
// the deletes the server confirmed.
func Purge(ctx context.Context, js jetstream.JetStream, cfg PurgeConfig) (int, int64, error) {
	a := jsapi.New(js)
	work := context.WithoutCancel(ctx)
	// stop ends the read at the first failed delete.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	type purgeItem struct {
		e   Entry
		err error
	}
	in := make(chan *purgeItem, pipeDepth)
	var readErr error
	go func() {
		defer close(in)
		readErr = Each(ctx, js, cfg.DLQStream, cfg.Select, func(e Entry) error {
			select {
			case in <- &purgeItem{e: e}:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
	}()
	var del *piped
	if !cfg.DryRun {
		var err error
		if del, err = newPiped(work, js, a); err != nil {
			return 0, 0, err
		}
		defer del.close()
	}
	deleted := mover.Ordered(in, deleteWorkers, func(it *purgeItem, done func()) {
		if del == nil {
			done()
			return
		}
		del.delete(cfg.DLQStream, it.e.DLQSeq, func(err error) {
			it.err = err
			done()
		})
	})
	n := 0
	var bytes int64
	var first error
	for it := range deleted {
		if it.err != nil {
			if first == nil {
				first = it.err
				stop(it.err)
			}
			continue
		}
		n++
		bytes += int64(it.e.Size)
		if cfg.OnRecord != nil {
			cfg.OnRecord(it.e)
		}
	}
	if first != nil {
		return n, bytes, first
	}
	if readErr != nil {
		return n, bytes, readErr
	}
	return n, bytes, ctx.Err()
}
