package embeddedtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// OldServerVersion is the older nats-server release the tests that depend
// on a server's version run against: the last 2.12 release of JetStream
// API level 2 (2.12.7 and later report 3), before fast batches
// (allow_batched, level 4) and flow-control acks.
const OldServerVersion = "v2.12.4"

var releaseRe = regexp.MustCompile(`^v2\.[0-9]+\.[0-9]+$`)

// ServerBinary returns the path of a nats-server binary of version (a
// release tag the Go module proxy serves, "v2.12.4"), building it the
// first time on this machine: a scratch module in a temporary directory
// requires that release and `go build`s its main package. The binary is
// cached under os.UserCacheDir()/jetctl/nats-server/VERSION, so it is
// built once per machine; a lock file makes concurrent tests wait for one
// build. Measured on a shared 2-core machine: 25 s with Go's build cache
// warm (the standard library compiled), 4 min 41 s with empty module and
// build caches (8.8 s of downloads, 272.5 s of compiling at load
// average 14).
func ServerBinary(version string) (string, error) {
	if !releaseRe.MatchString(version) {
		return "", fmt.Errorf("nats-server version %q: want a release tag such as v2.12.4", version)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "jetctl", "nats-server", version)
	bin := filepath.Join(dir, "nats-server")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(dir, "build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil // built while this one waited
	}
	if err := buildServer(version, dir, bin); err != nil {
		return "", fmt.Errorf("building nats-server %s: %w", version, err)
	}
	return bin, nil
}

// buildServer builds nats-server version into bin, through a temporary
// file in dir renamed into place once complete.
func buildServer(version, dir, bin string) error {
	src, err := os.MkdirTemp("", "jetctl-nats-server-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	main := "package main\n\n// Requires the server's packages, so that go.sum holds what its main package needs.\nimport _ \"github.com/nats-io/nats-server/v2/server\"\n\nfunc main() {}\n"
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module jetctl.local/oldserver\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(main), 0o644); err != nil {
		return err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	tmp := bin + ".tmp"
	for _, args := range [][]string{
		{"get", "github.com/nats-io/nats-server/v2@" + version},
		{"build", "-o", tmp, "github.com/nats-io/nats-server/v2"},
	} {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = src
		// The scratch module is built on its own: not in a workspace,
		// not with the flags of the module that runs the tests.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s: %w\n%s", args[0], err, out)
		}
	}
	return os.Rename(tmp, bin)
}

// ServerProcess is a nats-server binary running with JetStream on
// 127.0.0.1, on a port the OS picked.
type ServerProcess struct {
	// URL is the client URL.
	URL  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartServerBinary starts bin with JetStream, its store in storeDir
// (its log beside it in storeDir/server.log), and waits until its
// JetStream API answers.
func StartServerBinary(bin, storeDir string) (*ServerProcess, error) {
	portsDir := filepath.Join(storeDir, "ports")
	if err := os.MkdirAll(portsDir, 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(storeDir, "server.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "-a", "127.0.0.1", "-p", "-1", "-js", "-sd", storeDir, "--ports_file_dir", portsDir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childAttrs()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &ServerProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := p.waitReady(portsDir, 30*time.Second); err != nil {
		p.Stop()
		return nil, fmt.Errorf("nats-server %s: %w (its log: %s)", bin, err, logFile.Name())
	}
	return p, nil
}

// waitReady waits for the server's ports file, then for its JetStream API
// to answer.
func (p *ServerProcess) waitReady(portsDir string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	portsFile := filepath.Join(portsDir, fmt.Sprintf("%s_%d.ports", filepath.Base(p.cmd.Path), p.cmd.Process.Pid))
	for p.URL == "" {
		select {
		case <-p.done:
			return fmt.Errorf("exited before listening: %v", p.err)
		default:
		}
		if data, err := os.ReadFile(portsFile); err == nil {
			var ports struct {
				Nats []string `json:"nats"`
			}
			if json.Unmarshal(data, &ports) == nil && len(ports.Nats) > 0 {
				p.URL = ports.Nats[0]
				break
			}
		}
		if time.Now().After(deadline) {
			return errors.New("no ports file in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		err := pingJetStream(p.URL)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("JetStream not answering at %s: %w", p.URL, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func pingJetStream(url string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

// Stop stops the server (an interrupt, then a kill after 10 s) and waits
// for it to exit.
func (p *ServerProcess) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// OldServer starts nats-server version (built once per machine, see
// ServerBinary) for tb, its store in tb's temporary directory, stopped
// when the test ends, and returns its URL.
func OldServer(tb testing.TB, version string) string {
	tb.Helper()
	bin, err := ServerBinary(version)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := StartServerBinary(bin, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Stop)
	return p.URL
}
