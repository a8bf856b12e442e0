package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runMain runs cuzk's main in a child process (TestHelperProcessMain)
// with env added, and returns its stdout, stderr and exit status: what
// reaches the real stderr (the SDK's own log lines too) is seen.
func runMain(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	// A command that should have refused to start (serve) fails the test
	// after a minute rather than hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"-test.run=^TestHelperProcessMain$", "--"}, args...)...)
	cmd.Env = append(append(os.Environ(), "CUZK_HELPER_MAIN=1"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Errorf("cuzk %v still running after a minute; killed", args)
		code = -1
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// cuzk without a command is a usage error: the usage on stderr, nothing on
// stdout, exit status 2 (as Go's flag package); cuzk help still prints to
// stdout and exits 0.
func TestNoCommandPrintsUsageToStderrAndExits2(t *testing.T) {
	run := func(args ...string) (string, string, int) { return runMain(t, nil, args...) }
	stdout, stderr, code := run()
	if code != exitUsage {
		t.Errorf("cuzk: exit %d, want %d", code, exitUsage)
	}
	// The test binary's own PASS/ok lines never come: main exits first.
	if stdout != "" {
		t.Errorf("cuzk: stdout %q, want nothing", stdout)
	}
	for _, want := range []string{"USAGE:", "prove", "serve", "submit", "trace"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("cuzk: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "cuzk: \n") {
		t.Errorf("cuzk: an empty error line after the usage:\n%s", stderr)
	}
	stdout, _, code = run("help")
	if code != 0 || !strings.Contains(stdout, "USAGE:") {
		t.Errorf("cuzk help: exit %d, stdout %q; want 0 and the usage", code, stdout)
	}
}

// A malformed OTLP endpoint is one line on stderr, ours, for every command
// that traces: the SDK's own "parse url" log line does not come first, and
// serve does not start with the SDK's default endpoint instead.
func TestMalformedOTLPEndpointIsOurOneLineOnly(t *testing.T) {
	dir := t.TempDir()
	for _, ep := range []struct{ protocol, endpoint string }{
		{"http/protobuf", "http://[::1"}, {"grpc", "http://[::1"}, {"grpc", "::bad"}, {"http/protobuf", "::bad"},
	} {
		env := []string{"OTEL_EXPORTER_OTLP_PROTOCOL=" + ep.protocol, "OTEL_EXPORTER_OTLP_ENDPOINT=" + ep.endpoint,
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=", "CUZK_CACHE_DIR=" + dir}
		for _, args := range [][]string{
			{"prove", "--circuit", "mulchain", "--constraints", "256", "--backend", "cpu", "--proof", dir + "/p.bin"},
			{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--backend", "cpu", "--trace-file", dir + "/t.jsonl"},
			{"submit", "--addr", "127.0.0.1:1"},
		} {
			_, stderr, code := runMain(t, env, args...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "cuzk: ") || !strings.Contains(lines[0], "OTEL_EXPORTER_OTLP_ENDPOINT") {
				t.Errorf("%s over %s, cuzk %s: exit %d, stderr %q; want exit 1 and our one line naming the variable", ep.endpoint, ep.protocol, args[0], code, stderr)
			}
		}
	}
}

// A daemon address without a port gets serve's default port, 9820 (gRPC
// alone would dial 443); one with a port, or a gRPC target with a scheme,
// is kept.
func TestDaemonAddrWithoutAPortGets9820(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1": "127.0.0.1:9820", "localhost": "localhost:9820", "prover-1": "prover-1:9820",
		"::1": "[::1]:9820", "[::1]": "[::1]:9820", "host:": "host:9820", " 10.0.0.2 ": "10.0.0.2:9820",
		"127.0.0.1:7000": "127.0.0.1:7000", "[::1]:7000": "[::1]:7000", "localhost:9820": "localhost:9820",
		"dns:///prover-1:7000": "dns:///prover-1:7000", "unix:/run/cuzk.sock": "unix:/run/cuzk.sock",
	} {
		if got := withDefaultPort(in); got != want {
			t.Errorf("withDefaultPort(%q) = %q, want %q", in, got, want)
		}
	}
}

// status, submit and cancel given --addr HOST dial HOST:9820: a fake
// daemon on 127.0.0.3:9820 (a loopback address of its own, so a real
// daemon on 127.0.0.1:9820 is not in the way) answers each.
func TestCommandsDialPort9820ForAnAddressWithoutAPort(t *testing.T) {
	clearOTLPEnv(t)
	lis, err := net.Listen("tcp", "127.0.0.3:"+defaultPort)
	if err != nil {
		t.Skipf("127.0.0.3:%s not free: %v", defaultPort, err)
	}
	e := &stagedEngine{done: make(chan struct{})}
	close(e.done)
	serveEngineOn(t, lis, e)
	if out, _, err := runCuzk(t, "status", "--addr", "127.0.0.3", "--timeout", "30s"); err != nil || !strings.Contains(out, "daemon    127.0.0.3:9820") {
		t.Errorf("status --addr 127.0.0.3: %v\n%s", err, out)
	}
	if out, _, err := runCuzk(t, "submit", "--addr", "127.0.0.3", "--request-id", "r", "--timeout", "30s"); err != nil || !strings.Contains(out, "job       job-1") {
		t.Errorf("submit --addr 127.0.0.3: %v\n%s", err, out)
	}
	// The fake has no CancelProof: UNIMPLEMENTED is its answer, from 9820.
	if _, _, err := runCuzk(t, "cancel", "--addr", "127.0.0.3", "--request-id", "r"); err == nil || !strings.Contains(err.Error(), "cancel r at 127.0.0.3:9820: UNIMPLEMENTED") {
		t.Errorf("cancel --addr 127.0.0.3: %v, want the fake's UNIMPLEMENTED", err)
	}
}

// A number too large for its flag's type names the range the flag takes
// (the flag package said "value out of range" and no range), in one line,
// before any work.
func TestAFlagValueOutOfRangeNamesTheRange(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"prove", "--constraints", "99999999999999999999"}, "--constraints 99999999999999999999: value out of range (want 1 to 2^32 = 4294967296)"},
		{[]string{"setup", "--constraints", "-99999999999999999999"}, "--constraints -99999999999999999999: value out of range (want 1 to 2^32 = 4294967296)"},
		{[]string{"submit", "--partitions", "99999999999999999999"}, "--partitions 99999999999999999999: value out of range (want 0 to 256)"},
		{[]string{"serve", "--queue-size", "99999999999999999999"}, "--queue-size 99999999999999999999: value out of range (want at least 1)"},
		{[]string{"prove", "--seed", "99999999999999999999"}, "--seed 99999999999999999999: value out of range (want an integer from -9223372036854775808 to 9223372036854775807)"},
	} {
		out, errOut, err := runCuzk(t, c.args...)
		if err == nil || err.Error() != c.want {
			t.Errorf("cuzk %v: %v, want %q", c.args, err, c.want)
		}
		if out != "" || errOut != "" {
			t.Errorf("cuzk %v printed %q %q", c.args, out, errOut)
		}
	}
}

// A value that is no number for a numeric flag names the flag as typed,
// the value and what the flag takes, in one line, before any work: the
// flag package said only `invalid value "abc" for flag --constraints:
// parse error` (a new user's trial). --constraints reads Go integers, so
// 2^20 is refused with the digits to write instead.
func TestAFlagValueThatIsNoNumberSaysWhatTheFlagTakes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"prove", "--constraints", "abc"}, "--constraints abc: not an integer (want 1 to 2^32 = 4294967296, in digits: 1048576 for 2^20)"},
		{[]string{"setup", "--constraints=2^20"}, "--constraints 2^20: not an integer (want 1 to 2^32 = 4294967296, in digits: 1048576 for 2^20)"},
		{[]string{"submit", "-constraints", "1M"}, "-constraints 1M: not an integer (want 1 to 2^32 = 4294967296, in digits: 1048576 for 2^20)"},
		{[]string{"serve", "--queue-size", "lots"}, "--queue-size lots: not an integer (want at least 1)"},
		{[]string{"prove", "--seed", "s"}, "--seed s: not an integer"},
		{[]string{"trace", "diff", "--threshold-pct", "x", "a", "b"}, "--threshold-pct x: not a number"},
		{[]string{"status", "--timeout", "30"}, "--timeout 30: not a duration (want a number with a unit: 90s, 5m, 1h30m)"},
		// Given after the arguments (parsed by the command, not urfave/cli):
		// the same line, not `invalid value "5" for flag -since: parse error`.
		{[]string{"trace", "f.jsonl", "--timeline", "--since", "5"}, "--since 5: not a duration (want a number with a unit: 90s, 5m, 1h30m)"},
		{[]string{"trace", "diff", "a", "b", "--fail-over", "abc"}, "--fail-over abc: not a number"},
		{[]string{"trace", "diff", "a", "b", "--threshold-pct=x"}, "--threshold-pct x: not a number"},
	} {
		out, errOut, err := runCuzk(t, c.args...)
		if err == nil || err.Error() != c.want {
			t.Errorf("cuzk %q: %v, want %q", c.args, err, c.want)
		}
		if out != "" || errOut != "" {
			t.Errorf("cuzk %q printed %q %q", c.args, out, errOut)
		}
	}
	// Go's integer literals are what the flag reads: 0x100000 is 2^20.
	if _, _, err := runCuzk(t, "prove", "--constraints", "0x100000", "--circuit", "nosuch"); err != nil && strings.Contains(err.Error(), "not an integer") {
		t.Errorf("--constraints 0x100000: %v, want it read as 1048576", err)
	}
}

// A value that is no boolean for a boolean flag names the flag as typed,
// the value and the values it takes, in one line, before any work: the
// flag package said `invalid boolean value "maybe" for --verify: parse
// error`. What it takes is unchanged (strconv.ParseBool's words).
func TestAFlagValueThatIsNoBooleanSaysWhatTheFlagTakes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"prove", "--verify=maybe"}, "--verify=maybe: not a boolean (want true or false, or 1, 0, t, f; --verify alone means true)"},
		{[]string{"submit", "--verify=no"}, "--verify=no: not a boolean (want true or false, or 1, 0, t, f; --verify alone means true)"},
		{[]string{"trace", "diff", "--json=yes", "a", "b"}, "--json=yes: not a boolean (want true or false, or 1, 0, t, f; --json alone means true)"},
		{[]string{"setup", "--progress="}, "--progress=: not a boolean (want true or false, or 1, 0, t, f; --progress alone means true)"},
	} {
		out, errOut, err := runCuzk(t, c.args...)
		if err == nil || err.Error() != c.want {
			t.Errorf("cuzk %q: %v, want %q", c.args, err, c.want)
		}
		if out != "" || errOut != "" {
			t.Errorf("cuzk %q printed %q %q", c.args, out, errOut)
		}
	}
	// The words it names are read: the command goes on to its own error.
	for _, v := range []string{"true", "false", "1", "0", "t", "f", "TRUE", "False"} {
		_, _, err := runCuzk(t, "prove", "--verify="+v, "--circuit", "nosuch")
		if err == nil || strings.Contains(err.Error(), "not a boolean") || !strings.Contains(err.Error(), "nosuch") {
			t.Errorf("--verify=%s --circuit nosuch: %v, want the unknown circuit's error", v, err)
		}
	}
}

// A flag is named as the user typed it: the flag package wrote "-nosuch"
// for a typed "--nosuch". An unknown one points at the command's --help.
func TestABadFlagIsNamedAsTyped(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"prove", "--nosuch"}, "unknown flag --nosuch (cuzk prove --help lists the flags)"},
		{[]string{"prove", "-nosuch"}, "unknown flag -nosuch (cuzk prove --help lists the flags)"},
		{[]string{"submit", "--nosuch=3"}, "unknown flag --nosuch (cuzk submit --help lists the flags)"},
		{[]string{"trace", "diff", "--nosuch", "a", "b"}, "unknown flag --nosuch (cuzk trace diff --help lists the flags)"},
		{[]string{"prove", "-verify=maybe"}, "-verify=maybe: not a boolean (want true or false, or 1, 0, t, f; -verify alone means true)"},
		{[]string{"prove", "-constraints", "many"}, `-constraints many: not an integer (want 1 to 2^32 = 4294967296, in digits: 1048576 for 2^20)`},
		{[]string{"prove", "--constraints"}, "flag needs an argument: --constraints"},
		{[]string{"setup", "-constraints", "99999999999999999999"}, "-constraints 99999999999999999999: value out of range (want 1 to 2^32 = 4294967296)"},
	} {
		if _, _, err := runCuzk(t, c.args...); err == nil || err.Error() != c.want {
			t.Errorf("cuzk %q: %v, want %q", c.args, err, c.want)
		}
	}
}
