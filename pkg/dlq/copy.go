package dlq

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
)

// BuildCopy is the DLQ copy of dead message m: the payload byte for byte,
// the original headers (those the server acts on moved to
// Jetctl-Orig-<Name>), provenance and the reason, on the per-message
// subject that can be written only once.
//
// The subject and the values it formats share one string, and the eleven
// values one slice: a sweep builds one copy per dead message, and a
// header set each cost two allocations more (buildCopyReference in the
// tests is the plain form it is held to).
func BuildCopy(n Names, m *envelope.Message, a Advisory, sweptAt time.Time) *nats.Msg {
	// Room for the provenance and the seven headers below.
	h := envelope.CopyHeader(envelope.CmdDLQ, m.Header, 4+7)
	var buf [256]byte
	b := append(append(buf[:0], n.SubjectPrefix...), '.')
	seqAt := len(b)
	b = strconv.AppendUint(b, m.Seq, 10)
	subjectEnd := len(b)
	b = append(append(append(b, "dlq:"...), m.Stream...), ':')
	b = append(b, b[seqAt:subjectEnd]...)
	msgIDEnd := len(b)
	b = strconv.AppendUint(b, a.Deliveries, 10)
	deliveriesEnd := len(b)
	b = sweptAt.UTC().AppendFormat(b, time.RFC3339Nano)
	sweptAtEnd := len(b)
	b = m.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	text := string(b)

	// As envelope.SetProvenance, then the DLQ's own.
	names := [11]string{envelope.SourceStream, envelope.SourceSeq, envelope.SourceSubject, envelope.SourceTime,
		HeaderConsumer, HeaderReason, HeaderDeliveries, HeaderSweptAt, jetstream.MsgIDHeader, jetstream.ExpectedLastSubjSeqHeader}
	values := [11]string{m.Stream, text[seqAt:subjectEnd], m.Subject, text[sweptAtEnd:],
		a.Consumer, a.DeadReason(), text[msgIDEnd:deliveriesEnd], text[deliveriesEnd:sweptAtEnd], text[subjectEnd:msgIDEnd], "0"}
	count := 10
	if a.Reason != "" {
		names[count], values[count] = HeaderTermReason, a.Reason
		count++
	} else {
		delete(h, HeaderTermReason)
	}
	vals := make([]string, count)
	for i := range count {
		vals[i] = values[i]
		h[names[i]] = vals[i : i+1 : i+1]
	}
	return &nats.Msg{Subject: text[:subjectEnd], Header: h, Data: m.Data}
}

// HeaderPayloadOmitted is set on a DLQ copy that holds no payload: the
// dead message was too large to copy with its provenance headers within
// the server's max_payload. Its value is the payload's size in bytes; the
// message stays in the source stream (Jetctl-Source-Stream and -Seq).
const HeaderPayloadOmitted = "Jetctl-Dlq-Payload-Omitted"

// PointerCopy is copy without its payload, marked with
// HeaderPayloadOmitted: what the DLQ keeps of a message too large to copy.
func PointerCopy(copy *nats.Msg) *nats.Msg {
	h := nats.Header{}
	for k, vs := range copy.Header {
		h[k] = append([]string(nil), vs...)
	}
	h.Set(HeaderPayloadOmitted, strconv.Itoa(len(copy.Data)))
	return &nats.Msg{Subject: copy.Subject, Header: h}
}

// WireSize is the size of m as the server counts it against max_payload:
// the encoded headers plus the payload.
func WireSize(m *nats.Msg) int64 {
	size := int64(len(m.Data))
	if len(m.Header) > 0 {
		size += int64(len("NATS/1.0\r\n") + len("\r\n"))
		for k, vs := range m.Header {
			for _, v := range vs {
				size += int64(len(k) + len(": ") + len(v) + len("\r\n"))
			}
		}
	}
	return size
}

// RedriveHeader is the header a redriven message carries, made of its DLQ
// copy's header h by the dlq redrive column of the header table
// (envelope.HeaderTable, docs/headers.md): jetctl's provenance and DLQ
// headers are dropped, and so are the DLQ publish's own Nats-Msg-Id and
// expectation; each of the original's headers (under its own name, or
// under Jetctl-Orig-<Name> where the DLQ copy moved it aside) goes back to
// its name only where the redrive's fate for it is keep. The others stay
// under Jetctl-Orig-<Name>, where the server does not act on them: a
// redrive never repeats a rollup, batch, schedule or increment the
// original publish performed. The redrive count is incremented and
// Nats-Msg-Id set to msgID. Nats-TTL stays renamed here: the redrive sets
// the copy's TTL by what is left of it (see redriveTTL). Where the
// message was first stored goes along (Jetctl-Dlq-Original-*: the copy's
// own, or its Jetctl-Source-* the first time), so that a redriven message
// that dies again still says it.
func RedriveHeader(h nats.Header, redrives int, msgID string) nats.Header {
	out := make(nats.Header, len(h)+2)
	for k, vs := range h {
		name, renamed := strings.CutPrefix(k, envelope.OrigPrefix)
		switch {
		case strings.HasPrefix(k, "Jetctl-Dlq-Original-"):
			out[k] = slices.Clone(vs)
			continue
		case strings.HasPrefix(k, "Jetctl-Source-") || strings.HasPrefix(k, "Jetctl-Dlq-"):
			continue
		case !renamed && envelope.FateOf(envelope.CmdDLQ, k) == envelope.Own:
			// The DLQ publish's own Nats-Msg-Id and expectation: the
			// original's are under Jetctl-Orig-.
			continue
		}
		switch envelope.FateOf(envelope.CmdRedrive, name) {
		case envelope.Keep:
			out[name] = slices.Clone(vs)
		case envelope.Drop:
		default:
			// rename, own, ttl and refuse: the original's stays aside.
			out[envelope.OrigPrefix+name] = slices.Clone(vs)
		}
	}
	if _, kept := out[HeaderOriginalStream]; !kept {
		// Its first redrive: the copy's provenance is the original's.
		for _, p := range originalFrom {
			if v := h.Get(p[1]); v != "" {
				out.Set(p[0], v)
			}
		}
	}
	out.Set(HeaderRedrives, strconv.Itoa(redrives+1))
	out.Set(jetstream.MsgIDHeader, msgID)
	return out
}

// alreadyCopied reports whether a publish of a DLQ copy found the copy
// there: the per-message DLQ subject is written once (an expected last
// subject sequence of 0, and the copy's message id), so the server
// answers a second copy with a duplicate ack or a wrong last sequence.
// The sweep and take both read the answer with it.
func alreadyCopied(ack *jetstream.PubAck, err error) bool {
	if err == nil {
		return ack != nil && ack.Duplicate
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
