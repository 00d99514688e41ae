package factory

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a stderr that the bar's goroutines may share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A bar of unknown length whose first update comes from another goroutine
// (a NATS callback) after its spinner has started ticking: under -race this
// was a data race inside progressbar (its spinner reads the start time
// without the lock that the first render writes it under), and `kv diff
// --since` in a terminal exited 66.
func TestProgressUnknownLengthUpdatedFromAnotherGoroutine(t *testing.T) {
	var stderr lockedBuffer
	f := New(&IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &stderr, StderrTTY: true})
	bar := f.NewProgress(-1, "reading revisions", false)
	if bar == nil {
		t.Fatal("no bar on a terminal")
	}
	time.Sleep(250 * time.Millisecond) // the spinner ticks every 100ms
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := int64(1); i <= 3; i++ {
			bar.Set(i)
		}
	}()
	wg.Wait()
	time.Sleep(250 * time.Millisecond)
	bar.Finish()
	if !strings.Contains(stderr.String(), "reading revisions") {
		t.Errorf("stderr %q has no bar", stderr.String())
	}
}
