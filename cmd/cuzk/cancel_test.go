package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/urfave/cli/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/daemon"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
)

// untilCancelledGPU is the CPU backend under the name "cuda" whose
// ComputeH returns only when its context is cancelled: a job that ends
// by a cancel and never by itself, whatever the machine's load.
type untilCancelledGPU struct{ *cpu.Backend }

func (untilCancelledGPU) Name() string { return "cuda" }

func (untilCancelledGPU) ComputeH(ctx context.Context, keyID string, _ *fft.Domain, _, _, _ []fr.Element) error {
	<-ctx.Done()
	return ctx.Err()
}

var untilCancelledOnce sync.Once

// startSlowDaemon runs a daemon whose jobs run until cancelled.
func startSlowDaemon(t *testing.T) *testDaemon {
	t.Helper()
	const factory = "untilcancelled-test"
	untilCancelledOnce.Do(func() {
		backend.Register(factory, func(_ context.Context, o backend.Options) (backend.Backend, error) {
			return untilCancelledGPU{Backend: cpu.New(o.TracerProvider)}, nil
		})
	})
	// The keys of the circuit the tests submit (mulchain, 256 constraints)
	// are made before the daemon starts: a job cancelled during its key
	// setup leaves that setup storing the keys after the daemon has
	// stopped, into a directory the test is removing.
	cache := filepath.Join(t.TempDir(), "cache")
	p, err := prover.New(context.Background(), "cpu", prover.WithKeyCacheDir(cache))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.LoadCircuit(context.Background(), "mulchain", 256); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(p.Close(context.Background()), p.Releaser().Close(context.Background())); err != nil {
		t.Fatal(err)
	}
	return startDaemon(t, daemon.Config{Backend: "cuda", GPUFactory: factory, ShutdownTimeout: time.Second, CacheDir: cache,
		GPUs: func() ([]cudaspans.DeviceInfo, error) {
			return []cudaspans.DeviceInfo{{Ordinal: 0, Name: "until-cancelled GPU", TotalMemory: 1 << 30}}, nil
		}})
}

// waitRunning waits until the daemon lists a running job of request rid
// and returns its job id.
func waitRunning(t *testing.T, c *client.Client, rid string) string {
	t.Helper()
	var id string
	waitFor(t, "a running job of request "+rid, time.Minute, func() bool {
		st, err := c.Status(context.Background())
		if err != nil {
			return false
		}
		for _, r := range st.Running {
			if r.RequestID == rid {
				id = r.ID
				return true
			}
		}
		return false
	})
	return id
}

// awaitCancelled checks that job id ended CANCELLED.
func awaitCancelled(t *testing.T, c *client.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.Await(ctx, id, 0)
	if status.Code(err) != codes.Canceled || res == nil || res.Status != client.Cancelled {
		t.Errorf("job %s after the cancel: %+v, %v; want CANCELLED", id, res, err)
	}
}

// cuzk cancel --request-id cancels a job that would run forever; an
// unknown request id, or none, is a one-line error.
func TestCancelCancelsAJobByRequestID(t *testing.T) {
	clearOTLPEnv(t)
	d := startSlowDaemon(t)
	c := d.client(t)
	if _, err := c.Submit(context.Background(), client.Request{RequestID: "slow-1", Circuit: "mulchain", Constraints: 256}); err != nil {
		t.Fatal(err)
	}
	id := waitRunning(t, c, "slow-1")
	out, _, err := runCuzk(t, "cancel", "--addr", d.addr, "--request-id", "slow-1")
	// The running job is stopped, not cancelled yet, when the answer comes:
	// the line says so (it said "cancelled ..., now RUNNING").
	if err != nil || !(out == "cancelled job "+id+" (request slow-1), now CANCELLED\n" ||
		strings.HasPrefix(out, "cancelling job "+id+" (request slow-1): it is being stopped (") && !strings.Contains(out, "CANCELLED")) ||
		strings.Count(out, "\n") != 1 {
		t.Fatalf("cancel: %v\n%s", err, out)
	}
	awaitCancelled(t, c, id)
	_, _, err = runCuzk(t, "cancel", "--addr", d.addr, "--request-id", "nosuch")
	if want := `cancel nosuch at ` + d.addr + `: the daemon has no job of request id "nosuch"`; err == nil || err.Error() != want {
		t.Errorf("cancel of an unknown id: %v, want %q", err, want)
	}
	_, _, err = runCuzk(t, "cancel", "--addr", d.addr, "--request-id", "slow-1")
	if err == nil || !strings.Contains(err.Error(), "the job already ended: ") || strings.Contains(err.Error(), "\n") ||
		strings.Contains(err.Error(), "already finished") || !strings.Contains(err.Error(), " is CANCELLED") {
		t.Errorf("cancel of an ended job: %v, want one line saying once that it ended, and how", err)
	}
	if _, _, err := runCuzk(t, "cancel", "--addr", d.addr); err == nil || err.Error() != "cancel: --request-id is required" {
		t.Errorf("cancel without --request-id: %v", err)
	}
}

// SIGINT and SIGTERM on a waiting `cuzk submit` (main, in a child
// process) cancel its job on the daemon, print one line naming the
// request and job, and exit 130.
func TestSubmitInterruptedCancelsItsJobAndExits130(t *testing.T) {
	clearOTLPEnv(t)
	d := startSlowDaemon(t)
	c := d.client(t)
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		rid := "interrupted-" + strings.ReplaceAll(sig.String(), " ", "-")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcessMain$", "--",
			"submit", "--addr", d.addr, "--circuit", "mulchain", "--constraints", "256", "--request-id", rid)
		cmd.Env = append(os.Environ(), "CUZK_HELPER_MAIN=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		id := waitRunning(t, c, rid)
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
			t.Errorf("%v: submit ended with %v, want exit %d\n%s", sig, err, exitInterrupted, stderr.String())
		}
		want := "cuzk: submit " + rid + ": interrupted: cancelling job " + id + ": it is being stopped ("
		done := "cuzk: submit " + rid + ": interrupted: cancelled job " + id + ", now CANCELLED"
		if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], want) && lines[0] != done {
			t.Errorf("%v: stderr %q, want one line starting %q", sig, stderr.String(), want)
		}
		awaitCancelled(t, c, id)
	}
}

// A submit interrupted before the daemon answered says nothing was
// submitted (and cancels nothing), exit 130.
func TestSubmitInterruptedBeforeTheDaemonAnsweredSaysNothingWasSubmitted(t *testing.T) {
	clearOTLPEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	app := newApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	err := app.RunContext(ctx, []string{"cuzk", "submit", "--addr", "127.0.0.1:1", "--request-id", "early"})
	var ec cli.ExitCoder
	if !errors.As(err, &ec) || ec.ExitCode() != exitInterrupted ||
		err.Error() != "submit early: interrupted before the daemon at 127.0.0.1:1 answered: nothing was submitted" {
		t.Errorf("submit with its context cancelled: %v, want exit %d and that nothing was submitted", err, exitInterrupted)
	}
}

// enteredEngine is a stagedEngine whose Prove says when it was called; it
// has no CancelProof (UNIMPLEMENTED), so a cancel of it fails.
type enteredEngine struct {
	stagedEngine
	entered chan struct{}
}

func (e *enteredEngine) Prove(ctx context.Context, r *cuzkv1.ProveRequest) (*cuzkv1.ProveResponse, error) {
	close(e.entered)
	return e.stagedEngine.Prove(ctx, r)
}

// An interrupted submit whose cancel fails says so, that the job may go
// on, and how to find it, in one line; exit 130.
func TestSubmitInterruptedWhoseCancelFailsSaysTheJobGoesOn(t *testing.T) {
	clearOTLPEnv(t)
	e := &enteredEngine{stagedEngine: stagedEngine{done: make(chan struct{})}, entered: make(chan struct{})}
	addr := serveEngine(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-e.entered:
			cancel() // the signal's path: submit's context ends
		case <-time.After(time.Minute):
		}
	}()
	app := newApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	err := app.RunContext(ctx, []string{"cuzk", "submit", "--addr", addr, "--request-id", "stays"})
	var ec cli.ExitCoder
	if !errors.As(err, &ec) || ec.ExitCode() != exitInterrupted {
		t.Fatalf("submit: %v, want exit %d", err, exitInterrupted)
	}
	for _, want := range []string{"submit stays: interrupted; cancel failed (UNIMPLEMENTED", "goes on",
		"cuzk status --addr " + addr, "cuzk cancel --addr " + addr + " --request-id stays"} {
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %q lacks %q (or is not one line)", err, want)
		}
	}
}
