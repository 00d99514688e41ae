package check

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetctl/jetctl/pkg/check"
)

// Scrapes that come while an evaluation runs share it: one evaluation,
// one result for all of them.
func TestEvaluatorSharesOneEvaluation(t *testing.T) {
	var runs atomic.Int32
	var ev *evaluator
	ev = &evaluator{run: func() (*check.Report, error) {
		runs.Add(1)
		// Answer once the four other scrapes wait for this evaluation.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			ev.mu.Lock()
			n := ev.waiting
			ev.mu.Unlock()
			if n == 4 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		return &check.Report{Status: check.Warning}, nil
	}}
	var wg sync.WaitGroup
	results := make([]evaluation, 5)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = ev.now()
		}()
	}
	wg.Wait()
	if n := runs.Load(); n != 1 {
		t.Fatalf("%d evaluations for 5 concurrent scrapes, want 1", n)
	}
	for i, r := range results {
		if r.report == nil || r.report.Status != check.Warning || r.runs != 1 {
			t.Errorf("scrape %d got %+v", i, r)
		}
	}
}

// A failed evaluation leaves no report (no stale figures), counts as an
// error, and the next one that succeeds is served again.
func TestEvaluatorFailureDropsTheReport(t *testing.T) {
	fail := true
	ev := &evaluator{run: func() (*check.Report, error) {
		if fail {
			return nil, errors.New("cannot connect")
		}
		return &check.Report{}, nil
	}}
	if e := ev.now(); e.report != nil || e.err == nil || e.runs != 1 || e.fails != 1 {
		t.Fatalf("failed evaluation: %+v", e)
	}
	fail = false
	if e := ev.now(); e.report == nil || e.err != nil || e.runs != 2 || e.fails != 1 {
		t.Fatalf("next evaluation: %+v", e)
	}
	if e := ev.cached(); e.runs != 2 {
		t.Fatalf("cached evaluated again: %+v", e)
	}
}

// With an interval, the loop evaluates at once and then every interval
// until its context ends.
func TestEvaluatorEvery(t *testing.T) {
	var runs atomic.Int32
	ev := &evaluator{run: func() (*check.Report, error) { runs.Add(1); return &check.Report{}, nil }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ev.every(ctx, 10*time.Millisecond) }()
	deadline := time.Now().Add(10 * time.Second)
	for runs.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if runs.Load() < 3 {
		t.Fatalf("%d evaluations within 10s at a 10ms interval", runs.Load())
	}
}
