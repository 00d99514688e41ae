package plan

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/jsapi"
)

// assessWorkqueueKeep counts, for each migration from limits or interest
// retention to workqueue (and each replacement a migration could make
// instead), the messages the workqueue stream would keep for good: those at
// or below the ack floor of the consumer whose filter they match. A
// migration copies every message and re-seats each consumer at its ack
// floor; a workqueue stream removes a message only when its consumer
// acknowledges it, and these are never delivered again
// (TestFactWorkqueueKeepsWhatIsBelowTheAckFloor). Like a lowered limit's
// count, it is a warning on the resource; a count that cannot be made is a
// warning too.
func assessWorkqueueKeep(ctx context.Context, js jetstream.JetStream, p *Plan, live *Live) {
	for _, rp := range p.Resources {
		m := rp.Migration
		if rp.Kind != KindStream || m == nil || !m.Migratable || rp.res == nil || rp.res.StreamConfig == nil ||
			rp.res.StreamConfig.Retention != jetstream.WorkQueuePolicy {
			continue
		}
		name := m.Stream
		if standIn := live.StandIns[name]; standIn != "" {
			name = standIn
		}
		si := live.Streams[name]
		if si == nil || si.Config.Retention == jetstream.WorkQueuePolicy {
			continue
		}
		n, exact, err := keptForGood(ctx, js, si, live.Consumers[name])
		if err != nil {
			rp.Warnings = append(rp.Warnings, fmt.Sprintf("the acknowledged messages a workqueue stream would keep were not counted: %v", strings.TrimPrefix(err.Error(), "nats: ")))
			continue
		}
		if n == 0 {
			continue
		}
		m.KeptForGood, m.KeptForGoodExact = n, exact
		about := ""
		if !exact {
			about = "up to "
		}
		what := fmt.Sprintf("%s%d of the %d messages: they are at or below their consumer's ack floor (acknowledged, or before where it started), "+
			"so nothing delivers or acknowledges them again; purge them after the migration if they should go", about, n, si.State.Msgs)
		if rp.Action == ActionMigrate {
			rp.Warnings = append(rp.Warnings, "the workqueue stream keeps for good "+what)
		} else {
			rp.Warnings = append(rp.Warnings, "with --migrate, the workqueue stream would keep for good "+what)
		}
	}
}

// keptForGood counts the stored messages at or below the ack floor of the
// consumer whose filter they match, over the consumers a migration
// re-seats: the messages the consumer's filter matches, less those it has
// still to deliver (NumPending) and those delivered and not yet
// acknowledged. Exact when no consumer has deliveries above its ack floor;
// otherwise an upper bound (acknowledged out of order above the floor is
// delivered again after a migration, and counted here).
func keptForGood(ctx context.Context, js jetstream.JetStream, si *jetstream.StreamInfo, consumers map[string]*jetstream.ConsumerInfo) (uint64, bool, error) {
	st := si.State
	exact := true
	var n uint64
	for _, ci := range consumers {
		if !migratesConsumer(&ci.Config) || ci.AckFloor.Stream < st.FirstSeq || st.Msgs == 0 {
			continue
		}
		matching := st.Msgs
		if filters := consumerFilters(&ci.Config); len(filters) > 0 {
			matching = 0
			for _, f := range filters {
				c, err := messagesMatching(ctx, js, si.Config.Name, f)
				if err != nil {
					return 0, false, err
				}
				matching += c
			}
		}
		ahead := ci.NumPending + uint64(ci.NumAckPending)
		if matching > ahead {
			n += matching - ahead
		}
		exact = exact && ci.Delivered.Stream == ci.AckFloor.Stream
	}
	return n, exact, nil
}

// streamSubjectsPage is a page of a stream info with subjects_filter.
type streamSubjectsPage struct {
	Error *jetstream.APIError `json:"error,omitempty"`
	State struct {
		Subjects map[string]uint64 `json:"subjects"`
	} `json:"state"`
	Total int `json:"total"`
}

// messagesMatching counts the stream's messages whose subject matches
// filter, from the per-subject counts of its info, page by page.
func messagesMatching(ctx context.Context, js jetstream.JetStream, stream, filter string) (uint64, error) {
	client := jsapi.New(js)
	var n uint64
	for offset := 0; ; {
		var page streamSubjectsPage
		if err := client.Request(ctx, "STREAM.INFO."+stream, map[string]any{"subjects_filter": filter, "offset": offset}, &page); err != nil {
			return 0, fmt.Errorf("stream %q: counting messages on %s: %w", stream, filter, err)
		}
		if page.Error != nil {
			return 0, fmt.Errorf("stream %q: counting messages on %s: %w", stream, filter, page.Error)
		}
		for _, c := range page.State.Subjects {
			n += c
		}
		offset += len(page.State.Subjects)
		if len(page.State.Subjects) == 0 || offset >= page.Total {
			return n, nil
		}
	}
}
