// Package jsapi makes the raw JetStream API requests that nats.go does not
// offer in the form jetctl needs: coherent message gets on the stream
// leader (by sequence, next by subject, or by start time), deletes whose
// "already deleted" is no error, and the API prefix and client trace those
// requests share. Reading a stream lives in pkg/streamread.
package jsapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/retry"
)

// Client sends API requests on a JetStream handle's connection, honouring
// its API prefix (or domain) and default timeout.
type Client struct {
	NC      *nats.Conn
	Prefix  string
	Timeout time.Duration
	// Trace is the JetStream handle's client trace, if any: the raw
	// requests here are traced like nats.go's own.
	Trace *jetstream.ClientTrace
}

// New returns a client for js.
func New(js jetstream.JetStream) *Client {
	opts := js.Options()
	prefix := APIPrefix(opts)
	timeout := opts.DefaultTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &Client{NC: js.Conn(), Prefix: prefix, Timeout: timeout, Trace: opts.ClientTrace}
}

// TraceRequest reports a request about to be sent to the client trace.
func (c *Client) TraceRequest(subject string, body []byte) {
	if c.Trace != nil && c.Trace.RequestSent != nil {
		c.Trace.RequestSent(subject, body)
	}
}

// TraceReply reports a reply to the client trace.
func (c *Client) TraceReply(subject string, reply *nats.Msg) {
	if c.Trace != nil && c.Trace.ResponseReceived != nil && reply != nil {
		c.Trace.ResponseReceived(subject, reply.Data, reply.Header)
	}
}

// ErrNoMessage is the server's "no message found" (10037).
var ErrNoMessage = errors.New("no message found")

// MsgGetRequest is the body of STREAM.MSG.GET and DIRECT.GET. The last
// fields are DIRECT.GET's alone: a batch, and the last messages of several
// subjects (multi_last) up to a sequence or a time.
type MsgGetRequest struct {
	Seq          uint64     `json:"seq,omitempty"`
	LastFor      string     `json:"last_by_subj,omitempty"`
	NextFor      string     `json:"next_by_subj,omitempty"`
	StartTime    *time.Time `json:"start_time,omitempty"`
	Batch        int        `json:"batch,omitempty"`
	MaxBytes     int        `json:"max_bytes,omitempty"`
	MultiLastFor []string   `json:"multi_last,omitempty"`
	UpToSeq      uint64     `json:"up_to_seq,omitempty"`
	UpToTime     *time.Time `json:"up_to_time,omitempty"`
}

type response struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *struct {
		Subject  string    `json:"subject"`
		Sequence uint64    `json:"seq"`
		Header   []byte    `json:"hdrs,omitempty"`
		Data     []byte    `json:"data,omitempty"`
		Time     time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// WithTimeout bounds ctx by the client's timeout; a deadline of ctx's
// that comes first stays. A deadline further away (a command's --wait, a
// test's) does not replace the timeout: a request lost with the
// connection (sent to a server that restarted) is never answered, and
// would wait for that deadline instead of being sent again.
func (c *Client) WithTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.Timeout)
}

// requestRaw sends body to the API subject and returns the reply, riding
// out what retry.Transient counts (no responders during an election, a
// request lost to a reconnect) within the request's timeout. The requests
// sent this way (gets, info, lists, deletes of a message) are safe to
// repeat.
func (c *Client) requestRaw(ctx context.Context, subject string, body []byte) (*nats.Msg, error) {
	if _, ok := ctx.Deadline(); !ok && ctx.Done() == nil {
		// Nothing can cancel ctx (a sweep finishing what is in flight):
		// a plain request with the timeout spares a context and a timer
		// per request.
		return c.requestTimeout(ctx, subject, body)
	}
	ctx, cancel := c.WithTimeout(ctx)
	defer cancel()
	var reply *nats.Msg
	err := retry.Do(ctx, retry.Policy{Attempts: 21, Pause: 100 * time.Millisecond, MaxPause: 100 * time.Millisecond,
		Retryable: retry.Transient},
		func(ctx context.Context) (err error) {
			c.TraceRequest(c.Prefix+subject, body)
			reply, err = c.NC.RequestWithContext(ctx, c.Prefix+subject, body)
			return err
		})
	if err != nil {
		if ctx.Err() != nil {
			// The request's deadline or the command's end, not the election.
			return nil, ctx.Err()
		}
		return nil, err
	}
	c.TraceReply(c.Prefix+subject, reply)
	return reply, nil
}

// requestTimeout is requestRaw for a ctx that nothing cancels: each try
// waits at most c.Timeout, and running out of time is
// context.DeadlineExceeded, as with a context.
func (c *Client) requestTimeout(ctx context.Context, subject string, body []byte) (*nats.Msg, error) {
	var reply *nats.Msg
	deadline := time.Now().Add(c.Timeout)
	err := retry.Do(ctx, retry.Policy{Attempts: 21, Pause: 100 * time.Millisecond, MaxPause: 100 * time.Millisecond,
		Retryable: func(err error) bool { return retry.Transient(err) && time.Until(deadline) > 0 }},
		func(context.Context) (err error) {
			c.TraceRequest(c.Prefix+subject, body)
			reply, err = c.NC.Request(c.Prefix+subject, body, max(time.Until(deadline), time.Millisecond))
			if errors.Is(err, nats.ErrTimeout) {
				return context.DeadlineExceeded
			}
			return err
		})
	if err != nil {
		return nil, err
	}
	c.TraceReply(c.Prefix+subject, reply)
	return reply, nil
}

// MsgGet asks the stream leader for a message (coherent, unlike a direct
// get that a lagging replica may answer).
func (c *Client) MsgGet(ctx context.Context, stream string, req MsgGetRequest) (*envelope.Message, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	reply, err := c.requestRaw(ctx, "STREAM.MSG.GET."+stream, body)
	if err != nil {
		return nil, fmt.Errorf("stream %q: message get: %w", stream, err)
	}
	return msgGetResult(stream, reply.Data)
}

// msgGetResult reads a STREAM.MSG.GET reply.
func msgGetResult(stream string, reply []byte) (*envelope.Message, error) {
	var resp response
	if err := json.Unmarshal(reply, &resp); err != nil {
		return nil, fmt.Errorf("stream %q: message get: %w", stream, err)
	}
	if resp.Error != nil {
		switch resp.Error.ErrorCode {
		case jetstream.JSErrCodeMessageNotFound:
			return nil, ErrNoMessage
		case jetstream.JSErrCodeStreamNotFound:
			return nil, fmt.Errorf("stream %q: %w", stream, jetstream.ErrStreamNotFound)
		}
		return nil, fmt.Errorf("stream %q: message get: %w", stream, resp.Error)
	}
	if resp.Message == nil {
		return nil, ErrNoMessage
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

// MsgDelete removes a message; one that is already gone is no error.
//
// A sweep sends one per dead message, so its body is written by hand and
// only the error of the reply is decoded.
func (c *Client) MsgDelete(ctx context.Context, stream string, seq uint64) error {
	reply, err := c.requestRaw(ctx, "STREAM.MSG.DELETE."+stream, msgDeleteBody(seq))
	if err != nil {
		return fmt.Errorf("stream %q: delete seq %d: %w", stream, seq, err)
	}
	return deleteResult(stream, seq, reply.Data)
}

// msgDeleteBody is the body of a STREAM.MSG.DELETE of seq.
func msgDeleteBody(seq uint64) []byte {
	body := strconv.AppendUint([]byte(`{"seq":`), seq, 10)
	return append(body, `,"no_erase":true}`...)
}

func deleteResult(stream string, seq uint64, reply []byte) error {
	if deleted(reply) {
		return nil
	}
	var resp struct {
		Error *jetstream.APIError `json:"error,omitempty"`
	}
	if err := json.Unmarshal(reply, &resp); err != nil {
		return fmt.Errorf("stream %q: delete seq %d: %w", stream, seq, err)
	}
	if resp.Error != nil {
		// 10057: already deleted (or never there), its block gone;
		// 10043 ("sequence N not found"): already deleted, its block
		// still holding others (a delete tried again after a restart
		// or an election whose first try was applied).
		if resp.Error.ErrorCode == 10057 || resp.Error.ErrorCode == 10043 || resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil
		}
		return fmt.Errorf("stream %q: delete seq %d: %w", stream, seq, resp.Error)
	}
	return nil
}

// deleted reports whether a STREAM.MSG.DELETE reply is the plain success
// the server sends, {"type":"...","success":true}, which needs no decoding.
func deleted(reply []byte) bool {
	return bytes.HasSuffix(reply, []byte(`,"success":true}`)) && !bytes.Contains(reply, []byte(`"error"`))
}

// APIPrefix is the subject prefix of the JetStream API for js: its domain's,
// its API prefix, or $JS.API.
func APIPrefix(o jetstream.JetStreamOptions) string {
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		if strings.HasSuffix(o.APIPrefix, ".") {
			return o.APIPrefix
		}
		return o.APIPrefix + "."
	}
	return jetstream.DefaultAPIPrefix
}
