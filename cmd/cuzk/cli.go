package main

// Helpers every command uses: one-line errors, argument checks, files
// written atomically and the daemon client's options. One file per
// command lives beside this one.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/daemon"
	"github.com/otelcuzk/otelcuzk/internal/atomicfile"
	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/client"
)

// usageError returns a flag parsing error as the command's one-line error,
// without the usage text urfave/cli would print: the flag named as the
// user typed it (the flag package writes "-nosuch" for a typed
// "--nosuch"), an unknown flag pointing at the command's --help, and a
// number too large for its flag, or a value that is no number for a
// numeric or duration flag, naming the range the flag takes (flagRanges)
// and how to write a value (flagExamples; a duration's unit), and a value
// that is no boolean for a boolean flag, naming the values it takes.
func usageError(c *cli.Context, err error, _ bool) error {
	msg := err.Error()
	if m := outOfRange.FindStringSubmatch(msg); m != nil {
		want, ok := flagRanges[m[2]]
		if !ok {
			want = "an integer from -9223372036854775808 to 9223372036854775807"
		}
		return fmt.Errorf("%s %s: value out of range (want %s)", typedFlag(c, m[2]), m[1], want)
	}
	if m := notANumber.FindStringSubmatch(msg); m != nil {
		if what, ok := numericFlag(c, m[2]); ok {
			var want []string
			if r, ok := flagRanges[m[2]]; ok {
				want = append(want, r)
			}
			if ex, ok := flagExamples[m[2]]; ok {
				want = append(want, "in digits: "+ex)
			}
			if what == "a duration" {
				want = append(want, "a number with a unit: 90s, 5m, 1h30m")
			}
			line := fmt.Sprintf("%s %s: not %s", typedFlag(c, m[2]), m[1], what)
			if len(want) > 0 {
				line += " (want " + strings.Join(want, ", ") + ")"
			}
			return errors.New(line)
		}
	}
	if m := notABoolean.FindStringSubmatch(msg); m != nil {
		f := typedFlag(c, m[2])
		return fmt.Errorf("%s=%s: not a boolean (want true or false, or 1, 0, t, f; %s alone means true)", f, m[1], f)
	}
	if m := unknownFlag.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("unknown flag %s (%s --help lists the flags)", typedFlag(c, m[1]), commandPath(c))
	}
	for _, re := range flagErrors {
		if m := re.FindStringSubmatchIndex(msg); m != nil {
			return errors.New(msg[:m[2]-1] + typedFlag(c, msg[m[2]:m[3]]) + msg[m[3]:])
		}
	}
	return err
}

// outOfRange is the flag package's error for a number its type cannot
// hold: the value, then the flag's name.
var outOfRange = regexp.MustCompile(`^invalid value "([^"]*)" for flag -([a-z0-9-]+): value out of range$`)

// notANumber is the flag package's error for a numeric flag's value that
// does not parse (strconv's syntax error): the value, then the flag's name.
var notANumber = regexp.MustCompile(`^invalid value "([^"]*)" for flag -([a-z0-9-]+): parse error$`)

// notABoolean is the flag package's error for a boolean flag's value that
// strconv.ParseBool refuses (it takes 1, t, T, TRUE, true, True and their
// false counterparts): the value, then the flag's name. A boolean flag
// takes a value only as --name=value.
var notABoolean = regexp.MustCompile(`^invalid boolean value "([^"]*)" for -([a-z0-9-]+): parse error$`)

// numericFlag reports whether name is a numeric flag of c's command (or of
// a command above it), and what its values are: "an integer" (the flag
// package reads Go's integer literals: 1048576, 1_048_576, 0x100000; not
// 2^20 or 1e6), "a number" or "a duration" (time.ParseDuration's).
func numericFlag(c *cli.Context, name string) (string, bool) {
	for _, ctx := range c.Lineage() {
		var flags []cli.Flag
		if ctx.Command != nil {
			flags = ctx.Command.Flags
		} else if ctx.App != nil {
			flags = ctx.App.Flags
		}
		for _, f := range flags {
			if !slices.Contains(f.Names(), name) {
				continue
			}
			switch f.(type) {
			case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
				return "an integer", true
			case *cli.Float64Flag:
				return "a number", true
			case *cli.DurationFlag:
				return "a duration", true
			}
			return "", false
		}
	}
	return "", false
}

// unknownFlag is the flag package's error for a flag the command lacks.
var unknownFlag = regexp.MustCompile(`^flag provided but not defined: -(.+)$`)

// flagErrors are the flag package's other errors that name a flag as
// "-name" (the submatch, after its dash).
var flagErrors = []*regexp.Regexp{
	regexp.MustCompile(`^invalid value "[^"]*" for flag -([a-z0-9-]+):`),
	regexp.MustCompile(`^flag needs an argument: -([a-z0-9-]+)$`),
}

// typedFlag is flag name as the command line of c has it: "--name" or
// "-name" (with or without "=value"); "--name", as --help writes it, when
// no argument of c's lineage holds it.
func typedFlag(c *cli.Context, name string) string {
	for _, ctx := range c.Lineage() {
		for _, a := range argsOf(ctx) {
			a, _, _ = strings.Cut(a, "=")
			if a == "-"+name || a == "--"+name {
				return a
			}
		}
	}
	return "--" + name
}

// commandPath is the command c runs as the user types it: "cuzk trace
// diff" (HelpName is not: the package's commands are set up again by each
// newApp, and it grows).
func commandPath(c *cli.Context) string {
	var names []string
	for _, ctx := range c.Lineage() {
		if ctx.Command != nil && ctx.Command.Name != "" {
			names = append([]string{ctx.Command.Name}, names...)
		}
	}
	if len(names) == 0 || names[0] != "cuzk" {
		names = append([]string{"cuzk"}, names...)
	}
	return strings.Join(names, " ")
}

// argsOf is ctx's arguments, nil for a context without a flag set: the
// one whose parse failed (urfave/cli leaves it nil, and its Args panics)
// and the outermost.
func argsOf(ctx *cli.Context) (args []string) {
	defer func() {
		if recover() != nil {
			args = nil
		}
	}()
	return ctx.Args().Slice()
}

// flagRanges are the ranges of the numeric flags whose range is narrower
// than their type's, for the flag parser's out-of-range error.
var flagRanges = map[string]string{
	"constraints":       "1 to 2^32 = 4294967296",
	"partitions":        "0 to 256",
	"queue-size":        "at least 1",
	"max-results":       "at least 1",
	"cpu-workers":       "0 or more (-1: the default)",
	"synthesis-workers": "0 or more (-1: the default)",
}

// flagExamples show how to write a value of the integer flags whose
// values users think of as powers of two, for the parse error of one
// written otherwise ("2^20", "1M").
var flagExamples = map[string]string{
	"constraints": "1048576 for 2^20",
}

// oneLine keeps an error on one line (human.OneLine).
var oneLine = human.OneLine

// exitUsage is the exit status of a usage error, as Go's flag package
// exits: cuzk without a command.
const exitUsage = 2

// showUsage prints the usage of cuzk to stderr and returns the usage
// error, exit status 2 with no message of its own: no command is not a
// request for help (cuzk help and cuzk --help print to stdout and exit 0).
func showUsage(c *cli.Context) error {
	w := c.App.Writer
	c.App.Writer = c.App.ErrWriter
	if c.App.Writer == nil {
		c.App.Writer = os.Stderr
	}
	defer func() { c.App.Writer = w }()
	if err := cli.ShowAppHelp(c); err != nil {
		return err
	}
	return cli.Exit("", exitUsage)
}

// noArgs refuses positional arguments for a command that takes none.
func noArgs(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("%s takes no arguments, got %q (flags go before any argument: --name value)", c.Command.Name, c.Args().Slice())
	}
	return nil
}

// rpcError is a gRPC status error as every command that calls a daemon
// (status, cancel, submit) prints it: its code's name (codeName), then its
// message ("UNAVAILABLE: connection error: ..."), not gRPC's "rpc error:
// code = Unavailable desc = ...". Any other error is returned as it is.
func rpcError(err error) error {
	s, ok := status.FromError(err)
	if !ok || err == nil {
		return err
	}
	return fmt.Errorf("%s: %s", codeName(s.Code()), s.Message())
}

// codeName is the name of a gRPC status code as the gRPC specification,
// cuzk's API documentation and --help spell it (RESOURCE_EXHAUSTED,
// CANCELLED), not Go's CamelCase: "Canceled" beside a job's CANCELLED
// read as two spellings of one word.
func codeName(c codes.Code) string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return c.String() // "Code(17)"
}

var codeNames = map[codes.Code]string{
	codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN", codes.InvalidArgument: "INVALID_ARGUMENT",
	codes.DeadlineExceeded: "DEADLINE_EXCEEDED", codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
	codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED", codes.OutOfRange: "OUT_OF_RANGE",
	codes.Unimplemented: "UNIMPLEMENTED", codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE",
	codes.DataLoss: "DATA_LOSS", codes.Unauthenticated: "UNAUTHENTICATED",
}

// unreachable says, in one line's words, how err, a call that reached no
// daemon at addr (gRPC Unavailable from the dial or the name resolver),
// failed: "no daemon answers at ADDR: UNAVAILABLE: connection refused"
// with the dial error's last part (gRPC's message nests it: "connection
// error: desc = \"transport: Error while dialing: dial tcp ...: connect:
// connection refused\""), or "cannot reach ADDR: ..." for a host name that
// does not resolve or another dial error (a timeout, TLS). ask is true only
// when nothing listens there (connection refused, no such unix socket): then
// the caller may ask whether cuzk serve runs there. ok is false for any
// other error, a daemon that answers Unavailable (shutting down) included.
func unreachable(err error, addr string) (what string, ask, ok bool) {
	s, isStatus := status.FromError(err)
	if err == nil || !isStatus {
		return "", false, false
	}
	msg := s.Message()
	if notGRPC(msg) {
		return fmt.Sprintf("the server at %s is not a cuzk daemon: it does not answer gRPC (%s: %s)", addr, codeName(s.Code()), msg), false, true
	}
	if s.Code() != codes.Unavailable {
		return "", false, false
	}
	switch {
	case strings.Contains(msg, "name resolver error"):
		return fmt.Sprintf("cannot reach %s: UNAVAILABLE: %s (the host name does not resolve)", addr, msg), false, true
	case !strings.Contains(msg, "connection error"):
		return "", false, false
	}
	why := msg
	if i := strings.LastIndex(why, ": "); i >= 0 {
		why = strings.Trim(why[i+2:], `"`)
	}
	if strings.Contains(why, "connection refused") || strings.Contains(why, "no such file or directory") {
		return fmt.Sprintf("no daemon answers at %s: UNAVAILABLE: %s", addr, why), true, true
	}
	return fmt.Sprintf("cannot reach %s: UNAVAILABLE: %s", addr, why), false, true
}

// notGRPC reports whether a call's status message is gRPC's word for a
// server that answered in something other than gRPC: an HTTP/1.1 server
// (a web UI such as Jaeger's :16686: "frame too large ... looked like an
// HTTP/1.1 header") or an HTTP/2 one that is no gRPC server ("unexpected
// HTTP status code received from server: 404", "missing HTTP
// content-type").
func notGRPC(msg string) bool {
	for _, m := range []string{"looked like an HTTP/1.1 header", "unexpected HTTP status code received from server", "malformed header: missing HTTP content-type"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// askServe is the question a line about a daemon that cannot be reached
// ends with when nothing listens at its address (unreachable's ask).
func askServe(ask bool) string {
	if ask {
		return ": is cuzk serve running there?"
	}
	return ""
}

// checkDaemonAddr refuses an --addr no daemon can have, before any dial,
// naming the flag and what it takes: gRPC said "invalid port" or "name
// resolver error" of a malformed address and the command asked whether
// cuzk serve ran there. A unix socket (unix:/path, unix:///path) and a
// gRPC target with a scheme are gRPC's to check.
func checkDaemonAddr(addr string) error {
	if strings.HasPrefix(addr, "unix:") || strings.Contains(addr, "/") {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		why := err.Error()
		if errors.As(err, &ae) {
			why = ae.Err
		}
		return fmt.Errorf("--addr %q: want host[:port] or unix:///path (%s)", addr, why)
	}
	n, err := strconv.ParseUint(port, 10, 64)
	switch {
	case err == nil && (n < 1 || n > 65535):
		return fmt.Errorf("--addr %q: port %s out of range (want 1 to 65535)", addr, port)
	case err != nil:
		if _, lerr := net.LookupPort("tcp", port); lerr != nil {
			return fmt.Errorf("--addr %q: port %q is neither a number from 1 to 65535 nor a service name", addr, port)
		}
	}
	return nil
}

// clientOptions are the client options of --token and --tls-ca.
func clientOptions(c *cli.Context) ([]client.Option, error) {
	if daemonAddr(c) == "" {
		// gRPC's own words: "delegating_resolver: invalid target address "": missing address".
		return nil, fmt.Errorf("--addr is empty: want a daemon's host[:port] (default 127.0.0.1:%s)", defaultPort)
	}
	if err := checkDaemonAddr(daemonAddr(c)); err != nil {
		return nil, err
	}
	var opts []client.Option
	if tok := c.String("token"); tok != "" {
		opts = append(opts, client.WithBearerToken(tok))
	}
	if ca := c.String("tls-ca"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls-ca %s: no PEM certificate", ca)
		}
		opts = append(opts, client.WithTLS(&tls.Config{RootCAs: pool}))
	}
	return opts, nil
}

// defaultPort is the port of a daemon address given without one: serve's
// default --listen port.
const defaultPort = "9820"

// daemonAddr is the --addr of a command that calls a daemon, with
// defaultPort added when it names a host only ("127.0.0.1", "localhost",
// "::1", "[::1]"): gRPC would otherwise dial 443. A gRPC target with a
// scheme ("dns:///h:p", "unix:/path") is left as it is.
func daemonAddr(c *cli.Context) string { return withDefaultPort(c.String("addr")) }

// withDefaultPort is addr with defaultPort added when it has no port
// (daemonAddr).
func withDefaultPort(addr string) string {
	addr = strings.TrimSpace(addr)
	if addr == "" || strings.Contains(addr, "/") || strings.HasPrefix(addr, "unix:") {
		return addr
	}
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if port != "" {
			return addr
		}
		return net.JoinHostPort(host, defaultPort) // "host:"
	}
	host := addr
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	} else if strings.Contains(host, ":") && net.ParseIP(host) == nil {
		return addr // not a host: Dial's error names it
	}
	return net.JoinHostPort(host, defaultPort)
}

// atomicFile writes its destination through a temporary file beside it,
// renamed over it on commit, so a failed or interrupted run leaves no
// partial proof. newAtomicFile checks, before any proving, that a file can
// be created there; the temporary file itself exists only during commit.
type atomicFile struct{ path string }

func newAtomicFile(path string) (*atomicFile, error) {
	if err := atomicfile.Check(path); err != nil {
		return nil, err
	}
	return &atomicFile{path: path}, nil
}

// samePath reports whether a and b name one file: the same path once
// absolute and clean (whether or not it exists yet), or one existing file
// (a link to it, a hard link).
func samePath(a, b string) bool {
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && absA == absB || sameFile(a, b)
}

func (f *atomicFile) commit(data []byte) error {
	return atomicfile.WriteBytes(f.path, 0o644, data)
}

// orEnv names the OTLP destination, target or, when the SDK reads it
// from the environment, the environment.
func orEnv(target string) string {
	if target != "" {
		return target
	}
	return "the OTEL_EXPORTER_OTLP_* endpoint"
}

// builtinCircuitFlags are --circuit and --constraints of the commands that
// build a built-in circuit themselves (prove, setup), read by buildCircuit.
func builtinCircuitFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "circuit", Value: "merkle", Usage: "built-in circuit: " + strings.Join(circuits.Names(), "|")},
		&cli.IntFlag{Name: "constraints", Value: defaultConstraints, Usage: "R1CS constraints of the circuit (exact: merkle pads with a short multiplication chain)"},
	}
}

// daemonFlags are the flags of the commands that call a daemon (status,
// cancel, submit), in the order --help lists them: --addr, the command's
// own flags, then --timeout (default timeout, with usage timeoutUsage),
// --token and --tls-ca, which daemonAddr, dialDaemon and clientOptions
// read.
func daemonFlags(timeout time.Duration, timeoutUsage string, own ...cli.Flag) []cli.Flag {
	flags := []cli.Flag{&cli.StringFlag{Name: "addr", Value: daemon.DefaultListen, Usage: "daemon address (host[:port], port default " + defaultPort + "; or unix:///path)"}}
	flags = append(flags, own...)
	return append(flags,
		&cli.DurationFlag{Name: "timeout", Value: timeout, Usage: timeoutUsage},
		&cli.StringFlag{Name: "token", EnvVars: []string{"CUZK_TOKEN"}, Usage: "bearer token"},
		&cli.StringFlag{Name: "tls-ca", Usage: "CA certificate (PEM) of a TLS daemon; turns TLS on"},
	)
}

// buildCircuit builds the built-in circuit of --circuit at --constraints
// (prove and setup), after the memory check: building the circuit of an
// absurd size would itself run out of memory.
func buildCircuit(c *cli.Context) (*circuits.Instance, error) {
	name, n := c.String("circuit"), c.Int("constraints")
	if err := checkPlan(c, name, n); err != nil {
		return nil, err
	}
	return circuits.Build(name, n)
}

// dialDaemon checks --timeout and dials the daemon at --addr with the
// client options of c (TLS, token): the client, a context ending after
// --timeout, and the function that ends both. For the commands that make
// one call (status, cancel).
func dialDaemon(c *cli.Context) (*client.Client, context.Context, func(), error) {
	d := c.Duration("timeout")
	if d <= 0 {
		return nil, nil, nil, fmt.Errorf("--timeout %v: want a positive duration", d)
	}
	opts, err := clientOptions(c)
	if err != nil {
		return nil, nil, nil, err
	}
	cl, err := client.Dial(daemonAddr(c), opts...)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(c.Context, d)
	return cl, ctx, func() { cancel(); cl.Close() }, nil
}
