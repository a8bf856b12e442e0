package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
)

func standinBin(t testing.TB) string {
	return program(t, "OTELCUZK_STANDIN_BIN", "cuzk-standin", ".", "./cmd/cuzk-standin")
}

// startStandin runs e2e/cmd/cuzk-standin with args and returns its
// address; it is killed when the test ends.
func startStandin(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(standinBin(t), append([]string{"-listen", freeLoopbackAddrs(t, 1)[0]}, args...)...)
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
		t.Fatalf("cuzk-standin said %q (%v)", line, err)
	}
	return addr
}

// TestUpstreamJobIsOneTraceInJaeger: a caller with cuzk's schema sends a
// PoRep C2 with its traceparent to `cuzk serve --upstream` in front of the
// stand-in cuzk, which takes 1.2 s and reports 50+100+200+300 ms of its
// 1200 ms; Jaeger holds one trace with the caller's id: engine.job under
// the daemon's server span, the four upstream.* parts of the reported
// lengths under it, and an untraced span of the rest (at least 550 ms).
func TestUpstreamJobIsOneTraceInJaeger(t *testing.T) {
	up := startStandin(t, "-delay", "1200ms", "-queue-wait-ms", "50", "-srs-load-ms", "100",
		"-synthesis-ms", "200", "-gpu-compute-ms", "300", "-total-ms", "1200")
	j := startJaeger(t)
	d := startDaemon(t, j.otlpEnv("grpc", fmt.Sprintf("e2e-upstream-%d", time.Now().UnixNano())), "--upstream", up)
	conn, err := grpc.NewClient(d.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tid, sid := make([]byte, 16), make([]byte, 8)
	rand.Read(tid)
	rand.Read(sid)
	traceID := hex.EncodeToString(tid)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "traceparent", "00-"+traceID+"-"+hex.EncodeToString(sid)+"-01")
	res, err := cuzkv1.NewProvingEngineClient(conn).Prove(ctx, &cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{
		RequestId: "sector-42", ProofKind: cuzkv1.ProofKind_POREP_SEAL_COMMIT, SectorSize: 32 << 30, RegisteredProof: 3,
		VanillaProof: make([]byte, 1<<20)}})
	if err != nil || string(res.GetResult().GetProof()) != "proof:sector-42" || res.GetResult().GetTotalMs() != 1200 {
		t.Fatalf("prove through the daemon: %v %v", res, err)
	}
	spans := traceOf(t, j, traceID, "engine.job", "upstream.queue_wait", "upstream.srs_load",
		"upstream.synthesis", "upstream.gpu_compute", "untraced")
	st := newSpanTree(spans)
	job := st.one(t, "engine.job")
	if p := st.parentName(job); !strings.Contains(p, "Prove") {
		t.Errorf("engine.job's parent is %q, want the server span of Prove", p)
	}
	if job.Attrs["cuzk.upstream"] != up || job.Attrs["cuzk.request.id"] != "sector-42" {
		t.Errorf("engine.job attributes %v", job.Attrs)
	}
	for name, ms := range map[string]int{"upstream.queue_wait": 50, "upstream.srs_load": 100, "upstream.synthesis": 200, "upstream.gpu_compute": 300} {
		s := st.one(t, name)
		if st.parentName(s) != "engine.job" || s.Duration() != time.Duration(ms)*time.Millisecond {
			t.Errorf("%s under %q lasts %v, want %d ms under engine.job", name, st.parentName(s), s.Duration(), ms)
		}
	}
	u := st.one(t, "untraced")
	if st.parentName(u) != "engine.job" || u.Duration() < 540*time.Millisecond {
		t.Errorf("untraced under %q lasts %v, want >= 550 ms under engine.job", st.parentName(u), u.Duration())
	}
}

// TestUpstreamPartialFailureIsTracedWithEachStatus: the stand-in cuzk
// fails some proofs (those whose request id starts "bad-", FAILED with a
// message, as cuzk reports a failed proof) and proves the others; each
// request sent through `cuzk serve --upstream` on unix sockets (as cuzk
// can listen) with its own traceparent is one trace in Jaeger whose
// engine.job has the request's outcome: the good ones OK with their
// upstream.gpu_compute, the bad ones failed with the upstream's message,
// error.type set, and no upstream.* parts.
func TestUpstreamPartialFailureIsTracedWithEachStatus(t *testing.T) {
	dir, err := os.MkdirTemp("", "cuzk-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := "unix://" + filepath.Join(dir, "cuzk.sock")
	cmd := exec.Command(standinBin(t), "-listen", sock, "-delay", "200ms", "-gpu-compute-ms", "120", "-total-ms", "200",
		"-fail-proof", "synthesis: out of memory", "-fail-requests", "^bad-")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || strings.TrimSpace(line) != "listening "+sock {
		t.Fatalf("cuzk-standin said %q (%v), want listening %s", line, err, sock)
	}
	j := startJaeger(t)
	d := startDaemon(t, j.otlpEnv("grpc", fmt.Sprintf("e2e-upstream-partial-%d", time.Now().UnixNano())), "--upstream", sock)
	conn, err := grpc.NewClient(d.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rpc := cuzkv1.NewProvingEngineClient(conn)
	type sent struct{ id, trace string }
	var reqs []sent
	for i, id := range []string{"good-0", "bad-1", "good-2", "bad-3"} {
		tid, sid := make([]byte, 16), make([]byte, 8)
		rand.Read(tid)
		rand.Read(sid)
		traceID := hex.EncodeToString(tid)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ctx = metadata.AppendToOutgoingContext(ctx, "traceparent", "00-"+traceID+"-"+hex.EncodeToString(sid)+"-01")
		var res *cuzkv1.AwaitProofResponse
		if i%2 == 0 { // Prove, and Submit then Await: both paths
			r, err := rpc.Prove(ctx, &cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{
				RequestId: id, ProofKind: cuzkv1.ProofKind_POREP_SEAL_COMMIT, SectorSize: 32 << 30, RegisteredProof: 3}})
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			res = r.GetResult()
		} else {
			if _, err := rpc.SubmitProof(ctx, &cuzkv1.SubmitProofRequest{
				RequestId: id, ProofKind: cuzkv1.ProofKind_WINDOW_POST_PARTITION, SectorSize: 32 << 30, RegisteredProof: 8}); err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			if res, err = rpc.AwaitProof(ctx, &cuzkv1.AwaitProofRequest{JobId: id}); err != nil {
				t.Fatalf("%s: %v", id, err)
			}
		}
		cancel()
		bad := strings.HasPrefix(id, "bad-")
		if bad && (res.GetStatus() != cuzkv1.AwaitProofResponse_FAILED || res.GetErrorMessage() != "synthesis: out of memory") ||
			!bad && res.GetStatus() != cuzkv1.AwaitProofResponse_COMPLETED {
			t.Fatalf("%s: %v %q", id, res.GetStatus(), res.GetErrorMessage())
		}
		reqs = append(reqs, sent{id, traceID})
	}
	for _, r := range reqs {
		bad := strings.HasPrefix(r.id, "bad-")
		want := []string{"engine.job"}
		if !bad {
			want = append(want, "upstream.gpu_compute")
		}
		st := newSpanTree(traceOf(t, j, r.trace, want...))
		job := st.one(t, "engine.job")
		if job.Attrs["cuzk.request.id"] != r.id {
			t.Errorf("%s: the job in its trace is %v", r.id, job.Attrs["cuzk.request.id"])
		}
		switch {
		case bad && (job.Status.Code != tracefile.StatusError || job.Status.Message != "synthesis: out of memory" || job.Attrs["error.type"] == nil):
			t.Errorf("%s: engine.job status %v %q error.type %v, want failed with the upstream's message", r.id, job.Status.Code, job.Status.Message, job.Attrs["error.type"])
		case bad && len(st.byName["upstream.gpu_compute"]) != 0:
			t.Errorf("%s: a failed proof has upstream parts", r.id)
		case !bad && job.Status.Code == tracefile.StatusError:
			t.Errorf("%s: engine.job failed: %q", r.id, job.Status.Message)
		case !bad && st.one(t, "upstream.gpu_compute").Duration() != 120*time.Millisecond:
			t.Errorf("%s: upstream.gpu_compute lasts %v, want 120 ms", r.id, st.one(t, "upstream.gpu_compute").Duration())
		}
	}
}
