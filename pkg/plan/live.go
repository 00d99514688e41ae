package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Live is what the server holds: every stream (KV and object store streams
// included) and the consumers of the streams that were asked for.
type Live struct {
	Streams   map[string]*jetstream.StreamInfo
	Consumers map[string]map[string]*jetstream.ConsumerInfo
}

// fetchParallelism bounds the consumer listings in flight at once.
const fetchParallelism = 16

// FetchLive lists every stream with the paged list API, then the consumers
// of each stream for which wantConsumers is true, concurrently. It needs
// only read access.
func FetchLive(ctx context.Context, js jetstream.JetStream, wantConsumers func(stream string) bool) (*Live, error) {
	live := &Live{Streams: map[string]*jetstream.StreamInfo{}, Consumers: map[string]map[string]*jetstream.ConsumerInfo{}}
	lister := js.ListStreams(ctx)
	for si := range lister.Info() {
		live.Streams[si.Config.Name] = si
	}
	if err := lister.Err(); err != nil {
		return nil, fmt.Errorf("listing streams: %w", err)
	}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
		sem      = make(chan struct{}, fetchParallelism)
	)
	for name := range live.Streams {
		if isBucketStream(name) || !wantConsumers(name) {
			continue
		}
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			consumers, err := listConsumers(ctx, js, name)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			live.Consumers[name] = consumers
		}(name)
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return live, nil
}

func listConsumers(ctx context.Context, js jetstream.JetStream, stream string) (map[string]*jetstream.ConsumerInfo, error) {
	out := map[string]*jetstream.ConsumerInfo{}
	s, err := js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", stream, err)
	}
	lister := s.ListConsumers(ctx)
	for ci := range lister.Info() {
		out[ci.Name] = ci
	}
	if err := lister.Err(); err != nil {
		return nil, fmt.Errorf("stream %q: listing consumers: %w", stream, err)
	}
	return out, nil
}

func isBucketStream(name string) bool {
	return strings.HasPrefix(name, "KV_") || strings.HasPrefix(name, "OBJ_")
}

// kindOfStream is the kind of resource a live stream is.
func kindOfStream(name string) (Kind, string) {
	switch {
	case strings.HasPrefix(name, "KV_"):
		return KindKV, strings.TrimPrefix(name, "KV_")
	case strings.HasPrefix(name, "OBJ_"):
		return KindObjectStore, strings.TrimPrefix(name, "OBJ_")
	}
	return KindStream, name
}

// liveConfig is the live config of a resource in its own kind's terms, or
// nil when it does not exist.
func (l *Live) liveConfig(kind Kind, stream, name string) any {
	switch kind {
	case KindConsumer:
		if ci := l.Consumers[stream][name]; ci != nil {
			return &ci.Config
		}
		return nil
	}
	si := l.Streams[streamNameOf(kind, stream, name)]
	if si == nil {
		return nil
	}
	switch kind {
	case KindKV:
		c := kvFromStream(si.Config)
		return &c
	case KindObjectStore:
		c := objectStoreFromStream(si.Config)
		return &c
	}
	return &si.Config
}

// rawConfig is the server's config for the resource (the stream behind a
// bucket), for fingerprints and metadata.
func (l *Live) rawConfig(kind Kind, stream, name string) any {
	if kind == KindConsumer {
		if ci := l.Consumers[stream][name]; ci != nil {
			return &ci.Config
		}
		return nil
	}
	if si := l.Streams[streamNameOf(kind, stream, name)]; si != nil {
		return &si.Config
	}
	return nil
}

func (l *Live) metadata(kind Kind, stream, name string) map[string]string {
	switch c := l.rawConfig(kind, stream, name).(type) {
	case *jetstream.StreamConfig:
		return c.Metadata
	case *jetstream.ConsumerConfig:
		return c.Metadata
	}
	return nil
}
