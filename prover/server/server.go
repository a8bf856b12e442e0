package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/internal/rpctrace"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// Device is one device GetStatus reports: a GPU, or the host for the CPU
// backend (Ordinal -1).
type Device struct {
	Ordinal int
	Name    string
	Backend string
	// MemoryTotal and MemoryUsed are bytes; 0 when unknown.
	MemoryTotal, MemoryUsed uint64
}

// Server implements cuzkv1.ProvingEngineServer over an engine.Engine.
type Server struct {
	cuzkv1.UnimplementedProvingEngineServer
	cfg   config
	eng   *engine.Engine
	grpc  *grpc.Server
	ready *readiness
}

// New returns a Server for eng with its grpc.Server built (stats handler,
// size limits, TLS and token when configured) and the standard health
// service grpc.health.v1 registered beside cuzk.v1.ProvingEngine, SERVING
// until SetNotReady or Shutdown. Errors: unreadable TLS files.
func New(eng *engine.Engine, opts ...Option) (*Server, error) {
	s := &Server{cfg: newConfig(opts), eng: eng, ready: newReadiness()}
	codec := newMalformedCodec()
	if s.cfg.known == nil {
		s.cfg.known = func(name string) bool { _, err := circuits.Lookup(name); return err == nil }
	}
	gopts := []grpc.ServerOption{
		// A poll (GetStatus, GetMetrics, AwaitProof) is traced only in a
		// trace its caller samples, not as a root trace of its own each
		// (package rpctrace).
		grpc.StatsHandler(rpctrace.Handler(otelgrpc.NewServerHandler(
			otelgrpc.WithTracerProvider(s.cfg.tp),
			otelgrpc.WithPropagators(s.cfg.propagators),
			// A client's grpc.health.v1 watch lasts as long as its
			// connection (prover/client.DialAddrs holds one per daemon):
			// as a span it would be a trace of its own, of that length.
			otelgrpc.WithFilter(filters.Not(filters.HealthCheck()))), rpctrace.IncomingSampled(s.cfg.propagators))),
		grpc.MaxRecvMsgSize(s.cfg.maxMsg),
		grpc.MaxSendMsgSize(s.cfg.maxMsg),
		grpc.MaxHeaderListSize(MaxHeaderBytes),
		grpc.ForceServerCodecV2(codec),
	}
	if s.cfg.certFile != "" || s.cfg.keyFile != "" {
		creds, err := credentials.NewServerTLSFromFile(s.cfg.certFile, s.cfg.keyFile)
		if err != nil {
			return nil, fmt.Errorf("TLS: %w", err)
		}
		gopts = append(gopts, grpc.Creds(creds))
	}
	unary := []grpc.UnaryServerInterceptor{codec.unary, limitUnary}
	if s.cfg.token != "" {
		unary = append(unary, s.checkToken)
	}
	gopts = append(gopts, grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(codec.stream, limitStream))
	s.grpc = grpc.NewServer(gopts...)
	cuzkv1.RegisterProvingEngineServer(s.grpc, s)
	healthpb.RegisterHealthServer(s.grpc, s.ready.h)
	for _, w := range eng.Workers() {
		s.ready.h.SetServingStatus(WorkerService(w), healthpb.HealthCheckResponse_SERVING)
	}
	return s, nil
}

// GRPC returns the underlying grpc.Server (to register more services).
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// Serve accepts connections on lis until Shutdown; see grpc.Server.Serve.
func (s *Server) Serve(lis net.Listener) error { return s.grpc.Serve(lis) }

// Shutdown stops the daemon: no new RPCs or jobs are accepted, queued jobs
// are cancelled (their awaiting callers get CANCELLED), running jobs may
// finish until ctx is done and are then cancelled, and in-flight RPCs are
// answered before the connections close. It returns the engine's shutdown
// error (nil when every running job finished in time).
func (s *Server) Shutdown(ctx context.Context) error {
	// NOT_SERVING first, so that health watchers move their traffic away
	// while the running proofs finish.
	s.ready.h.Shutdown()
	stopped := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(stopped) }()
	err := s.eng.Shutdown(ctx)
	// The engine is done, so every waiting RPC has its answer; give them a
	// moment to be written, then close what is left.
	t := time.NewTimer(s.cfg.stopGrace)
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
		s.grpc.Stop()
		<-stopped
	}
	return err
}

func (s *Server) checkToken(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if strings.HasPrefix(info.FullMethod, healthMethodPrefix) {
		return h(ctx, req)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		tok, ok := strings.CutPrefix(v, "Bearer ")
		if ok && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.token)) == 1 {
			return h(ctx, req)
		}
	}
	return nil, status.Error(codes.Unauthenticated, "missing or wrong bearer token")
}

// request checks r and turns it into a prover.Request. A Filecoin proof
// kind is checked (CheckFilecoin) and then refused: this daemon proves its
// own circuits only (UNIMPLEMENTED naming the kind).
func (s *Server) request(r *cuzkv1.SubmitProofRequest) (*prover.Request, error) {
	if r == nil {
		return nil, status.Error(codes.InvalidArgument, "no request")
	}
	if r.GetRequestId() == "" {
		return nil, status.Error(codes.InvalidArgument, "empty request_id (it is the idempotency key)")
	}
	if r.GetProofKind() != cuzkv1.ProofKind_PROOF_KIND_UNSPECIFIED {
		if err := CheckFilecoin(r); err != nil {
			return nil, err
		}
		if _, err := filecoinPriority(r); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		if s.cfg.upstream != nil {
			return nil, errForward
		}
		return nil, status.Errorf(codes.Unimplemented, "%s: this daemon proves its own circuits only and has no upstream cuzk to forward it to", KindName(r.GetProofKind()))
	}
	if r.GetCircuit() == "" {
		return nil, status.Error(codes.InvalidArgument, "neither proof_kind nor circuit set")
	}
	if !s.cfg.known(r.GetCircuit()) {
		return nil, status.Errorf(codes.NotFound, "unknown circuit %q (known: %s)", r.GetCircuit(), strings.Join(circuits.Names(), ", "))
	}
	if err := circuits.CheckMax(r.GetConstraints()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	// A built-in's smallest size is checked here, not when the job runs
	// (merkle at 100 constraints queued and failed later). Names outside
	// the registry (WithKnownCircuit) have no shape to check.
	if err := circuits.CheckSize(r.GetCircuit(), int(r.GetConstraints())); err != nil && !errors.Is(err, circuits.ErrUnknownCircuit) {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	p, err := cuzkv1.ToPriority(r.GetPriority())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	var w []byte
	if len(r.GetWitness()) > 0 {
		if err := CheckWitness(r.GetWitness()); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		w = r.GetWitness()
	}
	parts, err := partitions(r)
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 {
		w, parts = parts[0], nil
	}
	return &prover.Request{
		RequestID:   r.GetRequestId(),
		Circuit:     r.GetCircuit(),
		Constraints: int(r.GetConstraints()),
		Witness:     w,
		Partitions:  parts,
		Priority:    p,
		Correlation: correlation(r),
		Verify:      r.GetVerify(),
	}, nil
}

// correlation is r's correlation with the caller: miner (an address) or
// else miner_id as "f0<id>", the sector number, Curio's task.
func correlation(r *cuzkv1.SubmitProofRequest) prover.Correlation {
	c := prover.Correlation{
		MinerID:      r.GetMiner(),
		SectorNumber: int64(min(r.GetSectorNumber(), math.MaxInt64)),
		TaskID:       r.GetTaskId(),
		TaskName:     r.GetTaskName(),
	}
	if c.MinerID == "" && r.GetMinerId() != 0 {
		c.MinerID = fmt.Sprintf("f0%d", r.GetMinerId())
	}
	return c
}

// MaxPartitions bounds the partitions of one request (a PoRep C2 has 10).
const MaxPartitions = 256

// partitions checks the partitions of r: at most MaxPartitions, each a
// well-formed witness or empty, and no witness beside two or more.
func partitions(r *cuzkv1.SubmitProofRequest) ([][]byte, error) {
	ps := r.GetPartitions()
	if len(ps) == 0 {
		return nil, nil
	}
	if len(ps) > MaxPartitions {
		return nil, status.Errorf(codes.InvalidArgument, "%d partitions, at most %d", len(ps), MaxPartitions)
	}
	if len(ps) > 1 && len(r.GetWitness()) > 0 {
		return nil, status.Error(codes.InvalidArgument, "witness and partitions both set: put every partition's witness in partitions")
	}
	out := make([][]byte, len(ps))
	for k, w := range ps {
		if len(w) == 0 {
			continue // the built-in sample
		}
		if err := CheckWitness(w); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "partition %d: %v", k, err)
		}
		out[k] = w
	}
	return out, nil
}

// priorityTo is p on the wire; the engine holds valid priorities only
// (Submit refuses others).
func priorityTo(p priority.Priority) cuzkv1.Priority {
	v, _ := cuzkv1.FromPriority(p)
	return v
}

// jobStatus is the wire status of each engine state; a state not listed
// reads as JOB_STATUS_UNSPECIFIED (the zero value).
var jobStatus = map[engine.State]cuzkv1.JobStatus{
	engine.StateQueued:        cuzkv1.JobStatus_JOB_STATUS_QUEUED,
	engine.StateRunning:       cuzkv1.JobStatus_JOB_STATUS_RUNNING,
	engine.StateSynthesizing:  cuzkv1.JobStatus_JOB_STATUS_SYNTHESIZING,
	engine.StateWaitingDevice: cuzkv1.JobStatus_JOB_STATUS_WAITING_DEVICE,
	engine.StateProving:       cuzkv1.JobStatus_JOB_STATUS_PROVING,
	engine.StateSucceeded:     cuzkv1.JobStatus_JOB_STATUS_SUCCEEDED,
	engine.StateFailed:        cuzkv1.JobStatus_JOB_STATUS_FAILED,
	engine.StateCancelled:     cuzkv1.JobStatus_JOB_STATUS_CANCELLED,
}

func stateTo(s engine.State) cuzkv1.JobStatus { return jobStatus[s] }

// Code is the gRPC status code the daemon answers err with: the code of
// its error.type (semconv.ErrorType) by the one table, cuzkv1.CodeOf (see
// the package doc). An error no sentinel names (_OTHER) that carries a
// gRPC status, as an upstream daemon's answer does, keeps that status's
// code; OK for nil.
func Code(err error) codes.Code {
	t := semconv.ErrorType(err)
	if t == semconv.ErrorTypeOther {
		if st, ok := status.FromError(err); ok {
			return st.Code()
		}
	}
	return cuzkv1.CodeOf(t)
}

// statusErr turns err into a gRPC status error.
func statusErr(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.New(Code(err), err.Error()).Err()
}

// unixNano is t in Unix ns, 0 for the zero time (not yet).
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// wholeMS is d in whole ms, rounded, as cuzk's uint64 timings.
func wholeMS(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return uint64((d + time.Millisecond/2) / time.Millisecond)
}

// awaitStatus is cuzk's status of an ended job.
var awaitStatus = map[engine.State]cuzkv1.AwaitProofResponse_Status{
	engine.StateSucceeded: cuzkv1.AwaitProofResponse_COMPLETED,
	engine.StateFailed:    cuzkv1.AwaitProofResponse_FAILED,
	engine.StateCancelled: cuzkv1.AwaitProofResponse_CANCELLED,
}

// resultOf is the AwaitProofResponse of a job snapshot: cuzk's fields
// (status, proof, error_message, whole-ms timings) and ours.
func resultOf(info engine.JobInfo) *cuzkv1.AwaitProofResponse {
	out := &cuzkv1.AwaitProofResponse{
		JobId:     info.ID,
		Status:    awaitStatus[info.State],
		RequestId: info.RequestID,
		JobStatus: stateTo(info.State),
		TraceId:   info.TraceID,
		Worker:    info.Worker,
	}
	if info.Err != nil {
		out.ErrorMessage = info.Err.Error()
		out.ErrorCode = uint32(Code(info.Err))
	}
	if r := info.Result; r != nil {
		t := r.Timings
		out.Proof = r.Proof
		out.PublicWitness = r.PublicWitness
		out.Verified = r.Verified
		out.Backend = r.Backend
		out.Timings = timingsOf(t)
		out.QueueWaitMs = wholeMS(t.QueueWait + t.MemoryWait + t.DeviceWait)
		out.SrsLoadMs = wholeMS(t.KeyLoad)
		out.SynthesisMs = wholeMS(t.Synthesis)
		out.GpuComputeMs = wholeMS(t.Prove)
		out.TotalMs = wholeMS(t.Total)
		for k, p := range r.Partitions {
			out.Partitions = append(out.Partitions, &cuzkv1.PartitionProof{
				Index: uint32(k), Proof: p.Proof, PublicWitness: p.PublicWitness,
				Timings: timingsOf(p.Timings), Verified: p.Verified,
			})
		}
	}
	return out
}

func timingsOf(t prover.Timings) *cuzkv1.Timings {
	return &cuzkv1.Timings{
		QueueWaitMs: human.Milliseconds(t.QueueWait), KeyLoadMs: human.Milliseconds(t.KeyLoad), SynthesisMs: human.Milliseconds(t.Synthesis),
		ProveMs: human.Milliseconds(t.Prove), SerializeMs: human.Milliseconds(t.Serialize), VerifyMs: human.Milliseconds(t.Verify), TotalMs: human.Milliseconds(t.Total),
		MemoryWaitMs: human.Milliseconds(t.MemoryWait), DeviceWaitMs: human.Milliseconds(t.DeviceWait),
	}
}

// errForward is request's answer for a valid Filecoin request when an
// upstream is configured (WithUpstream): forward it.
var errForward = errors.New("forward to the upstream")

// SubmitProof implements cuzkv1.ProvingEngineServer.
func (s *Server) SubmitProof(ctx context.Context, r *cuzkv1.SubmitProofRequest) (*cuzkv1.SubmitProofResponse, error) {
	info, err := s.submit(ctx, r)
	if errors.Is(err, errForward) {
		return s.cfg.upstream.Submit(ctx, r)
	}
	if err != nil {
		return nil, err
	}
	out := &cuzkv1.SubmitProofResponse{
		JobId: info.ID, Existing: info.Existing, Status: stateTo(info.State), TraceId: info.TraceID,
	}
	if info.State == engine.StateQueued {
		st := s.eng.Status()
		for _, p := range priority.All {
			if p >= info.Priority {
				out.QueuePosition += uint32(st.Queued[p])
			}
		}
		out.QueuePosition = max(out.QueuePosition, 1) - 1
	}
	return out, nil
}

// submit converts r and submits it to the engine; its error is already a
// gRPC status.
func (s *Server) submit(ctx context.Context, r *cuzkv1.SubmitProofRequest) (engine.JobInfo, error) {
	req, err := s.request(r)
	if err != nil {
		return engine.JobInfo{}, err
	}
	info, err := s.eng.Submit(ctx, req)
	if err != nil {
		return engine.JobInfo{}, statusErr(err)
	}
	return info, nil
}

// jobID resolves a job given by job id or request id. A job_id that is
// no job id of this daemon but a request id it knows names that request's
// job: cuzk's job id is the request id (cuzk-server's proto_to_request),
// so a client written for cuzk awaits and cancels by the request id it
// sent, in job_id.
func (s *Server) jobID(jobID, requestID string) (string, error) {
	if jobID != "" {
		if s.eng.Job(jobID).ID == "" {
			if info, ok := s.eng.JobByRequest(jobID); ok {
				return info.ID, nil
			}
		}
		return jobID, nil
	}
	if requestID == "" {
		return "", status.Error(codes.InvalidArgument, "name the job by job_id or request_id")
	}
	info, ok := s.eng.JobByRequest(requestID)
	if !ok {
		return "", status.Errorf(codes.NotFound, "no job for request id %q", requestID)
	}
	return info.ID, nil
}

// await waits for job id until ctx is done or, with wait, until wait is
// done first (the reply then says TIMEOUT). An ended job is an OK reply
// whatever its end; the caller's own deadline or cancellation is an error.
func (s *Server) await(ctx context.Context, id string, wait context.Context) (*cuzkv1.AwaitProofResponse, error) {
	if wait == nil {
		wait = ctx
	}
	info, err := s.eng.Await(wait, id)
	if errors.Is(err, engine.ErrUnknownJob) {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	if err != nil && !info.State.Finished() {
		if ctx.Err() != nil {
			return nil, statusErr(err)
		}
		res := resultOf(info)
		res.Status = cuzkv1.AwaitProofResponse_TIMEOUT
		res.ErrorMessage = err.Error()
		res.ErrorCode = uint32(codes.DeadlineExceeded)
		return res, nil
	}
	return resultOf(info), nil
}

// AwaitProof implements cuzkv1.ProvingEngineServer.
func (s *Server) AwaitProof(ctx context.Context, r *cuzkv1.AwaitProofRequest) (*cuzkv1.AwaitProofResponse, error) {
	id, err := s.jobID(r.GetJobId(), r.GetRequestId())
	if s.upstreamJob(id, err) {
		return s.cfg.upstream.Await(ctx, r)
	}
	if err != nil {
		return nil, err
	}
	var wait context.Context
	if t := r.GetTimeoutMs(); t > 0 {
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(ctx, time.Duration(min(t, math.MaxInt64/uint64(time.Millisecond)))*time.Millisecond)
		defer cancel()
	}
	return s.await(ctx, id, wait)
}

// Prove implements cuzkv1.ProvingEngineServer.
func (s *Server) Prove(ctx context.Context, r *cuzkv1.ProveRequest) (*cuzkv1.ProveResponse, error) {
	if r.GetSubmit() == nil {
		return nil, status.Error(codes.InvalidArgument, "missing submit field")
	}
	info, err := s.submit(ctx, r.GetSubmit())
	if errors.Is(err, errForward) {
		return s.cfg.upstream.Prove(ctx, r)
	}
	if err != nil {
		return nil, err
	}
	res, err := s.await(ctx, info.ID, nil)
	if err != nil {
		return nil, err
	}
	return &cuzkv1.ProveResponse{Result: res}, nil
}

// CancelProof implements cuzkv1.ProvingEngineServer.
func (s *Server) CancelProof(ctx context.Context, r *cuzkv1.CancelProofRequest) (*cuzkv1.CancelProofResponse, error) {
	id, err := s.jobID(r.GetJobId(), r.GetRequestId())
	if s.upstreamJob(id, err) {
		return s.cfg.upstream.Cancel(ctx, r)
	}
	if err != nil {
		return nil, err
	}
	if err := s.eng.Cancel(id); err != nil {
		return nil, statusErr(err)
	}
	st := s.eng.Job(id).State
	return &cuzkv1.CancelProofResponse{WasRunning: st != engine.StateCancelled, JobId: id, Status: stateTo(st)}, nil
}

// upstreamJob says whether a job that jobID resolved to id (or failed to
// find) is the upstream's: with an upstream configured, a job this
// daemon does not know is asked of the upstream.
func (s *Server) upstreamJob(id string, err error) bool {
	if s.cfg.upstream == nil {
		return false
	}
	if err != nil {
		return status.Code(err) == codes.NotFound
	}
	return s.eng.Job(id).ID == ""
}

// upstreamStatusTimeout bounds the upstream's part of GetStatus and
// GetMetrics: an upstream that is down does not hold up ours.
const upstreamStatusTimeout = 2 * time.Second

// mergeStatus adds the upstream's GetStatus to out: its proof totals,
// pinned memory (held and limit), queues (per proof kind), GPUs and
// loaded SRS. An upstream that does
// not answer adds nothing but a queue named "upstream unavailable".
func (s *Server) mergeStatus(ctx context.Context, out *cuzkv1.GetStatusResponse) {
	ctx, cancel := context.WithTimeout(ctx, upstreamStatusTimeout)
	defer cancel()
	up, err := s.cfg.upstream.Status(ctx)
	if err != nil {
		out.Queues = append(out.Queues, &cuzkv1.QueueStatus{ProofKind: "upstream unavailable: " + s.cfg.upstream.Addr()})
		return
	}
	out.TotalProofsCompleted += up.GetTotalProofsCompleted()
	out.TotalProofsFailed += up.GetTotalProofsFailed()
	out.PinnedMemoryBytes += up.GetPinnedMemoryBytes()
	out.PinnedMemoryLimitBytes += up.GetPinnedMemoryLimitBytes()
	out.Queues = append(out.Queues, up.GetQueues()...)
	out.Gpus = append(out.Gpus, up.GetGpus()...)
	out.LoadedSrs = append(out.LoadedSrs, up.GetLoadedSrs()...)
}

// GetStatus implements cuzkv1.ProvingEngineServer.
func (s *Server) GetStatus(ctx context.Context, _ *cuzkv1.GetStatusRequest) (*cuzkv1.GetStatusResponse, error) {
	st := s.eng.Status()
	out := &cuzkv1.GetStatusResponse{
		TotalProofsCompleted: st.Succeeded,
		TotalProofsFailed:    st.Failed,
		UptimeSeconds:        uint64(st.Uptime.Seconds()),
		// cuzk's pinned pool keeps page-locked buffers for the next
		// partitions; ours is the buffer pools (serve --release pool):
		// what they hold now and may hold (Memory's pool_held_bytes,
		// pool_limit_bytes), 0 in the other release modes.
		PinnedMemoryBytes:      st.PoolHeld,
		PinnedMemoryLimitBytes: st.PoolLimit,
		QueueCapacity:          uint32(st.QueueCapacity),
		Succeeded:              st.Succeeded,
		Failed:                 st.Failed,
		Cancelled:              st.Cancelled,
		Uptime:                 st.Uptime.Seconds(),
		Closing:                st.Closing,
		Version:                s.cfg.version,
		Stages: &cuzkv1.Stages{
			SynthesisWorkers: uint32(st.SynthesisWorkers), WaitingMemory: uint32(st.WaitingMemory),
			Synthesizing: uint32(st.Synthesizing), Proving: uint32(st.Proving),
		},
		Memory: &cuzkv1.Memory{
			BudgetBytes: st.MemoryBudget, ReservedBytes: st.MemoryReserved,
			KeysBytes: st.MemoryHeld, PeakBytes: st.MemoryPeak,
			ReleaseMode: string(st.ReleaseMode), PoolLimitBytes: st.PoolLimit, PoolHeldBytes: st.PoolHeld,
		},
	}
	for _, a := range st.Abandoned {
		out.Stages.Abandoned = append(out.Stages.Abandoned, &cuzkv1.AbandonedWork{
			Step: a.Step, JobId: a.JobID, RequestId: a.RequestID, Circuit: a.Circuit,
			Constraints: uint64(max(a.Constraints, 0)), Worker: a.Worker,
			AgeSeconds: st.Started.Add(st.Uptime).Sub(a.Since).Seconds(), MemoryBytes: a.MemoryBytes,
		})
	}
	out.Ready, out.NotReadyReason = s.ready.get()
	if !st.Ready && out.Ready {
		out.Ready, out.NotReadyReason = false, "devices warming up"
	}
	for _, p := range priority.All {
		out.QueueDepths = append(out.QueueDepths, &cuzkv1.QueueDepth{Priority: priorityTo(p), Depth: uint32(st.Queued[p])})
		out.Stages.WaitingDevice = append(out.Stages.WaitingDevice, &cuzkv1.QueueDepth{Priority: priorityTo(p), Depth: uint32(st.WaitingDevice[p])})
	}
	// cuzk's queues are per proof kind; ours are per priority, so the
	// circuits of this daemon are one kind, "local": pending are the
	// queued partitions (those waiting for the memory budget included,
	// which Curio's backpressure must count too), in progress the jobs
	// past the queue.
	local := &cuzkv1.QueueStatus{ProofKind: LocalProofKind, Pending: uint32(st.WaitingMemory)}
	for _, n := range st.Queued {
		local.Pending += uint32(n)
	}
	for _, j := range st.Running {
		if j.State != engine.StateQueued {
			local.InProgress++
		}
		r := jobInfoTo(j)
		if s.cfg.stepOf != nil && !j.State.Finished() && j.State != engine.StateQueued {
			r.Step = s.cfg.stepOf(j.TraceID)
		}
		out.Running = append(out.Running, r)
	}
	for _, w := range st.Waiting {
		q := jobInfoTo(w.JobInfo)
		q.MemoryWait = w.MemoryWait
		out.Queued = append(out.Queued, q)
	}
	for _, tu := range st.Tuning {
		out.Tuning = append(out.Tuning, &cuzkv1.Tuning{
			Circuit: tu.Circuit, Constraints: uint64(max(tu.Constraints, 0)),
			SynthesisWorkers: uint32(max(tu.Workers, 0)), SolverTasks: uint32(max(tu.SolverTasks, 0)),
			SynthesisMs: tu.SynthesisMs, DeviceMs: tu.DeviceMs,
			Synthesized: uint64(max(tu.Synthesized, 0)), Proved: uint64(max(tu.Proved, 0)), Reason: tu.Reason,
		})
	}
	out.Queues = append(out.Queues, local)
	for _, w := range st.Workers {
		out.Workers = append(out.Workers, &cuzkv1.Worker{
			Name: w.Name, JobId: w.JobID, Succeeded: w.Succeeded, Failed: w.Failed, Cancelled: w.Cancelled,
			BusySeconds: w.Busy.Seconds(), Faulted: !w.Healthy, Fault: w.Fault,
		})
	}
	if s.cfg.devices != nil {
		for _, d := range s.cfg.devices() {
			out.Devices = append(out.Devices, &cuzkv1.Device{
				Ordinal: int32(d.Ordinal), Name: d.Name, Backend: d.Backend,
				MemoryTotalBytes: d.MemoryTotal, MemoryUsedBytes: d.MemoryUsed,
			})
			if d.Ordinal < 0 {
				continue
			}
			g := &cuzkv1.GPUStatus{
				Ordinal: uint32(d.Ordinal), Name: d.Name, VramTotalBytes: d.MemoryTotal,
				VramFreeBytes: d.MemoryTotal - min(d.MemoryUsed, d.MemoryTotal),
			}
			for _, w := range st.Workers {
				if w.Name == fmt.Sprintf("%s:%d", d.Backend, d.Ordinal) && w.JobID != "" {
					g.CurrentJobId, g.CurrentProofKind = w.JobID, LocalProofKind
				}
			}
			out.Gpus = append(out.Gpus, g)
		}
	}
	if s.cfg.circuits != nil {
		var holders map[string][]int
		if m, ok := s.cfg.circuits.(CircuitManagers); ok {
			holders = m.holders()
		}
		for _, id := range s.cfg.circuits.LoadedCircuits() {
			name, n := splitCircuitID(id)
			k := &cuzkv1.LoadedKey{Circuit: name, Constraints: n}
			describeKey(k, id, managers(s.cfg.circuits)...)
			for _, i := range holders[id] {
				k.DeviceOrdinals = append(k.DeviceOrdinals, int32(i))
			}
			out.Keys = append(out.Keys, k)
			out.LoadedSrs = append(out.LoadedSrs, &cuzkv1.SRSStatus{CircuitId: id, Tier: cuzkv1.SRSStatus_HOT, SizeBytes: k.Bytes,
				RefCount: usingKey(st.Running, name, n)})
		}
	}
	if s.cfg.upstream != nil {
		s.mergeStatus(ctx, out)
	}
	return out, nil
}

// usingKey is cuzk's ref_count of the key of circuit name at n
// constraints (n 0: a file circuit's, whatever the size): the jobs of
// running past the queue and not ended that prove that circuit and size.
func usingKey(running []engine.JobInfo, name string, n uint64) uint32 {
	var refs uint32
	for _, j := range running {
		if j.State == engine.StateQueued || j.State.Finished() || j.Circuit != name {
			continue
		}
		if n == 0 || uint64(max(j.Constraints, 0)) == n {
			refs++
		}
	}
	return refs
}

// jobInfoTo is GetStatus's JobInfo of j.
func jobInfoTo(j engine.JobInfo) *cuzkv1.JobInfo {
	return &cuzkv1.JobInfo{
		JobId: j.ID, RequestId: j.RequestID, Circuit: j.Circuit, Constraints: uint64(max(j.Constraints, 0)),
		Priority: priorityTo(j.Priority), Status: stateTo(j.State), Worker: j.Worker, TraceId: j.TraceID,
		SubmittedUnixNano: j.Submitted.UnixNano(), StartedUnixNano: unixNano(j.Started),
		Partitions: uint32(max(j.Partitions, 1)),
	}
}

// LocalProofKind is the proof_kind GetStatus gives this daemon's own
// circuits in cuzk's queues and GPU fields.
const LocalProofKind = "local"

// GetMetrics implements cuzkv1.ProvingEngineServer: the text of the
// metrics handler (WithMetricsHandler), or without one the few totals
// cuzk itself reports.
func (s *Server) GetMetrics(ctx context.Context, r *cuzkv1.GetMetricsRequest) (*cuzkv1.GetMetricsResponse, error) {
	res, err := s.localMetrics(ctx)
	if err != nil || s.cfg.upstream == nil {
		return res, err
	}
	ctx, cancel := context.WithTimeout(ctx, upstreamStatusTimeout)
	defer cancel()
	text, uerr := s.cfg.upstream.Metrics(ctx)
	if uerr != nil {
		text = "# " + strings.ReplaceAll(status.Convert(uerr).Message(), "\n", " ") + "\n"
	}
	res.PrometheusText += text
	return res, nil
}

// localMetrics is GetMetrics of this daemon alone.
func (s *Server) localMetrics(ctx context.Context) (*cuzkv1.GetMetricsResponse, error) {
	if s.cfg.metrics != nil {
		text, err := metricsText(ctx, s.cfg.metrics)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "metrics: %v", err)
		}
		return &cuzkv1.GetMetricsResponse{PrometheusText: text}, nil
	}
	st := s.eng.Status()
	queued := 0
	for _, n := range st.Queued {
		queued += n
	}
	var b strings.Builder
	for _, m := range []struct {
		name, typ, help string
		v               float64
	}{
		{"cuzk_proofs_completed_total", "counter", "Proofs completed.", float64(st.Succeeded)},
		{"cuzk_proofs_failed_total", "counter", "Proofs failed.", float64(st.Failed)},
		{"cuzk_uptime_seconds", "gauge", "Daemon uptime.", st.Uptime.Seconds()},
		{"cuzk_queue_depth", "gauge", "Jobs queued.", float64(queued)},
		{"cuzk_running_jobs", "gauge", "Jobs past the queue.", float64(len(st.Running))},
	} {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s %g\n", m.name, m.help, m.name, m.typ, m.name, m.v)
	}
	return &cuzkv1.GetMetricsResponse{PrometheusText: b.String()}, nil
}

// PreloadSRS implements cuzkv1.ProvingEngineServer: circuit_id is a key
// as GetStatus lists it, "NAME/CONSTRAINTS" or a file circuit's "NAME".
// An id naming no circuit of this daemon (cuzk's "porep-32g", ...) goes to
// the upstream when there is one; without one, cuzk's Filecoin SRS ids are
// UNIMPLEMENTED (checkSRS) and other unknown ids NOT_FOUND.
func (s *Server) PreloadSRS(ctx context.Context, r *cuzkv1.PreloadSrsRequest) (*cuzkv1.PreloadSrsResponse, error) {
	if s.upstreamSRS(r.GetCircuitId()) {
		return s.cfg.upstream.PreloadSRS(ctx, r)
	}
	if err := checkSRS("PreloadSRS", r.GetCircuitId()); err != nil {
		return nil, err
	}
	name, n := splitCircuitID(r.GetCircuitId())
	res, err := s.PreloadKeys(ctx, &cuzkv1.PreloadKeysRequest{Circuit: name, Constraints: n})
	if err != nil {
		return nil, err
	}
	return &cuzkv1.PreloadSrsResponse{AlreadyLoaded: res.GetCacheHit(), LoadTimeMs: uint64(res.GetLoadMs())}, nil
}

// EvictSRS implements cuzkv1.ProvingEngineServer; circuit_id is as
// PreloadSRS takes it, and goes to the upstream as it does.
func (s *Server) EvictSRS(ctx context.Context, r *cuzkv1.EvictSrsRequest) (*cuzkv1.EvictSrsResponse, error) {
	if s.upstreamSRS(r.GetCircuitId()) {
		return s.cfg.upstream.EvictSRS(ctx, r)
	}
	if err := checkSRS("EvictSRS", r.GetCircuitId()); err != nil {
		return nil, err
	}
	name, n := splitCircuitID(r.GetCircuitId())
	var freed uint64
	if s.cfg.circuits != nil {
		k := &cuzkv1.LoadedKey{}
		describeKey(k, r.GetCircuitId(), managers(s.cfg.circuits)...)
		freed = k.Bytes
	}
	res, err := s.EvictKeys(ctx, &cuzkv1.EvictKeysRequest{Circuit: name, Constraints: n})
	if err != nil {
		return nil, err
	}
	if !res.GetEvicted() {
		freed = 0
	}
	return &cuzkv1.EvictSrsResponse{WasLoaded: res.GetEvicted(), FreedBytes: freed}, nil
}

// upstreamSRS says whether an SRS id is the upstream's: with an upstream
// configured, an id that names no circuit of this daemon is asked of it.
func (s *Server) upstreamSRS(id string) bool {
	if s.cfg.upstream == nil {
		return false
	}
	name, _ := splitCircuitID(id)
	return !s.cfg.known(name)
}

func (s *Server) keyArgs(circuit string, constraints uint64) (int, error) {
	if s.cfg.circuits == nil {
		return 0, status.Error(codes.Unimplemented, "this daemon has no key manager: it loads a circuit's key on the circuit's first proof")
	}
	if circuit == "" {
		return 0, status.Error(codes.InvalidArgument, "empty circuit name")
	}
	if !s.cfg.known(circuit) {
		return 0, status.Errorf(codes.NotFound, "unknown circuit %q", circuit)
	}
	if err := circuits.CheckMax(constraints); err != nil {
		return 0, status.Error(codes.InvalidArgument, err.Error())
	}
	return int(constraints), nil
}

// PreloadKeys implements cuzkv1.ProvingEngineServer. cache_hit reports
// whether the key was already held in memory.
func (s *Server) PreloadKeys(ctx context.Context, r *cuzkv1.PreloadKeysRequest) (*cuzkv1.PreloadKeysResponse, error) {
	n, err := s.keyArgs(r.GetCircuit(), r.GetConstraints())
	if err != nil {
		return nil, err
	}
	before := s.cfg.circuits.LoadedCircuits()
	start := time.Now()
	if err := s.cfg.circuits.LoadCircuit(ctx, r.GetCircuit(), n); err != nil {
		return nil, statusErr(err)
	}
	elapsed := time.Since(start)
	var key *cuzkv1.LoadedKey
	for _, id := range s.cfg.circuits.LoadedCircuits() {
		if name, c := splitCircuitID(id); name == r.GetCircuit() && (c == 0 || c == r.GetConstraints()) {
			key = &cuzkv1.LoadedKey{Circuit: name, Constraints: c}
			describeKey(key, id, managers(s.cfg.circuits)...)
			hit := false
			for _, b := range before {
				hit = hit || b == id
			}
			return &cuzkv1.PreloadKeysResponse{Key: key, CacheHit: hit, LoadMs: human.Milliseconds(elapsed)}, nil
		}
	}
	return &cuzkv1.PreloadKeysResponse{LoadMs: human.Milliseconds(elapsed)}, nil
}

// EvictKeys implements cuzkv1.ProvingEngineServer.
func (s *Server) EvictKeys(ctx context.Context, r *cuzkv1.EvictKeysRequest) (*cuzkv1.EvictKeysResponse, error) {
	n, err := s.keyArgs(r.GetCircuit(), r.GetConstraints())
	if err != nil {
		return nil, err
	}
	return &cuzkv1.EvictKeysResponse{Evicted: s.cfg.circuits.EvictCircuit(r.GetCircuit(), n)}, nil
}
