package server

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/upstream"
	"github.com/otelcuzk/otelcuzk/prover/upstream/standin"
)

// front is a daemon with an upstream: its spans (the untraced-time
// processor before the exporter, as otelcuzk.Setup registers them) and a
// plain cuzk.v1 client of it.
type front struct {
	*daemon
	up  *upstream.Client
	rpc cuzkv1.ProvingEngineClient
}

func startFront(t *testing.T, addr string, opts ...upstream.Option) *front {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(otelcuzk.NewUntracedProcessor(time.Millisecond, 0.02)),
		sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return startFrontWith(t, addr, tp, tp, exp, opts...)
}

// startFrontWith is startFront with spans started from tp (sdk itself or
// a wrapper of it), recorded by exp.
func startFrontWith(t *testing.T, addr string, sdk *sdktrace.TracerProvider, tp trace.TracerProvider, exp *tracetest.InMemoryExporter, opts ...upstream.Option) *front {
	t.Helper()
	up, err := upstream.New(addr, append([]upstream.Option{upstream.WithTracerProvider(tp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	run := &fakeRunner{tp: tp}
	eng, err := engine.New([]engine.Worker{{Name: "w0", Runner: run}}, engine.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(eng, WithTracerProvider(tp), WithUpstream(up),
		WithKnownCircuit(func(c string) bool { return testCircuits[c] }))
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{srv: srv, eng: eng, exp: exp, tp: sdk, run: run, addr: serve(t, srv)}
	conn, err := grpc.NewClient(d.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(DefaultMaxMessageBytes)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &front{daemon: d, up: up, rpc: cuzkv1.NewProvingEngineClient(conn)}
}

func startFake(t *testing.T, f *standin.Fake) string {
	t.Helper()
	addr, stop, err := f.Serve()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr
}

// filecoin is a valid request of kind k for 32 GiB sectors.
func filecoin(id string, k cuzkv1.ProofKind, p cuzkv1.Priority) *cuzkv1.SubmitProofRequest {
	rp := map[cuzkv1.ProofKind]uint64{cuzkv1.ProofKind_WINDOW_POST_PARTITION: 8}[k]
	if rp == 0 {
		rp = 3
	}
	return &cuzkv1.SubmitProofRequest{RequestId: id, ProofKind: k, SectorSize: 32 << 30, RegisteredProof: rp,
		Priority: p, VanillaProof: []byte("vanilla:" + id)}
}

// callerCtx is a context carrying the caller's (Curio's) span, sent as
// traceparent by a call made with it.
func callerCtx(t *testing.T, tp trace.TracerProvider) (context.Context, trace.Span) {
	ctx, span := tp.Tracer("curio").Start(ctx5(t), semconv.SpanCurioTask)
	md := metadata.MD{}
	otelcuzk.TextMapPropagator().Inject(ctx, metadataCarrier(md))
	return metadata.NewOutgoingContext(ctx, md), span
}

type metadataCarrier metadata.MD

func (m metadataCarrier) Get(k string) string {
	if v := metadata.MD(m).Get(k); len(v) > 0 {
		return v[0]
	}
	return ""
}
func (m metadataCarrier) Set(k, v string) { metadata.MD(m).Set(k, v) }
func (m metadataCarrier) Keys() []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func spansNamed(exp *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func attr(s tracetest.SpanStub, k string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == k {
			return a.Value.Emit()
		}
	}
	return ""
}

// TestUpstreamForwardsEveryFilecoinKind: each kind this daemon does not
// prove reaches the upstream unchanged (request id, priority, vanilla
// proof, the caller's trace), and its reply comes back as sent.
func TestUpstreamForwardsEveryFilecoinKind(t *testing.T) {
	fake := &standin.Fake{Report: standin.Timings{GPUComputeMS: 1, TotalMS: 1}}
	f := startFront(t, startFake(t, fake))
	kinds := []cuzkv1.ProofKind{cuzkv1.ProofKind_POREP_SEAL_COMMIT, cuzkv1.ProofKind_SNAP_DEALS_UPDATE,
		cuzkv1.ProofKind_WINDOW_POST_PARTITION, cuzkv1.ProofKind_WINNING_POST}
	for i, k := range kinds {
		ctx, caller := callerCtx(t, f.tp)
		id := "r-" + k.String()
		res, err := f.rpc.Prove(ctx, &cuzkv1.ProveRequest{Submit: filecoin(id, k, cuzkv1.Priority_HIGH)})
		caller.End()
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if string(res.GetResult().GetProof()) != "proof:"+id || res.GetResult().GetStatus() != cuzkv1.AwaitProofResponse_COMPLETED {
			t.Errorf("%s: reply %v", k, res)
		}
		got := fake.Requests()[i]
		if got.GetRequestId() != id || got.GetProofKind() != k || got.GetPriority() != cuzkv1.Priority_HIGH ||
			string(got.GetVanillaProof()) != "vanilla:"+id || got.GetSectorSize() != 32<<30 {
			t.Errorf("%s: upstream got %v", k, got)
		}
		tp := fake.Metadata()[i].Get("traceparent")
		if len(tp) == 0 || !strings.Contains(tp[0], caller.SpanContext().TraceID().String()) {
			t.Errorf("%s: upstream's traceparent %v is not in the caller's trace %s", k, tp, caller.SpanContext().TraceID())
		}
	}
	jobs := spansNamed(f.exp, semconv.SpanEngineJob)
	if len(jobs) != len(kinds) {
		t.Fatalf("%d engine.job spans, want %d", len(jobs), len(kinds))
	}
	for i, j := range jobs {
		if attr(j, "cuzk.upstream") == "" || attr(j, "cuzk.proof_kind") != kinds[i].String() ||
			attr(j, "cuzk.request.id") != "r-"+kinds[i].String() || attr(j, "cuzk.priority") != "HIGH" {
			t.Errorf("job %d attributes %v", i, j.Attributes)
		}
	}
	if n := f.eng.Status().Succeeded + f.eng.Status().Failed; n != 0 {
		t.Errorf("forwarded proofs reached the local engine: %d", n)
	}
}

// TestUpstreamTimesAreSpansAndTheRestUntraced: the reported parts are
// spans of their lengths inside the job, back to back and ending at the
// reply; the time they leave unexplained is an untraced span.
func TestUpstreamTimesAreSpansAndTheRestUntraced(t *testing.T) {
	fake := &standin.Fake{Delay: 400 * time.Millisecond,
		Report: standin.Timings{QueueWaitMS: 10, SRSLoadMS: 20, SynthesisMS: 50, GPUComputeMS: 100, TotalMS: 400}}
	f := startFront(t, startFake(t, fake))
	ctx, caller := callerCtx(t, f.tp)
	if _, err := f.rpc.Prove(ctx, &cuzkv1.ProveRequest{Submit: filecoin("t1", cuzkv1.ProofKind_POREP_SEAL_COMMIT, 0)}); err != nil {
		t.Fatal(err)
	}
	caller.End()
	jobs := spansNamed(f.exp, semconv.SpanEngineJob)
	if len(jobs) != 1 {
		t.Fatalf("%d jobs", len(jobs))
	}
	job := jobs[0]
	if job.SpanContext.TraceID() != caller.SpanContext().TraceID() {
		t.Errorf("the job is not in the caller's trace")
	}
	if attr(job, "cuzk.upstream.total_ms") != "400" || attr(job, "cuzk.priority") != "NORMAL" {
		t.Errorf("job attributes %v", job.Attributes)
	}
	end := job.EndTime
	for _, p := range []struct {
		name string
		ms   int
	}{{upstream.SpanGPUCompute, 100}, {upstream.SpanSynthesis, 50}, {upstream.SpanSRSLoad, 20}, {upstream.SpanQueueWait, 10}} {
		s := spansNamed(f.exp, p.name)
		if len(s) != 1 {
			t.Fatalf("%d %s spans", len(s), p.name)
		}
		if s[0].Parent.SpanID() != job.SpanContext.SpanID() {
			t.Errorf("%s is not under the job", p.name)
		}
		if d := s[0].EndTime.Sub(s[0].StartTime); d != time.Duration(p.ms)*time.Millisecond {
			t.Errorf("%s lasts %v, want %d ms", p.name, d, p.ms)
		}
		if !s[0].EndTime.Equal(end) {
			t.Errorf("%s ends at %v, want %v (the next part's start)", p.name, s[0].EndTime, end)
		}
		end = s[0].StartTime
	}
	// Under the job: one. The caller's own span (curio.task) may have one
	// too when a loaded machine delays the call past the untraced
	// threshold (14 ms seen under a load of 13 on 2 cores): the test's
	// time, not the job's.
	var un []tracetest.SpanStub
	for _, s := range spansNamed(f.exp, semconv.SpanUntraced) {
		if s.Parent.SpanID() == job.SpanContext.SpanID() {
			un = append(un, s)
		} else if s.Parent.SpanID() != caller.SpanContext().SpanID() {
			t.Errorf("an untraced span under %v, neither the job nor the caller", s.Parent.SpanID())
		}
	}
	if len(un) != 1 {
		t.Fatalf("untraced spans under the job %v, want one", un)
	}
	// The job took at least the fake's 400 ms; the parts explain 180.
	var ms float64
	for _, a := range un[0].Attributes {
		if a.Key == semconv.KeyUntracedMS {
			ms = a.Value.AsFloat64()
		}
	}
	if ms < 215 || ms > 2000 {
		t.Errorf("untraced %.1f ms, want the job's time less 180 ms (>= 220)", ms)
	}
	if !un[0].EndTime.Equal(end) || !un[0].StartTime.Equal(job.StartTime) {
		t.Errorf("untraced spans %v..%v, want the job's start to the first part", un[0].StartTime, un[0].EndTime)
	}
}

// TestUpstreamSubmitAwaitCancel: a submitted job is awaited and
// cancelled through this daemon by the upstream's job id and by request
// id; the cancel reaches the upstream and the job's span ends cancelled.
func TestUpstreamSubmitAwaitCancel(t *testing.T) {
	fake := &standin.Fake{Delay: time.Minute}
	f := startFront(t, startFake(t, fake))
	sub, err := f.rpc.SubmitProof(ctx5(t), filecoin("c1", cuzkv1.ProofKind_WINDOW_POST_PARTITION, 0))
	// cuzk's job id is the request id.
	if err != nil || sub.GetJobId() != "c1" {
		t.Fatalf("submit: %v %v, want job id c1", sub, err)
	}
	aw, err := f.rpc.AwaitProof(ctx5(t), &cuzkv1.AwaitProofRequest{JobId: sub.GetJobId(), TimeoutMs: 20})
	if err != nil || aw.GetStatus() != cuzkv1.AwaitProofResponse_TIMEOUT {
		t.Fatalf("await: %v %v", aw, err)
	}
	if len(spansNamed(f.exp, semconv.SpanEngineJob)) != 0 {
		t.Errorf("a job still running has ended its span")
	}
	cr, err := f.rpc.CancelProof(ctx5(t), &cuzkv1.CancelProofRequest{RequestId: "c1"})
	if err != nil || cr.GetJobId() != sub.GetJobId() {
		t.Fatalf("cancel: %v %v", cr, err)
	}
	if fake.Cancelled() != 1 {
		t.Errorf("the upstream saw %d cancels", fake.Cancelled())
	}
	aw, err = f.rpc.AwaitProof(ctx5(t), &cuzkv1.AwaitProofRequest{RequestId: "c1"})
	if err != nil || aw.GetStatus() != cuzkv1.AwaitProofResponse_CANCELLED {
		t.Fatalf("await after cancel: %v %v", aw, err)
	}
	jobs := spansNamed(f.exp, semconv.SpanEngineJob)
	if len(jobs) != 1 || attr(jobs[0], "error.type") != semconv.ErrorTypeCanceled {
		t.Fatalf("jobs %v, want one cancelled", jobs)
	}
	// A caller of Prove that goes away cancels the upstream's job.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = f.rpc.Prove(ctx, &cuzkv1.ProveRequest{Submit: filecoin("c2", cuzkv1.ProofKind_WINNING_POST, 0)})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("prove past its deadline: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for fake.Cancelled() != 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if fake.Cancelled() != 2 {
		t.Errorf("the upstream's Prove was not cancelled with its caller")
	}
}

// TestUpstreamDownIsUnavailableAndLocalProofsGoOn: an upstream that does
// not listen fails a forwarded proof UNAVAILABLE within the connect
// bound, naming it, while a local proof succeeds; status and metrics
// still answer.
func TestUpstreamDownIsUnavailableAndLocalProofsGoOn(t *testing.T) {
	fake := &standin.Fake{}
	addr, stop, err := fake.Serve()
	if err != nil {
		t.Fatal(err)
	}
	stop() // nothing listens there now
	f := startFront(t, addr, upstream.WithConnectTimeout(500*time.Millisecond))
	start := time.Now()
	_, err = f.rpc.Prove(ctx5(t), &cuzkv1.ProveRequest{Submit: filecoin("d1", cuzkv1.ProofKind_POREP_SEAL_COMMIT, 0)})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "upstream "+addr) {
		t.Fatalf("prove with the upstream down: %v, want UNAVAILABLE naming %s", err, addr)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("UNAVAILABLE took %v", d)
	}
	res, err := f.rpc.Prove(ctx5(t), &cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{
		RequestId: "local", Circuit: "merkle", Constraints: 1 << 12}})
	if err != nil || string(res.GetResult().GetProof()) != "proof:local" {
		t.Fatalf("local proof beside a down upstream: %v %v", res, err)
	}
	st, err := f.rpc.GetStatus(ctx5(t), &cuzkv1.GetStatusRequest{})
	if err != nil || !strings.Contains(st.GetQueues()[len(st.GetQueues())-1].GetProofKind(), "upstream unavailable") {
		t.Errorf("status with the upstream down: %v %v", st.GetQueues(), err)
	}
	if m, err := f.rpc.GetMetrics(ctx5(t), &cuzkv1.GetMetricsRequest{}); err != nil || !strings.Contains(m.GetPrometheusText(), "# upstream "+addr) {
		t.Errorf("metrics with the upstream down: %v", err)
	}
	jobs := spansNamed(f.exp, semconv.SpanEngineJob)
	failed := 0
	for _, j := range jobs {
		if attr(j, "cuzk.upstream") != "" && j.Status.Description != "" {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d failed upstream jobs traced, want 1", failed)
	}
}

// TestUpstreamErrorPassesThrough: the upstream's code and message reach
// the caller, the message prefixed by the upstream's address.
func TestUpstreamErrorPassesThrough(t *testing.T) {
	fake := &standin.Fake{Fail: codes.ResourceExhausted, FailMessage: "queue full (porep)"}
	addr := startFake(t, fake)
	f := startFront(t, addr)
	for _, call := range []func() error{
		func() error {
			_, err := f.rpc.Prove(ctx5(t), &cuzkv1.ProveRequest{Submit: filecoin("e1", cuzkv1.ProofKind_SNAP_DEALS_UPDATE, 0)})
			return err
		},
		func() error {
			_, err := f.rpc.SubmitProof(ctx5(t), filecoin("e2", cuzkv1.ProofKind_SNAP_DEALS_UPDATE, 0))
			return err
		},
	} {
		err := call()
		if status.Code(err) != codes.ResourceExhausted || status.Convert(err).Message() != "upstream "+addr+": queue full (porep)" {
			t.Errorf("error %v, want the upstream's RESOURCE_EXHAUSTED", err)
		}
	}
	// A bad request is refused here, naming the field, and never sent.
	_, err := f.rpc.SubmitProof(ctx5(t), &cuzkv1.SubmitProofRequest{RequestId: "bad", ProofKind: cuzkv1.ProofKind_WINNING_POST, SectorSize: 1})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "sector_size") || len(fake.Requests()) != 2 {
		t.Errorf("bad request: %v (%d reached the upstream)", err, len(fake.Requests()))
	}
}

// TestUpstreamCarriesA50MBVanillaProof: PoRep's vanilla proofs (~50 MB)
// pass both ways' message bounds and arrive byte for byte.
func TestUpstreamCarriesA50MBVanillaProof(t *testing.T) {
	fake := &standin.Fake{}
	f := startFront(t, startFake(t, fake))
	r := filecoin("big", cuzkv1.ProofKind_POREP_SEAL_COMMIT, 0)
	r.VanillaProof = bytes.Repeat([]byte{1, 2, 3, 4, 5}, 10<<20)
	if _, err := f.rpc.Prove(ctx5(t), &cuzkv1.ProveRequest{Submit: r}); err != nil {
		t.Fatal(err)
	}
	if got := fake.Requests()[0].GetVanillaProof(); !bytes.Equal(got, r.VanillaProof) {
		t.Errorf("the upstream got %d bytes, want the %d sent", len(got), len(r.VanillaProof))
	}
}

// TestUpstreamStatusAndMetricsBesideOurs: the upstream's GetStatus is
// merged into ours and its metrics are re-exported under upstream_ names.
func TestUpstreamStatusAndMetricsBesideOurs(t *testing.T) {
	fake := &standin.Fake{Metrics: "# HELP cuzk_proofs_completed_total Proofs.\n# TYPE cuzk_proofs_completed_total counter\ncuzk_proofs_completed_total{kind=\"porep\"} 7\n"}
	f := startFront(t, startFake(t, fake))
	if _, err := f.rpc.Prove(ctx5(t), &cuzkv1.ProveRequest{Submit: filecoin("s1", cuzkv1.ProofKind_POREP_SEAL_COMMIT, 0)}); err != nil {
		t.Fatal(err)
	}
	st, err := f.rpc.GetStatus(ctx5(t), &cuzkv1.GetStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{}
	for _, q := range st.GetQueues() {
		kinds = append(kinds, q.GetProofKind())
	}
	if strings.Join(kinds, ",") != LocalProofKind+",porep" || st.GetTotalProofsCompleted() != 1 || len(st.GetGpus()) != 1 || st.GetGpus()[0].GetName() != "fake" {
		t.Errorf("status queues %v, completed %d, gpus %v", kinds, st.GetTotalProofsCompleted(), st.GetGpus())
	}
	cs, err := f.client(t).Status(ctx5(t))
	if err != nil || len(cs.Kinds) != 2 || cs.Kinds[1].Kind != "porep" {
		t.Errorf("prover/client's Status %+v (%v), want kinds local and porep", cs, err)
	}
	m, err := f.rpc.GetMetrics(ctx5(t), &cuzkv1.GetMetricsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	text := m.GetPrometheusText()
	for _, want := range []string{"\ncuzk_proofs_completed_total 0\n", "# TYPE upstream_cuzk_proofs_completed_total counter\n", "\nupstream_cuzk_proofs_completed_total{kind=\"porep\"} 7\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q:\n%s", want, text)
		}
	}
}

// A forwarded job whose caller does not sample (traceparent flags 00) is
// recorded as the root of a new trace linked to the caller's span, as
// the daemon's local jobs are (otelcuzk.WithUnsampledCallerAsLink); one
// whose caller sent no trace context is a trace of its own. Either way
// the upstream is called in the job's trace, sampled.
func TestUpstreamJobOfAnUnsampledCallerIsANewLinkedRoot(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := otelcuzk.New(context.Background(), otelcuzk.WithoutGlobal(), otelcuzk.WithoutUntraced(),
		otelcuzk.WithTraceFile(t.TempDir()+"/trace.jsonl"), otelcuzk.WithUnsampledCallerAsLink(),
		otelcuzk.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(exp)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	fake := &standin.Fake{Report: standin.Timings{GPUComputeMS: 1, TotalMS: 1}}
	f := startFrontWith(t, startFake(t, fake), tel.TracerProvider, tel.Provider(), exp)

	callerTrace := "4bf92f3577b34da6a3ce929d0e0e4736"
	unsampled := metadata.NewOutgoingContext(ctx5(t), metadata.Pairs("traceparent", "00-"+callerTrace+"-00f067aa0ba902b7-00"))
	for i, ctx := range []context.Context{unsampled, ctx5(t)} {
		id := fmt.Sprintf("n%d", i)
		if _, err := f.rpc.Prove(ctx, &cuzkv1.ProveRequest{Submit: filecoin(id, cuzkv1.ProofKind_WINNING_POST, 0)}); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		var job tracetest.SpanStub
		for _, s := range spansNamed(exp, semconv.SpanEngineJob) {
			if attr(s, "cuzk.request.id") == id {
				job = s
			}
		}
		if !job.SpanContext.IsValid() || !job.SpanContext.IsSampled() {
			t.Fatalf("%s: no sampled engine.job recorded", id)
		}
		tid := job.SpanContext.TraceID()
		if tid.String() == callerTrace {
			t.Errorf("%s: the job joined the unsampled caller's trace", id)
		}
		// The trace's root: the job itself or the server span above it,
		// which ends (and is exported) after the reply is sent: waited for.
		var root tracetest.SpanStub
		for wait := time.Now().Add(5 * time.Second); !root.SpanContext.IsValid() && time.Now().Before(wait); time.Sleep(5 * time.Millisecond) {
			for _, s := range exp.GetSpans() {
				if s.SpanContext.TraceID() == tid && !s.Parent.IsValid() {
					root = s
				}
			}
		}
		if !root.SpanContext.IsValid() {
			t.Fatalf("%s: the job's trace has no root", id)
		}
		links := len(root.Links)
		if i == 0 && (links != 1 || root.Links[0].SpanContext.TraceID().String() != callerTrace || root.Links[0].SpanContext.SpanID().String() != "00f067aa0ba902b7") {
			t.Errorf("unsampled caller: root %s links %+v, want one to the caller's span", root.Name, root.Links)
		}
		if i == 1 && links != 0 {
			t.Errorf("no caller context: root %s has links %+v", root.Name, root.Links)
		}
		tp := fake.Metadata()[i].Get("traceparent")
		if len(tp) != 1 || !strings.Contains(tp[0], tid.String()) || !strings.HasSuffix(tp[0], "-01") {
			t.Errorf("%s: the upstream got traceparent %v, want the job's trace %s, sampled", id, tp, tid)
		}
	}
}

// An upstream that fails only some proofs (every second one ends FAILED,
// as cuzk reports a proof that failed; the request ids matching ^bad-
// are refused RESOURCE_EXHAUSTED) fails those alone: each is a failed
// engine.job with the upstream's message, the others complete, and the
// local proofs and the merged status go on.
func TestUpstreamFailingSomeProofsFailsThoseAlone(t *testing.T) {
	fake := &standin.Fake{Report: standin.Timings{GPUComputeMS: 1, TotalMS: 1},
		FailProof: "synthesis: out of memory", FailEvery: 2}
	f := startFront(t, startFake(t, fake))
	var completed, failed []string
	for i := 1; i <= 4; i++ {
		id := fmt.Sprintf("p%d", i)
		res, err := f.rpc.Prove(ctx5(t), &cuzkv1.ProveRequest{Submit: filecoin(id, cuzkv1.ProofKind_POREP_SEAL_COMMIT, 0)})
		if err != nil {
			t.Fatalf("%s: %v, want an OK reply", id, err)
		}
		switch r := res.GetResult(); r.GetStatus() {
		case cuzkv1.AwaitProofResponse_COMPLETED:
			completed = append(completed, id)
		case cuzkv1.AwaitProofResponse_FAILED:
			if r.GetErrorMessage() != "synthesis: out of memory" || len(r.GetProof()) != 0 {
				t.Errorf("%s: failed reply %v", id, r)
			}
			failed = append(failed, id)
		default:
			t.Errorf("%s: status %v", id, r.GetStatus())
		}
	}
	if strings.Join(completed, ",") != "p1,p3" || strings.Join(failed, ",") != "p2,p4" {
		t.Fatalf("completed %v failed %v, want p1,p3 and p2,p4", completed, failed)
	}
	for _, j := range spansNamed(f.exp, semconv.SpanEngineJob) {
		id := attr(j, "cuzk.request.id")
		bad := id == "p2" || id == "p4"
		if bad != (j.Status.Description == "synthesis: out of memory") || bad != (attr(j, "error.type") != "") {
			t.Errorf("job %s: status %+v error.type %q", id, j.Status, attr(j, "error.type"))
		}
	}
	st, err := f.rpc.GetStatus(ctx5(t), &cuzkv1.GetStatusRequest{})
	if err != nil || st.GetTotalProofsCompleted() != 2 || st.GetTotalProofsFailed() != 2 {
		t.Errorf("merged status: completed %d failed %d (%v), want 2 and 2", st.GetTotalProofsCompleted(), st.GetTotalProofsFailed(), err)
	}

	// Refused by request id: the code and message pass through for those
	// alone, and a local proof beside them is unaffected.
	fake2 := &standin.Fake{Report: standin.Timings{TotalMS: 1}, Fail: codes.ResourceExhausted,
		FailMessage: "queue full (porep)", FailRequests: regexp.MustCompile(`^bad-`)}
	addr := startFake(t, fake2)
	f2 := startFront(t, addr)
	for _, id := range []string{"good-1", "bad-1", "good-2"} {
		res, err := f2.rpc.Prove(ctx5(t), &cuzkv1.ProveRequest{Submit: filecoin(id, cuzkv1.ProofKind_SNAP_DEALS_UPDATE, 0)})
		if strings.HasPrefix(id, "bad-") {
			if status.Code(err) != codes.ResourceExhausted || status.Convert(err).Message() != "upstream "+addr+": queue full (porep)" {
				t.Errorf("%s: %v, want the upstream's RESOURCE_EXHAUSTED", id, err)
			}
			continue
		}
		if err != nil || res.GetResult().GetStatus() != cuzkv1.AwaitProofResponse_COMPLETED {
			t.Errorf("%s: %v %v, want COMPLETED", id, res, err)
		}
	}
	res, err := f2.rpc.Prove(ctx5(t), &cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{
		RequestId: "local", Circuit: "merkle", Constraints: 1 << 12}})
	if err != nil || string(res.GetResult().GetProof()) != "proof:local" {
		t.Errorf("local proof: %v %v", res, err)
	}
}

// An upstream that goes away while it proves fails the forwarded Prove
// (and an AwaitProof of a submitted job) with UNAVAILABLE naming it, each
// job's span ends failed, and local proofs go on.
func TestUpstreamGoingAwayMidProofFailsItsJobs(t *testing.T) {
	fake := &standin.Fake{Delay: time.Minute}
	addr, stop, err := fake.Serve()
	if err != nil {
		t.Fatal(err)
	}
	f := startFront(t, addr, upstream.WithConnectTimeout(500*time.Millisecond))
	if _, err := f.rpc.SubmitProof(ctx5(t), filecoin("g1", cuzkv1.ProofKind_POREP_SEAL_COMMIT, 0)); err != nil {
		t.Fatal(err)
	}
	proved := make(chan error, 1)
	go func() {
		_, err := f.rpc.Prove(ctx5(t), &cuzkv1.ProveRequest{Submit: filecoin("g2", cuzkv1.ProofKind_WINDOW_POST_PARTITION, 0)})
		proved <- err
	}()
	awaited := make(chan error, 1)
	go func() {
		_, err := f.rpc.AwaitProof(ctx5(t), &cuzkv1.AwaitProofRequest{RequestId: "g1"})
		awaited <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); len(fake.Requests()) < 2 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the AwaitProof on its way
	stop()
	for name, ch := range map[string]chan error{"prove": proved, "await": awaited} {
		select {
		case err := <-ch:
			if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "upstream "+addr) {
				t.Errorf("%s when the upstream went away: %v, want UNAVAILABLE naming %s", name, err, addr)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not return after the upstream went away", name)
		}
	}
	for _, j := range spansNamed(f.exp, semconv.SpanEngineJob) {
		if attr(j, "cuzk.request.id") == "g2" && j.Status.Description == "" {
			t.Errorf("the Prove's job span ended without an error: %+v", j.Status)
		}
	}
	res, err := f.rpc.Prove(ctx5(t), &cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{
		RequestId: "local", Circuit: "merkle", Constraints: 1 << 12}})
	if err != nil || string(res.GetResult().GetProof()) != "proof:local" {
		t.Errorf("local proof after the upstream went away: %v %v", res, err)
	}
}
