package factory

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// apiTrace logs the JetStream API requests jetctl itself sends and the
// replies it gets, through nats.go's client trace hooks (and pkg/jsapi's,
// which call the same hooks): never another client's traffic. Subjects and
// the shape of the API JSON are shown; values are not: message payloads,
// headers, KV values and anything named like a secret are masked.
func apiTrace(log *slog.Logger) *jetstream.ClientTrace {
	return &jetstream.ClientTrace{
		RequestSent: func(subj string, payload []byte) {
			log.Debug("api request", "subject", subj, "body", maskBody(payload, nil))
		},
		ResponseReceived: func(subj string, payload []byte, hdr nats.Header) {
			attrs := []any{"subject", subj}
			if status := hdr.Get("Status"); status != "" {
				attrs = append(attrs, "status", strings.TrimSpace(status+" "+hdr.Get("Description")))
			}
			if names := headerNames(hdr); names != "" {
				attrs = append(attrs, "headers", names)
			}
			attrs = append(attrs, "body", maskBody(payload, hdr))
			log.Debug("api reply", attrs...)
		},
	}
}

// maskedKeys are JSON fields whose values are data or secrets.
var maskedKeys = map[string]bool{
	"data": true, "hdrs": true, "payload": true, "value": true,
	"password": true, "pass": true, "token": true, "auth_token": true,
	"secret": true, "seed": true, "nkey": true, "jwt": true, "sig": true,
	"creds": true, "credentials": true, "private_key": true,
}

// maskBody renders an API body for the trace. JSON keeps its shape with
// masked values; anything else (a direct get's raw message) is only its
// size.
func maskBody(payload []byte, hdr nats.Header) string {
	if len(payload) == 0 {
		return ""
	}
	var v any
	// A direct get reply carries the stored message itself, which may look
	// like JSON: it is data, never shown.
	if hdr.Get(jetstream.SequenceHeader) != "" || json.Unmarshal(payload, &v) != nil {
		return fmt.Sprintf("<%d bytes masked>", len(payload))
	}
	var out strings.Builder
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(maskJSON(v)); err != nil {
		return fmt.Sprintf("<%d bytes masked>", len(payload))
	}
	return strings.TrimSuffix(out.String(), "\n")
}

func maskJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if maskedKeys[strings.ToLower(k)] && val != nil {
				t[k] = "<masked>"
				continue
			}
			t[k] = maskJSON(val)
		}
	case []any:
		for i := range t {
			t[i] = maskJSON(t[i])
		}
	}
	return v
}

// serverHeaders are the metadata a direct get reply carries about the
// message, shown with their values.
var serverHeaders = map[string]bool{
	jetstream.StreamHeader: true, jetstream.SubjectHeader: true, jetstream.SequenceHeader: true,
	jetstream.TimeStampHeaer: true, "Nats-Num-Pending": true, "Nats-Last-Sequence": true,
}

// headerNames lists a reply's header names, not their values (a stored
// message's headers are data), except the server's metadata about the message.
func headerNames(hdr nats.Header) string {
	var names []string
	for k, vs := range hdr {
		switch {
		case k == "Status" || k == "Description":
		case serverHeaders[k]:
			names = append(names, k+"="+strings.Join(vs, ","))
		default:
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}
