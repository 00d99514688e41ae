// Package embedded runs JetStream-enabled nats-servers inside the current
// process: one node, or an N-node cluster on loopback. It backs
// `jetctl server`, `jetctl demo` and every test.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/logger"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/retry"
)

// Config describes the servers to start.
type Config struct {
	// StoreDir holds JetStream data. Empty means a fresh temporary directory
	// that Shutdown removes. An existing directory is opened with its data;
	// a cluster keeps node i in StoreDir/n<i>.
	StoreDir string
	// Host to listen on; empty means 127.0.0.1.
	Host string
	// Port for client connections of the first node; 0 picks a free port.
	// Other cluster nodes always get free ports.
	Port int
	// Nodes is the number of servers; 0 and 1 mean a single server.
	Nodes int
	// Log, when true, writes the servers' logs to stderr.
	Log bool
	// NoJetStream starts plain NATS servers, e.g. to test how a command
	// reports an account without JetStream.
	NoJetStream bool
	// ReadyTimeout bounds the wait for connections and a JetStream meta
	// leader; zero means 30s.
	ReadyTimeout time.Duration
	// ConfigFile is a nats-server configuration file (users, permissions,
	// accounts) each node starts from; the fields above override its
	// listen address, JetStream and store settings.
	ConfigFile string
	// Domain is the JetStream domain of every node; empty for none. A
	// server in a domain answers its API on $JS.<Domain>.API as well.
	Domain string
	// LeafListen makes every node accept leaf node connections on Host, on
	// a port the OS picks (kept across restarts); LeafURL is the first
	// node's.
	LeafListen bool
	// LeafRemotes are leaf node URLs (nats-leaf://host:port) of another
	// server, e.g. its LeafURL: every node connects to them as a leaf node,
	// in the global account. Start waits (ReadyTimeout) until every node's
	// leaf connection is up; Restart does not.
	LeafRemotes []string
}

// Cluster is a running set of servers. A single server is a cluster of one.
type Cluster struct {
	cfg     Config
	tempDir bool
	mu      sync.Mutex
	nodes   []*node
}

type node struct {
	opts *server.Options
	srv  *server.Server
}

// Start starts the servers described by cfg and waits until they accept
// connections and, for a cluster, until JetStream has a meta leader and every
// peer is current.
func Start(cfg Config) (*Cluster, error) {
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.Nodes < 1 {
		cfg.Nodes = 1
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}
	if err := checkPort(cfg.Host, cfg.Port); err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg}
	if c.cfg.StoreDir == "" {
		dir, err := os.MkdirTemp("", "jetctl-server-")
		if err != nil {
			return nil, fmt.Errorf("store directory: %w", err)
		}
		c.cfg.StoreDir, c.tempDir = dir, true
	}
	if err := os.MkdirAll(c.cfg.StoreDir, 0o755); err != nil {
		return nil, fmt.Errorf("store directory: %w", err)
	}

	for i := 0; i < cfg.Nodes; i++ {
		opts := &server.Options{}
		if cfg.ConfigFile != "" {
			fileOpts, err := server.ProcessConfigFile(cfg.ConfigFile)
			if err != nil {
				c.Shutdown()
				return nil, fmt.Errorf("server configuration: %w", err)
			}
			opts = fileOpts
		}
		opts.ServerName = fmt.Sprintf("jetctl-%d", i+1)
		opts.Host, opts.Port = cfg.Host, server.RANDOM_PORT
		opts.JetStream, opts.StoreDir = !cfg.NoJetStream, c.cfg.StoreDir
		opts.NoSigs, opts.NoLog = true, !cfg.Log
		opts.JetStreamDomain = cfg.Domain
		if cfg.LeafListen {
			opts.LeafNode.Host, opts.LeafNode.Port = cfg.Host, server.RANDOM_PORT
		}
		if len(cfg.LeafRemotes) > 0 {
			var urls []*url.URL
			for _, r := range cfg.LeafRemotes {
				u, err := url.Parse(r)
				if err != nil {
					c.Shutdown()
					return nil, fmt.Errorf("leaf remote %q: %w", r, err)
				}
				urls = append(urls, u)
			}
			opts.LeafNode.Remotes = []*server.RemoteLeafOpts{{URLs: urls}}
		}
		if i == 0 && cfg.Port != 0 {
			opts.Port = cfg.Port
		}
		if cfg.Nodes > 1 {
			opts.StoreDir = filepath.Join(c.cfg.StoreDir, fmt.Sprintf("n%d", i+1))
		}
		c.nodes = append(c.nodes, &node{opts: opts})
	}
	// The route ports are free when picked but released before the nodes
	// listen on them, and a busy machine (parallel tests, outgoing
	// connections taking ephemeral ports) can take one in between: then
	// the whole cluster starts again on other ports.
	err := retry.Do(context.Background(), retry.Policy{Attempts: 5, Retryable: isRoutePortTaken},
		func(context.Context) error {
			err := c.startNodes()
			if err != nil {
				c.stopNodes()
			}
			return err
		})
	if err != nil {
		c.Shutdown()
		return nil, err
	}
	if err := c.WaitReady(cfg.ReadyTimeout); err != nil {
		c.Shutdown()
		return nil, err
	}
	if len(cfg.LeafRemotes) > 0 {
		if err := c.waitLeafConnected(cfg.ReadyTimeout); err != nil {
			c.Shutdown()
			return nil, err
		}
	}
	return c, nil
}

// WaitDomains waits until a client of each of a and b gets an answer from
// the JetStream API of the other's domain (Config.Domain of both set and
// connected by a leaf node), i.e. until interest has crossed the leaf
// connection both ways.
func WaitDomains(a, b *Cluster, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, p := range []struct{ from, to *Cluster }{{a, b}, {b, a}} {
		nc, err := nats.Connect(p.from.URL())
		if err != nil {
			return err
		}
		subj := "$JS." + p.to.cfg.Domain + ".API.INFO"
		for {
			_, err := nc.Request(subj, nil, time.Second)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				nc.Close()
				return fmt.Errorf("embedded server: no answer on %s: %w", subj, err)
			}
			time.Sleep(25 * time.Millisecond)
		}
		nc.Close()
	}
	return nil
}

// waitLeafConnected waits until every running node has a leaf node
// connection.
func (c *Cluster) waitLeafConnected(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		connected := true
		for _, srv := range c.Servers() {
			if srv.NumLeafNodes() == 0 {
				connected = false
			}
		}
		if connected {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("embedded server: no leaf node connection to %s after %s", strings.Join(c.cfg.LeafRemotes, ", "), timeout)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// startNodes starts every node, a cluster's on newly picked route ports.
func (c *Cluster) startNodes() error {
	if len(c.nodes) > 1 {
		routePorts, err := pickPorts(c.cfg.Host, len(c.nodes))
		if err != nil {
			return err
		}
		for i, n := range c.nodes {
			n.opts.Cluster = server.ClusterOpts{Name: "jetctl", Host: c.cfg.Host, Port: routePorts[i]}
			n.opts.Routes = nil
			for j, p := range routePorts {
				if j != i {
					n.opts.Routes = append(n.opts.Routes, server.RoutesFromStr(fmt.Sprintf("nats://%s:%d", c.cfg.Host, p))...)
				}
			}
		}
	}
	for _, n := range c.nodes {
		if err := c.startNode(n); err != nil {
			return err
		}
	}
	return nil
}

// stopNodes stops the running nodes, keeping their data.
func (c *Cluster) stopNodes() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n.srv != nil {
			n.srv.Shutdown()
			n.srv.WaitForShutdown()
			n.srv = nil
		}
	}
}

// errRoutePort: a node could not listen on its route port.
var errRoutePort = errors.New("route port taken")

func isRoutePortTaken(err error) bool { return errors.Is(err, errRoutePort) }

func isAddressInUse(err error) bool { return strings.Contains(err.Error(), "address already in use") }

func (c *Cluster) startNode(n *node) error {
	srv, err := server.NewServer(n.opts)
	if err != nil {
		return fmt.Errorf("server %s: %w", n.opts.ServerName, err)
	}
	var log server.Logger
	if c.cfg.Log {
		log = logger.NewStdLogger(true, false, false, false, false)
	}
	trap := newFatalTrap(log)
	srv.SetLogger(trap, false, false)
	srv.Start()
	deadline := time.Now().Add(c.cfg.ReadyTimeout)
	for !srv.ReadyForConnections(50 * time.Millisecond) {
		select {
		case err := <-trap.fatal:
			srv.Shutdown()
			srv.WaitForShutdown()
			if strings.HasPrefix(err.Error(), "Error listening on router port") {
				err = fmt.Errorf("%w: %v", errRoutePort, err)
			}
			return fmt.Errorf("server %s: %w", n.opts.ServerName, err)
		default:
		}
		if time.Now().After(deadline) {
			srv.Shutdown()
			return fmt.Errorf("server %s: not ready for connections after %s", n.opts.ServerName, c.cfg.ReadyTimeout)
		}
	}
	// Restarts reuse the ports the node first got.
	if addr, ok := srv.Addr().(*net.TCPAddr); ok {
		n.opts.Port = addr.Port
	}
	if n.opts.LeafNode.Port != 0 {
		if v, err := srv.Varz(nil); err == nil && v.LeafNode.Port > 0 {
			n.opts.LeafNode.Port = v.LeafNode.Port
		}
	}
	n.srv = srv
	return nil
}

// WaitReady waits until every running node accepts connections and, in a
// cluster, there is one JetStream meta leader and every node is current.
func (c *Cluster) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if c.ready() {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("embedded cluster: no JetStream meta leader with all peers current")
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (c *Cluster) ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg.NoJetStream {
		return true
	}
	if len(c.nodes) == 1 {
		return c.nodes[0].srv != nil && c.nodes[0].srv.JetStreamEnabled()
	}
	var leader *server.Server
	running := 0
	for _, n := range c.nodes {
		if n.srv == nil {
			continue
		}
		running++
		if !n.srv.JetStreamIsCurrent() {
			return false
		}
		if n.srv.JetStreamIsLeader() {
			if leader != nil {
				return false
			}
			leader = n.srv
		}
	}
	// The meta leader places new streams only on peers it has heard from:
	// until then a create fails with "no suitable peers for placement".
	return leader != nil && len(leader.JetStreamClusterPeers()) == running
}

// URL is the client URL of the first running node.
func (c *Cluster) URL() string {
	urls := c.URLs()
	if len(urls) == 0 {
		return ""
	}
	return urls[0]
}

// URLs lists the client URLs of all running nodes.
func (c *Cluster) URLs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var urls []string
	for _, n := range c.nodes {
		if n.srv != nil {
			urls = append(urls, fmt.Sprintf("nats://%s", net.JoinHostPort(n.opts.Host, strconv.Itoa(n.opts.Port))))
		}
	}
	return urls
}

// LeafURL is the leaf node URL (nats-leaf://host:port) of the first running
// node, "" unless Config.LeafListen.
func (c *Cluster) LeafURL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n.srv != nil {
			if n.opts.LeafNode.Port <= 0 {
				return ""
			}
			return fmt.Sprintf("nats-leaf://%s", net.JoinHostPort(n.opts.LeafNode.Host, strconv.Itoa(n.opts.LeafNode.Port)))
		}
	}
	return ""
}

// ServerURLs is URLs joined with commas, the form NATS_URL takes.
func (c *Cluster) ServerURLs() string { return strings.Join(c.URLs(), ",") }

// StoreDir is the directory holding the JetStream data.
func (c *Cluster) StoreDir() string { return c.cfg.StoreDir }

// Servers returns the running servers, for tests that need to reach in.
func (c *Cluster) Servers() []*server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*server.Server
	for _, n := range c.nodes {
		if n.srv != nil {
			out = append(out, n.srv)
		}
	}
	return out
}

// Stop shuts node i down, keeping its data and port for Restart.
func (c *Cluster) Stop(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.nodes) {
		return fmt.Errorf("no node %d", i)
	}
	n := c.nodes[i]
	if n.srv == nil {
		return fmt.Errorf("node %d is not running", i)
	}
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
	n.srv = nil
	return nil
}

// Restart starts a stopped node i again on its old port and data.
func (c *Cluster) Restart(i int) error {
	c.mu.Lock()
	if i < 0 || i >= len(c.nodes) {
		c.mu.Unlock()
		return fmt.Errorf("no node %d", i)
	}
	n := c.nodes[i]
	if n.srv != nil {
		c.mu.Unlock()
		return fmt.Errorf("node %d is running", i)
	}
	// The old port can be held for a moment by another socket: a client
	// reconnecting to it while nothing listened can end up connected to
	// itself (same source and destination port on loopback) until it gives
	// up. Try again for a while rather than fail the restart.
	err := retry.Do(context.Background(),
		retry.Policy{Attempts: 40, Pause: 250 * time.Millisecond, MaxPause: 250 * time.Millisecond, Retryable: isAddressInUse},
		func(context.Context) error { return c.startNode(n) })
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.WaitReady(c.cfg.ReadyTimeout)
}

// Shutdown stops every node and removes the store directory if Start created it.
func (c *Cluster) Shutdown() {
	// All nodes at once: stopped one by one, the last ones would spend the
	// time electing leaders among themselves.
	c.mu.Lock()
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		if n.srv != nil {
			wg.Add(1)
			go func(srv *server.Server) {
				defer wg.Done()
				srv.Shutdown()
				srv.WaitForShutdown()
			}(n.srv)
			n.srv = nil
		}
	}
	wg.Wait()
	c.mu.Unlock()
	if c.tempDir {
		os.RemoveAll(c.cfg.StoreDir)
	}
}

// pickPorts picks a cluster's route ports; tests replace it.
var pickPorts = freePorts

// freePorts asks the OS for n free TCP ports on host. The ports are released
// before the servers bind them, which leaves a small window for a race that
// is acceptable on loopback.
func freePorts(host string, n int) ([]int, error) {
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
