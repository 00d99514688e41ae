package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/units"
)

func boolOf(v any) bool { b, _ := v.(bool); return b }

func strOf(v any) string { s, _ := v.(string); return s }

// numOf reads a JSON number; absent means 0.
func numOf(v any) int64 {
	if n, ok := v.(json.Number); ok {
		i, _ := n.Int64()
		return i
	}
	return 0
}

// limitFields maps the fields that limit what a stream keeps to the
// stream field they set, per kind.
var limitFields = map[Kind]map[string]string{
	KindStream:      {"max_msgs": "max_msgs", "max_bytes": "max_bytes", "max_age": "max_age", "max_msgs_per_subject": "max_msgs_per_subject"},
	KindKV:          {"history": "max_msgs_per_subject", "ttl": "max_age", "max_bytes": "max_bytes"},
	KindObjectStore: {"max_age": "max_age", "max_bytes": "max_bytes"},
}

// classify sets how the server can make the change, whether it forces
// replacement, and whether it loses data.
func classify(kind Kind, fc *FieldChange, desiredStream *jetstream.StreamConfig, info *jetstream.StreamInfo) {
	top, _, _ := strings.Cut(fc.Path, ".")
	fc.Mutability = InPlace
	immutable := func(reason string) {
		fc.Mutability, fc.ForcesReplacement, fc.Reason = Immutable, true, reason
	}
	oneWay := func(what string) {
		fc.Mutability = OneWay
		if boolOf(fc.Before) && !boolOf(fc.After) {
			fc.ForcesReplacement = true
			fc.Reason = what + " can be turned on in place but never off"
		}
	}
	refused := func(reason string) {
		fc.Mutability, fc.ForcesReplacement, fc.Reason = Refused, true, reason
	}
	if _, ok := limitFields[kind][top]; ok {
		if lowersLimit(top, fc.Before, fc.After) {
			fc.Destructive = true
			fc.Reason = fmt.Sprintf("lowering %s removes what the stream holds over the new limit at once", top)
		}
		return
	}
	switch kind {
	case KindStream:
		switch top {
		case "storage", "persist_mode", "allow_msg_counter":
			immutable(top + " cannot change on an existing stream")
		case "first_seq":
			immutable("first_seq applies only when a stream is created")
		case "retention":
			b, a := strOf(fc.Before), strOf(fc.After)
			if b == "workqueue" || a == "workqueue" {
				refused("the server refuses to change retention to or from workqueue")
				return
			}
			if a == "interest" {
				fc.Destructive = true
				fc.Reason = "an interest stream removes messages no consumer is interested in"
			}
		case "sealed":
			oneWay("sealed")
		case "deny_delete":
			oneWay("deny_delete")
		case "deny_purge":
			oneWay("deny_purge")
		case "allow_msg_ttl":
			oneWay("allow_msg_ttl")
		case "allow_msg_schedules":
			oneWay("allow_msg_schedules")
		case "mirror":
			if fc.After == nil {
				fc.Reason = "removing the mirror promotes the stream to a normal stream"
				return
			}
			refused("the server refuses to change a stream's mirror")
		}
	case KindConsumer:
		switch top {
		case "deliver_policy", "opt_start_seq", "opt_start_time", "ack_policy", "replay_policy",
			"idle_heartbeat", "flow_control", "max_waiting", "mem_storage":
			immutable(top + " cannot change on an existing consumer")
		case "deliver_subject":
			if strOf(fc.Before) == "" || strOf(fc.After) == "" {
				immutable("a consumer cannot change between pull and push")
			}
		case "filter_subjects":
			if desiredStream != nil && desiredStream.Retention == jetstream.InterestPolicy {
				fc.Destructive = true
				fc.Reason = "on an interest stream, messages that only the old filter wanted are removed"
			}
		}
	case KindKV:
		switch top {
		case "storage":
			immutable("storage cannot change on an existing bucket")
		case "mirror":
			if fc.After != nil {
				refused("the server refuses to change a bucket's mirror")
			}
		case "limit_marker_ttl":
			if numOf(fc.Before) > 0 && numOf(fc.After) == 0 {
				fc.Mutability, fc.ForcesReplacement = OneWay, true
				fc.Reason = "per-message TTLs, which limit markers turn on, cannot be turned off"
			}
		}
	case KindObjectStore:
		if top == "storage" {
			immutable("storage cannot change on an existing object store")
		}
	}
}

// lowersLimit reports whether a limit goes down: unlimited (-1 or 0) to a
// value, or a value to a smaller one.
func lowersLimit(field string, before, after any) bool {
	b, a := numOf(before), numOf(after)
	if a <= 0 {
		return false
	}
	if field == "history" {
		if b == 0 {
			b = 1
		}
		return a < b
	}
	return b <= 0 || a < b
}

// assessDataLoss counts, for each in-place change that lowers a limit,
// the messages it would remove, and clears the destructive flag when the
// stream is within the new limit.
func assessDataLoss(ctx context.Context, js jetstream.JetStream, p *Plan, live *Live) error {
	for _, rp := range p.Resources {
		if rp.Action != ActionUpdate && rp.Action != ActionMigrate {
			continue
		}
		info := live.Streams[streamNameOf(rp.Kind, rp.Stream, rp.Name)]
		if rp.Kind == KindConsumer || info == nil {
			continue
		}
		destructive := false
		for i := range rp.Changes {
			fc := &rp.Changes[i]
			top, _, _ := strings.Cut(fc.Path, ".")
			field, ok := limitFields[rp.Kind][top]
			if !ok || !fc.Destructive {
				destructive = destructive || fc.Destructive
				continue
			}
			n, exact, err := messagesOverLimit(ctx, js, info, field, numOf(fc.After))
			if err != nil {
				return fmt.Errorf("%s: counting messages over the new %s: %w", rp.Label(), top, err)
			}
			if n == 0 {
				fc.Destructive = false
				fc.Reason = ""
				continue
			}
			about := ""
			if !exact {
				about = "about "
			}
			fc.Reason = fmt.Sprintf("lowering %s to %s removes %s%d of %d messages", top, DisplayValue(rp.Kind, top, fc.After), about, n, info.State.Msgs)
			rp.Warnings = append(rp.Warnings, fc.Reason)
			destructive = true
		}
		rp.Destructive = destructive
	}
	finish(p)
	return nil
}

// messagesOverLimit counts the messages a stream would lose under a new
// limit; exact is false when the count is an estimate.
func messagesOverLimit(ctx context.Context, js jetstream.JetStream, info *jetstream.StreamInfo, field string, limit int64) (uint64, bool, error) {
	st := info.State
	if st.Msgs == 0 {
		return 0, true, nil
	}
	switch field {
	case "max_msgs":
		if uint64(limit) >= st.Msgs {
			return 0, true, nil
		}
		return st.Msgs - uint64(limit), true, nil
	case "max_bytes":
		if uint64(limit) >= st.Bytes {
			return 0, true, nil
		}
		avg := float64(st.Bytes) / float64(st.Msgs)
		n := uint64(float64(st.Bytes-uint64(limit))/avg + 0.999)
		return min(n, st.Msgs), false, nil
	case "max_msgs_per_subject":
		if st.NumSubjects > 0 && st.Msgs <= uint64(limit) {
			return 0, true, nil
		}
		s, err := js.Stream(ctx, info.Config.Name)
		if err != nil {
			return 0, false, err
		}
		full, err := s.Info(ctx, jetstream.WithSubjectFilter(">"))
		if err != nil {
			return 0, false, err
		}
		var n uint64
		for _, count := range full.State.Subjects {
			if count > uint64(limit) {
				n += count - uint64(limit)
			}
		}
		return n, true, nil
	case "max_age":
		cutoff := time.Now().Add(-time.Duration(limit))
		if !st.FirstTime.Before(cutoff) {
			return 0, true, nil
		}
		if st.LastTime.Before(cutoff) {
			return st.Msgs, true, nil
		}
		s, err := js.Stream(ctx, info.Config.Name)
		if err != nil {
			return 0, false, err
		}
		seq, err := firstSeqAfter(ctx, s, st.FirstSeq, st.LastSeq, cutoff)
		if err != nil {
			return 0, false, err
		}
		n := seq - st.FirstSeq
		return min(n, st.Msgs), st.NumDeleted == 0, nil
	}
	return 0, true, nil
}

// firstSeqAfter finds, by binary search over message times, the first
// sequence stored at or after cutoff.
func firstSeqAfter(ctx context.Context, s jetstream.Stream, lo, hi uint64, cutoff time.Time) (uint64, error) {
	for lo < hi {
		mid := lo + (hi-lo)/2
		seq := mid
		var msg *jetstream.RawStreamMsg
		var err error
		// Step over deleted messages.
		for ; seq <= hi; seq++ {
			msg, err = s.GetMsg(ctx, seq)
			if err == nil || !errors.Is(err, jetstream.ErrMsgNotFound) {
				break
			}
		}
		if err != nil {
			return 0, err
		}
		if msg.Time.Before(cutoff) {
			lo = seq + 1
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// DisplayValue renders a value the way plan files write it: durations as
// 7d or 1h30m, sizes with units.
func DisplayValue(kind Kind, path string, v any) string {
	if v == nil {
		return "(none)"
	}
	top := path
	if i := strings.LastIndexByte(path, '.'); i >= 0 && !strings.HasPrefix(path, "metadata.") {
		top = path[i+1:]
	}
	if n, ok := v.(json.Number); ok {
		i, err := n.Int64()
		if err == nil {
			if durationFields[kind][top] {
				return units.FormatDuration(time.Duration(i))
			}
			if sizeFieldsByKind[kind][top] && i > 0 {
				return units.FormatSize(i)
			}
		}
		return n.String()
	}
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = DisplayValue(kind, top, e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	data, _ := json.Marshal(v)
	return string(data)
}

// durationFields and sizeFieldsByKind name the fields shown as durations
// and sizes, at any depth.
var durationFields = map[Kind]map[string]bool{
	KindStream:      {"max_age": true, "duplicate_window": true, "subject_delete_marker_ttl": true, "inactive_threshold": true},
	KindConsumer:    {"ack_wait": true, "backoff": true, "max_expires": true, "inactive_threshold": true, "idle_heartbeat": true, "priority_timeout": true},
	KindKV:          {"ttl": true, "limit_marker_ttl": true},
	KindObjectStore: {"max_age": true},
}

var sizeFieldsByKind = map[Kind]map[string]bool{
	KindStream:      {"max_bytes": true, "max_msg_size": true},
	KindConsumer:    {"max_bytes": true},
	KindKV:          {"max_bytes": true, "max_value_size": true},
	KindObjectStore: {"max_bytes": true},
}
