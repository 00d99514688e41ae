package plan

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/retry"
)

// Live is what the server holds: every stream (KV and object store streams
// included) and the consumers of the streams that were asked for.
type Live struct {
	Streams   map[string]*jetstream.StreamInfo
	Consumers map[string]map[string]*jetstream.ConsumerInfo
	// StandIns maps a stream whose migration was interrupted between its
	// moves to the temporary stream that holds its data, and stands for it
	// in Streams and Consumers (see resumeView).
	StandIns map[string]string
	// Limits is what Make read of the server's limits (its cluster, its
	// max_payload); FetchLive leaves it empty.
	Limits ServerLimits
}

// fetchParallelism bounds the consumer listings in flight at once.
const fetchParallelism = 16

// DefaultLeaderWait is how long FetchLive waits for a stream or consumer
// that has no leader to answer, when the caller gives no wait.
const DefaultLeaderWait = 5 * time.Second

// FetchLive lists every stream with the paged list API, then the consumers
// of each stream for which wantConsumers is true, concurrently. It needs
// only read access.
//
// In a cluster the list APIs leave out a stream or consumer whose group
// has no leader at that moment (an election after a scale, a restart or a
// step-down): the server gives up on it after 4s and names it only in a
// "missing" list that nats.go drops. Taking that for "does not exist" would
// plan a create of a stream that is there. So FetchLive also lists the
// names, which the meta leader knows without asking the groups, and asks
// for each left-out one until it answers, for at most leaderWait
// (DefaultLeaderWait when 0).
func FetchLive(ctx context.Context, js jetstream.JetStream, wantConsumers func(stream string) bool, leaderWait time.Duration) (*Live, error) {
	if leaderWait <= 0 {
		leaderWait = DefaultLeaderWait
	}
	live := &Live{Streams: map[string]*jetstream.StreamInfo{}, Consumers: map[string]map[string]*jetstream.ConsumerInfo{}}
	lister := js.ListStreams(ctx)
	for si := range lister.Info() {
		live.Streams[si.Config.Name] = si
	}
	if err := lister.Err(); err != nil {
		return nil, fmt.Errorf("listing streams: %w", err)
	}
	names := js.StreamNames(ctx)
	var leftOut []string
	for name := range names.Name() {
		if live.Streams[name] == nil {
			leftOut = append(leftOut, name)
		}
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("listing stream names: %w", err)
	}
	for _, name := range leftOut {
		si, err := waitForLeader(ctx, leaderWait, "stream "+strconv.Quote(name), func(ctx context.Context) (*jetstream.StreamInfo, error) {
			s, err := js.Stream(ctx, name)
			if err != nil {
				return nil, err
			}
			return s.CachedInfo(), nil
		})
		if errors.Is(err, errGone) {
			continue // deleted since it was listed
		}
		if err != nil {
			return nil, err
		}
		live.Streams[name] = si
	}
	api := consumerAPIFor(js)
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
			consumers, err := listConsumers(ctx, js, api, name, leaderWait)
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

func listConsumers(ctx context.Context, js jetstream.JetStream, api consumerAPI, stream string, leaderWait time.Duration) (map[string]*jetstream.ConsumerInfo, error) {
	out := map[string]*jetstream.ConsumerInfo{}
	label := "stream " + strconv.Quote(stream)
	infos, err := api.consumerList(ctx, stream, leaderWait)
	if errors.Is(err, errGone) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, ci := range infos {
		out[ci.Name] = ci
	}
	// As with streams: a consumer without a leader is left out of the list.
	names, err := api.consumerNames(ctx, stream, leaderWait)
	if errors.Is(err, errGone) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	var leftOut []string
	for _, name := range names {
		if out[name] == nil {
			leftOut = append(leftOut, name)
		}
	}
	for _, name := range leftOut {
		ci, err := waitForLeader(ctx, leaderWait, label+": consumer "+strconv.Quote(name), func(ctx context.Context) (*jetstream.ConsumerInfo, error) {
			c, err := js.Consumer(ctx, stream, name)
			if err != nil {
				return nil, err
			}
			return c.CachedInfo(), nil
		})
		if errors.Is(err, errGone) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[name] = ci
	}
	return out, nil
}

// consumerAPI lists a stream's consumers by the stream's name. nats.go
// lists them only through a stream handle, and making one asks for the
// stream's info, which the stream list has just given: rawConsumers asks
// the API directly, so that a plan reads each stream's info once. (The
// tests that simulate an election implement it too.)
type consumerAPI interface {
	// consumerList is every consumer the server lists, page by page.
	consumerList(ctx context.Context, stream string, leaderWait time.Duration) ([]*jetstream.ConsumerInfo, error)
	// consumerNames is every consumer's name, page by page.
	consumerNames(ctx context.Context, stream string, leaderWait time.Duration) ([]string, error)
}

// consumerAPIFor is the consumerAPI to ask on js.
func consumerAPIFor(js jetstream.JetStream) consumerAPI {
	if api, ok := js.(consumerAPI); ok {
		return api
	}
	return rawConsumers{jsapi.New(js)}
}

// rawConsumers makes the CONSUMER.LIST and CONSUMER.NAMES requests.
type rawConsumers struct{ client *jsapi.Client }

func (r rawConsumers) consumerList(ctx context.Context, stream string, leaderWait time.Duration) ([]*jetstream.ConsumerInfo, error) {
	return listPages[*jetstream.ConsumerInfo](ctx, r.client, "CONSUMER.LIST."+stream, "stream "+strconv.Quote(stream)+": listing consumers", leaderWait)
}

func (r rawConsumers) consumerNames(ctx context.Context, stream string, leaderWait time.Duration) ([]string, error) {
	return listPages[string](ctx, r.client, "CONSUMER.NAMES."+stream, "stream "+strconv.Quote(stream)+": listing consumer names", leaderWait)
}

// consumerPage is a page of CONSUMER.LIST (infos) or CONSUMER.NAMES
// (names).
type consumerPage[T any] struct {
	Error     *jetstream.APIError `json:"error,omitempty"`
	Total     int                 `json:"total"`
	Consumers []T                 `json:"consumers"`
}

// listPages reads subject's pages until it has the total; each page is
// waited for as an info request about a group without a leader is
// (waitForLeader). A stream that does not exist is errGone.
func listPages[T any](ctx context.Context, client *jsapi.Client, subject, label string, leaderWait time.Duration) ([]T, error) {
	var out []T
	for {
		page, err := waitForLeader(ctx, leaderWait, label, func(ctx context.Context) (*consumerPage[T], error) {
			var page consumerPage[T]
			if err := client.Request(ctx, subject, map[string]int{"offset": len(out)}, &page); err != nil {
				return nil, err
			}
			if page.Error != nil {
				if page.Error.ErrorCode == jetstream.JSErrCodeStreamNotFound {
					return nil, jetstream.ErrStreamNotFound
				}
				return nil, page.Error
			}
			return &page, nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, page.Consumers...)
		if len(page.Consumers) == 0 || len(out) >= page.Total {
			return out, nil
		}
	}
}

// errGone is a stream or consumer deleted while it was being read.
var errGone = errors.New("gone")

// leaderPoll bounds one info request while waiting for a leader: a group
// without a leader does not answer at all, so a request that waits for
// the whole leaderWait would miss a leader elected in the meantime.
const leaderPoll = time.Second

// waitForLeader runs get until it answers, for at most wait: an info
// request about a stream or consumer without a leader times out or gets
// "cluster not available" (10008), which retry.Transient counts with the
// rest of what a moment may change. Not found is errGone.
func waitForLeader[T any](ctx context.Context, wait time.Duration, label string, get func(context.Context) (T, error)) (T, error) {
	deadline := time.Now().Add(wait)
	pause := 50 * time.Millisecond
	for {
		attempt, cancel := context.WithDeadline(ctx, minTime(deadline, time.Now().Add(leaderPoll)))
		v, err := get(attempt)
		cancel()
		switch {
		case err == nil:
			return v, nil
		case errors.Is(err, jetstream.ErrStreamNotFound), errors.Is(err, jetstream.ErrConsumerNotFound):
			return v, errGone
		case ctx.Err() != nil:
			return v, ctx.Err()
		case !retry.Transient(err):
			return v, fmt.Errorf("%s: %w", label, err)
		case !time.Now().Before(deadline):
			return v, fmt.Errorf("%s: no leader answered within %s (the cluster may still be electing one; try again, or give a longer --timeout): %w", label, wait, err)
		}
		if err := retry.Sleep(ctx, min(pause, time.Until(deadline))); err != nil {
			return v, err
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
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
