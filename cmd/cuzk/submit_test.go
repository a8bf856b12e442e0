package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/daemon"
	"github.com/otelcuzk/otelcuzk/otelcuzk/otlptest"
	"github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
)

// A negative --constraints is refused by submit before any dial, in the
// words prove and setup use (it was a flag parse error).
func TestSubmitRefusesNegativeConstraintsInProvesWords(t *testing.T) {
	_, _, proveErr := runCuzk(t, "prove", "--constraints", "-1")
	_, _, submitErr := runCuzk(t, "submit", "--constraints", "-1", "--addr", "127.0.0.1:1")
	if proveErr == nil || submitErr == nil {
		t.Fatalf("prove: %v, submit: %v; want both refused", proveErr, submitErr)
	}
	if submitErr.Error() != proveErr.Error() {
		t.Errorf("submit --constraints -1: %q; prove says %q", submitErr, proveErr)
	}
}

// An empty --witness file (a write cut short) is refused before any dial:
// sent, it read as no witness, and the daemon proved the circuit's sample.
func TestSubmitRefusesAnEmptyWitnessFile(t *testing.T) {
	dir := t.TempDir()
	empty, other := filepath.Join(dir, "empty.wit"), filepath.Join(dir, "other.wit")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, circuitstest.WitnessBytes(t, "mulchain", 256, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--witness", empty}, {"--witness", other, "--witness", empty}} {
		_, _, err := runCuzk(t, append([]string{"submit", "--addr", "127.0.0.1:1"}, args...)...)
		want := "witness " + empty + ": empty file (want a full witness in gnark's binary format)"
		if err == nil || err.Error() != want {
			t.Errorf("submit %q: %v, want %q", args, err, want)
		}
	}
}

// A --witness file that is no gnark witness (text, a cut-short or
// out-of-field one) is refused before any dial, naming the file and the
// daemon's own reason (server.CheckWitness): it was sent and refused there
// as INVALID_ARGUMENT: bad witness.
func TestSubmitRefusesAFileThatIsNoWitnessBeforeSending(t *testing.T) {
	dir := t.TempDir()
	good := circuitstest.WitnessBytes(t, "mulchain", 256, 1)
	outOfField := append([]byte(nil), good...)
	copy(outOfField[12:], bytes.Repeat([]byte{0xff}, 32))
	for name, tc := range map[string]struct {
		data   []byte
		reason string
	}{
		"hosts":        {[]byte("127.0.0.1 localhost\n::1 localhost\n"), "header says 825374510 public + 808333358 secret values but the vector holds 824208495"},
		"cut short":    {good[:len(good)-1], fmt.Sprintf("%d values need %d bytes, got %d", (len(good)-12)/32, len(good), len(good)-1)},
		"out of field": {outOfField, "value 0 is not in the scalar field of BLS12-381 (not less than r)"},
		"short":        {[]byte{1}, "1 bytes, shorter than the 12-byte header"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(path, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		// A dead --addr: a refusal that dialled would say so.
		_, _, err := runCuzk(t, "submit", "--addr", "127.0.0.1:1", "--witness", path)
		want := path + " is not a gnark witness file (" + tc.reason + "): want a full witness in gnark's binary format (witness.Witness MarshalBinary over BLS12-381's scalar field)"
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v\nwant %s", name, err, want)
		}
	}
}

// An OTLP endpoint where nothing listens is refused before anything is
// submitted, in prove's line with what to do: submit proved, said only
// "span export failed" and exited 0, its spans lost.
func TestSubmitRefusesAnUnreachableOTLPEndpointBeforeSubmitting(t *testing.T) {
	clearOTLPEnv(t)
	d := startDaemon(t, daemon.Config{})
	closed, err := otlptest.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"submit", "--addr", d.addr, "--circuit", "mulchain", "--constraints", "64", "--request-id", "otlp-down"}
	for _, tc := range []struct{ vars, endpoint string }{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://" + closed},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://" + closed + "/v1/traces"},
	} {
		clearOTLPEnv(t)
		t.Setenv(tc.vars, tc.endpoint)
		_, _, err := runCuzk(t, args...)
		want := ": start a receiver there (Jaeger, an OpenTelemetry Collector) or unset " + tc.vars +
			" to submit without tracing the call (the daemon traces the proof to its own destination)"
		if err == nil || !strings.HasPrefix(err.Error(), "OTLP endpoint "+tc.endpoint+" unreachable: ") ||
			!strings.HasSuffix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s=%s: %v, want one line naming it unreachable and ending %q", tc.vars, tc.endpoint, err, want)
		}
	}
	// Nothing was submitted: the id is new to the daemon.
	clearOTLPEnv(t)
	out, _, err := runCuzk(t, args...)
	if err != nil || strings.Contains(out, "submitted before") {
		t.Errorf("the same id with no endpoint: %v, want a first submit:\n%s", err, out)
	}
}

// An empty --addr is refused in one line naming the flag, before any dial,
// by each command that calls a daemon.
func TestDaemonCommandsRefuseAnEmptyAddr(t *testing.T) {
	for _, args := range [][]string{{"submit"}, {"status"}, {"cancel", "--request-id", "r"}} {
		for _, addr := range []string{"", " "} {
			_, _, err := runCuzk(t, append(args, "--addr", addr)...)
			if err == nil || err.Error() != "--addr is empty: want a daemon's host[:port] (default 127.0.0.1:9820)" {
				t.Errorf("%s --addr %q: %v, want the empty --addr named", args[0], addr, err)
			}
		}
	}
}

// A string flag that is not UTF-8 is refused naming the flag, before any
// dial (gRPC refused to marshal it: "Internal: grpc: error while
// marshaling: string field contains invalid UTF-8").
func TestSubmitRefusesAFlagThatIsNotUTF8NamingIt(t *testing.T) {
	for _, flag := range []string{"--request-id", "--circuit", "--miner", "--task-name"} {
		_, _, err := runCuzk(t, "submit", flag, "f0\xfe", "--addr", "127.0.0.1:1")
		if err == nil || !strings.Contains(err.Error(), flag+" ") || !strings.Contains(err.Error(), "not valid UTF-8") {
			t.Errorf("submit %s with a byte that is not UTF-8: %v, want it refused naming the flag", flag, err)
		}
	}
}

// A reused request id: with other parameters the daemon refuses it
// (ALREADY_EXISTS) and submit prints no "returns the earlier job" note;
// with the same parameters it returns the earlier job, and says so.
func TestSubmitNotesTheEarlierJobOnlyWhenItReturnsIt(t *testing.T) {
	clearOTLPEnv(t)
	d := startDaemon(t, daemon.Config{})
	submit := func(n string) (string, error) {
		out, _, err := runCuzk(t, "submit", "--addr", d.addr, "--circuit", "mulchain", "--constraints", n, "--request-id", "reused")
		return out, err
	}
	out, err := submit("256")
	if err != nil || strings.Contains(out, "note") {
		t.Fatalf("first submit: %v\n%s", err, out)
	}
	job := regexp.MustCompile(`(?m)^job +(\S+)`).FindStringSubmatch(out)
	if job == nil {
		t.Fatalf("no job line:\n%s", out)
	}
	out, err = submit("512")
	if err == nil || !strings.Contains(err.Error(), "ALREADY_EXISTS: ") {
		t.Errorf("the id with other parameters: %v, want ALREADY_EXISTS", err)
	} else if want := `"reused" is mulchain with 256 constraints (the sample witness), not mulchain with 512 (the sample witness)`; !strings.Contains(err.Error(), want) {
		t.Errorf("the id with other parameters: %v, want it to say %s (not a witness of 0 bytes)", err, want)
	}
	if strings.Contains(out, "note") || strings.Contains(out, "earlier job") {
		t.Errorf("the refused reuse printed the note:\n%s", out)
	}
	out, err = submit("256")
	if err != nil {
		t.Fatalf("the id with the same parameters: %v\n%s", err, out)
	}
	for _, want := range []string{
		"note      request id reused was submitted before: this returns the earlier job (now SUCCEEDED)",
		"job       " + job[1] + " (request reused)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("same parameters: output lacks %q:\n%s", want, out)
		}
	}
}

// stagedEngine is a daemon whose one job moves through states, one per
// GetStatus call, and whose Prove answers once every state was reported:
// what submit prints does not depend on timing.
type stagedEngine struct {
	cuzkv1.UnimplementedProvingEngineServer
	mu     sync.Mutex
	states []cuzkv1.JobStatus
	// queued are the polls before states: the job queued behind ahead
	// others, or (memory) waiting for the memory budget.
	queued []queuedStep
	shown  int
	done   chan struct{}
}

type queuedStep struct {
	ahead  int
	memory bool
}

func (e *stagedEngine) AwaitProof(context.Context, *cuzkv1.AwaitProofRequest) (*cuzkv1.AwaitProofResponse, error) {
	return nil, status.Error(codes.NotFound, "no such request")
}

func (e *stagedEngine) GetStatus(context.Context, *cuzkv1.GetStatusRequest) (*cuzkv1.GetStatusResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.shown >= len(e.queued)+len(e.states) {
		return &cuzkv1.GetStatusResponse{}, nil
	}
	if e.shown < len(e.queued) {
		q := e.queued[e.shown]
		e.shown++
		out := &cuzkv1.GetStatusResponse{}
		for i := range q.ahead {
			out.Queued = append(out.Queued, &cuzkv1.JobInfo{JobId: fmt.Sprint("job-ahead-", i), RequestId: fmt.Sprint("ahead-", i), Status: cuzkv1.JobStatus_JOB_STATUS_QUEUED})
		}
		out.Queued = append(out.Queued, &cuzkv1.JobInfo{JobId: "job-1", RequestId: "staged", Status: cuzkv1.JobStatus_JOB_STATUS_QUEUED, MemoryWait: q.memory},
			&cuzkv1.JobInfo{JobId: "job-behind", RequestId: "behind", Status: cuzkv1.JobStatus_JOB_STATUS_QUEUED})
		return out, nil
	}
	st := e.states[e.shown-len(e.queued)]
	if e.shown++; e.shown == len(e.queued)+len(e.states) {
		close(e.done)
	}
	return &cuzkv1.GetStatusResponse{Running: []*cuzkv1.JobInfo{
		{JobId: "job-other", RequestId: "other", Status: cuzkv1.JobStatus_JOB_STATUS_PROVING},
		{JobId: "job-1", RequestId: "staged", Status: st},
	}}, nil
}

func (e *stagedEngine) Prove(ctx context.Context, r *cuzkv1.ProveRequest) (*cuzkv1.ProveResponse, error) {
	select {
	case <-e.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &cuzkv1.ProveResponse{Result: &cuzkv1.AwaitProofResponse{JobId: "job-1", RequestId: r.GetSubmit().GetRequestId(),
		Status: cuzkv1.AwaitProofResponse_COMPLETED, JobStatus: cuzkv1.JobStatus_JOB_STATUS_SUCCEEDED, Verified: true,
		Timings: &cuzkv1.Timings{QueueWaitMs: 0.7, MemoryWaitMs: 0, KeyLoadMs: 15.3, SynthesisMs: 1.7, DeviceWaitMs: 2443.3,
			ProveMs: 57.010552, SerializeMs: 0.04, VerifyMs: 2.8, TotalMs: 65432.1}}}, nil
}

// submit prints every state it sees the job in, once each, in order, then
// the final state; another job's states are not its. Queued, it says its
// place in the queue (again when that changes) or that it waits for the
// memory budget. Polled fast, and
// polled past the fast window (every statePollSlow).
func TestSubmitPrintsEachStateItSees(t *testing.T) {
	clearOTLPEnv(t)
	fast, fastFor, slow := statePoll, statePollFastFor, statePollSlow
	t.Cleanup(func() { statePoll, statePollFastFor, statePollSlow = fast, fastFor, slow })
	for _, c := range []struct {
		name          string
		fastFor, slow time.Duration
	}{{"fast", time.Hour, time.Hour}, {"slow", 0, 5 * time.Millisecond}} {
		// The fake moves a state per poll.
		statePoll, statePollFastFor, statePollSlow = 5*time.Millisecond, c.fastFor, c.slow
		e := &stagedEngine{done: make(chan struct{}), queued: []queuedStep{{ahead: 2}, {ahead: 2}, {ahead: 0}, {memory: true}}, states: []cuzkv1.JobStatus{
			cuzkv1.JobStatus_JOB_STATUS_SYNTHESIZING, cuzkv1.JobStatus_JOB_STATUS_SYNTHESIZING,
			cuzkv1.JobStatus_JOB_STATUS_WAITING_DEVICE, cuzkv1.JobStatus_JOB_STATUS_PROVING,
			cuzkv1.JobStatus_JOB_STATUS_SUCCEEDED, // a final state from a poll: printed once, from the result
		}}
		out, _, err := runCuzk(t, "submit", "--addr", serveEngine(t, e), "--request-id", "staged")
		if err != nil {
			t.Fatalf("%s: submit: %v\n%s", c.name, err, out)
		}
		var states []string
		for _, line := range strings.Split(out, "\n") {
			if rest, ok := strings.CutPrefix(line, "state     "); ok {
				states = append(states, rest)
			}
		}
		if got, want := strings.Join(states, "; "), "QUEUED, position 3 of 4; QUEUED, position 1 of 2; QUEUED, waiting for the memory budget; SYNTHESIZING; WAITING_DEVICE; PROVING; SUCCEEDED"; got != want {
			t.Errorf("%s: states printed: %s, want %s\n%s", c.name, got, want, out)
		}
		// Its timings as every duration cuzk prints (human.Duration), not
		// "0.7ms ... 65432.1ms".
		if want := "timings   queue 0.70 ms  memory 0.00 ms  keys 15.3 ms  synthesis 1.70 ms  device wait 2.4 s  prove 57.0 ms  serialize 0.04 ms  verify 2.80 ms  total 1 min 5 s\n"; !strings.Contains(out, want) {
			t.Errorf("%s: no timings line %q in\n%s", c.name, want, out)
		}
	}
}

// silentListener returns the address of a loopback listener that accepts
// TCP connections and holds them open, never reading or writing (a daemon
// or collector that does not answer); it and its connections close at the
// end of the test.
func silentListener(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return lis.Addr().String()
}

// A listener that accepts TCP and never speaks gRPC: submit's timeout says
// the daemon did not answer and nothing was submitted, not that the daemon
// keeps proving.
func TestSubmitToASilentListenerSaysNothingWasSubmitted(t *testing.T) {
	clearOTLPEnv(t)
	addr := silentListener(t)
	_, _, err := runCuzk(t, "submit", "--addr", addr, "--request-id", "silent", "--timeout", "2s")
	if err == nil {
		t.Fatal("submit to a silent listener succeeded")
	}
	want := "submit silent: the daemon at " + addr + " did not answer within --timeout 2s: nothing was submitted"
	if !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "keeps proving") {
		t.Errorf("error %q, want it to start %q and not say the daemon keeps proving", err, want)
	}
}

// A daemon that answered and then proves past --timeout: submit says the
// daemon keeps proving and how to wait for the same job again.
func TestSubmitTimeoutAfterTheDaemonAnsweredSaysItKeepsProving(t *testing.T) {
	clearOTLPEnv(t)
	e := &stagedEngine{done: make(chan struct{})} // Prove waits for its ctx
	_, _, err := runCuzk(t, "submit", "--addr", serveEngine(t, e), "--request-id", "long", "--timeout", "3s")
	if err == nil || !strings.Contains(err.Error(), "DEADLINE_EXCEEDED: ") ||
		!strings.Contains(err.Error(), "the daemon keeps proving: submit again with --request-id long") {
		t.Errorf("error %v, want DEADLINE_EXCEEDED and that the daemon keeps proving", err)
	}
}

// serveEngine serves e, a fake of the daemon's gRPC API, on a free port of
// 127.0.0.1 until the test ends, and returns its address.
func serveEngine(t *testing.T, e cuzkv1.ProvingEngineServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveEngineOn(t, lis, e)
	return lis.Addr().String()
}

// serveEngineOn serves e on lis until the test ends.
func serveEngineOn(t *testing.T, lis net.Listener, e cuzkv1.ProvingEngineServer) {
	srv := grpc.NewServer()
	cuzkv1.RegisterProvingEngineServer(srv, e)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
}

// A malformed --addr is the flag's error, naming what it takes, before
// any dial: "host:99999" said "Unavailable: invalid port; ... is cuzk
// serve running there?". A host that does not resolve is said so, and only
// an address where nothing listens asks whether cuzk serve runs there.
func TestDaemonAddressErrorsSayWhatIsWrong(t *testing.T) {
	for _, c := range []struct {
		addr, want string
	}{
		{"host:99999", `--addr "host:99999": port 99999 out of range (want 1 to 65535)`},
		{"127.0.0.1:0", `--addr "127.0.0.1:0": port 0 out of range (want 1 to 65535)`},
		{"localhost:nosuchservice", `--addr "localhost:nosuchservice": port "nosuchservice" is neither a number from 1 to 65535 nor a service name`},
		{"[::1", `--addr "[::1": want host[:port] or unix:///path (missing ']' in address)`},
	} {
		for _, args := range [][]string{{"submit", "--request-id", "r"}, {"status"}, {"cancel", "--request-id", "r"}} {
			start := time.Now()
			_, _, err := runCuzk(t, append(args, "--addr", c.addr)...)
			if err == nil || err.Error() != c.want {
				t.Errorf("%s --addr %s: %v, want %s", args[0], c.addr, err, c.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("%s --addr %s took %v: it dialled", args[0], c.addr, d)
			}
		}
	}
	const host = "nosuch.invalid:9820"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--request-id", "r"}, "submit r: cannot reach " + host + ": UNAVAILABLE: "},
		{[]string{"status"}, "status: cannot reach " + host + ": UNAVAILABLE: "},
		{[]string{"cancel", "--request-id", "r"}, "cancel r: cannot reach " + host + ": UNAVAILABLE: "},
	} {
		_, _, err := runCuzk(t, append(c.args, "--addr", host, "--timeout", "10s")...)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "cuzk serve") {
			t.Errorf("%s at a host that does not resolve: %v, want %s... without asking whether cuzk serve runs", c.args[0], err, c.want)
		}
	}
}

// A daemon that cannot be reached is named in one form by each command
// that calls one: no daemon answers at the address, the gRPC code and
// the dial's own last words, what was not done, and the question whether
// cuzk serve runs there. status and cancel printed gRPC's nested
// "Unavailable: connection error: desc = \"transport: Error while
// dialing: ...\"", before that its raw "rpc error: code = ...".
func TestDaemonCommandsSayAGRPCErrorAlike(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now: connection refused
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--request-id", "r"}, "submit r: no daemon answers at " + addr + ": UNAVAILABLE: connection refused; nothing was submitted: is cuzk serve running there?"},
		{[]string{"status"}, "status: no daemon answers at " + addr + ": UNAVAILABLE: connection refused: is cuzk serve running there?"},
		{[]string{"cancel", "--request-id", "r"}, "cancel r: no daemon answers at " + addr + ": UNAVAILABLE: connection refused; nothing was cancelled: is cuzk serve running there?"},
	} {
		_, _, err := runCuzk(t, append(c.args, "--addr", addr)...)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s at a closed port: %v, want %s", c.args[0], err, c.want)
		}
	}
}

// A server that answers but not in gRPC (a web UI such as Jaeger's :16686)
// is named as no cuzk daemon, for each command that calls one: status said
// gRPC's "UNAVAILABLE: frame too large, note that the frame header looked
// like an HTTP/1.1 header" (a new user's trial).
func TestDaemonCommandsNameAServerThatIsNotACuzkDaemon(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>a UI</html>"))
	}))
	defer web.Close()
	addr := strings.TrimPrefix(web.URL, "http://")
	for _, args := range [][]string{{"status"}, {"cancel", "--request-id", "r"}, {"submit", "--request-id", "r", "--timeout", "20s"}} {
		_, _, err := runCuzk(t, append(args, "--addr", addr)...)
		if err == nil || !strings.Contains(err.Error(), "the server at "+addr+" is not a cuzk daemon: it does not answer gRPC") ||
			strings.Contains(err.Error(), "is cuzk serve running there") || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%s at a web server: %v, want one line naming it no cuzk daemon", args[0], err)
		}
	}
}

// goneEngine takes a request and goes away during the job, as a daemon
// stopped by a second signal does: its Prove fails with the transport's
// UNAVAILABLE.
type goneEngine struct {
	cuzkv1.UnimplementedProvingEngineServer
}

func (goneEngine) AwaitProof(context.Context, *cuzkv1.AwaitProofRequest) (*cuzkv1.AwaitProofResponse, error) {
	return nil, status.Error(codes.NotFound, "no such request")
}

func (goneEngine) Prove(context.Context, *cuzkv1.ProveRequest) (*cuzkv1.ProveResponse, error) {
	return nil, status.Error(codes.Unavailable, `closing transport due to: connection error: desc = "error reading from server: EOF", received prior goaway: code: NO_ERROR, debug data: "graceful_stop"`)
}

// A daemon that goes away during the job is said in one line that names
// it, says the proof was not made and how to get it: submit printed the
// transport's "UNAVAILABLE: closing transport due to: ... goaway ..." (a new
// user's trial sent serve two SIGTERMs during a job).
func TestSubmitSaysTheDaemonWentAwayDuringTheJob(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveEngineOn(t, lis, goneEngine{})
	addr := lis.Addr().String()
	_, _, err = runCuzk(t, "submit", "--request-id", "gone-1", "--addr", addr)
	want := "submit gone-1: the daemon at " + addr + " stopped answering during the job (it shut down); the proof was not made: submit again with --request-id gone-1 once cuzk serve runs there"
	if err == nil || err.Error() != want {
		t.Errorf("submit to a daemon that went away: %v, want %s", err, want)
	}
}
