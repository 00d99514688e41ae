// Package status implements `jetctl status`: the account's JetStream usage
// and limits, its streams, KV buckets and object stores, at a glance.
package status

import (
	"context"
	"errors"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dustin/go-humanize"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	cmdconsumer "github.com/jetctl/jetctl/cmd/consumer"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/consumer"
	"github.com/jetctl/jetctl/pkg/events"
)

// Status is the JSON form of `jetctl status`.
type Status struct {
	Account      Account       `json:"account"`
	Streams      []Stream      `json:"streams"`
	KV           []Bucket      `json:"kv"`
	ObjectStores []ObjectStore `json:"object_stores"`
	// Consumers are those of the streams listed (not of KV, object store
	// or DLQ streams), the unhealthy first: the rows of `consumer ls`.
	Consumers []*consumer.State `json:"consumers"`
	// Events is what the event record says happened in the last hour
	// (jetctl events record); left out without a recorder.
	Events *events.Recent `json:"events,omitempty"`
}

// Account is the account's JetStream usage and limits; -1 means unlimited.
type Account struct {
	Domain       string `json:"domain,omitempty"`
	MemoryBytes  uint64 `json:"memory_bytes"`
	StorageBytes uint64 `json:"storage_bytes"`
	Streams      int    `json:"streams"`
	Consumers    int    `json:"consumers"`
	MaxMemory    int64  `json:"max_memory"`
	MaxStorage   int64  `json:"max_storage"`
	MaxStreams   int    `json:"max_streams"`
	MaxConsumers int    `json:"max_consumers"`
	APIRequests  uint64 `json:"api_requests"`
	APIErrors    uint64 `json:"api_errors"`
}

// Stream is one stream that is neither a KV bucket nor an object store.
type Stream struct {
	Name      string   `json:"name"`
	Subjects  []string `json:"subjects"`
	Retention string   `json:"retention"`
	Storage   string   `json:"storage"`
	Replicas  int      `json:"replicas"`
	Messages  uint64   `json:"messages"`
	Bytes     uint64   `json:"bytes"`
	Consumers int      `json:"consumers"`
}

// Bucket is a KV bucket.
type Bucket struct {
	Bucket   string `json:"bucket"`
	Values   uint64 `json:"values"`
	Bytes    uint64 `json:"bytes"`
	History  int64  `json:"history"`
	TTL      string `json:"ttl,omitempty"`
	Storage  string `json:"storage"`
	Replicas int    `json:"replicas"`
}

// ObjectStore is an object store bucket.
type ObjectStore struct {
	Name     string `json:"name"`
	Bytes    uint64 `json:"bytes"`
	Storage  string `json:"storage"`
	Replicas int    `json:"replicas"`
	Sealed   bool   `json:"sealed"`
}

// NewCmd returns `jetctl status`.
func NewCmd(f *factory.Factory) *cobra.Command {
	var health cmdconsumer.HealthFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "show the account's JetStream usage, limits, streams, consumers and buckets",
		Long: `Show the account's JetStream usage and limits, then a table of streams,
one of consumers (the unhealthy first, with the health words of "jetctl
consumer ls", by the same rules and thresholds, --behind and --inactive),
and one of KV buckets (and object stores, if any). Streams
that back KV buckets (KV_*) and object stores (OBJ_*) appear under those,
not under streams, and their consumers are not listed.

The table fits the terminal's width (or $COLUMNS when set): subjects that
do not fit are cut with "…". Off a terminal, without $COLUMNS, it is not
cut; -o json always has every subject.`,
		Example: `  jetctl status
  jetctl status -o json
  jetctl status --jq '.streams[].name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := f.Printer("table")
			if err != nil {
				return err
			}
			js, err := f.JetStream(cmd.Context())
			if err != nil {
				return err
			}
			st, err := Gather(cmd.Context(), js, health.Thresholds(), health.Fixed())
			if err != nil {
				return err
			}
			st.Events, err = events.ReadRecent(cmd.Context(), js, events.RecentConfig{})
			if err != nil {
				f.Logger().Debug("status: the event record", "error", err)
			}
			cmdconsumer.ThresholdWarnings(f.IO.ErrOut, st.Consumers)
			if err := p.Print(st, func() []output.Table { return tables(st, tableWidth(f)) }); err != nil {
				return err
			}
			return cmdconsumer.Unread(st.Consumers)
		},
	}
	health.Bind(cmd.Flags())
	return cmd
}

// Gather reads the account info and every stream, with the paged list
// API, and judges the consumers by t, with their metadata thresholds
// except those named in fixed (given as flags).
func Gather(ctx context.Context, js jetstream.JetStream, t consumer.Thresholds, fixed map[string]bool) (*Status, error) {
	type accountResult struct {
		info *jetstream.AccountInfo
		err  error
	}
	accountCh := make(chan accountResult, 1)
	go func() {
		info, err := js.AccountInfo(ctx)
		accountCh <- accountResult{info, err}
	}()
	// The streams are listed once: for their table and for the
	// consumers' (consumer.List takes them as listed).
	st := &Status{Streams: []Stream{}, KV: []Bucket{}, ObjectStores: []ObjectStore{}}
	listed, missing, err := consumer.ListStreams(ctx, js)
	if err != nil {
		// The account's error says more (JetStream not enabled).
		if ar := <-accountCh; ar.err != nil {
			return nil, ar.err
		}
		return nil, err
	}
	for _, si := range listed {
		addStream(st, si)
	}
	// Left out of the list during an election: read on its own. With no
	// server holding it up it is a stub, which has no row but whose
	// consumers are listed (without a leader), as consumer ls lists them.
	for _, name := range missing {
		si, offline, err := consumer.StreamOrStub(ctx, js, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			<-accountCh
			return nil, err
		}
		listed = append(listed, si)
		if !offline {
			addStream(st, si)
		}
	}
	if listed == nil {
		listed = []*jetstream.StreamInfo{}
	}
	states, err := consumer.List(ctx, js, consumer.ListConfig{Listed: listed, Thresholds: t, Fixed: fixed})
	ar := <-accountCh
	if ar.err != nil {
		return nil, ar.err
	}
	if err != nil {
		return nil, err
	}
	st.Consumers = states
	if st.Consumers == nil {
		st.Consumers = []*consumer.State{}
	}
	consumer.Sort(st.Consumers, consumer.SortHealth)
	a := ar.info
	st.Account = Account{
		Domain:       a.Domain,
		MemoryBytes:  a.Memory,
		StorageBytes: a.Store,
		Streams:      a.Streams,
		Consumers:    a.Consumers,
		MaxMemory:    a.Limits.MaxMemory,
		MaxStorage:   a.Limits.MaxStore,
		MaxStreams:   a.Limits.MaxStreams,
		MaxConsumers: a.Limits.MaxConsumers,
		APIRequests:  a.API.Total,
		APIErrors:    a.API.Errors,
	}
	sort.Slice(st.Streams, func(i, j int) bool { return st.Streams[i].Name < st.Streams[j].Name })
	sort.Slice(st.KV, func(i, j int) bool { return st.KV[i].Bucket < st.KV[j].Bucket })
	sort.Slice(st.ObjectStores, func(i, j int) bool { return st.ObjectStores[i].Name < st.ObjectStores[j].Name })
	return st, nil
}

func addStream(st *Status, si *jetstream.StreamInfo) {
	cfg := si.Config
	switch {
	case strings.HasPrefix(cfg.Name, "KV_"):
		b := Bucket{
			Bucket:   strings.TrimPrefix(cfg.Name, "KV_"),
			Values:   si.State.Msgs,
			Bytes:    si.State.Bytes,
			History:  cfg.MaxMsgsPerSubject,
			Storage:  strings.ToLower(cfg.Storage.String()),
			Replicas: cfg.Replicas,
		}
		if cfg.MaxAge > 0 {
			b.TTL = cfg.MaxAge.String()
		}
		st.KV = append(st.KV, b)
	case strings.HasPrefix(cfg.Name, "OBJ_"):
		st.ObjectStores = append(st.ObjectStores, ObjectStore{
			Name:     strings.TrimPrefix(cfg.Name, "OBJ_"),
			Bytes:    si.State.Bytes,
			Storage:  strings.ToLower(cfg.Storage.String()),
			Replicas: cfg.Replicas,
			Sealed:   cfg.Sealed,
		})
	default:
		subjects := cfg.Subjects
		if subjects == nil {
			subjects = []string{}
		}
		st.Streams = append(st.Streams, Stream{
			Name:      cfg.Name,
			Subjects:  subjects,
			Retention: strings.ToLower(cfg.Retention.String()),
			Storage:   strings.ToLower(cfg.Storage.String()),
			Replicas:  cfg.Replicas,
			Messages:  si.State.Msgs,
			Bytes:     si.State.Bytes,
			Consumers: si.State.Consumers,
		})
	}
}

// tableWidth is the width the tables must fit: $COLUMNS when it is a
// number, else the terminal's width when stdout is a terminal; 0, no
// limit, otherwise, so that a pipe gets every subject.
func tableWidth(f *factory.Factory) int {
	if n, err := strconv.Atoi(f.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if !f.IO.StdoutTTY {
		return 0
	}
	if file, ok := f.IO.Out.(*os.File); ok {
		if w, _, err := term.GetSize(int(file.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 0
}

// minSubjectsWidth is the narrowest the SUBJECTS column gets: its header.
const minSubjectsWidth = len("SUBJECTS")

// fitSubjects cuts the subjects cells (column col) so that the table's
// lines fit width, as output.Table renders them: columns two spaces
// apart.
func fitSubjects(t *output.Table, col, width int) {
	if width <= 0 {
		return
	}
	widths := make([]int, len(t.Header))
	for i, h := range t.Header {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, row := range t.Rows {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	others := 2 * (len(widths) - 1)
	for i, w := range widths {
		if i != col {
			others += w
		}
	}
	limit := max(width-others, minSubjectsWidth)
	if widths[col] <= limit {
		return
	}
	for _, row := range t.Rows {
		if r := []rune(row[col]); len(r) > limit {
			row[col] = string(r[:limit-1]) + "…"
		}
	}
}

func tables(st *Status, width int) []output.Table {
	a := st.Account
	account := output.Table{Header: []string{"account", "used", "limit"}}
	account.Row("memory", humanize.IBytes(a.MemoryBytes), limit(a.MaxMemory, true))
	account.Row("storage", humanize.IBytes(a.StorageBytes), limit(a.MaxStorage, true))
	account.Row("streams", a.Streams, limit(int64(a.MaxStreams), false))
	account.Row("consumers", a.Consumers, limit(int64(a.MaxConsumers), false))
	errors := humanize.Comma(int64(a.APIErrors)) + " errors"
	if a.APIErrors == 1 {
		errors = "1 error"
	}
	account.Row("api requests", humanize.Comma(int64(a.APIRequests)), errors)
	if a.Domain != "" {
		account.Row("domain", a.Domain, "")
	}
	out := []output.Table{account}

	streams := output.Table{Header: []string{"stream", "subjects", "retention", "storage", "replicas", "messages", "bytes", "consumers"}}
	for _, s := range st.Streams {
		streams.Row(s.Name, strings.Join(s.Subjects, ", "), s.Retention, s.Storage, s.Replicas,
			humanize.Comma(int64(s.Messages)), humanize.IBytes(s.Bytes), s.Consumers)
	}
	fitSubjects(&streams, 1, width)
	out = append(out, streams)

	if len(st.Consumers) > 0 {
		cons := output.Table{Header: []string{"consumer", "stream", "health", "unprocessed", "ack pending", "lag", "why"}}
		for _, c := range st.Consumers {
			cons.Row(c.Consumer, c.Stream, string(c.Health), humanize.Comma(int64(c.Unprocessed)), cmdconsumer.AckPendingCell(c), cmdconsumer.LagCell(c), c.HealthReason)
		}
		out = append(out, cons)
	}
	if st.Events != nil {
		ev := output.Table{Header: []string{"events, last hour (jetctl events timeline --since 1h)"}}
		lines := st.Events.Lines(events.RecentWindow)
		if len(lines) == 0 {
			lines = []string{"no leader election, dead letter or jetctl change"}
		}
		for _, l := range lines {
			ev.Row(l)
		}
		out = append(out, ev)
	}
	if len(st.KV) > 0 {
		kv := output.Table{Header: []string{"kv bucket", "values", "bytes", "history", "ttl", "storage", "replicas"}}
		for _, b := range st.KV {
			ttl := b.TTL
			if ttl == "" {
				ttl = "-"
			}
			kv.Row(b.Bucket, humanize.Comma(int64(b.Values)), humanize.IBytes(b.Bytes), b.History, ttl, b.Storage, b.Replicas)
		}
		out = append(out, kv)
	}
	if len(st.ObjectStores) > 0 {
		obj := output.Table{Header: []string{"object store", "bytes", "storage", "replicas", "sealed"}}
		for _, o := range st.ObjectStores {
			obj.Row(o.Name, humanize.IBytes(o.Bytes), o.Storage, o.Replicas, o.Sealed)
		}
		out = append(out, obj)
	}
	return out
}

func limit(v int64, bytes bool) string {
	if v < 0 {
		return "unlimited"
	}
	if bytes {
		return humanize.IBytes(uint64(v))
	}
	return humanize.Comma(v)
}
