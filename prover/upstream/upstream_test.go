package upstream

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/cupti/jobs"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/upstream/standin"
)

// rawCodec passes []byte through: the garbage upstream answers with it.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (rawCodec) Unmarshal(b []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), b...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// TestAReplyThatDoesNotParseNamesTheUpstream: an upstream answering
// bytes that are no AwaitProofResponse gives an error naming it, and the
// job's span ends failed.
func TestAReplyThatDoesNotParseNamesTheUpstream(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(func(_ any, st grpc.ServerStream) error {
		var in []byte
		if err := st.RecvMsg(&in); err != nil {
			return err
		}
		return st.SendMsg([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0xff}) // field 1, a length past the end
	}))
	go s.Serve(lis)
	defer s.Stop()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	c, err := New(lis.Addr().String(), WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = c.Prove(ctx, &cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{RequestId: "g", ProofKind: cuzkv1.ProofKind_WINNING_POST}})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "upstream "+lis.Addr().String()) {
		t.Fatalf("garbage reply: %v, want INTERNAL naming the upstream", err)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Status.Description == "" {
		t.Fatalf("spans %v, want one failed job", spans)
	}
}

func TestNewRefusesAnEmptyAddress(t *testing.T) {
	if _, err := New(" "); err == nil || !strings.Contains(err.Error(), "empty address") {
		t.Fatalf("New(\" \"): %v", err)
	}
}

func TestPrefixRenamesEveryMetric(t *testing.T) {
	in := "# HELP a_total A.\n# TYPE a_total counter\na_total{k=\"v\"} 1\n\n# a comment\nb 2"
	want := "# HELP up_a_total A.\n# TYPE up_a_total counter\nup_a_total{k=\"v\"} 1\n\n# a comment\nup_b 2"
	if got := Prefix(in, "up_"); got != want {
		t.Fatalf("Prefix:\n%s\nwant\n%s", got, want)
	}
}

// With WithJobs each forwarded job's window is published (cupti/jobs):
// a start line carrying the job span's traceparent, then its end.
func TestForwardedJobsWindowIsPublished(t *testing.T) {
	fake := &standin.Fake{Delay: 20 * time.Millisecond}
	addr, stop, err := fake.Serve()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	pub, err := jobs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	c, err := New(addr, WithTracerProvider(tp), WithJobs(pub))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Prove(ctx, &cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{RequestId: "w", ProofKind: cuzkv1.ProofKind_WINNING_POST}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	job := exp.GetSpans()[0]
	if len(lines) != 2 || !strings.Contains(lines[0], job.SpanContext.SpanID().String()) ||
		!strings.Contains(lines[0], job.SpanContext.TraceID().String()) || !strings.Contains(lines[1], `"end_ns"`) {
		t.Fatalf("jobs file:\n%s\nwant the start of job %s and its end", b, job.SpanContext.SpanID())
	}
}

// Submitted jobs nobody awaits are bounded: past the bound the oldest
// one's span ends failed, "not awaited".
func TestUnawaitedJobsAreBounded(t *testing.T) {
	fake := &standin.Fake{Delay: time.Minute}
	addr, stop, err := fake.Serve()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	c, err := New(addr, WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	c.maxOpen = 2
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, id := range []string{"a", "b", "c"} {
		if _, err := c.Submit(ctx, &cuzkv1.SubmitProofRequest{RequestId: id, ProofKind: cuzkv1.ProofKind_WINNING_POST}); err != nil {
			t.Fatal(err)
		}
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Attributes[2].Value.AsString() != "a" || !strings.Contains(spans[0].Status.Description, "not awaited") {
		t.Fatalf("spans %v, want job a ended 'not awaited'", spans)
	}
	c.Close()
	if n := len(exp.GetSpans()); n != 3 {
		t.Errorf("after Close %d job spans ended, want 3", n)
	}
}
