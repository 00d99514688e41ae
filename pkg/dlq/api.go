package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
)

// api makes the raw requests nats.go does not offer in the form the sweep
// needs: coherent gets on the stream leader (never a direct get, which a
// lagging replica may answer) and deletes whose "already deleted" is no
// error.
type api struct {
	nc      *nats.Conn
	prefix  string
	timeout time.Duration
}

func newAPI(js jetstream.JetStream) *api {
	opts := js.Options()
	prefix := opts.APIPrefix
	if prefix == "" {
		prefix = "$JS.API."
	}
	timeout := opts.DefaultTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &api{nc: js.Conn(), prefix: prefix, timeout: timeout}
}

// errNoMessage is the server's 10037: no message at that sequence.
var errNoMessage = errors.New("no message found")

type msgGetRequest struct {
	Seq     uint64 `json:"seq,omitempty"`
	LastFor string `json:"last_by_subj,omitempty"`
	NextFor string `json:"next_by_subj,omitempty"`
}

type apiResponse struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Success bool                `json:"success,omitempty"`
	Message *struct {
		Subject  string    `json:"subject"`
		Sequence uint64    `json:"seq"`
		Header   []byte    `json:"hdrs,omitempty"`
		Data     []byte    `json:"data,omitempty"`
		Time     time.Time `json:"time"`
	} `json:"message,omitempty"`
}

func (a *api) request(ctx context.Context, subject string, req any) (*apiResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.timeout)
		defer cancel()
	}
	var reply *nats.Msg
	for attempt := 0; ; attempt++ {
		reply, err = a.nc.RequestWithContext(ctx, a.prefix+subject, body)
		// No responders: a leader election is under way; try again.
		if errors.Is(err, nats.ErrNoResponders) && attempt < 20 && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		break
	}
	if err != nil {
		return nil, err
	}
	var resp apiResponse
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// msgGet asks the stream leader for a message.
func (a *api) msgGet(ctx context.Context, stream string, req msgGetRequest) (*envelope.Message, error) {
	resp, err := a.request(ctx, "STREAM.MSG.GET."+stream, req)
	if err != nil {
		return nil, fmt.Errorf("stream %q: message get: %w", stream, err)
	}
	if resp.Error != nil {
		switch resp.Error.ErrorCode {
		case jetstream.JSErrCodeMessageNotFound:
			return nil, errNoMessage
		case jetstream.JSErrCodeStreamNotFound:
			return nil, fmt.Errorf("stream %q: %w", stream, jetstream.ErrStreamNotFound)
		}
		return nil, fmt.Errorf("stream %q: message get: %w", stream, resp.Error)
	}
	if resp.Message == nil {
		return nil, errNoMessage
	}
	m := resp.Message
	out := &envelope.Message{Stream: stream, Seq: m.Sequence, Subject: m.Subject, Time: m.Time, Data: m.Data}
	if len(m.Header) > 0 {
		hdr, err := nats.DecodeHeadersMsg(m.Header)
		if err != nil {
			return nil, fmt.Errorf("stream %q seq %d: headers: %w", stream, m.Sequence, err)
		}
		out.Header = hdr
	}
	return out, nil
}

// msgDelete removes a message; one that is already gone is no error.
func (a *api) msgDelete(ctx context.Context, stream string, seq uint64) error {
	resp, err := a.request(ctx, "STREAM.MSG.DELETE."+stream, map[string]any{"seq": seq, "no_erase": true})
	if err != nil {
		return fmt.Errorf("stream %q: delete seq %d: %w", stream, seq, err)
	}
	if resp.Error != nil {
		// 10057: already deleted (or never there).
		if resp.Error.ErrorCode == 10057 || resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil
		}
		return fmt.Errorf("stream %q: delete seq %d: %w", stream, seq, resp.Error)
	}
	return nil
}

// parallel runs fn for 0..n-1 on up to workers goroutines and waits.
func parallel(n, workers int, fn func(i int)) {
	if n == 0 {
		return
	}
	if workers > n {
		workers = n
	}
	next := make(chan int)
	done := make(chan struct{})
	for w := 0; w < workers; w++ {
		go func() {
			for i := range next {
				fn(i)
			}
			done <- struct{}{}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	for w := 0; w < workers; w++ {
		<-done
	}
}

// subjectMatches reports whether subject matches filter (with * and >).
func subjectMatches(filter, subject string) bool {
	if filter == "" || filter == ">" {
		return true
	}
	ft := splitTokens(filter)
	st := splitTokens(subject)
	for i, f := range ft {
		if f == ">" {
			return len(st) > i
		}
		if i >= len(st) {
			return false
		}
		if f != "*" && f != st[i] {
			return false
		}
	}
	return len(ft) == len(st)
}

func splitTokens(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
