package factory

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

func newFactory(url string) *Factory {
	f := New(&IOStreams{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}})
	f.Conn.Server, f.Conn.NoContext = url, true
	return f
}

// TestCompletionHooks completes names from a real server, and offers
// nothing, silently, when there is no server.
func TestCompletionHooks(t *testing.T) {
	srv := embeddedtest.Start(t)
	f := newFactory(srv.URL())
	ctx := context.Background()
	js, err := f.JetStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ORDERS", "OUTBOX", "AUDIT"} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "config"}); err != nil {
		t.Fatal(err)
	}
	s, _ := js.Stream(ctx, "ORDERS")
	if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "projector"}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	cmd := &cobra.Command{}
	check := func(name string, fn cobra.CompletionFunc, toComplete string, want []string) {
		t.Helper()
		got, directive := fn(cmd, []string{"ORDERS"}, toComplete)
		if directive != cobra.ShellCompDirectiveNoFileComp {
			t.Errorf("%s: directive %v", name, directive)
		}
		var names []string
		for _, c := range got {
			names = append(names, string(c))
		}
		if !reflect.DeepEqual(names, want) {
			t.Errorf("%s(%q) = %v, want %v", name, toComplete, names, want)
		}
	}
	check("streams", newFactory(srv.URL()).CompleteStreams(), "O", []string{"ORDERS", "OUTBOX"})
	check("buckets", newFactory(srv.URL()).CompleteBuckets(), "", []string{"config"})
	byArg := func(_ *cobra.Command, args []string) string { return args[0] }
	check("consumers", newFactory(srv.URL()).CompleteConsumersOf(byArg), "", []string{"projector"})

	down := srv.URL()
	srv.Shutdown()
	check("streams, server down", newFactory(down).CompleteStreams(), "", nil)
}
