package server

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/engine"
)

// stagedRunner is a prover.StagedRunner whose device stage waits for gate
// (when set); its proof names the request and the witness's last byte.
type stagedRunner struct{ gate chan struct{} }

type synthesized struct {
	req   prover.Request
	freed chan struct{}
}

func (s *synthesized) Release(context.Context) error {
	select {
	case <-s.freed:
	default:
		close(s.freed)
	}
	return nil
}
func (s *synthesized) Freed() <-chan struct{} { return s.freed }

// Prove proves s on dev, a stagedRunner's device side (proveOn).
func (s *synthesized) Prove(ctx context.Context, dev prover.Device) (*prover.Result, error) {
	d, ok := dev.(interface {
		proveOn(context.Context, *synthesized) (*prover.Result, error)
	})
	if !ok {
		return nil, fmt.Errorf("a fake's synthesized proof proved on %T, not a fake device", dev)
	}
	return d.proveOn(ctx, s)
}

func (r *stagedRunner) Synthesize(_ context.Context, req *prover.Request) (prover.Synthesized, error) {
	return &synthesized{req: *req, freed: make(chan struct{})}, nil
}

func (r *stagedRunner) Proving() prover.Proving { return prover.Proving{} }

func (r *stagedRunner) proveOn(ctx context.Context, s *synthesized) (*prover.Result, error) {
	defer s.Release(ctx)
	if r.gate != nil {
		select {
		case <-r.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	last := byte(0)
	if w := s.req.Witness; len(w) > 0 {
		last = w[len(w)-1]
	}
	return &prover.Result{Proof: []byte(fmt.Sprintf("proof:%s:%d", s.req.RequestID, last)), Backend: "fake"}, nil
}

func (r *stagedRunner) Run(ctx context.Context, req *prover.Request) (*prover.Result, error) {
	s, _ := r.Synthesize(ctx, req)
	return s.Prove(ctx, r)
}

// startStaged starts a pipelined daemon (2 synthesis workers, one device)
// over run.
func startStaged(t *testing.T, run *stagedRunner, engOpts ...engine.Option) (*Server, *client.Client) {
	t.Helper()
	tp := sdktrace.NewTracerProvider()
	eng, err := engine.New([]engine.Worker{{Name: "dev0", Runner: run}},
		append([]engine.Option{engine.WithTracerProvider(tp), engine.WithSynthesisWorkers(2)}, engOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(eng, WithTracerProvider(tp), WithKnownCircuit(func(c string) bool { return testCircuits[c] }))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(serve(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() }) // before the server's shutdown
	return srv, c
}

func TestMultiPartitionRequestReturnsOneProofPerPartition(t *testing.T) {
	_, c := startStaged(t, &stagedRunner{})
	ctx := ctx5(t)
	parts := [][]byte{witness(1, 1, []byte{1}, []byte{10}), witness(1, 1, []byte{1}, []byte{11}), witness(1, 1, []byte{1}, []byte{12})}
	res, err := c.Prove(ctx, client.Request{RequestID: "porep", Circuit: "mulchain", Constraints: 16, Partitions: parts})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Partitions) != 3 {
		t.Fatalf("%d partition proofs, want 3", len(res.Partitions))
	}
	for k, p := range res.Partitions {
		if want := fmt.Sprintf("proof:porep:%d", 10+k); p.Index != k || string(p.Proof) != want {
			t.Errorf("partition %d: index %d proof %q, want %q", k, p.Index, p.Proof, want)
		}
	}
	if string(res.Proof) != "proof:porep:10" {
		t.Errorf("top-level proof %q, want partition 0's", res.Proof)
	}

	bad := [][]byte{parts[0], []byte("junk"), parts[2]}
	_, err = c.Submit(ctx, client.Request{RequestID: "porep-bad", Circuit: "mulchain", Constraints: 16, Partitions: bad})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "partition 1") {
		t.Errorf("a malformed partition: %v, want INVALID_ARGUMENT naming partition 1", err)
	}
	_, err = c.Submit(ctx, client.Request{RequestID: "porep-both", Circuit: "mulchain", Constraints: 16, Partitions: parts, Witness: parts[0]})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("witness beside partitions: %v, want INVALID_ARGUMENT", err)
	}
}

func TestStatusShowsStagesMemoryAndReadiness(t *testing.T) {
	run := &stagedRunner{gate: make(chan struct{})}
	est := func(*prover.Request) (uint64, error) { return 1 << 20, nil }
	srv, c := startStaged(t, run, engine.WithMemoryBudget(8<<20, est, func() uint64 { return 2 << 20 }))
	ctx := ctx5(t)
	var jobs []client.Job
	for i := range 3 {
		j, err := c.Submit(ctx, client.Request{RequestID: fmt.Sprint("s", i), Circuit: "mulchain", Constraints: 16})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	var st *client.Status
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		var err error
		if st, err = c.Status(ctx); err != nil {
			t.Fatal(err)
		}
		if st.Stages.Proving == 1 && st.Stages.WaitingDevice[client.Normal] == 2 {
			break
		}
	}
	if st.Stages.SynthesisWorkers != 2 || st.Stages.Proving != 1 || st.Stages.WaitingDevice[client.Normal] != 2 {
		t.Fatalf("stages %+v, want 2 synthesis workers, 1 proving, 2 waiting for the device", st.Stages)
	}
	if st.Memory.Budget != 8<<20 || st.Memory.Reserved != 3<<20 || st.Memory.Keys != 2<<20 || st.Memory.Peak != 5<<20 {
		t.Errorf("memory %+v, want budget 8 MiB, 3 MiB reserved, 2 MiB of keys, peak 5 MiB", st.Memory)
	}
	if !st.Ready || st.NotReadyReason != "" {
		t.Errorf("ready %v %q at start", st.Ready, st.NotReadyReason)
	}
	srv.SetNotReady("compiling msm_g2")
	if st, _ = c.Status(ctx); st.Ready || st.NotReadyReason != "compiling msm_g2" {
		t.Errorf("after SetNotReady: ready %v %q", st.Ready, st.NotReadyReason)
	}
	close(run.gate)
	for _, j := range jobs {
		if res, err := c.Await(ctx, j.ID, 0); err != nil || res.Timings.DeviceWait < 0 {
			t.Errorf("job %s: %+v %v", j.ID, res, err)
		}
	}
	if st, _ = c.Status(ctx); st.Workers[0].Busy <= 0 {
		t.Errorf("device worker busy %v after proving", st.Workers[0].Busy)
	}
}

func TestJobStatesThroughTheAPI(t *testing.T) {
	run := &stagedRunner{gate: make(chan struct{})}
	_, c := startStaged(t, run)
	ctx := ctx5(t)
	a, _ := c.Submit(ctx, client.Request{RequestID: "a", Circuit: "mulchain", Constraints: 16})
	b, _ := c.Submit(ctx, client.Request{RequestID: "b", Circuit: "mulchain", Constraints: 16})
	want := map[string]client.JobStatus{a.ID: client.Proving, b.ID: client.WaitingDevice}
	got := map[string]client.JobStatus{}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for id := range want {
			// Submitting the same request again reports the job's state now.
			j, err := c.Submit(ctx, client.Request{RequestID: map[string]string{a.ID: "a", b.ID: "b"}[id], Circuit: "mulchain", Constraints: 16})
			if err != nil || !j.Existing {
				t.Fatalf("resubmit: %+v %v", j, err)
			}
			got[j.ID] = j.Status
		}
		if got[a.ID] == want[a.ID] && got[b.ID] == want[b.ID] {
			break
		}
	}
	if got[a.ID] != client.Proving || got[b.ID] != client.WaitingDevice {
		t.Errorf("states %v, want a PROVING and b WAITING_DEVICE", got)
	}
	if st, err := c.Cancel(ctx, b.ID); err != nil || st != client.Cancelled {
		t.Errorf("cancel of a job waiting for the device: %v %v, want CANCELLED at once", st, err)
	}
	close(run.gate)
}

func TestOverBudgetIsResourceExhaustedNamingBothNumbers(t *testing.T) {
	est := func(*prover.Request) (uint64, error) { return 3 << 30, nil }
	_, c := startStaged(t, &stagedRunner{}, engine.WithMemoryBudget(2<<30, est, nil))
	_, err := c.Submit(ctx5(t), client.Request{RequestID: "big", Circuit: "merkle", Constraints: 1 << 22})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "3.0 GiB") || !strings.Contains(err.Error(), "2.0 GiB") {
		t.Errorf("over the budget: %v, want RESOURCE_EXHAUSTED naming 3.0 GiB and 2.0 GiB", err)
	}
}

// faultingRunner's device always faults.
type faultingRunner struct{ stagedRunner }

func (r *faultingRunner) proveOn(ctx context.Context, s *synthesized) (*prover.Result, error) {
	s.Release(ctx)
	return nil, fmt.Errorf("cuda: %w: device lost (Xid 79)", backend.ErrDeviceFault)
}

func TestDeviceFaultLeavesTheHealthService(t *testing.T) {
	var srvp *Server
	hook := engine.WithFaultHook(func(w string, err error) { srvp.DeviceFault(w, err) })
	run := &faultingRunner{}
	tp := sdktrace.NewTracerProvider()
	eng, err := engine.New([]engine.Worker{{Name: "cuda:0", Runner: run}}, engine.WithTracerProvider(tp), engine.WithSynthesisWorkers(1), hook)
	if err != nil {
		t.Fatal(err)
	}
	srvp, err = New(eng, WithKnownCircuit(func(c string) bool { return testCircuits[c] }))
	if err != nil {
		t.Fatal(err)
	}
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	go srvp.Serve(lis)
	t.Cleanup(func() { _ = srvp.Shutdown(context.Background()) })
	d := &daemon{srv: srvp, eng: eng, addr: lis.Addr().String()}
	if got := healthOf(t, d, WorkerService("cuda:0")); got != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("worker health at start: %v", got)
	}
	c, err := client.Dial(d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctx5(t)
	_, err = c.Prove(ctx, client.Request{RequestID: "x", Circuit: "mulchain", Constraints: 16})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "Xid 79") {
		t.Errorf("proof on the only device, which faults: %v, want UNAVAILABLE naming the fault", err)
	}
	for _, svc := range []string{WorkerService("cuda:0"), ""} {
		if got := healthOf(t, d, svc); got != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("health of %q after the fault: %v, want NOT_SERVING", svc, got)
		}
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Workers[0].Faulted || !strings.Contains(st.Workers[0].Fault, "Xid 79") || st.Ready || !strings.Contains(st.NotReadyReason, "every device faulted") {
		t.Errorf("status after the fault: worker %+v, ready %v %q", st.Workers[0], st.Ready, st.NotReadyReason)
	}
	if _, err := c.Submit(ctx, client.Request{RequestID: "y", Circuit: "mulchain", Constraints: 16}); status.Code(err) != codes.Unavailable {
		t.Errorf("submit with no healthy device: %v, want UNAVAILABLE", err)
	}
}

// GetStatus lists the jobs not started yet, in the order the daemon takes
// them up (the one waiting for the memory budget first, then CRITICAL
// before LOW), with their request ids, priorities and submission times,
// and the tuner's choice for the circuit and size with its reason; cuzk's
// pending count includes the memory wait.
func TestStatusListsQueuedJobsAndTheTuning(t *testing.T) {
	run := &stagedRunner{gate: make(chan struct{})}
	est := func(*prover.Request) (uint64, error) { return 1 << 20, nil }
	tuner := engine.NewTuner(4, 1, 1) // one synthesis at a time
	_, c := startStaged(t, run, engine.WithTuner(tuner), engine.WithMemoryBudget(3<<19, est, nil))
	ctx := ctx5(t)
	submit := func(id string, p client.Priority) client.Job {
		j, err := c.Submit(ctx, client.Request{RequestID: id, Circuit: "mulchain", Constraints: 16, Priority: p})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	before := time.Now()
	jobs := []client.Job{submit("a", client.Normal)}
	var st *client.Status
	waitFor := func(what string, ok func(*client.Status) bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			var err error
			if st, err = c.Status(ctx); err != nil {
				t.Fatal(err)
			}
			if ok(st) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: status %+v", what, st)
			}
		}
	}
	waitFor("a proving", func(s *client.Status) bool { return s.Stages.Proving == 1 })
	jobs = append(jobs, submit("b", client.Normal))
	waitFor("b waiting for memory", func(s *client.Status) bool { return s.Stages.WaitingMemory == 1 })
	jobs = append(jobs, submit("c", client.Low), submit("d", client.Critical))
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, q := range st.Waiting {
		s := fmt.Sprintf("%s:%s", q.RequestID, q.Priority)
		if q.MemoryWait {
			s += ":memory"
		}
		got = append(got, s)
		if q.Circuit != "mulchain" || q.Constraints != 16 || q.Partitions != 1 || q.ID == "" || q.Submitted.Before(before.Add(-time.Second)) || q.Submitted.After(time.Now()) {
			t.Errorf("queued job %+v", q)
		}
	}
	if want := "b:NORMAL:memory d:CRITICAL c:LOW"; strings.Join(got, " ") != want {
		t.Errorf("queued %q, want %q", strings.Join(got, " "), want)
	}
	if len(st.Kinds) != 1 || st.Kinds[0].Pending != 3 || st.Kinds[0].InProgress != 1 {
		t.Errorf("cuzk's queues %+v, want local: 3 pending (the memory wait included), 1 in progress", st.Kinds)
	}
	if len(st.Tuning) != 1 {
		t.Fatalf("tuning %+v, want one circuit and size", st.Tuning)
	}
	if tu := st.Tuning[0]; tu.Circuit != "mulchain" || tu.Constraints != 16 || tu.Workers != 1 || tu.SolverTasks < 1 ||
		tu.Synthesized < 1 || !strings.Contains(tu.Reason, "cores") {
		t.Errorf("tuning %+v, want mulchain/16, 1 worker, solver tasks, a synthesis measured and a reason", tu)
	}
	close(run.gate)
	for _, j := range jobs {
		if _, err := c.Await(ctx, j.ID, 0); err != nil {
			t.Errorf("job %s: %v", j.ID, err)
		}
	}
	if st, _ = c.Status(ctx); len(st.Waiting) != 0 || st.Tuning[0].Proved != 4 {
		t.Errorf("after the jobs ended: queued %+v, tuning %+v", st.Waiting, st.Tuning)
	}
}
