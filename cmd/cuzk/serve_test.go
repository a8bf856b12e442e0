package main

import (
	"bytes"
	"context"
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/daemon"
	"github.com/otelcuzk/otelcuzk/internal/logtest"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
)

func clearOTLPEnv(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_SAMPLER"} {
		t.Setenv(k, "")
	}
}

// TestServeSubmitAndShutdownOnSIGTERM runs `cuzk serve` in-process on the
// CPU backend, proves through the client and through `cuzk submit`, reads
// the metrics, then sends the process SIGTERM while a proof runs: the
// proof must still be answered, serve must return nil (exit 0), and the
// spans must be in the trace file.
func TestServeSubmitAndShutdownOnSIGTERM(t *testing.T) {
	clearOTLPEnv(t)
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	traceFile := filepath.Join(dir, "trace.jsonl")
	var logBuf logtest.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = io.Discard, &logBuf
	served := make(chan error, 1)
	go func() {
		served <- app.Run([]string{"cuzk", "serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
			"--backend", "cpu", "--cpu-workers", "2", "--release", "async", "--trace-file", traceFile})
	}()
	re := regexp.MustCompile(`listening on (\S+) \(metrics (\S+)\)`)
	var addr, metricsAddr string
	for deadline := time.Now().Add(20 * time.Second); addr == ""; {
		if m := re.FindStringSubmatch(logBuf.String()); m != nil {
			addr, metricsAddr = m[1], m[2]
			break
		}
		select {
		case err := <-served:
			t.Fatalf("serve ended early: %v\n%s", err, logBuf.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", logBuf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Prove(ctx, client.Request{RequestID: "serve-1", Circuit: "mulchain", Constraints: 256, Verify: true})
	if err != nil || !res.Verified || len(res.Proof) == 0 || res.Backend != "cpu" || res.TraceID == "" {
		t.Fatalf("prove through the daemon: %+v %v\n%s", res, err, logBuf.String())
	}
	if _, err := c.Prove(ctx, client.Request{RequestID: "serve-bad", Circuit: "nope", Constraints: 256}); status.Code(err) != codes.NotFound {
		t.Errorf("unknown circuit: %v, want NOT_FOUND", err)
	}
	// Sizes no worker can prove are refused at submit, holding no queue slot.
	for _, n := range []uint64{0, 1 << 40} {
		if _, err := c.Submit(ctx, client.Request{RequestID: fmt.Sprint("size-", n), Circuit: "mulchain", Constraints: n}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("submit of %d constraints: %v, want INVALID_ARGUMENT at submit", n, err)
		}
	}

	// Witnesses in the right format that the real pipeline refuses, and a
	// good one, interleaved.
	good := circuitstest.WitnessBytes(t, "mulchain", 256, 7)
	short := shortenWitness(good)
	unsat := append([]byte(nil), good...)
	unsat[len(unsat)-1] ^= 1 // the last secret value, changed: the chain no longer holds
	for i, bad := range [][]byte{short, unsat} {
		_, err := c.Prove(ctx, client.Request{RequestID: fmt.Sprint("bad-w-", i), Circuit: "mulchain", Constraints: 256, Witness: bad})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("bad witness %d: %v, want INVALID_ARGUMENT", i, err)
		}
		if _, err := c.Prove(ctx, client.Request{RequestID: fmt.Sprint("good-w-", i), Circuit: "mulchain", Constraints: 256, Witness: good, Verify: true}); err != nil {
			t.Errorf("good witness after bad %d: %v", i, err)
		}
	}

	out, errOut, err := runCuzk(t, "submit", "--addr", addr, "--circuit", "mulchain", "--constraints", "256",
		"--priority", "high", "--request-id", "submit-1", "--miner", "f01000", "--sector", "5", "--proof", filepath.Join(dir, "p.bin"))
	if err != nil {
		t.Fatalf("submit: %v\n%s", err, errOut)
	}
	for _, want := range []string{"job-", "submit-1", "trace ", "timings", "prove ", "verified  true", "p.bin"} {
		if !strings.Contains(out, want) {
			t.Errorf("submit output lacks %q:\n%s", want, out)
		}
	}
	// A caller's TRACEPARENT makes the proof part of the caller's trace.
	const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	t.Setenv("TRACEPARENT", "00-"+callerTrace+"-00f067aa0ba902b7-01")
	out, errOut, err = runCuzk(t, "submit", "--addr", addr, "--circuit", "mulchain", "--constraints", "256", "--request-id", "submit-traced")
	if err != nil || !strings.Contains(out, callerTrace) {
		t.Errorf("submit with TRACEPARENT: want trace %s in the output, got %v\n%s%s", callerTrace, err, out, errOut)
	}
	os.Unsetenv("TRACEPARENT")
	if _, _, err := runCuzk(t, "submit", "--addr", addr, "--circuit", "mulchain", "--request-id", ""+
		"x", "--priority", "urgent"); err == nil || !strings.Contains(err.Error(), "priority") {
		t.Errorf("submit with a bad priority: %v", err)
	}

	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !regexp.MustCompile(`cuzk_proofs_completed_total\{[^}]*cuzk_circuit_id="mulchain"[^}]*\} 5`).Match(body) {
		t.Errorf("metrics lack the five completed mulchain proofs (serve-1, two good witnesses, two submits):\n%s", body)
	}

	// A proof in flight when SIGTERM arrives: a size whose first use (key
	// setup) and prove take long enough to still be running.
	inflight := make(chan error, 1)
	go func() {
		r, err := c.Prove(ctx, client.Request{RequestID: "inflight", Circuit: "mulchain", Constraints: 1 << 12, Verify: true})
		if err == nil && !r.Verified {
			err = fmt.Errorf("not verified")
		}
		inflight <- err
	}()
	for deadline := time.Now().Add(20 * time.Second); ; {
		st, err := c.Status(ctx)
		if err == nil && len(st.Running) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the in-flight proof never ran: %+v %v", st, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-inflight; err != nil {
		t.Errorf("proof in flight at SIGTERM: %v", err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve after SIGTERM: %v (exit status would be 1)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return after SIGTERM")
	}
	log := logBuf.String()
	if !strings.Contains(log, "shutting down") || !strings.Contains(log, "6 proofs succeeded") {
		t.Errorf("serve log:\n%s", log)
	}
	if _, err := c.Prove(ctx, client.Request{RequestID: "after", Circuit: "mulchain", Constraints: 256}); status.Code(err) != codes.Unavailable {
		t.Errorf("prove after shutdown: %v, want UNAVAILABLE", err)
	}
	trace, err := os.ReadFile(traceFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"engine.job"`, `"engine.queue"`, `"pipeline.prove"`, `"inflight"`, `"submit-1"`, `"f01000"`} {
		if !bytes.Contains(trace, []byte(want)) {
			t.Errorf("trace file lacks %s", want)
		}
	}
}

func TestServeRejectsBadFlags(t *testing.T) {
	clearOTLPEnv(t)
	dir := t.TempDir()
	wantRefused(t, []string{"serve", "--backend", "cpu", "--metrics-listen", "", "--trace-file", filepath.Join(dir, "t.jsonl")}, []badArgs{
		{[]string{"--tls-cert", "c.pem"}, "go together"},
		{[]string{"--queue-size", "0"}, "queue-size"},
		{[]string{"--release", "later"}, `--release "later": unknown release mode`},
		{[]string{"--backend", "tpu"}, "backend"},
		{[]string{"--listen", "256.0.0.1:1"}, "listen"},
		{[]string{"--listen", ""}, "--listen is empty"}, // not every interface on a random port
		{[]string{"--listen", " "}, "--listen is empty"},
		{[]string{"--memory-budget", "0.5"}, "less than one byte"}, // not "no budget"
		{[]string{"--tls-cert", filepath.Join(dir, "none.pem"), "--tls-key", filepath.Join(dir, "none.key")}, "TLS"},
		{[]string{"--circuit-file", "onlyname"}, "NAME:R1CS:PK"},
		{[]string{"--circuit-file", "x:" + filepath.Join(dir, "no.r1cs") + ":" + filepath.Join(dir, "no.pk")}, "no.r1cs"},
		{[]string{"--circuit-file", "mulchain:a:b"}, "built-in"},
		{[]string{"--circuit-file", "x::" + filepath.Join(dir, "no.pk")}, "empty R1CS or PK path"},
		{[]string{"--circuit-file", "my circuit:a:b"}, "U+0020"},
	})
}

// badArgs is extra arguments of a command line that cuzk must refuse, and
// a word of the error it must give.
type badArgs struct {
	args []string
	want string
}

// wantRefused runs cuzk with base and then each case's arguments, and
// fails t unless each returns an error that contains the case's word.
func wantRefused(t *testing.T, base []string, cases []badArgs) {
	t.Helper()
	for _, c := range cases {
		_, _, err := runCuzk(t, append(append([]string(nil), base...), c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: %v, want an error naming %q", base[0], c.args, err, c.want)
		}
	}
}

// shortenWitness drops the last secret value of a gnark binary witness and
// fixes the header, so the format is valid but the count is one short.
func shortenWitness(w []byte) []byte {
	out := append([]byte(nil), w[:len(w)-32]...)
	binary.BigEndian.PutUint32(out[4:8], binary.BigEndian.Uint32(out[4:8])-1)
	binary.BigEndian.PutUint32(out[8:12], binary.BigEndian.Uint32(out[8:12])-1)
	return out
}

// fakeGPU is the CPU backend under the name "cuda", standing in for one
// GPU so the spread over devices is tested without hardware.
type fakeGPU struct{ *cpu.Backend }

func (fakeGPU) Name() string { return "cuda" }

var (
	fakeGPUOnce    sync.Once
	fakeGPUMu      sync.Mutex
	fakeGPUOpened  = map[int]int{}
	fakeGPUFactory = "fakecuda-test"
)

// TestServeSpreadsProofsOverGPUs serves with two (fake) GPUs: each gets a
// Prover opened on its own ordinal and a worker, and concurrent proofs
// run on both.
func TestServeSpreadsProofsOverGPUs(t *testing.T) {
	clearOTLPEnv(t)
	fakeGPUOnce.Do(func() {
		backend.Register(fakeGPUFactory, func(_ context.Context, o backend.Options) (backend.Backend, error) {
			fakeGPUMu.Lock()
			fakeGPUOpened[o.DeviceOrdinal]++
			fakeGPUMu.Unlock()
			return fakeGPU{cpu.New(o.TracerProvider)}, nil
		})
	})
	d := startDaemon(t, daemon.Config{
		Backend: "cuda", Release: "async", CPUWorkers: -1, QueueSize: 8,
		ShutdownTimeout: 10 * time.Second, MaxMessageBytes: 1 << 20,
		GPUFactory: fakeGPUFactory,
		GPUs: func() ([]cudaspans.DeviceInfo, error) {
			return []cudaspans.DeviceInfo{{Ordinal: 0, Name: "GPU zero", TotalMemory: 1 << 30}, {Ordinal: 1, Name: "GPU one", TotalMemory: 1 << 30}}, nil
		},
	})
	c := d.client(t)
	pctx, pcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer pcancel()
	var wg sync.WaitGroup
	workers := make(chan string, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Prove(pctx, client.Request{RequestID: fmt.Sprint("gpu-", i), Circuit: "mulchain", Constraints: 1 << 10, Verify: true})
			if err != nil || !res.Verified || res.Backend != "cuda" {
				t.Errorf("proof %d: %+v %v", i, res, err)
				return
			}
			workers <- res.Worker
		}()
	}
	wg.Wait()
	close(workers)
	used := map[string]int{}
	for w := range workers {
		used[w]++
	}
	st, err := c.Status(pctx)
	if err != nil {
		t.Fatal(err)
	}
	if used["cuda:0"] == 0 || used["cuda:1"] == 0 || len(st.Workers) != 2 {
		t.Errorf("proofs per worker %v, workers %+v: want both GPUs used and no CPU worker", used, st.Workers)
	}
	if len(st.Devices) != 2 || st.Devices[1].Name != "GPU one" || st.Devices[1].MemoryTotal != 1<<30 {
		t.Errorf("devices %+v", st.Devices)
	}
	fakeGPUMu.Lock()
	if fakeGPUOpened[0] == 0 || fakeGPUOpened[1] == 0 {
		t.Errorf("backends opened per ordinal %v, want 0 and 1", fakeGPUOpened)
	}
	fakeGPUMu.Unlock()
	if err := d.stop(); err != nil {
		t.Errorf("serve after cancel: %v", err)
	}
}

func TestServeCUDAWithoutGPUBackend(t *testing.T) {
	clearOTLPEnv(t)
	dir := t.TempDir()
	err := serve(context.Background(), daemon.Config{Listen: "127.0.0.1:0", Backend: "cuda", Release: "sync", QueueSize: 1, MaxMessageBytes: 1 << 20,
		CPUWorkers: -1, TraceFile: filepath.Join(dir, "t.jsonl"), Log: io.Discard, GPUFactory: "no-such-gpu-backend"})
	if !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("--backend cuda without the GPU backend: %v, want ErrBackendUnavailable", err)
	}
	if want := "no-such-gpu-backend backend unavailable: not built into this binary (it registers from prover/gpu); use --backend cpu, or --backend auto to fall back to the CPU"; err == nil || err.Error() != want {
		t.Errorf("--backend cuda without the GPU backend: %v, want %q", err, want)
	}
}

// On a host without a GPU, serve --backend cuda names the backend and the
// reason once, as prove does; it said "backend unavailable: no CUDA
// device: ..." without naming the backend.
func TestServeCUDAWithoutDeviceSaysItOnce(t *testing.T) {
	if _, err := cudaspans.Devices(); err == nil {
		t.Skip("this host has a CUDA device")
	}
	clearOTLPEnv(t)
	dir := t.TempDir()
	err := serve(context.Background(), daemon.Config{Listen: "127.0.0.1:0", Backend: "cuda", Release: "sync", QueueSize: 1, MaxMessageBytes: 1 << 20,
		CPUWorkers: -1, TraceFile: filepath.Join(dir, "t.jsonl"), Log: io.Discard})
	if err == nil || !strings.HasPrefix(err.Error(), "cuda backend unavailable: no CUDA device: ") || strings.Count(err.Error(), "unavailable") != 1 {
		t.Errorf("serve --backend cuda without a device: %v, want 'cuda backend unavailable: no CUDA device: REASON'", err)
	}
	if !errors.Is(err, backend.ErrUnavailable) || !errors.Is(err, cudaspans.ErrNoDevice) {
		t.Errorf("serve --backend cuda without a device: %v wraps neither backend.ErrUnavailable nor cudaspans.ErrNoDevice", err)
	}
}

func TestSubmitToNoDaemonFailsFast(t *testing.T) {
	clearOTLPEnv(t)
	start := time.Now()
	_, _, err := runCuzk(t, "submit", "--addr", "127.0.0.1:1", "--circuit", "mulchain", "--constraints", "256")
	// It said "Unavailable: connection error: desc = ..." and not whether
	// anything was submitted.
	if err == nil || !strings.HasSuffix(err.Error(), "no daemon answers at 127.0.0.1:1: UNAVAILABLE: connection refused; nothing was submitted: is cuzk serve running there?") ||
		strings.Contains(err.Error(), "\n") {
		t.Errorf("submit to a closed port: %v, want one line saying nothing was submitted and asking whether cuzk serve runs", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("submit took %v to fail", d)
	}
	if _, _, err := runCuzk(t, "submit", "--witness", filepath.Join(t.TempDir(), "none.bin")); err == nil || !strings.Contains(err.Error(), "witness") {
		t.Errorf("submit with a missing witness file: %v", err)
	}
	// Refused before any request is sent (there is no daemon at port 1:
	// an error about the connection would mean the check came too late).
	for _, bad := range [][]string{
		{"--proof", filepath.Join(t.TempDir(), "missing-dir", "p.bin")},
		{"--proof", t.TempDir()},
		{"--timeout", "-1s"},
	} {
		_, _, err := runCuzk(t, append([]string{"submit", "--addr", "127.0.0.1:1"}, bad...)...)
		if err == nil || strings.Contains(err.Error(), "UNAVAILABLE") {
			t.Errorf("submit %v: %v, want a refusal before contacting the daemon", bad, err)
		}
	}
}

// circuitFiles writes a circuit's compiled R1CS and keys to files and gives
// the --circuit-file spec that registers them as name, and the witness in
// its binary form.
func circuitFiles(t *testing.T, name string, ccs, pk, vk io.WriterTo, w encoding.BinaryMarshaler) (spec string, witness []byte) {
	t.Helper()
	dir := t.TempDir()
	write := func(file string, w io.WriterTo) string {
		path := filepath.Join(dir, file)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := w.WriteTo(f); err != nil {
			t.Fatal(err)
		}
		return path
	}
	spec = name + ":" + write("c.r1cs", ccs) + ":" + write("c.pk", pk) + ":" + write("c.vk", vk)
	witness, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return spec, witness
}

// TestServeProvesCircuitFromFiles registers a circuit from its compiled
// R1CS and keys (--circuit-file) and proves it with a caller's witness.
func TestServeProvesCircuitFromFiles(t *testing.T) {
	clearOTLPEnv(t)
	fx := circuitstest.Setup(t, "mulchain", 256, 3)
	// A name of its own per run: the circuit registry is the process's
	// (go test -count=2 runs this twice in one process).
	name := fmt.Sprintf("usercircuit-%d", time.Now().UnixNano())
	spec, wb := circuitFiles(t, name, fx.CCS, fx.PK, fx.VK, fx.Witness)

	d := startDaemon(t, daemon.Config{Backend: "cpu", Release: "sync", CPUWorkers: 1,
		QueueSize: 4, ShutdownTimeout: 5 * time.Second, MaxMessageBytes: 1 << 20,
		CircuitFiles: []string{spec}})
	c := d.client(t)
	pctx, pcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer pcancel()
	res, err := c.Prove(pctx, client.Request{RequestID: "file-1", Circuit: name, Witness: wb, Verify: true})
	if err != nil || !res.Verified {
		t.Fatalf("prove a circuit from files: %+v %v", res, err)
	}
	if _, err := c.Prove(pctx, client.Request{RequestID: "file-2", Circuit: name, Verify: true}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("file circuit without a witness: %v, want INVALID_ARGUMENT", err)
	}
	if err := d.stop(); err != nil {
		t.Errorf("serve: %v", err)
	}
}

// Nonsense flag values and a malformed CUDA backend variable are refused at
// start, on one line, on a host without a GPU too.
func TestServeAndProveRefuseNonsenseValuesAtStart(t *testing.T) {
	clearOTLPEnv(t)
	dir := t.TempDir()
	base := []string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--trace-file", filepath.Join(dir, "t.jsonl")}
	wantRefused(t, base, []badArgs{
		{[]string{"--cpu-workers", "-5"}, "--cpu-workers"},
		{[]string{"--shutdown-timeout", "-1s"}, "--shutdown-timeout"},
		{[]string{"--max-message-bytes", "0"}, "--max-message-bytes"},
		{[]string{"--max-message-bytes", "1"}, "--max-message-bytes 1: want at least 65536"},
	})
	for _, env := range []string{"CUZK_CUDA_MSM_G2", "CUZK_CUDA_HOST_COPY", "CUZK_CUPTI_NO_FORCED_FLUSH"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "bogus")
			if _, _, err := runCuzk(t, append(base, "--backend", "cpu")...); err == nil || !strings.Contains(err.Error(), env) {
				t.Errorf("serve with %s=bogus: %v, want an error naming it", env, err)
			}
			proof := filepath.Join(dir, "p.bin")
			_, _, err := runCuzk(t, "prove", "--backend", "cpu", "--constraints", "1024", "--proof", proof,
				"--trace-file", filepath.Join(dir, "t.jsonl"))
			if err == nil || !strings.Contains(err.Error(), env) {
				t.Errorf("prove with %s=bogus: %v, want an error naming it", env, err)
			}
			if _, statErr := os.Stat(proof); statErr == nil {
				t.Error("a proof file was written")
			}
		})
	}
}

// Ctrl-C (SIGTERM's path) on a daemon proving a job says at once what the
// shutdown waits for: the job by id, step and worker, for how long, and
// that it is cancelled then ("shutting down (running proofs may finish
// for 30s)" named none, and a CPU prove held the daemon on silently).
func TestServeShutdownSaysWhatItWaitsFor(t *testing.T) {
	clearOTLPEnv(t)
	d := startSlowDaemon(t)
	c := d.client(t)
	if _, err := c.Submit(context.Background(), client.Request{RequestID: "long", Circuit: "mulchain", Constraints: 256}); err != nil {
		t.Fatal(err)
	}
	id := waitRunning(t, c, "long")
	// Its step too: the shutdown line names it (on a loaded host the
	// worker was seen before the step span's start reached the daemon).
	waitFor(t, "the job on the device, in a step", 30*time.Second, func() bool {
		st, err := c.Status(context.Background())
		return err == nil && len(st.Running) == 1 && st.Running[0].Worker == "cuda:0" && st.Running[0].Step != ""
	})
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^cuzk serve: shutting down: waiting up to 1s for 1 running job to finish \(` + regexp.QuoteMeta(id) +
		` in [a-z0-9_.]+ on cuda:0\), then cancelling it; a second signal quits at once$`)
	if !line.MatchString(d.log.String()) {
		t.Errorf("the daemon's log does not say what the shutdown waits for:\n%s", d.log.String())
	}
}

// --max-message-bytes takes bytes with a unit, as --memory-budget does
// (64MiB was refused "not an integer", and the help showed 67108864);
// digits still work; a share or a nonsense unit is one line naming the
// flag.
func TestServeMaxMessageBytesTakesUnits(t *testing.T) {
	for in, want := range map[string]int{"64MiB": 64 << 20, "67108864": 67108864, "1GB": 1e9, "512 KiB": 512 << 10, "2GiB": 0, "0": 0} {
		got, err := parseMessageBytes(in)
		if in == "2GiB" {
			if err == nil {
				t.Errorf("--max-message-bytes %s: %d, want refused (gRPC's bound is below 2 GiB)", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("--max-message-bytes %s: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"64XB", "70%", "", "-1"} {
		_, err := parseMessageBytes(in)
		if want := "serve: --max-message-bytes " + in + ": want bytes, in digits or with a unit, up to 2 GiB (64MiB, 1GB, 67108864)"; err == nil || err.Error() != want {
			t.Errorf("--max-message-bytes %q: %v, want %q", in, err, want)
		}
	}
	// In front of a cuzk, cuzk's own bound (128 MiB) unless the flag is
	// given.
	for _, tc := range []struct {
		flag     string
		set      bool
		upstream string
		want     int
	}{{"64MiB", false, "127.0.0.1:9821", 128 << 20}, {"64MiB", false, "", 64 << 20}, {"32MiB", true, "127.0.0.1:9821", 32 << 20}} {
		if got, err := messageBytes(tc.flag, tc.set, tc.upstream); err != nil || got != tc.want {
			t.Errorf("messageBytes(%q, set %v, upstream %q) = %d, %v; want %d", tc.flag, tc.set, tc.upstream, got, err, tc.want)
		}
	}
	help, _, err := runCuzk(t, "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if flat := strings.Join(strings.Fields(help), " "); !strings.Contains(flat, `(default: "64MiB")`) || strings.Contains(flat, "67108864") {
		t.Errorf("serve --help does not show --max-message-bytes's default as 64MiB")
	}
	_, _, err = runCuzk(t, "serve", "--max-message-bytes", "64XB", "--listen", "127.0.0.1:0", "--metrics-listen", "")
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--max-message-bytes 64XB") {
		t.Errorf("serve --max-message-bytes 64XB: %v, want one line naming the flag", err)
	}
}
