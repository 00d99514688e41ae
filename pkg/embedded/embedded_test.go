package embedded

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

func busyPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// A port in use is one error naming it, and the temporary store is gone.
func TestStartOnPortInUse(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	port := busyPort(t)
	_, err := Start(Config{Port: port, Log: true, ReadyTimeout: time.Minute})
	var inUse *PortInUseError
	if !errors.As(err, &inUse) || inUse.Port != port {
		t.Fatalf("Start on a busy port: %v, want a PortInUseError for %d", err, port)
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("error %q does not say the address is in use", err)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("temporary store left behind: %v", entries)
	}
}

// When the port is taken after the check (a race), the server's fatal log
// becomes an error at once instead of ending the process (with logs) or a
// wait for ReadyTimeout (without).
func TestStartNodeFatalIsAnError(t *testing.T) {
	for _, log := range []bool{false, true} {
		tmp := t.TempDir()
		c := &Cluster{cfg: Config{Host: "127.0.0.1", StoreDir: tmp, Log: log, ReadyTimeout: 10 * time.Minute}}
		n := &node{opts: testOptions(tmp, busyPort(t))}
		err := c.startNode(n)
		if err == nil || !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("log=%v: startNode on a busy port: %v", log, err)
		}
	}
}

func testOptions(store string, port int) *server.Options {
	return &server.Options{ServerName: "jetctl-test", Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: store, NoSigs: true}
}

// A route port taken between being picked and being listened on (another
// process got it) starts the cluster again on other ports.
func TestClusterStartsAgainWhenARoutePortIsTaken(t *testing.T) {
	taken := busyPort(t)
	calls := 0
	pickPorts = func(host string, n int) ([]int, error) {
		calls++
		ports, err := freePorts(host, n)
		if calls == 1 && err == nil {
			ports[n-1] = taken
		}
		return ports, err
	}
	t.Cleanup(func() { pickPorts = freePorts })
	c, err := Start(Config{Nodes: 3, StoreDir: t.TempDir(), ReadyTimeout: time.Minute})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer c.Shutdown()
	if calls != 2 {
		t.Errorf("route ports picked %d times, want 2", calls)
	}
	if len(c.Servers()) != 3 {
		t.Errorf("%d servers running, want 3", len(c.Servers()))
	}
}

// A node restarted while another socket still holds its port starts once
// the port is free again.
func TestRestartWaitsForItsPort(t *testing.T) {
	c, err := Start(Config{StoreDir: t.TempDir(), ReadyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	port := c.nodes[0].opts.Port
	if err := c.Stop(0); err != nil {
		t.Fatal(err)
	}
	holder, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(time.Second)
		holder.Close()
	}()
	if err := c.Restart(0); err != nil {
		t.Fatalf("Restart while the port was held for a second: %v", err)
	}
	if got := c.nodes[0].opts.Port; got != port {
		t.Errorf("restarted on port %d, want %d", got, port)
	}
}

// A hub in domain "hub" and a leaf node server in domain "leaf" connected
// to it: each answers its own JetStream API, and a client of either
// reaches the other's through $JS.<domain>.API.
func TestLeafNodeDomains(t *testing.T) {
	hub, err := Start(Config{StoreDir: t.TempDir(), Domain: "hub", LeafListen: true, ReadyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Shutdown()
	if !strings.HasPrefix(hub.LeafURL(), "nats-leaf://127.0.0.1:") || strings.HasSuffix(hub.LeafURL(), ":-1") {
		t.Fatalf("LeafURL %q", hub.LeafURL())
	}
	leaf, err := Start(Config{StoreDir: t.TempDir(), Domain: "leaf", LeafRemotes: []string{hub.LeafURL()}, ReadyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer leaf.Shutdown()
	if leaf.LeafURL() != "" {
		t.Errorf("leaf without LeafListen has LeafURL %q", leaf.LeafURL())
	}
	if n := leaf.Servers()[0].NumLeafNodes(); n != 1 {
		t.Fatalf("leaf has %d leaf connections after Start, want 1", n)
	}
	for _, tc := range []struct {
		from   *Cluster
		domain string
	}{{hub, "hub"}, {hub, "leaf"}, {leaf, "leaf"}, {leaf, "hub"}} {
		nc, err := nats.Connect(tc.from.URL())
		if err != nil {
			t.Fatal(err)
		}
		var info struct {
			Domain string `json:"domain"`
		}
		// Interest crosses the leaf connection a moment after it is up.
		deadline := time.Now().Add(10 * time.Second)
		for {
			msg, err := nc.Request("$JS."+tc.domain+".API.INFO", nil, time.Second)
			if err == nil {
				if err := json.Unmarshal(msg.Data, &info); err != nil {
					t.Fatal(err)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("$JS.%s.API.INFO: %v", tc.domain, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		nc.Close()
		if info.Domain != tc.domain {
			t.Errorf("$JS.%s.API.INFO answered by domain %q", tc.domain, info.Domain)
		}
	}
	if err := WaitDomains(hub, leaf, 10*time.Second); err != nil {
		t.Errorf("WaitDomains: %v", err)
	}
	// A restarted hub listens on its old leaf port: the leaf reconnects.
	port := hub.LeafURL()
	if err := hub.Stop(0); err != nil {
		t.Fatal(err)
	}
	if err := hub.Restart(0); err != nil {
		t.Fatal(err)
	}
	if hub.LeafURL() != port {
		t.Errorf("restarted hub's LeafURL %q, want %q", hub.LeafURL(), port)
	}
	deadline := time.Now().Add(30 * time.Second)
	for hub.Servers()[0].NumLeafNodes() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("leaf did not reconnect to the restarted hub")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
