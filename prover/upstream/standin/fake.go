// Package standin is a stand-in for a cuzk daemon (Curio's): a
// cuzkv1.ProvingEngineServer whose proofs take a set time and report set
// times (queue_wait_ms, srs_load_ms, synthesis_ms, gpu_compute_ms,
// total_ms), or fail (all of them, every n-th, or those whose request id
// matches) with a gRPC code or as a FAILED proof, for tests of
// prover/upstream and for e2e/cmd/cuzk-standin. As in cuzk, a job's id is
// its request id. It proves nothing: the proof it returns is "proof:" and
// the request id. A proof waits Delay, then takes one of its GPUs (each
// serves one job at a time, the oldest waiting first; GetStatus names the
// job a GPU holds in current_job_id, as cuzk does) for its GPU part: Work,
// when set (a program's real kernels), then answers.
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
	// GPUs is how many GPUs it has (ordinals 0..GPUs-1; 0 means 1).
	GPUs int
	// Work, when set, is a proof's GPU part, run holding GPU gpu after
	// Delay; its wall time is the gpu_compute_ms reported when
	// Report.GPUComputeMS is 0. An error ends the job FAILED with it.
	Work func(ctx context.Context, gpu int, requestID string) error
	// PinnedBytes and PinnedLimitBytes are GetStatus' pinned_memory_bytes
	// and pinned_memory_limit_bytes.
	PinnedBytes, PinnedLimitBytes uint64

	mu     sync.Mutex
	gpus   []*fakeJob          // the job each GPU holds
	wait   []*gpuWait          // jobs waiting for a GPU, oldest first
	jobs   map[string]*fakeJob // by job id and by request id
	seen   []*cuzkv1.SubmitProofRequest
	meta   []metadata.MD
	n      int
	done   int
	failed int
	cancel int
	srs    map[string]bool // SRS ids preloaded
}

type fakeJob struct {
	id, request string
	kind        string // cuzk's proof kind name
	fail        bool   // ends FAILED with Fake.FailProof
	cancel      context.CancelFunc
	ctx         context.Context
	finished    chan struct{}
	res         *cuzkv1.AwaitProofResponse
}

type gpuWait struct {
	j     *fakeJob
	ready chan int // the GPU it got
}

// Serve serves f on a free port of 127.0.0.1 (with a 128 MiB message
// bound) and returns the address and a stop func.
func (f *Fake) Serve() (addr string, stop func(), err error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	return lis.Addr().String(), f.ServeListener(lis), nil
}

// ServeListener serves f on lis (a unix socket's, for one) with a 128 MiB
// message bound, as cuzk's daemon has, and returns the stop func.
func (f *Fake) ServeListener(lis net.Listener) (stop func()) {
	s := grpc.NewServer(grpc.MaxRecvMsgSize(128<<20), grpc.MaxSendMsgSize(128<<20))
	cuzkv1.RegisterProvingEngineServer(s, f)
	go s.Serve(lis)
	return s.Stop
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
	j := &fakeJob{id: id, request: r.GetRequestId(), kind: r.GetProofKind().String(), fail: chosen && f.FailProof != "",
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

// takeGPU waits for a free GPU (the oldest waiting job first) and
// returns it, or -1 when ctx ends first.
func (f *Fake) takeGPU(ctx context.Context, j *fakeJob) int {
	f.mu.Lock()
	if len(f.gpus) == 0 {
		f.gpus = make([]*fakeJob, max(f.GPUs, 1))
	}
	w := &gpuWait{j: j, ready: make(chan int, 1)}
	f.wait = append(f.wait, w)
	f.dispatch()
	f.mu.Unlock()
	select {
	case g := <-w.ready:
		return g
	case <-ctx.Done():
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, o := range f.wait {
			if o == w {
				f.wait = append(f.wait[:i], f.wait[i+1:]...)
				return -1
			}
		}
		f.freeGPU(<-w.ready) // it got one as ctx ended
		return -1
	}
}

// dispatch hands free GPUs to the oldest waiting jobs; f.mu held.
func (f *Fake) dispatch() {
	for g, holder := range f.gpus {
		if holder == nil && len(f.wait) > 0 {
			w := f.wait[0]
			f.wait = f.wait[1:]
			f.gpus[g] = w.j
			w.ready <- g
		}
	}
}

// freeGPU gives GPU g back; f.mu held.
func (f *Fake) freeGPU(g int) {
	f.gpus[g] = nil
	f.dispatch()
}

func (f *Fake) run(j *fakeJob) {
	t := time.NewTimer(f.Delay)
	defer t.Stop()
	res := &cuzkv1.AwaitProofResponse{JobId: j.id, RequestId: j.request}
	cancelled := func() {
		res.Status = cuzkv1.AwaitProofResponse_CANCELLED
		res.ErrorMessage = "cancelled"
	}
	select {
	case <-t.C:
		if j.fail {
			res.Status, res.ErrorMessage = cuzkv1.AwaitProofResponse_FAILED, f.FailProof
			break
		}
		g := f.takeGPU(j.ctx, j)
		if g < 0 {
			cancelled()
			break
		}
		var werr error
		began := time.Now()
		if f.Work != nil {
			werr = f.Work(j.ctx, g, j.request)
		}
		took := time.Since(began)
		f.mu.Lock()
		f.freeGPU(g)
		f.mu.Unlock()
		if werr != nil {
			if j.ctx.Err() != nil {
				cancelled()
				break
			}
			res.Status, res.ErrorMessage = cuzkv1.AwaitProofResponse_FAILED, werr.Error()
			break
		}
		res.Status = cuzkv1.AwaitProofResponse_COMPLETED
		res.Proof = []byte("proof:" + j.request)
		res.QueueWaitMs, res.SrsLoadMs = f.Report.QueueWaitMS, f.Report.SRSLoadMS
		res.SynthesisMs, res.GpuComputeMs, res.TotalMs = f.Report.SynthesisMS, f.Report.GPUComputeMS, f.Report.TotalMS
		if res.GpuComputeMs == 0 && f.Work != nil {
			res.GpuComputeMs = uint64(took.Milliseconds())
		}
	case <-j.ctx.Done():
		cancelled()
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
// and failed, one queue "porep" and its GPUs "fake", each with the job it
// holds (current_job_id, current_proof_kind), as cuzk reports its workers.
func (f *Fake) GetStatus(ctx context.Context, _ *cuzkv1.GetStatusRequest) (*cuzkv1.GetStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gpus := make([]*cuzkv1.GPUStatus, max(f.GPUs, 1))
	for g := range gpus {
		gpus[g] = &cuzkv1.GPUStatus{Ordinal: uint32(g), Name: "fake"}
		if g < len(f.gpus) && f.gpus[g] != nil {
			gpus[g].CurrentJobId, gpus[g].CurrentProofKind = f.gpus[g].id, f.gpus[g].kind
		}
	}
	return &cuzkv1.GetStatusResponse{
		TotalProofsCompleted:   uint64(f.done),
		TotalProofsFailed:      uint64(f.failed),
		Queues:                 []*cuzkv1.QueueStatus{{ProofKind: "porep", Pending: uint32(len(f.wait))}},
		Gpus:                   gpus,
		PinnedMemoryBytes:      f.PinnedBytes,
		PinnedMemoryLimitBytes: f.PinnedLimitBytes,
	}, nil
}

// srsIDs are the SRS ids cuzk's PreloadSRS takes (cuzk-core's
// srs_manager).
var srsIDs = map[string]bool{"porep-32g": true, "porep-64g": true, "wpost-32g": true, "winning-32g": true, "snap-32g": true, "snap-64g": true}

// PreloadSRS implements cuzkv1.ProvingEngineServer as cuzk does: one of
// its SRS ids is loaded (already_loaded the second time), another is
// INTERNAL "unknown circuit ID".
func (f *Fake) PreloadSRS(ctx context.Context, r *cuzkv1.PreloadSrsRequest) (*cuzkv1.PreloadSrsResponse, error) {
	if !srsIDs[r.GetCircuitId()] {
		return nil, status.Errorf(codes.Internal, "unknown circuit ID: %s", r.GetCircuitId())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srs == nil {
		f.srs = map[string]bool{}
	}
	already := f.srs[r.GetCircuitId()]
	f.srs[r.GetCircuitId()] = true
	return &cuzkv1.PreloadSrsResponse{AlreadyLoaded: already}, nil
}

// EvictSRS implements cuzkv1.ProvingEngineServer: was_loaded says whether
// PreloadSRS had loaded the id.
func (f *Fake) EvictSRS(ctx context.Context, r *cuzkv1.EvictSrsRequest) (*cuzkv1.EvictSrsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	was := f.srs[r.GetCircuitId()]
	delete(f.srs, r.GetCircuitId())
	return &cuzkv1.EvictSrsResponse{WasLoaded: was}, nil
}

// GetMetrics implements cuzkv1.ProvingEngineServer.
func (f *Fake) GetMetrics(ctx context.Context, _ *cuzkv1.GetMetricsRequest) (*cuzkv1.GetMetricsResponse, error) {
	return &cuzkv1.GetMetricsResponse{PrometheusText: f.Metrics}, nil
}
