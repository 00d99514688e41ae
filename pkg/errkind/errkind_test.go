package errkind

import (
	"context"
	"errors"
	"fmt"
	"go/build"
	"strings"
	"testing"
)

func TestNewKeepsTextAndKind(t *testing.T) {
	errGone := New(NotFound, "dlq is not set up")
	if got := errGone.Error(); got != "dlq is not set up" {
		t.Errorf("Error() = %q, want the text given", got)
	}
	wrapped := fmt.Errorf("stream %q: %w", "X", errGone)
	if got := wrapped.Error(); got != `stream "X": dlq is not set up` {
		t.Errorf("wrapped Error() = %q", got)
	}
	if !errors.Is(wrapped, errGone) {
		t.Error("a wrapped sentinel is not itself")
	}
	if !errors.Is(wrapped, NotFound) {
		t.Error("a wrapped sentinel is not its kind")
	}
	for _, k := range All() {
		if k != NotFound && errors.Is(wrapped, k) {
			t.Errorf("a NotFound sentinel is also %v", k)
		}
	}
}

func TestSentinelsAreDistinct(t *testing.T) {
	a, b := New(Invalid, "invalid"), New(Invalid, "invalid")
	if errors.Is(a, b) || errors.Is(b, a) {
		t.Error("two sentinels with the same kind and text are the same error")
	}
	if !errors.Is(a, Invalid) || !errors.Is(b, Invalid) {
		t.Error("a sentinel is not its kind")
	}
}

func TestKindFoundBesideOtherErrors(t *testing.T) {
	errLost := New(Busy, "lost its lease")
	err := fmt.Errorf("%w: %w", errLost, context.Canceled)
	if !errors.Is(err, Busy) || !errors.Is(err, context.Canceled) {
		t.Errorf("errors.Is misses the kind or the cancellation in %v", err)
	}
	if errors.Is(context.Canceled, Busy) || errors.Is(errors.New("busy"), Busy) {
		t.Error("an error without a kind matches one")
	}
}

func TestKindsAreDistinctAndNamed(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range All() {
		if k.Error() == "" || seen[k.Error()] {
			t.Errorf("kind %q: empty or named twice", k.Error())
		}
		seen[k.Error()] = true
	}
}

// TestLeaf: every domain package imports errkind, so it imports nothing of
// jetctl's (an import cycle would follow).
func TestLeaf(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.HasPrefix(imp, "github.com/jetctl/jetctl/") {
			t.Errorf("errkind imports %s", imp)
		}
	}
}
