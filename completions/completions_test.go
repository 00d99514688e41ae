package completions_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/jetctl/jetctl/cmd"
	"github.com/jetctl/jetctl/cmd/completion"
)

// TestFresh fails when the checked-in scripts are stale.
func TestFresh(t *testing.T) {
	for _, shell := range completion.Shells {
		var want bytes.Buffer
		if err := cmd.GenerateCompletion(shell, &want); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(completion.FileName(shell))
		if err != nil {
			t.Fatalf("%v (run: go generate ./completions)", err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("completions/%s is stale: run go generate ./completions", completion.FileName(shell))
		}
	}
}
