package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/natsconn"
)

// DefaultTimeout bounds the publish of one record: a recorder answers
// within milliseconds, and a command must not wait long on its audit.
const DefaultTimeout = 2 * time.Second

// Publish writes records in order with a JetStream publish each (its
// Nats-Msg-Id the record's id) and returns how many a stream stored.
//
// A record no stream captures (no responders: there is no recorder) is
// skipped silently, at the cost of that one publish: no retry, no other
// request. Any other failure (the server refusing this user the subject,
// no acknowledgement within timeout, a stream's error) stops at that
// record and is returned, for the caller to warn once; the records after
// it are not tried. A permission violation on the record's subject is
// taken here (natsconn.Tolerate): it does not abort the command.
//
// Records are written even when ctx is cancelled (an interrupted command
// records what it did); each publish waits at most timeout.
func Publish(ctx context.Context, js jetstream.JetStream, records []Record, timeout time.Duration) (int, error) {
	if len(records) == 0 {
		return 0, nil
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, refused := context.WithCancelCause(context.WithoutCancel(ctx))
	defer refused(nil)
	prefix := SubjectPrefix + "."
	stop := natsconn.Tolerate(js.Conn(), func(subject string) bool { return strings.HasPrefix(subject, prefix) },
		func(perr *natsconn.PermissionError) { refused(perr) })
	defer stop()
	written := 0
	for i := range records {
		r := &records[i]
		data, err := json.Marshal(r)
		if err != nil {
			return written, fmt.Errorf("audit record %s: %w", r.Subject(), err)
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		_, err = js.PublishMsg(pctx, &nats.Msg{Subject: r.Subject(), Data: data},
			jetstream.WithMsgID(r.ID), jetstream.WithRetryAttempts(0))
		cancel()
		switch {
		case err == nil:
			written++
		case errors.Is(err, jetstream.ErrNoStreamResponse):
			// No recorder captures this subject.
		default:
			var perr *natsconn.PermissionError
			if cause := context.Cause(ctx); errors.As(cause, &perr) {
				return written, perr // it names the subject
			}
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("no acknowledgement within %s", timeout)
			}
			return written, fmt.Errorf("audit record %s: %w", r.Subject(), err)
		}
	}
	return written, nil
}
