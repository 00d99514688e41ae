package consumer

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/errkind"
)

// ErrNoSuchGroup is a priority group the consumer does not have (exit 3).
var ErrNoSuchGroup = errkind.New(errkind.NotFound, "no such priority group")

// groupName is what the server accepts as a priority group's name.
var groupName = regexp.MustCompile(`^[a-zA-Z0-9/_=-]{1,16}$`)

// ValidateGroupName checks a priority group's name as the server does
// (error 10162 otherwise), before anything is contacted.
func ValidateGroupName(group string) error {
	if !groupName.MatchString(group) {
		return fmt.Errorf("%w priority group name %q: use 1 to 16 of A-Z, a-z, 0-9, -, _, / and =", ErrInvalid, group)
	}
	return nil
}

// UnpinConfig names the priority group whose pinned client to unpin.
type UnpinConfig struct {
	Stream, Consumer, Group string
	// DryRun reads what would be unpinned and changes nothing.
	DryRun bool
	// Confirm, when set, is asked before the pin is cleared, with what
	// would be (not for a dry run, nor when nothing is pinned); its
	// error is returned as it is, nothing changed.
	Confirm func(*UnpinResult) error
}

// UnpinResult is what Unpin found and did: the JSON form of `jetctl
// consumer unpin -o json`.
type UnpinResult struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	Group    string `json:"group"`
	// PriorityPolicy is the consumer's: only pinned_client pins a client.
	PriorityPolicy string `json:"priority_policy"`
	// WasPinned: a client was pinned before. The server keeps one pin per
	// consumer, reported under its first group, and clears it whichever
	// of the consumer's groups is named (TestFactOnePinPerConsumer);
	// PinnedGroup is the group it was reported under.
	WasPinned      bool       `json:"was_pinned"`
	PinnedGroup    string     `json:"pinned_group"`
	PinnedClientID string     `json:"pinned_client_id"`
	PinnedSince    *time.Time `json:"pinned_since"`
	PinnedSeconds  *float64   `json:"pinned_seconds"`
	// Unpinned: the server cleared the pin. The next pull of any client
	// in the group is pinned; the old client's next pull is refused
	// (423) and it pins again from its following one.
	Unpinned bool `json:"unpinned"`
	// DryRun: nothing was changed; the fields say what would be.
	DryRun bool `json:"dry_run"`
}

// Unpin clears the pin of a consumer's priority group with the server's
// unpin API ($JS.API.CONSUMER.UNPIN, nats-server 2.11+), so that the
// group is pinned again to the next client that pulls: the way out of a
// pin held for a client that is gone (the pinned-client-gone finding),
// which the server otherwise keeps until priority_timeout passes. It
// reads the pin first (the result says whose it was and since when) and
// sends nothing when no client is pinned.
//
// A stream or consumer that does not exist is jetstream.ErrStreamNotFound
// or ErrConsumerNotFound (wrapped), a group the consumer does not have
// ErrNoSuchGroup, a group name the server would refuse ErrInvalid.
func Unpin(ctx context.Context, js jetstream.JetStream, cfg UnpinConfig) (*UnpinResult, error) {
	if err := ValidateGroupName(cfg.Group); err != nil {
		return nil, err
	}
	st, err := js.Stream(ctx, cfg.Stream)
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", cfg.Stream, err)
	}
	ci, err := readConsumer(ctx, st, cfg.Consumer)
	if err != nil {
		return nil, fmt.Errorf("stream %q: consumer %q: %w", cfg.Stream, cfg.Consumer, err)
	}
	res, err := pinOf(ci, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.DryRun || !res.WasPinned {
		return res, nil
	}
	if cfg.Confirm != nil {
		if err := cfg.Confirm(res); err != nil {
			return nil, err
		}
	}
	if err := st.UnpinConsumer(ctx, cfg.Consumer, cfg.Group); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == errNoSuchGroup {
			// Changed since it was read.
			return nil, fmt.Errorf("stream %q: consumer %q: group %q: %w", cfg.Stream, cfg.Consumer, cfg.Group, ErrNoSuchGroup)
		}
		return nil, fmt.Errorf("stream %q: consumer %q: unpin group %q: %w", cfg.Stream, cfg.Consumer, cfg.Group, err)
	}
	res.Unpinned = true
	return res, nil
}

// errNoSuchGroup is the server's "Provided priority group does not exist
// for this consumer" (TestFactUnpin).
const errNoSuchGroup jetstream.ErrorCode = 10160

// pinOf reads, from the consumer's info, the pin the unpin would clear:
// the state consumer ls shows (State.PriorityGroups).
func pinOf(ci *jetstream.ConsumerInfo, cfg UnpinConfig) (*UnpinResult, error) {
	s := FromInfo(ci)
	res := &UnpinResult{Stream: cfg.Stream, Consumer: cfg.Consumer, Group: cfg.Group, PriorityPolicy: s.PriorityPolicy, DryRun: cfg.DryRun}
	if !slices.ContainsFunc(s.PriorityGroups, func(g PriorityGroup) bool { return g.Group == cfg.Group }) {
		has := "it has no priority groups"
		if len(s.PriorityGroups) > 0 {
			names := make([]string, len(s.PriorityGroups))
			for i, g := range s.PriorityGroups {
				names[i] = g.Group
			}
			has = "its groups: " + strings.Join(names, ", ")
		}
		return nil, fmt.Errorf("stream %q: consumer %q: group %q: %w (%s)", cfg.Stream, cfg.Consumer, cfg.Group, ErrNoSuchGroup, has)
	}
	if g, ok := s.PinnedGroup(); ok {
		res.WasPinned, res.PinnedGroup, res.PinnedClientID = true, g.Group, g.PinnedClientID
		res.PinnedSince, res.PinnedSeconds = g.PinnedSince, g.PinnedSeconds
	}
	return res, nil
}
