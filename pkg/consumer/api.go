package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
)

// api makes the raw requests List needs and nats.go does not offer in
// that form: the paged consumer list of a stream by name (nats.go first
// asks for the stream's info), with the consumers a cluster could not
// report ("missing").
type api struct {
	client *jsapi.Client
}

func newAPI(js jetstream.JetStream) *api { return &api{client: jsapi.New(js)} }

type consumerListResponse struct {
	Type    string                    `json:"type"`
	Error   *jetstream.APIError       `json:"error,omitempty"`
	Total   int                       `json:"total"`
	Offset  int                       `json:"offset"`
	Limit   int                       `json:"limit"`
	Items   []*jetstream.ConsumerInfo `json:"consumers"`
	Missing []string                  `json:"missing,omitempty"`
}

// listConsumers reads every consumer of stream, one request per page.
// A page covers its listed consumers and its missing ones (those whose
// leader did not answer, during an election): the next page starts after
// both. A consumer listed twice (a page shifted by an election) is kept
// once.
func (a *api) listConsumers(ctx context.Context, stream string) ([]*State, error) {
	var out []*State
	seen := map[string]bool{}
	add := func(page map[string]bool, name string, state func() *State) {
		if page[name] {
			return
		}
		page[name] = true
		if !seen[name] {
			seen[name] = true
			out = append(out, state())
		}
	}
	for offset := 0; ; {
		var resp consumerListResponse
		if err := a.client.Request(ctx, "CONSUMER.LIST."+stream, map[string]int{"offset": offset}, &resp); err != nil {
			return nil, fmt.Errorf("stream %q: listing consumers: %w", stream, err)
		}
		if resp.Error != nil {
			if resp.Error.ErrorCode == jetstream.JSErrCodeStreamNotFound {
				return nil, fmt.Errorf("stream %q: %w", stream, jetstream.ErrStreamNotFound)
			}
			return nil, fmt.Errorf("stream %q: listing consumers: %w", stream, resp.Error)
		}
		page := map[string]bool{}
		for _, info := range resp.Items {
			if info.Stream == "" {
				info.Stream = stream
			}
			// An offline consumer comes as a stub: no names but its
			// config, and it is also listed as missing.
			if info.Name == "" {
				info.Name = info.Config.Name
				if info.Name == "" {
					info.Name = info.Config.Durable
				}
			}
			add(page, info.Name, func() *State { return FromInfo(info) })
		}
		for _, name := range resp.Missing {
			add(page, name, func() *State { return missingState(stream, name, time.Now()) })
		}
		offset += len(page)
		if len(page) == 0 || offset >= resp.Total {
			return out, nil
		}
	}
}

// firstMatching is the first stored message at or after seq matching one
// of filters (any message without filters); nil when there is none. One
// message get on the stream leader per filter subject: explain's oldest
// unacknowledged message and List's oldest undelivered one (the lag).
func firstMatching(ctx context.Context, api *jsapi.Client, stream string, filters []string, seq uint64) (*envelope.Message, error) {
	if len(filters) == 0 {
		filters = []string{">"}
	}
	var first *envelope.Message
	for _, f := range filters {
		m, err := api.MsgGet(ctx, stream, jsapi.MsgGetRequest{Seq: max(seq, 1), NextFor: f})
		if errors.Is(err, jsapi.ErrNoMessage) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if first == nil || m.Seq < first.Seq {
			first = m
		}
	}
	return first, nil
}
