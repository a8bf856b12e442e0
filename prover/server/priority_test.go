package server

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
)

// TestWirePrioritiesReachTheEngine sends each wire value with a plain gRPC
// client (as a caller without prover/client would): an unset priority is
// NORMAL on engine.job, the four named ones keep their name, and a value
// the daemon does not know is refused.
func TestWirePrioritiesReachTheEngine(t *testing.T) {
	d := startDaemon(t, nil)
	api := cuzkv1.NewProvingEngineClient(d.conn(t))
	ctx := ctx5(t)
	for v, want := range map[cuzkv1.Priority]string{
		cuzkv1.Priority_PRIORITY_UNSPECIFIED: "NORMAL", cuzkv1.Priority_LOW: "LOW",
		cuzkv1.Priority_NORMAL: "NORMAL", cuzkv1.Priority_HIGH: "HIGH",
		cuzkv1.Priority_CRITICAL: "CRITICAL",
	} {
		id := fmt.Sprintf("wire-%d", v)
		if _, err := api.Prove(ctx, &cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{
			RequestId: id, Circuit: "mulchain", Constraints: 16, Priority: v}}); err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		got := ""
		for deadline := time.Now().Add(5 * time.Second); got == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			for _, s := range d.exp.GetSpans() {
				if s.Name != semconv.SpanEngineJob {
					continue
				}
				attrs := map[string]string{}
				for _, kv := range s.Attributes {
					attrs[string(kv.Key)] = kv.Value.Emit()
				}
				if attrs[string(semconv.KeyRequestID)] == id {
					got = attrs[string(semconv.KeyPriority)]
				}
			}
		}
		if got != want {
			t.Errorf("wire %v: engine.job cuzk.priority %q, want %q", v, got, want)
		}
	}
	_, err := api.Prove(ctx, &cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{
		RequestId: "wire-9", Circuit: "mulchain", Constraints: 16, Priority: cuzkv1.Priority(9)}})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("priority 9: %v, want InvalidArgument", err)
	}
}
