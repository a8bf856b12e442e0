package daemon

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/otelcuzk/otelcuzk/internal/logtest"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/upstream/standin"
)

// With Config.Upstream (--upstream) a Filecoin proof is forwarded and
// its trace, in the daemon's trace file, has the upstream's parts and the
// untraced rest under the job.
func TestUpstreamProofIsTracedInTheTraceFile(t *testing.T) {
	fake := &standin.Fake{Delay: 300 * time.Millisecond,
		Report: standin.Timings{SynthesisMS: 50, GPUComputeMS: 100, TotalMS: 300}}
	addr, stop, err := fake.Serve()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	log := &logtest.Buffer{}
	cfg := cpuConfig(t, log)
	cfg.Upstream = addr
	d, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()
	conn, err := grpc.NewClient(d.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer pcancel()
	res, err := cuzkv1.NewProvingEngineClient(conn).Prove(pctx, &cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{
		RequestId: "sector-1", ProofKind: cuzkv1.ProofKind_POREP_SEAL_COMMIT, SectorSize: 32 << 30, RegisteredProof: 3}})
	if err != nil || string(res.GetResult().GetProof()) != "proof:sector-1" {
		t.Fatalf("forwarded prove: %v %v", res, err)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !strings.Contains(log.String(), "Filecoin proofs go to the cuzk at "+addr) {
		t.Errorf("no line names the upstream:\n%s", log.String())
	}
	b, err := os.ReadFile(cfg.TraceFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"engine.job", "upstream.synthesis", "upstream.gpu_compute", "untraced"} {
		if !strings.Contains(string(b), `"name":"`+name+`"`) {
			t.Errorf("the trace file has no %s span", name)
		}
	}
	if strings.Contains(string(b), `"name":"upstream.queue_wait"`) {
		t.Errorf("a part reported as 0 ms has a span")
	}
}
