package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"
)

// streamInfo asks for a stream's info until it is answered, for at most
// 30 s. In a cluster a stream whose group is electing a leader (after a
// step-down or a node restart) does not answer at all, so one request with
// the whole budget would wait it out and fail; short requests, retried,
// get the answer as soon as there is a leader. Not found is final.
func streamInfo(ts *testscript.TestScript, js jetstream.JetStream, name string) (*jetstream.StreamInfo, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s, err := js.Stream(c, name)
		cancel()
		if err == nil {
			info := s.CachedInfo()
			if info.Cluster == nil || info.Cluster.Leader != "" {
				return info, nil
			}
			err = fmt.Errorf("stream %s has no leader", name)
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) || time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stream-current STREAM waits, for at most 30 s, until the stream has a
// leader and every replica is current: a new R3 stream's followers catch
// up a moment after the create returns.
func cmdStreamCurrent(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: stream-current STREAM")
	}
	_, js := jsFor(ts)
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := streamInfo(ts, js, args[0])
		ts.Check(err)
		current := info.Cluster != nil && info.Cluster.Leader != ""
		if info.Cluster != nil {
			for _, r := range info.Cluster.Replicas {
				current = current && r.Current
			}
		}
		if current {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("stream %s: replicas not current after 30s: %+v", args[0], info.Cluster)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stepdown [--gone-ok] STREAM asks the stream's leader to step down: it
// waits, for at most 30 s, until the stream exists and has a leader (a
// stream another process is creating), and asks again while the group
// does not answer. With --gone-ok a stream that does not exist (another
// process deleted it) is no step-down and no failure.
func cmdStepdown(ts *testscript.TestScript, neg bool, args []string) {
	goneOK := len(args) == 2 && args[0] == "--gone-ok"
	if goneOK {
		args = args[1:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: stepdown [--gone-ok] STREAM")
	}
	nc, js := jsFor(ts)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := streamInfo(ts, js, args[0])
		if goneOK && errors.Is(err, jetstream.ErrStreamNotFound) {
			fmt.Fprintf(ts.Stdout(), "stepdown: %s is gone\n", args[0])
			return
		}
		if err == nil {
			msg, rerr := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+args[0], nil, 2*time.Second)
			if rerr == nil && strings.Contains(string(msg.Data), `"success":true`) {
				return
			}
			err = rerr
			if err == nil {
				err = errors.New(string(msg.Data))
			}
		}
		if time.Now().After(deadline) {
			ts.Fatalf("stepdown %s: %v", args[0], err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lead-apart STREAM OTHER makes STREAM's leader another node than OTHER's
// leader, stepping STREAM's leader down until it is (for at most 30 s),
// so that a script can kill OTHER's leader without an election of STREAM
// at the same time.
func cmdLeadApart(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: lead-apart STREAM OTHER")
	}
	nc, js := jsFor(ts)
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, err := streamInfo(ts, js, args[0])
		ts.Check(err)
		b, err := streamInfo(ts, js, args[1])
		ts.Check(err)
		if a.Cluster.Leader != b.Cluster.Leader {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("lead-apart: %s and %s are both led by %s after 30s", args[0], args[1], a.Cluster.Leader)
		}
		_, _ = nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+args[0], nil, 2*time.Second)
		time.Sleep(100 * time.Millisecond)
	}
}
