// Package standin is a stand-in for a cuzk daemon (Curio's): a
// cuzkv1.ProvingEngineServer whose proofs take a set time and report set
// times (queue_wait_ms, srs_load_ms, synthesis_ms, gpu_compute_ms,
// total_ms), or fail (all of them, every n-th, or those whose request id
// matches) with a gRPC code or as a FAILED proof, for tests of
// prover/upstream and for e2e/cmd/cuzk-standin. As in cuzk, a job's id is
// its request id. It proves nothing: the proof it returns is "proof:" and
// the request id.
package standin

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
)

// Timings are the parts a proof reports, in ms (AwaitProofResponse's
// fields of the same names).
type Timings struct {
	QueueWaitMS, SRSLoadMS, SynthesisMS, GPUComputeMS, TotalMS uint64
}

// Fake is the stand-in. Set its fields before serving; it is safe for
// concurrent use after that.
type Fake struct {
	cuzkv1.UnimplementedProvingEngineServer

	// Delay is how long a proof takes (wall time), unless cancelled.
	Delay time.Duration
	// Report is what a proof reports.
	Report Timings
	// Fail, when not codes.OK, fails the chosen requests' SubmitProof and
	// Prove calls with that code and FailMessage.
	Fail        codes.Code
	FailMessage string
	// FailProof, when not empty, makes each chosen request a job that
	// ends FAILED after Delay with FailProof as its error_message, as
	// cuzk reports a proof that failed (an OK reply); Fail takes
	// precedence.
	FailProof string
	// FailEvery, when > 0, chooses only every FailEvery-th request (the
	// FailEvery-th, 2*FailEvery-th, ... SubmitProof or Prove of a new
	// request id, counted from 1); FailRequests, when set, only requests
	// whose request id it matches. With both, a request is chosen when
	// either chooses it; with neither, every request is.
	FailEvery    int
	FailRequests *regexp.Regexp
	// Metrics is GetMetrics' text.
	Metrics string

	mu     sync.Mutex
	jobs   map[string]*fakeJob // by job id and by request id
	seen   []*cuzkv1.SubmitProofRequest
	meta   []metadata.MD
	n      int
	done   int
	failed int
	cancel int
}

type fakeJob struct {
	id, request string
	fail        bool // ends FAILED with Fake.FailProof
	cancel      context.CancelFunc
	ctx         context.Context
	finished    chan struct{}
	res         *cuzkv1.AwaitProofResponse
}

// Serve serves f on a free port of 127.0.0.1 (with a 128 MiB message
// bound) and returns the address and a stop func.
func (f *Fake) Serve() (addr string, stop func(), err error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	s := grpc.NewServer(grpc.MaxRecvMsgSize(128<<20), grpc.MaxSendMsgSize(128<<20))
	cuzkv1.RegisterProvingEngineServer(s, f)
	go s.Serve(lis)
	return lis.Addr().String(), s.Stop, nil
}

// Requests are the SubmitProofRequests received (Prove's included), in
// order, as parsed.
func (f *Fake) Requests() []*cuzkv1.SubmitProofRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*cuzkv1.SubmitProofRequest(nil), f.seen...)
}

// Metadata is the metadata of each request Requests lists.
func (f *Fake) Metadata() []metadata.MD {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]metadata.MD(nil), f.meta...)
}

// Cancelled is how many jobs CancelProof cancelled.
func (f *Fake) Cancelled() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cancel
}

func (f *Fake) start(ctx context.Context, r *cuzkv1.SubmitProofRequest) (*fakeJob, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, r)
	f.meta = append(f.meta, md)
	if j, ok := f.jobs[r.GetRequestId()]; ok && r.GetRequestId() != "" {
		return j, nil
	}
	f.n++
	chosen := f.chosen(r.GetRequestId())
	if chosen && f.Fail != codes.OK {
		return nil, status.Error(f.Fail, f.FailMessage)
	}
	if f.jobs == nil {
		f.jobs = map[string]*fakeJob{}
	}
	// cuzk's job id is the request id (cuzk-server's proto_to_request).
	id := r.GetRequestId()
	if id == "" {
		id = fmt.Sprintf("upstream-%d", f.n)
	}
	jctx, cancel := context.WithCancel(context.Background())
	j := &fakeJob{id: id, request: r.GetRequestId(), fail: chosen && f.FailProof != "",
		ctx: jctx, cancel: cancel, finished: make(chan struct{})}
	f.jobs[j.id] = j
	go f.run(j)
	return j, nil
}

// chosen reports whether the f.n-th new request, of request id id, is
// one that fails; f.mu must be held.
func (f *Fake) chosen(id string) bool {
	if f.FailEvery <= 0 && f.FailRequests == nil {
		return true
	}
	return f.FailEvery > 0 && f.n%f.FailEvery == 0 || f.FailRequests != nil && f.FailRequests.MatchString(id)
}

func (f *Fake) run(j *fakeJob) {
	t := time.NewTimer(f.Delay)
	defer t.Stop()
	res := &cuzkv1.AwaitProofResponse{JobId: j.id, RequestId: j.request}
	select {
	case <-t.C:
		if j.fail {
			res.Status, res.ErrorMessage = cuzkv1.AwaitProofResponse_FAILED, f.FailProof
			break
		}
		res.Status = cuzkv1.AwaitProofResponse_COMPLETED
		res.Proof = []byte("proof:" + j.request)
		res.QueueWaitMs, res.SrsLoadMs = f.Report.QueueWaitMS, f.Report.SRSLoadMS
		res.SynthesisMs, res.GpuComputeMs, res.TotalMs = f.Report.SynthesisMS, f.Report.GPUComputeMS, f.Report.TotalMS
	case <-j.ctx.Done():
		res.Status = cuzkv1.AwaitProofResponse_CANCELLED
		res.ErrorMessage = "cancelled"
	}
	f.mu.Lock()
	j.res = res
	switch res.Status {
	case cuzkv1.AwaitProofResponse_COMPLETED:
		f.done++
	case cuzkv1.AwaitProofResponse_FAILED:
		f.failed++
	}
	f.mu.Unlock()
	close(j.finished)
}

func (f *Fake) lookup(jobID, requestID string) (*fakeJob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range []string{jobID, requestID} {
		if j, ok := f.jobs[id]; ok && id != "" {
			return j, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "no job %q %q", jobID, requestID)
}

// SubmitProof implements cuzkv1.ProvingEngineServer.
func (f *Fake) SubmitProof(ctx context.Context, r *cuzkv1.SubmitProofRequest) (*cuzkv1.SubmitProofResponse, error) {
	j, err := f.start(ctx, r)
	if err != nil {
		return nil, err
	}
	return &cuzkv1.SubmitProofResponse{JobId: j.id, Status: cuzkv1.JobStatus_JOB_STATUS_RUNNING}, nil
}

func (f *Fake) await(ctx context.Context, j *fakeJob, timeout time.Duration) (*cuzkv1.AwaitProofResponse, error) {
	var tc <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-j.finished:
		f.mu.Lock()
		defer f.mu.Unlock()
		return j.res, nil
	case <-tc:
		return &cuzkv1.AwaitProofResponse{JobId: j.id, Status: cuzkv1.AwaitProofResponse_TIMEOUT}, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// AwaitProof implements cuzkv1.ProvingEngineServer.
func (f *Fake) AwaitProof(ctx context.Context, r *cuzkv1.AwaitProofRequest) (*cuzkv1.AwaitProofResponse, error) {
	j, err := f.lookup(r.GetJobId(), r.GetRequestId())
	if err != nil {
		return nil, err
	}
	return f.await(ctx, j, time.Duration(r.GetTimeoutMs())*time.Millisecond)
}

// Prove implements cuzkv1.ProvingEngineServer: a Prove whose caller goes
// away cancels its job, as cuzk's does.
func (f *Fake) Prove(ctx context.Context, r *cuzkv1.ProveRequest) (*cuzkv1.ProveResponse, error) {
	j, err := f.start(ctx, r.GetSubmit())
	if err != nil {
		return nil, err
	}
	res, err := f.await(ctx, j, 0)
	if err != nil {
		f.mu.Lock()
		f.cancel++
		f.mu.Unlock()
		j.cancel()
		return nil, err
	}
	return &cuzkv1.ProveResponse{Result: res}, nil
}

// CancelProof implements cuzkv1.ProvingEngineServer.
func (f *Fake) CancelProof(ctx context.Context, r *cuzkv1.CancelProofRequest) (*cuzkv1.CancelProofResponse, error) {
	j, err := f.lookup(r.GetJobId(), r.GetRequestId())
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.cancel++
	f.mu.Unlock()
	j.cancel()
	<-j.finished
	return &cuzkv1.CancelProofResponse{WasRunning: true, JobId: j.id, Status: cuzkv1.JobStatus_JOB_STATUS_CANCELLED}, nil
}

// GetStatus implements cuzkv1.ProvingEngineServer: the proofs completed
// and failed, one queue "porep" and one GPU "fake".
func (f *Fake) GetStatus(ctx context.Context, _ *cuzkv1.GetStatusRequest) (*cuzkv1.GetStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &cuzkv1.GetStatusResponse{
		TotalProofsCompleted: uint64(f.done),
		TotalProofsFailed:    uint64(f.failed),
		Queues:               []*cuzkv1.QueueStatus{{ProofKind: "porep"}},
		Gpus:                 []*cuzkv1.GPUStatus{{Ordinal: 0, Name: "fake"}},
	}, nil
}

// GetMetrics implements cuzkv1.ProvingEngineServer.
func (f *Fake) GetMetrics(ctx context.Context, _ *cuzkv1.GetMetricsRequest) (*cuzkv1.GetMetricsResponse, error) {
	return &cuzkv1.GetMetricsResponse{PrometheusText: f.Metrics}, nil
}
