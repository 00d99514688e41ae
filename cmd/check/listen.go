package check

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/pkg/check"
	pkgconsumer "github.com/jetctl/jetctl/pkg/consumer"
	"github.com/jetctl/jetctl/pkg/retry"
)

// listen serves /metrics and /healthz on o.listen until ctx ends
// (SIGINT, SIGTERM), then stops cleanly and exits 0. Without --interval
// each scrape evaluates (concurrent scrapes share one evaluation); with
// it, a background loop evaluates every interval and scrapes read the
// latest result.
func listen(ctx context.Context, f *factory.Factory, o *options, cfg check.Config) error {
	// Successive evaluations reuse what has not changed (a stuck
	// consumer's oldest message is not read again).
	cfg.LagCache = &pkgconsumer.LagCache{}
	ev := &evaluator{run: func() (*check.Report, error) {
		f.DropClosedConnection()
		return evaluate(ctx, f, cfg)
	}}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return exitcode.New(int(check.Unknown), fmt.Errorf("--listen %s: %w", o.listen, err))
	}
	latest := ev.now
	loopDone := make(chan struct{})
	if o.interval > 0 {
		latest = ev.cached
		go func() {
			defer close(loopDone)
			ev.every(ctx, o.interval)
		}()
	} else {
		close(loopDone)
	}
	c := &collector{evaluation: latest}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry(c), promhttp.HandlerOpts{EnableOpenMetrics: true}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		e := latest()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if e.err != nil || e.report == nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			reason := "no evaluation yet"
			if e.err != nil {
				reason = exitcode.Message(e.err)
			}
			fmt.Fprintf(w, "unavailable: %s\n", reason)
			return
		}
		fmt.Fprintf(w, "ok: the last check (%s) reached the server: %s\n", e.report.Time.Format(time.RFC3339), e.report.Status.Nagios())
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(f.IO.ErrOut, "jetctl: serving http://%s/metrics and /healthz\n", ln.Addr())
	select {
	case err := <-served:
		return exitcode.New(int(check.Unknown), err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdown)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	// The connection closes when the command returns: no evaluation may
	// still be using it.
	<-loopDone
	fmt.Fprintln(f.IO.ErrOut, "jetctl: stopped serving")
	return err
}

// evaluator runs the check for the exporter: one evaluation at a time,
// shared by every caller that asks while it runs.
type evaluator struct {
	run func() (*check.Report, error)

	mu       sync.Mutex
	last     evaluation
	done     bool
	inflight chan struct{}
	// waiting counts the callers waiting for the evaluation in flight.
	waiting int
	runs    int
	fails   int
}

// now evaluates, or waits for the evaluation already running, and
// returns its outcome.
func (e *evaluator) now() evaluation {
	e.mu.Lock()
	if ch := e.inflight; ch != nil {
		e.waiting++
		e.mu.Unlock()
		<-ch
		e.mu.Lock()
		defer e.mu.Unlock()
		e.waiting--
		return e.last
	}
	ch := make(chan struct{})
	e.inflight = ch
	e.mu.Unlock()

	report, err := e.run()

	e.mu.Lock()
	defer e.mu.Unlock()
	e.runs++
	if err != nil {
		e.fails++
		report = nil
	}
	e.last = evaluation{report: report, err: err, runs: e.runs, fails: e.fails}
	e.done = true
	e.inflight = nil
	close(ch)
	return e.last
}

// cached is the latest outcome; before the first one, it waits for it.
func (e *evaluator) cached() evaluation {
	e.mu.Lock()
	if e.done {
		defer e.mu.Unlock()
		return e.last
	}
	e.mu.Unlock()
	return e.now()
}

// every evaluates now and then every interval until ctx ends.
func (e *evaluator) every(ctx context.Context, interval time.Duration) {
	for {
		e.now()
		if retry.Sleep(ctx, interval) != nil {
			return
		}
	}
}
