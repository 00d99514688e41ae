package retry

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Transient is jetctl's one rule for "the server did not answer this time;
// the same request may be answered in a moment": a leader election, a
// server restarting or shutting down, a connection coming back. Every
// retry in jetctl asks it (as Policy.Retryable, or in a loop of its own).
// An answer, even a refusal, is not transient: trying again gets the same
// answer.
//
// Transient are, wrapped or not:
//
//   - No reply in time: nats.ErrTimeout, context.DeadlineExceeded. A
//     stream or consumer group without a leader does not answer at all
//     (its followers leave requests to the leader), so an election mostly
//     looks like this. context.DeadlineExceeded is also what a caller's
//     own context gives when it ends, and Transient cannot tell the two
//     apart: a retry must stop once its ctx has ended (Do does), whatever
//     the error.
//   - No responders (nats.ErrNoResponders, the 503 status; for a publish,
//     jetstream.ErrNoStreamResponse): nothing listens on the API or on the
//     stream's subjects for the moment, as while a restarted server
//     recovers JetStream. A subject that no stream takes at all looks the
//     same, and is retried as long as the caller's bound allows.
//   - The connection is down and coming back: nats.ErrDisconnected (a
//     request in flight when the connection dropped),
//     nats.ErrConnectionReconnecting, nats.ErrReconnectBufExceeded. Not
//     nats.ErrConnectionClosed, nor jetstream.ErrConnectionClosed: a
//     closed connection does not come back.
//   - A pull or consumer that the server gave up for a moment:
//     jetstream.ErrServerShutdown (409 Server Shutdown),
//     jetstream.ErrConsumerLeadershipChanged (409 Leadership Change),
//     jetstream.ErrNoHeartbeat (the server fell silent).
//   - These JetStream API errors (jetstream.APIError, by error code):
//     10008 "JetStream system temporarily unavailable" (the meta layer or
//     the asset's group has no leader: the server sends it during an
//     election), 10009 "JetStream cluster can not handle request" (a
//     server that is no longer, or not yet, the leader took it), 10118
//     "stream is offline" and 10119 "consumer is offline" (every server of
//     its group is down: it comes back with them), 10163 "expected last
//     sequence per subject temporarily unavailable", 10158 "duplicate
//     message id is in process" (a publish with the same Nats-Msg-Id, such
//     as the try before this one that timed out, is still being stored: a
//     later try gets its outcome, a duplicate, or stores the message).
//
// The server gives most of its API errors a 5xx code, including many
// that no retry changes: an invalid config (10052), a consumer it cannot
// create (10012), a message already deleted (10057), a wrong expected
// sequence (10063), JetStream not enabled (10076, 10039), insufficient
// resources (10023), an asset offline for a reason such as a feature the
// server lacks (10194, 10195). So the code is not the rule; the error
// code is. context.Canceled is not transient: someone stopped the work.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errClusterNotAvail, errClusterNotLeader, errStreamOffline, errConsumerOffline, errLastSeqPerSubjectNotReady,
			errDuplicateInProcess:
			return true
		}
		return false
	}
	for _, t := range transientErrors {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// The JetStream API error codes that Transient counts (nats-server's
// errors.json).
const (
	errClusterNotAvail           jetstream.ErrorCode = 10008 // JSClusterNotAvailErr
	errClusterNotLeader          jetstream.ErrorCode = 10009 // JSClusterNotLeaderErr
	errStreamOffline             jetstream.ErrorCode = 10118 // JSStreamOfflineErr
	errConsumerOffline           jetstream.ErrorCode = 10119 // JSConsumerOfflineErr
	errLastSeqPerSubjectNotReady jetstream.ErrorCode = 10163 // JSStreamExpectedLastSeqPerSubjectNotReady
	errDuplicateInProcess        jetstream.ErrorCode = 10158 // JSStreamDuplicateMessageConflict
)

var transientErrors = []error{
	nats.ErrTimeout, context.DeadlineExceeded,
	nats.ErrNoResponders, jetstream.ErrNoStreamResponse,
	nats.ErrDisconnected, nats.ErrConnectionReconnecting, nats.ErrReconnectBufExceeded,
	jetstream.ErrServerShutdown, jetstream.ErrConsumerLeadershipChanged, jetstream.ErrNoHeartbeat,
}
