// Command gen writes jetctl's completion scripts into the current directory
// (completions/, when run by go generate).
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/jetctl/jetctl/cmd"
	"github.com/jetctl/jetctl/cmd/completion"
)

func main() {
	for _, shell := range completion.Shells {
		var buf bytes.Buffer
		if err := cmd.GenerateCompletion(shell, &buf); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := os.WriteFile(completion.FileName(shell), buf.Bytes(), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
