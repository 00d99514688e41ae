package embedded

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"

	"github.com/nats-io/nats-server/v2/server"
)

// PortInUseError is a client port another process already listens on.
type PortInUseError struct {
	Host string
	Port int
	Err  error
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("cannot listen on %s: %v", net.JoinHostPort(e.Host, strconv.Itoa(e.Port)), e.Err)
}

func (e *PortInUseError) Unwrap() error { return e.Err }

// checkPort fails at once when host:port cannot be listened on, rather than
// leaving it to the server, whose fatal log would end the process.
func checkPort(host string, port int) error {
	if port <= 0 {
		return nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		// The bare reason, without the "listen tcp host:port" the message
		// already names.
		cause := err
		var sysErr *os.SyscallError
		if errors.As(err, &sysErr) {
			cause = sysErr.Err
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			cause = errors.New("address already in use")
		}
		return &PortInUseError{Host: host, Port: port, Err: cause}
	}
	return l.Close()
}

// fatalTrap is the servers' logger: it passes messages on to log (nil for
// none) except fatal ones, which nats-server's own loggers answer with
// os.Exit. A fatal error is handed to the start-up wait instead, so that
// jetctl reports it, stops the server and removes its temporary store.
type fatalTrap struct {
	log   server.Logger
	fatal chan error
}

func newFatalTrap(log server.Logger) *fatalTrap {
	return &fatalTrap{log: log, fatal: make(chan error, 1)}
}

func (t *fatalTrap) Fatalf(format string, v ...any) {
	select {
	case t.fatal <- fmt.Errorf(format, v...):
	default:
	}
}

func (t *fatalTrap) Noticef(format string, v ...any) {
	if t.log != nil {
		t.log.Noticef(format, v...)
	}
}

func (t *fatalTrap) Warnf(format string, v ...any) {
	if t.log != nil {
		t.log.Warnf(format, v...)
	}
}

func (t *fatalTrap) Errorf(format string, v ...any) {
	if t.log != nil {
		t.log.Errorf(format, v...)
	}
}

func (t *fatalTrap) Debugf(format string, v ...any) {
	if t.log != nil {
		t.log.Debugf(format, v...)
	}
}

func (t *fatalTrap) Tracef(format string, v ...any) {
	if t.log != nil {
		t.log.Tracef(format, v...)
	}
}
