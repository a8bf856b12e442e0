// Package endpoint is the address a daemon of cuzk's API listens on or is
// dialled at, as cuzk writes it (its cuzk.toml `[daemon] listen` and
// `--listen`, Curio's `[Cuzk] Address`): a TCP "host:port", or a unix
// socket "unix:///path" (also "unix:path", relative). gRPC dials both
// forms as they are (its unix resolver); Listen binds them.
//
// No gRPC, no cgo: the daemon, the stand-in cuzk and the CLI share it.
package endpoint

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// UnixPrefix starts a unix socket address.
const UnixPrefix = "unix:"

// SocketPath returns the socket file of a unix address ("unix:///run/x.sock"
// is /run/x.sock, "unix:x.sock" is x.sock) and true, or "" and false for
// any other address.
func SocketPath(addr string) (string, bool) {
	rest, ok := strings.CutPrefix(addr, UnixPrefix)
	if !ok {
		return "", false
	}
	if p, ok := strings.CutPrefix(rest, "//"); ok {
		return p, true // unix://PATH: PATH is absolute ("unix:///run/x")
	}
	return rest, true
}

// Check says what is wrong with addr, or nil: empty, blanks in it, a unix
// address without a path or of a relative path written with "//", or
// otherwise not a host:port. flag names the setting in the error
// ("--listen").
func Check(flag, addr string) error {
	if strings.TrimSpace(addr) == "" {
		return fmt.Errorf("%s is empty: want host:port or unix:///path", flag)
	}
	if strings.ContainsAny(addr, " \t\r\n") {
		return fmt.Errorf("%s %q: blanks in the address: want host:port or unix:///path", flag, addr)
	}
	if p, ok := SocketPath(addr); ok {
		if p == "" {
			return fmt.Errorf("%s %q: no socket path: want unix:///path", flag, addr)
		}
		if strings.HasPrefix(addr, UnixPrefix+"//") && !filepath.IsAbs(p) {
			return fmt.Errorf("%s %q: unix:// takes an absolute path (unix:///run/x.sock), or write unix:%s", flag, addr, p)
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%s %q: want host:port or unix:///path: %w", flag, addr, err)
	}
	return nil
}

// Listen binds addr: a TCP host:port, or a unix socket, whose folder is
// made (0755) when missing and whose stale file (a socket no process
// accepts on, left by a daemon that did not stop cleanly) is removed
// first, as cuzk's daemon does. A path that is no socket is never
// removed: an error names it. A socket that still accepts connections is
// refused ("in use"). Closing the listener removes the socket file.
//
// An error says why only ("address already in use", "PATH exists and is no
// socket (not removed)"): the caller names the flag and the address, which
// net's own message repeated ("listen 127.0.0.1:9820: listen tcp
// 127.0.0.1:9820: bind: address already in use"). errors.As still finds
// net's *net.OpError and errors.Is its errno.
func Listen(addr string) (net.Listener, error) {
	path, ok := SocketPath(addr)
	if !ok {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, reason(err)
		}
		return l, nil
	}
	if path == "" {
		return nil, errors.New("no socket path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err // mkdir DIR: ...
	}
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is no socket (not removed)", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s is in use by a running server", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing the stale socket: %w", err)
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, reason(err)
	}
	return l, nil
}

// reason is err, a listen's *net.OpError, read as its system error alone
// ("address already in use", not "listen tcp ADDR: bind: address already
// in use"), unwrapping to err.
func reason(err error) error {
	var op *net.OpError
	if !errors.As(err, &op) || op.Err == nil {
		return err
	}
	why := op.Err
	var sys *os.SyscallError
	if errors.As(why, &sys) {
		why = sys.Err
	}
	return &reasonError{why: why.Error(), err: err}
}

// reasonError reads as why and unwraps to err.
type reasonError struct {
	why string
	err error
}

func (e *reasonError) Error() string { return e.why }
func (e *reasonError) Unwrap() error { return e.err }

// String is the address of l as Listen's callers write it: host:port for
// TCP, unix://PATH for a unix socket (unix:PATH for a relative path).
func String(l net.Listener) string {
	a := l.Addr()
	if a.Network() != "unix" {
		return a.String()
	}
	if filepath.IsAbs(a.String()) {
		return UnixPrefix + "//" + a.String()
	}
	return UnixPrefix + a.String()
}
