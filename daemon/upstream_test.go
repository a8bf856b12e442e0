package daemon

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

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
	addr, stopFake, err := fake.Serve()
	if err != nil {
		t.Fatal(err)
	}
	defer stopFake()
	log := &logtest.Buffer{}
	cfg := cpuConfig(t, log)
	cfg.Upstream = addr
	d, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := start(d)
	if proof := prove(t, d.Addr(), &cuzkv1.SubmitProofRequest{RequestId: "sector-1", ProofKind: cuzkv1.ProofKind_POREP_SEAL_COMMIT, SectorSize: 32 << 30, RegisteredProof: 3}); string(proof) != "proof:sector-1" {
		t.Fatalf("forwarded prove: proof %q", proof)
	}
	if err := stop(); err != nil {
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
