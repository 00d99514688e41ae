package cmd

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/factory"
)

func TestSplitGlobalFlags(t *testing.T) {
	f := factory.New(&factory.IOStreams{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}})
	f.Getenv = func(string) string { return "" }
	fs := NewRoot(f).PersistentFlags()
	tests := []struct {
		args, globals, rest []string
	}{
		{[]string{"foo", "-s", "x"}, []string{}, []string{"foo", "-s", "x"}},
		{[]string{"-s", "nats://h:1", "foo", "bar"}, []string{"-s", "nats://h:1"}, []string{"foo", "bar"}},
		{[]string{"--server=nats://h:1", "--tlsfirst", "--timeout", "2s", "foo"}, []string{"--server=nats://h:1", "--tlsfirst", "--timeout", "2s"}, []string{"foo"}},
		{[]string{"--unknown", "foo"}, []string{}, []string{"--unknown", "foo"}},
	}
	for _, tt := range tests {
		globals, rest := splitGlobalFlags(fs, tt.args)
		if !reflect.DeepEqual(globals, tt.globals) || !reflect.DeepEqual(rest, tt.rest) {
			t.Errorf("splitGlobalFlags(%v) = %v, %v; want %v, %v", tt.args, globals, rest, tt.globals, tt.rest)
		}
	}
}

// Every command that changes the server (each has --dry-run) takes --yes,
// so that a runbook or CI job can pass it to every changing command
// alike: those that ask off a terminal need it, the others accept it.
func TestEveryChangingCommandTakesYes(t *testing.T) {
	f := factory.New(&factory.IOStreams{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}})
	f.Getenv = func(string) string { return "" }
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("dry-run") != nil {
			if yes := c.Flags().Lookup("yes"); yes == nil || yes.Value.Type() != "bool" {
				t.Errorf("%s has --dry-run and no --yes", c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRoot(f))
}
