package upstream

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/upstream/standin"
)

// envSink makes the test binary a stand-in cuzk (TestMain): the upstream
// of the copy count runs in another process, so that what this one
// allocates is the forwarding alone.
const envSink = "CUZK_UPSTREAM_TEST_SINK"

func TestMain(m *testing.M) {
	if os.Getenv(envSink) != "" {
		addr, _, err := (&standin.Fake{}).Serve()
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("listening", addr)
		select {} // until the test kills it
	}
	os.Exit(m.Run())
}

// startSink runs the stand-in in a child process and returns its address.
func startSink(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), envSink+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("sink said %q (%v)", line, err)
	}
	return addr
}

// A PoRep vanilla proof of 50 MB is copied once on its way to the
// upstream: forwarding the parsed request allocates about its size (the
// one marshal for the wire), not two or more times it (no clone, no
// rebuilt request, no second buffer), measured as the bytes this process
// allocates while the call runs (the upstream is another process).
func TestA50MBVanillaProofIsCopiedOnceOnTheWayOut(t *testing.T) {
	if testing.Short() {
		t.Skip("50 MB through a child process")
	}
	addr := startSink(t)
	c, err := New(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Warm the connection (and grpc's buffers) with a small request.
	if _, err := c.Prove(ctx, &cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{RequestId: "warm", ProofKind: cuzkv1.ProofKind_POREP_SEAL_COMMIT}}); err != nil {
		t.Fatal(err)
	}
	const size = 50 << 20
	r := &cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{RequestId: "big", ProofKind: cuzkv1.ProofKind_POREP_SEAL_COMMIT,
		SectorSize: 32 << 30, RegisteredProof: 3, VanillaProof: make([]byte, size)}}
	for i := range r.Submit.VanillaProof {
		r.Submit.VanillaProof[i] = byte(i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := c.Prove(ctx, r)
	runtime.ReadMemStats(&after)
	if err != nil || string(res.GetResult().GetProof()) != "proof:big" {
		t.Fatalf("forwarding 50 MB: %v %v", res, err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("forwarding a %d MiB vanilla proof allocated %.1f MiB (%.2f times its size)", size>>20, float64(alloc)/(1<<20), float64(alloc)/size)
	if alloc < size {
		t.Fatalf("allocated %d bytes, less than the %d marshalled: the measurement missed the call", alloc, size)
	}
	if alloc > size+size/4 {
		t.Errorf("allocated %.2f times the vanilla proof's size forwarding it, want about 1 (one copy, the marshal)", float64(alloc)/size)
	}
}
