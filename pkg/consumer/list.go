package consumer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/errkind"
	"github.com/jetctl/jetctl/pkg/recorder"
)

// ListConfig says which consumers List reads.
type ListConfig struct {
	// Streams restricts the listing to these streams (each must exist);
	// every stream when empty.
	Streams []string
	// All includes, when Streams is empty, the streams jetctl hides by
	// default: KV buckets (KV_*), object stores (OBJ_*) and the capture
	// and DLQ streams of `jetctl dlq setup`.
	All bool
	// Thresholds for the health rules; zero fields take the defaults.
	Thresholds Thresholds
	// Fixed names the thresholds (Threshold* constants) the caller was
	// given explicitly: a consumer's metadata (MetaThresholdPrefix) does
	// not override them.
	Fixed map[string]bool
	// Workers bounds the concurrent requests (default 16).
	Workers int
	// Listed, when not nil, are every stream of the account, already
	// listed by the caller (status): List does not list them again.
	Listed []*jetstream.StreamInfo
	// LagCache, if set, keeps the oldest unprocessed message found for
	// each consumer's delivered cursor between calls (a watch's polls).
	LagCache *LagCache
}

// LagCache remembers, per consumer, the oldest message not yet delivered
// found for its delivered cursor: while the cursor stands still, that is
// still the oldest, and a watch need not read it again every poll (with
// large messages, a get per stuck consumer per second adds up). Safe for
// concurrent use.
type LagCache struct {
	mu sync.Mutex
	// prev holds what the last call found; next what this call uses,
	// so that consumers gone or caught up drop out after one call.
	prev, next map[string]lagEntry
	// dlq is the last reading of each DLQ's entries (source sequences
	// by consumer), keyed by the DLQ's name and state: read again only
	// when the DLQ changed.
	dlq map[string]map[string][]uint64
	// rec is what the recorder held of each filter read (dead.go), and
	// goneSeqs the recorded dead letters found no longer stored.
	rec      map[string]recordedRead
	goneSeqs map[string]bool
}

type recordedRead struct {
	last uint64
	held []recordedAdvisory
}

func (c *LagCache) dlqEntries(key string) (map[string][]uint64, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.dlq[key]
	return m, ok
}

func (c *LagCache) putDLQEntries(key string, entries map[string][]uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	name, _, _ := strings.Cut(key, " ")
	for k := range c.dlq {
		if strings.HasPrefix(k, name+" ") {
			delete(c.dlq, k)
		}
	}
	if c.dlq == nil {
		c.dlq = map[string]map[string][]uint64{}
	}
	c.dlq[key] = entries
}

// recorded returns (a copy of) what an earlier call read of filter from
// the recorder, less what is below first, and the sequence to read on
// from (first when nothing was read).
func (c *LagCache) recorded(filter string, first uint64) ([]recordedAdvisory, uint64) {
	if c == nil {
		return nil, first
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.rec[filter]
	if !ok {
		return nil, first
	}
	var held []recordedAdvisory
	for _, a := range r.held {
		if a.recSeq >= first {
			held = append(held, a)
		}
	}
	return held, max(r.last+1, first)
}

func (c *LagCache) putRecorded(filter string, last uint64, held []recordedAdvisory) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rec == nil {
		c.rec = map[string]recordedRead{}
	}
	c.rec[filter] = recordedRead{last: last, held: held}
}

// maxGone bounds the gone sequences a LagCache keeps.
const maxGone = 100_000

func (c *LagCache) gone(stream string, seq uint64) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.goneSeqs[fmt.Sprintf("%s %d", stream, seq)]
}

func (c *LagCache) putGone(stream string, seq uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.goneSeqs == nil || len(c.goneSeqs) >= maxGone {
		c.goneSeqs = map[string]bool{}
	}
	c.goneSeqs[fmt.Sprintf("%s %d", stream, seq)] = true
}

type lagEntry struct {
	delivered uint64
	filters   string
	seq       uint64
	at        time.Time
}

func (c *LagCache) get(s *State) (lagEntry, bool) {
	return c.lookup(s.Key(), s.DeliveredStreamSeq, strings.Join(s.FilterSubjects, " "))
}

func (c *LagCache) put(s *State, seq uint64, at time.Time) {
	c.store(s.Key(), s.DeliveredStreamSeq, strings.Join(s.FilterSubjects, " "), seq, at)
}

// lookup returns what the last call found under key for the cursor (a
// stream sequence: the delivered cursor, the ack floor) and filters.
func (c *LagCache) lookup(key string, cursor uint64, filters string) (lagEntry, bool) {
	if c == nil {
		return lagEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.prev[key]
	if !ok || e.delivered != cursor || e.filters != filters {
		return lagEntry{}, false
	}
	c.keep(key, e)
	return e, true
}

// store records the message found (seq 0: none) after cursor.
func (c *LagCache) store(key string, cursor uint64, filters string, seq uint64, at time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keep(key, lagEntry{delivered: cursor, filters: filters, seq: seq, at: at})
}

func (c *LagCache) keep(key string, e lagEntry) {
	if c.next == nil {
		c.next = map[string]lagEntry{}
	}
	c.next[key] = e
}

// rotate ends a call: what it used is what the next call may reuse.
func (c *LagCache) rotate() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prev, c.next = c.next, nil
}

// DefaultWorkers is how many requests List has in flight at most.
const DefaultWorkers = 16

// Hidden reports whether ls hides a stream unless asked for all: KV
// buckets, object stores, the streams `jetctl dlq setup` creates and the
// recorder `jetctl events record` creates.
func Hidden(cfg *jetstream.StreamConfig) bool {
	return strings.HasPrefix(cfg.Name, "KV_") || strings.HasPrefix(cfg.Name, "OBJ_") || cfg.Metadata[dlq.MetaRole] != "" ||
		recorder.IsRecorder(cfg)
}

// errStreamOffline is the server's "stream is offline" (10118).
const errStreamOffline jetstream.ErrorCode = 10118

// captureRole is the dlq.MetaRole value of an advisory capture stream.
const captureRole = "capture"

// List reads the consumers of the selected streams, with one paged list
// request per stream (concurrently), then the lag of each consumer with
// unprocessed messages (one message get each, concurrently) and the dead
// letters captured for the streams that have a DLQ. The result is sorted
// by stream and consumer name and classified with cfg.Thresholds.
//
// A named stream that does not exist is an error wrapping
// jetstream.ErrStreamNotFound, before anything else is read.
func List(ctx context.Context, js jetstream.JetStream, cfg ListConfig) ([]*State, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	streams, captures, rec, err := selectStreams(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	api := newAPI(js)

	perStream := make([][]*State, len(streams))
	errs := make([]error, len(streams))
	parallel(len(streams), cfg.Workers, func(i int) {
		perStream[i], errs[i] = api.listConsumers(ctx, streams[i].Config.Name)
		// A stream deleted since it was listed is simply gone; one that
		// was named is an error.
		if len(cfg.Streams) == 0 && errors.Is(errs[i], jetstream.ErrStreamNotFound) {
			errs[i] = nil
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var states []*State
	for _, ss := range perStream {
		states = append(states, ss...)
	}

	infos := make(map[string]*jetstream.StreamInfo, len(streams))
	for _, si := range streams {
		infos[si.Config.Name] = si
	}
	if err := assess(ctx, js, api, states, infos, captures, rec, cfg); err != nil {
		return nil, err
	}
	Sort(states, SortName)
	return states, nil
}

// ListStreams lists every stream's info, and names the streams the list
// left out. On a cluster the meta leader asks each stream's leader for
// its info and leaves out those that do not answer within 4 s, as a
// stream electing a leader does not: the list then lacks that stream,
// and the next page, offset by the streams returned, repeats one. The
// names come from the meta leader's own assignments, complete with or
// without leaders: a stream named there and not listed is for the caller
// to read on its own, and a stream listed twice is kept once. On a single
// server, whose list says nothing of a leader, each stream's leader is
// the server, as one stream's info names it (singleServerLeader).
func ListStreams(ctx context.Context, js jetstream.JetStream) (listed []*jetstream.StreamInfo, missing []string, err error) {
	seen := map[string]bool{}
	lister := js.ListStreams(ctx)
	for si := range lister.Info() {
		if !seen[si.Config.Name] {
			seen[si.Config.Name] = true
			listed = append(listed, si)
		}
	}
	if err := lister.Err(); err != nil {
		return nil, nil, err
	}
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	if err := names.Err(); err != nil {
		return nil, nil, err
	}
	singleServerLeader(ctx, js, listed)
	return listed, missing, nil
}

// singleServerLeader fills in the leader of the listed streams the list
// gave no cluster info: a single server's (a cluster's list names every
// stream's leader). The server names itself only in a stream's info
// (cluster.leader, nothing else: TestFactSingleServerNamesItselfInStreamInfoOnly),
// so one stream is read and its leader given to the others, as that info
// would. Left unknown ("") when no such stream can be read.
func singleServerLeader(ctx context.Context, js jetstream.JetStream, listed []*jetstream.StreamInfo) {
	var without []*jetstream.StreamInfo
	for _, si := range listed {
		if si.Cluster == nil {
			without = append(without, si)
		}
	}
	for _, si := range without {
		st, err := js.Stream(ctx, si.Config.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return
		}
		cl := st.CachedInfo().Cluster
		if cl == nil || cl.Leader == "" || cl.RaftGroup != "" || len(cl.Replicas) > 0 {
			return
		}
		for _, w := range without {
			w.Cluster = &jetstream.ClusterInfo{Leader: cl.Leader}
		}
		return
	}
}

// selectStreams returns the streams to list and, for those that have a
// DLQ, their advisory capture streams (source stream → capture stream),
// and the event recorder (nil when there is none, or it cannot be read).
func selectStreams(ctx context.Context, js jetstream.JetStream, cfg ListConfig) ([]*jetstream.StreamInfo, map[string]*jetstream.StreamInfo, *jetstream.StreamInfo, error) {
	captures := map[string]*jetstream.StreamInfo{}
	var rec *jetstream.StreamInfo
	if len(cfg.Streams) == 0 {
		var out []*jetstream.StreamInfo
		keep := func(si *jetstream.StreamInfo) {
			if si.Config.Metadata[dlq.MetaRole] == captureRole && si.Config.Metadata[dlq.MetaSource] != "" {
				captures[si.Config.Metadata[dlq.MetaSource]] = si
			}
			if recorder.IsRecorder(&si.Config) {
				rec = si
			}
			if cfg.All || !Hidden(&si.Config) {
				out = append(out, si)
			}
		}
		if cfg.Listed != nil {
			for _, si := range cfg.Listed {
				keep(si)
			}
			return out, captures, rec, nil
		}
		listed, missing, err := ListStreams(ctx, js)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("listing streams: %w", err)
		}
		for _, si := range listed {
			keep(si)
		}
		// Left out of the list during an election: read on its own, as
		// a named stream is (a stub when no server holding it is up).
		for _, name := range missing {
			si, _, err := StreamOrStub(ctx, js, name)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				return nil, nil, nil, err
			}
			keep(si)
		}
		return out, captures, rec, nil
	}

	out := make([]*jetstream.StreamInfo, len(cfg.Streams))
	caps := make([]*jetstream.StreamInfo, len(cfg.Streams))
	errs := make([]error, len(cfg.Streams))
	parallel(len(cfg.Streams), cfg.Workers, func(i int) {
		name := cfg.Streams[i]
		si, offline, err := StreamOrStub(ctx, js, name)
		if err != nil {
			errs[i] = err
			return
		}
		out[i] = si
		if offline {
			return
		}
		capture, err := js.Stream(ctx, dlq.DefaultNames(name, "").Capture)
		if err == nil && capture.CachedInfo().Config.Metadata[dlq.MetaSource] == name {
			caps[i] = capture.CachedInfo()
		}
	})
	for i, err := range errs {
		if err != nil {
			return nil, nil, nil, err
		}
		if caps[i] != nil {
			captures[cfg.Streams[i]] = caps[i]
		}
	}
	// The recorder, where the account has one: what cannot be read
	// leaves the recorded dead letters out, as without one.
	rec, _ = recorder.Find(ctx, js)
	return out, captures, rec, nil
}

// StreamOrStub reads a stream's info; when no server holding the stream
// is up, a stub with its name only, so that its consumers are still
// listed, as having no leader.
func StreamOrStub(ctx context.Context, js jetstream.JetStream, name string) (si *jetstream.StreamInfo, offline bool, err error) {
	st, err := js.Stream(ctx, name)
	var apiErr *jetstream.APIError
	switch {
	case errors.As(err, &apiErr) && apiErr.ErrorCode == errStreamOffline:
		return &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: name}}, true, nil
	case err != nil:
		return nil, false, fmt.Errorf("stream %q: %w", name, err)
	}
	return st.CachedInfo(), false, nil
}

// Sort orders states in place: SortName by stream and consumer; SortLag
// worst first (unknown lag first among those with unprocessed messages,
// then by lag, then by unprocessed); SortPending by unprocessed, then ack
// pending, most first; SortHealth by severity (State.Severity),
// then health word, then name.
func Sort(states []*State, by SortBy) {
	name := func(a, b *State) bool {
		if a.Stream != b.Stream {
			return a.Stream < b.Stream
		}
		return a.Consumer < b.Consumer
	}
	lagOf := func(s *State) float64 {
		if s.LagSeconds == nil {
			if s.Unprocessed > 0 || s.NoLeader {
				return 1e18
			}
			return -1
		}
		return *s.LagSeconds
	}
	sort.SliceStable(states, func(i, j int) bool {
		a, b := states[i], states[j]
		switch by {
		case SortLag:
			if la, lb := lagOf(a), lagOf(b); la != lb {
				return la > lb
			}
			if a.Unprocessed != b.Unprocessed {
				return a.Unprocessed > b.Unprocessed
			}
		case SortPending:
			if a.Unprocessed != b.Unprocessed {
				return a.Unprocessed > b.Unprocessed
			}
			if a.AckPending != b.AckPending {
				return a.AckPending > b.AckPending
			}
		case SortHealth:
			if ra, rb := a.Severity.rank(), b.Severity.rank(); ra != rb {
				return ra < rb
			}
			if sa, sb := a.Health.Severity(), b.Health.Severity(); sa != sb {
				return sa < sb
			}
		}
		return name(a, b)
	})
}

// SortBy names an order for Sort.
type SortBy string

// The orders Sort knows.
const (
	SortName    SortBy = "name"
	SortLag     SortBy = "lag"
	SortPending SortBy = "pending"
	SortHealth  SortBy = "health"
)

// ParseSortBy checks a --sort value.
func ParseSortBy(s string) (SortBy, error) {
	switch SortBy(s) {
	case SortName, SortLag, SortPending, SortHealth:
		return SortBy(s), nil
	}
	return "", fmt.Errorf("%w --sort %q: use lag, pending, health or name", ErrInvalid, s)
}

// ErrInvalid marks invalid input (a usage error, exit 2).
var ErrInvalid = errkind.New(errkind.Invalid, "invalid")

// parallel runs fn for 0..n-1 on up to workers goroutines and waits.
func parallel(n, workers int, fn func(i int)) {
	if workers > n {
		workers = n
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}
