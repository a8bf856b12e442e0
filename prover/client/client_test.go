package client

import (
	"context"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
)

// echoServer answers Prove with what it received, and records the
// metadata, so the client's encoding and trace context can be checked
// without the daemon (whose tests cover the full path).
type echoServer struct {
	cuzkv1.UnimplementedProvingEngineServer
	md  chan metadata.MD
	req chan *cuzkv1.SubmitProofRequest
}

func (e *echoServer) Prove(ctx context.Context, r *cuzkv1.ProveRequest) (*cuzkv1.ProveResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	e.md <- md
	e.req <- r.GetSubmit()
	if r.GetSubmit().GetCircuit() == "fail" {
		// A failed job is an OK reply, as cuzk's; its error_code says how.
		return &cuzkv1.ProveResponse{Result: &cuzkv1.AwaitProofResponse{JobId: "job-1", TraceId: "abc",
			Status: cuzkv1.AwaitProofResponse_FAILED, JobStatus: cuzkv1.JobStatus_JOB_STATUS_FAILED,
			ErrorMessage: "unsatisfied", ErrorCode: uint32(codes.InvalidArgument)}}, nil
	}
	if r.GetSubmit().GetCircuit() == "cuzk-failed" {
		// cuzk itself sets no error_code: FAILED is INTERNAL.
		return &cuzkv1.ProveResponse{Result: &cuzkv1.AwaitProofResponse{JobId: "job-2",
			Status: cuzkv1.AwaitProofResponse_FAILED, ErrorMessage: "synthesis failed"}}, nil
	}
	return &cuzkv1.ProveResponse{Result: &cuzkv1.AwaitProofResponse{JobId: "job-1", RequestId: r.GetSubmit().GetRequestId(), Proof: []byte{1, 2},
		Status: cuzkv1.AwaitProofResponse_COMPLETED, JobStatus: cuzkv1.JobStatus_JOB_STATUS_SUCCEEDED, Timings: &cuzkv1.Timings{ProveMs: 1.5, TotalMs: 2}}}, nil
}

func TestClientSendsFieldsTokenAndTraceContext(t *testing.T) {
	srv := grpc.NewServer()
	echo := &echoServer{md: make(chan metadata.MD, 2), req: make(chan *cuzkv1.SubmitProofRequest, 2)}
	cuzkv1.RegisterProvingEngineServer(srv, echo)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()

	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	c, err := Dial(lis.Addr().String(), WithTracerProvider(tp), WithBearerToken("tok"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ctx, task := tp.Tracer("curio").Start(ctx, "curio.task")
	res, err := c.Prove(ctx, Request{RequestID: "r", Circuit: "mulchain", Constraints: 8, Priority: Critical,
		MinerID: "f01", SectorNumber: 3, TaskID: 4, TaskName: "PoRep", Verify: true})
	task.End()
	if err != nil {
		t.Fatal(err)
	}
	if res.JobID != "job-1" || res.Status != Succeeded || res.Timings.Prove != 1500*time.Microsecond || res.Timings.Total != 2*time.Millisecond {
		t.Errorf("result %+v", res)
	}
	md, got := <-echo.md, <-echo.req
	if got.GetPriority() != cuzkv1.Priority_CRITICAL || got.GetMiner() != "f01" || got.GetSectorNumber() != 3 ||
		got.GetTaskId() != 4 || got.GetTaskName() != "PoRep" || !got.GetVerify() || got.GetConstraints() != 8 {
		t.Errorf("request on the wire %v", got)
	}
	if a := md.Get("authorization"); len(a) != 1 || a[0] != "Bearer tok" {
		t.Errorf("authorization %v", a)
	}
	// The traceparent names the client span, a child of the task span.
	carrier := propagation.MapCarrier{}
	for k, v := range md {
		carrier[k] = v[0]
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
	var clientSpan tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.SpanKind == trace.SpanKindClient {
			clientSpan = s
		}
	}
	if sc.TraceID() != task.SpanContext().TraceID() || sc.SpanID() != clientSpan.SpanContext.SpanID() ||
		clientSpan.Parent.SpanID() != task.SpanContext().SpanID() {
		t.Errorf("traceparent %v: want the client span %v under the task %v", md.Get("traceparent"), clientSpan.SpanContext, task.SpanContext())
	}

	res, err = c.Prove(ctx, Request{RequestID: "f", Circuit: "fail"})
	if status.Code(err) != codes.InvalidArgument || res == nil || res.JobID != "job-1" || res.Status != Failed || res.Error != "unsatisfied" {
		t.Errorf("failed proof: %+v %v, want the status and the job's result", res, err)
	}
	if r, err := ResultOf(err); err != nil || r.JobID != "job-1" {
		t.Errorf("ResultOf: %+v %v", r, err)
	}
	// A request that sets no priority is Normal on the wire.
	if got := <-echo.req; got.GetPriority() != cuzkv1.Priority_NORMAL {
		t.Errorf("zero priority went out as %v, want PRIORITY_NORMAL", got.GetPriority())
	}
	<-echo.md
	res, err = c.Prove(ctx, Request{RequestID: "g", Circuit: "cuzk-failed"})
	if status.Code(err) != codes.Internal || status.Convert(err).Message() != "synthesis failed" || res == nil || res.JobID != "job-2" {
		t.Errorf("cuzk's FAILED: %+v %v, want INTERNAL with its message", res, err)
	}
	<-echo.md
	<-echo.req
	if _, err := c.Prove(ctx, Request{RequestID: "p", Circuit: "x", Priority: Priority(7)}); err == nil {
		t.Error("priority 7: want error")
	}
}

func TestParsePriority(t *testing.T) {
	for s, want := range map[string]Priority{"LOW": Low, "normal": Normal, "HIGH": High, "critical": Critical} {
		if got, err := ParsePriority(s); err != nil || got != want {
			t.Errorf("%s: %v %v", s, got, err)
		}
	}
	if _, err := ParsePriority("urgent"); err == nil {
		t.Error("urgent: want error")
	}
	var zero Request
	if zero.Priority != Normal {
		t.Errorf("a zero Request has priority %v, want Normal (Curio relies on it)", zero.Priority)
	}
}
