package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/daemon"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
)

// warmGPU is the CPU backend posing as a GPU whose kernels are ready only
// once warm is closed (backend.Warmer).
type warmGPU struct{ *cpu.Backend }

func (warmGPU) Name() string { return "cuda" }

func (warmGPU) Warmup(ctx context.Context) error {
	select {
	case <-warmGate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var (
	warmOnce    sync.Once
	warmGate    chan struct{}
	warmFactory = "fakewarm-test"
)

func health(t *testing.T, addr string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("health: %v", err)
	}
	return r.GetStatus()
}

// TestServeWarmsUpPipelinedWithABudget runs serve on a fake GPU whose
// backend warms up: the daemon listens at once, NOT_SERVING with the reason
// in cuzk status; a proof submitted meanwhile is synthesized and waits for
// the device; once warm it is proved and the daemon is SERVING. Then
// cuzk submit with a reused request id says it returns the earlier job,
// a multi-partition submit returns a proof per partition, and a size
// beyond the memory budget is RESOURCE_EXHAUSTED naming both numbers.
func TestServeWarmsUpPipelinedWithABudget(t *testing.T) {
	clearOTLPEnv(t)
	warmOnce.Do(func() {
		backend.Register(warmFactory, func(_ context.Context, o backend.Options) (backend.Backend, error) {
			return warmGPU{cpu.New(o.TracerProvider)}, nil
		})
	})
	warmGate = make(chan struct{})
	dir := t.TempDir()
	d := startDaemon(t, daemon.Config{
		Backend: "cuda", Release: "async", CPUWorkers: -1, QueueSize: 8,
		SynthesisWorkers: 2, MemoryBudget: "4GiB",
		ShutdownTimeout: 10 * time.Second, MaxMessageBytes: 1 << 20,
		GPUFactory: warmFactory,
		GPUs: func() ([]cudaspans.DeviceInfo, error) {
			return []cudaspans.DeviceInfo{{Ordinal: 0, Name: "GPU zero", TotalMemory: 1 << 30}}, nil
		},
	})
	addr := d.addr
	if !strings.Contains(d.log.String(), "2 synthesis workers, memory budget 4.0 GiB") {
		t.Errorf("start line does not name the stages:\n%s", d.log.String())
	}
	if h := health(t, addr); h != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health while warming up: %v, want NOT_SERVING", h)
	}
	out, _, err := runCuzk(t, "status", "--addr", addr)
	if err != nil || !strings.Contains(out, "NOT READY: warming up") || !strings.Contains(out, "budget 4.0 GiB") || !strings.Contains(out, "2 synthesis workers") {
		t.Errorf("cuzk status while warming up: %v\n%s", err, out)
	}
	c := d.client(t)
	pctx, pcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer pcancel()
	job, err := c.Submit(pctx, client.Request{RequestID: "early", Circuit: "mulchain", Constraints: 256, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	var state client.JobStatus
	for deadline := time.Now().Add(30 * time.Second); state != client.WaitingDevice && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		st, err := c.Status(pctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range st.Running {
			if r.ID == job.ID {
				state = r.Status
			}
		}
	}
	if state != client.WaitingDevice {
		t.Fatalf("a proof submitted while warming up is %q, want it synthesized and WAITING_DEVICE", state)
	}
	close(warmGate)
	res, err := c.Await(pctx, job.ID, 0)
	if err != nil || !res.Verified {
		t.Fatalf("the early proof after the warm-up: %+v %v", res, err)
	}
	for deadline := time.Now().Add(5 * time.Second); health(t, addr) != healthpb.HealthCheckResponse_SERVING; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not SERVING after the warm-up")
		}
	}

	out, errOut, err := runCuzk(t, "submit", "--addr", addr, "--circuit", "mulchain", "--constraints", "256", "--request-id", "early")
	if err != nil || !strings.Contains(out, "submitted before: this returns the earlier job (now SUCCEEDED)") || !strings.Contains(out, job.ID) || !strings.Contains(out, "state     SUCCEEDED") {
		t.Errorf("cuzk submit with a reused request id: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err = runCuzk(t, "submit", "--addr", addr, "--circuit", "mulchain", "--constraints", "256", "--partitions", "3", "--request-id", "parts",
		"--proof", filepath.Join(dir, "parts.bin"))
	if err != nil || !strings.Contains(out, "partition 2") || strings.Contains(out, "partition 3") || !strings.Contains(out, "verified  true") {
		t.Errorf("cuzk submit --partitions 3: %v\n%s%s", err, out, errOut)
	}
	_, err = c.Submit(pctx, client.Request{RequestID: "huge", Circuit: "mulchain", Constraints: 1 << 28})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "budget is 4.0 GiB") {
		t.Errorf("a proof beyond the budget: %v, want RESOURCE_EXHAUSTED naming the budget", err)
	}
	out, _, err = runCuzk(t, "status", "--addr", addr)
	if err != nil || !strings.Contains(out, "  ready") || !strings.Contains(out, "worker    cuda:0") || !strings.Contains(out, "succeeded 2") {
		t.Errorf("cuzk status after the proofs: %v\n%s", err, out)
	}
	if err := d.stop(); err != nil {
		t.Errorf("serve after cancel: %v", err)
	}
}

// issue 26 item 3: a daemon without a GPU is pipelined by default too,
// tuned with its CPU worker's proves as the device.
func TestServeWithoutGPUIsPipelinedAndStatusSaysSo(t *testing.T) {
	clearOTLPEnv(t)
	d := startDaemon(t, daemon.Config{
		Backend: "cpu", Release: "sync", CPUWorkers: -1, QueueSize: 4, SynthesisWorkers: -1,
		ShutdownTimeout: time.Second, MaxMessageBytes: 1 << 20,
	})
	addr := d.addr
	if h := health(t, addr); h != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health of a CPU daemon: %v, want SERVING at once (nothing to warm up)", h)
	}
	out, _, err := runCuzk(t, "status", "--addr", addr)
	if err != nil || !strings.Contains(out, " synthesis workers") || strings.Contains(out, "serial engine") || !strings.Contains(out, "  ready") || !strings.Contains(out, "device    host (cpu backend)") {
		t.Errorf("cuzk status of a CPU daemon: %v\n%s", err, out)
	}
	if _, _, err := runCuzk(t, "status", "--addr", "127.0.0.1:1", "--timeout", "2s"); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("status of no daemon: %v, want a one-line error", err)
	}
	d.stop()
	if err := serve(context.Background(), daemon.Config{Listen: "127.0.0.1:0", Backend: "cpu", Release: "sync", QueueSize: 1, MaxMessageBytes: 1,
		MemoryBudget: "lots", Log: d.log}); err == nil || !strings.Contains(err.Error(), "--memory-budget") {
		t.Errorf("serve --memory-budget lots: %v", err)
	}
	if err := serve(context.Background(), daemon.Config{Listen: "127.0.0.1:0", Backend: "cpu", Release: "sync", QueueSize: 1, MaxMessageBytes: 1,
		SynthesisWorkers: -2, Log: d.log}); err == nil || !strings.Contains(err.Error(), "--synthesis-workers") {
		t.Errorf("serve --synthesis-workers -2: %v", err)
	}
}

// failingWarmGPU is the CPU backend posing as a GPU whose warm-up fails,
// with the error the CUDA backend's Warmup gives (prover/gpu: it names
// the backend).
type failingWarmGPU struct{ *cpu.Backend }

func (failingWarmGPU) Name() string { return "cuda" }

func (failingWarmGPU) Warmup(context.Context) error {
	return errors.New("cuda backend: warm-up: nvrtc: compile msm_g2: out of memory")
}

var failWarmOnce sync.Once

func TestServeWarmupFailureStaysNotServing(t *testing.T) {
	clearOTLPEnv(t)
	const factory = "fakewarmfail-test"
	failWarmOnce.Do(func() {
		backend.Register(factory, func(_ context.Context, o backend.Options) (backend.Backend, error) {
			return failingWarmGPU{cpu.New(o.TracerProvider)}, nil
		})
	})
	d := startDaemon(t, daemon.Config{
		Backend: "cuda", Release: "sync", CPUWorkers: -1, QueueSize: 4, SynthesisWorkers: 1,
		ShutdownTimeout: time.Second, MaxMessageBytes: 1 << 20,
		GPUFactory: factory,
		GPUs: func() ([]cudaspans.DeviceInfo, error) {
			return []cudaspans.DeviceInfo{{Ordinal: 0, Name: "GPU zero"}}, nil
		},
	})
	addr := d.addr
	c := d.client(t)
	pctx, pcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer pcancel()
	// The devices get their jobs anyway (a proof compiles what it needs).
	if _, err := c.Prove(pctx, client.Request{RequestID: "after-failed-warmup", Circuit: "mulchain", Constraints: 256}); err != nil {
		t.Errorf("proof after a failed warm-up: %v", err)
	}
	st, err := c.Status(pctx)
	if err != nil {
		t.Fatal(err)
	}
	// The device once, the backend once (it named itself).
	const reason = "GPU 0 (GPU zero): cuda backend: warm-up: nvrtc: compile msm_g2: out of memory"
	if st.Ready || st.NotReadyReason != reason {
		t.Errorf("status after a failed warm-up: ready %v %q, want not ready %q", st.Ready, st.NotReadyReason, reason)
	}
	if h := health(t, addr); h != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health after a failed warm-up: %v, want NOT_SERVING", h)
	}
	if !strings.Contains(d.log.String(), "cuzk serve: "+reason+"\n") {
		t.Errorf("the log does not say the warm-up failed as %q:\n%s", reason, d.log.String())
	}
	d.stop()
}
