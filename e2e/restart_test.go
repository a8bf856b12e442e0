package e2e

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
)

func engineClient(t *testing.T, addr string) cuzkv1.ProvingEngineClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return cuzkv1.NewProvingEngineClient(conn)
}

// TestDaemonKilledMidLoadAnswersEveryRequestIDAfterARestart: the finding
// was that after SIGKILL and a restart every request id was NOT_FOUND and
// resubmitting them proved them again. With --state-dir the finished jobs
// return their proofs, the ones that were queued or running answer FAILED
// "interrupted by a restart" (ABORTED), and resubmitting one proves it.
func TestDaemonKilledMidLoadAnswersEveryRequestIDAfterARestart(t *testing.T) {
	state := t.TempDir()
	args := []string{"--state-dir", state, "--trace-file", filepath.Join(state, "t.jsonl")}
	d := startDaemon(t, nil, args...)
	pc := engineClient(t, d.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	small := func(i int) *cuzkv1.SubmitProofRequest {
		return &cuzkv1.SubmitProofRequest{RequestId: fmt.Sprint("done-", i), Circuit: "mulchain", Constraints: 1024}
	}
	large := func(i int) *cuzkv1.SubmitProofRequest {
		return &cuzkv1.SubmitProofRequest{RequestId: fmt.Sprint("cut-", i), Circuit: "mulchain", Constraints: 1 << 13}
	}
	proofs := map[string][]byte{}
	for i := range 4 {
		res, err := pc.Prove(ctx, &cuzkv1.ProveRequest{Submit: small(i)})
		if err != nil || len(res.GetResult().GetProof()) == 0 {
			t.Fatal(res, err)
		}
		proofs[res.Result.RequestId] = res.Result.Proof
	}
	for i := range 4 {
		if _, err := pc.SubmitProof(ctx, large(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Kill once one of them runs.
	for {
		st, err := pc.GetStatus(ctx, &cuzkv1.GetStatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Running) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-d.done
	d.exited = true

	d2 := startDaemon(t, nil, args...)
	pc = engineClient(t, d2.Addr)
	for id, want := range proofs {
		res, err := pc.AwaitProof(ctx, &cuzkv1.AwaitProofRequest{RequestId: id})
		if err != nil || res.JobStatus != cuzkv1.JobStatus_JOB_STATUS_SUCCEEDED || !bytes.Equal(res.Proof, want) {
			t.Errorf("%s after the restart: %v %v, want its proof", id, res.GetJobStatus(), err)
		}
	}
	for i := range 4 {
		id := large(i).RequestId
		res, err := pc.AwaitProof(ctx, &cuzkv1.AwaitProofRequest{RequestId: id})
		if err != nil || res.Status != cuzkv1.AwaitProofResponse_FAILED || res.ErrorCode != uint32(codes.Aborted) ||
			!strings.Contains(res.ErrorMessage, "interrupted by a restart") {
			t.Errorf("%s after the restart: %v %v, want FAILED (ABORTED) interrupted by a restart", id, res, err)
		}
	}
	// A finished one is not proved again; an interrupted one is.
	again, err := pc.SubmitProof(ctx, small(0))
	if err != nil || !again.Existing {
		t.Errorf("resubmitted done-0: %+v %v, want the existing job", again, err)
	}
	retry := large(0)
	retry.Constraints = 1024 // another proof under the same id: refused as today
	if _, err := pc.SubmitProof(ctx, retry); status.Code(err) != codes.AlreadyExists {
		t.Errorf("cut-0 with other parameters: %v, want ALREADY_EXISTS", err)
	}
	res, err := pc.Prove(ctx, &cuzkv1.ProveRequest{Submit: large(0)})
	if err != nil || res.GetResult().GetJobStatus() != cuzkv1.JobStatus_JOB_STATUS_SUCCEEDED || len(res.GetResult().GetProof()) == 0 {
		t.Errorf("cut-0 resubmitted: %v %v, want it proved", res, err)
	}
}
