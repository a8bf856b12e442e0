// Package client is a Go client of the cuzk.v1.ProvingEngine daemon, with
// plain Go types, for callers such as Curio. Calls are traced with
// otelgrpc's client stats handler, so the span in the ctx of a call (a
// Curio task span) is the parent of the RPC span and, through W3C trace
// context in the metadata, of the daemon's engine.job: one trace across
// both processes. Status, Metrics and Await (calls that only read) make
// spans only under a sampled span in their ctx: a poll without one is no
// trace of its own.
//
// DialAddrs makes a client of several daemons (several proving hosts):
// gRPC's resolver and a load-balancing policy of this package send each
// request id to one daemon by rendezvous hashing over those that are up and
// SERVING, and job ids name the daemon that holds the job (fleet.go).
//
// The package imports grpc, the generated API and OpenTelemetry only: no
// gnark and no cgo (a test checks `go list -deps`).
package client

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/internal/rpctrace"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// Priority orders queued work; CRITICAL overtakes everything queued. It
// is the one priority type of cuzk (package prover/priority), shared with
// the daemon's engine.
type Priority = priority.Priority

// Priorities. The zero value is Normal.
const (
	Normal   = priority.Normal
	Low      = priority.Low
	High     = priority.High
	Critical = priority.Critical
)

// ParsePriority maps LOW, NORMAL, HIGH or CRITICAL (any case) to a
// Priority (priority.Parse).
func ParsePriority(s string) (Priority, error) { return priority.Parse(s) }

// JobStatus is where a job is in its life.
type JobStatus string

// Job statuses.
const (
	Queued    JobStatus = "QUEUED"
	Running   JobStatus = "RUNNING"
	Succeeded JobStatus = "SUCCEEDED"
	Failed    JobStatus = "FAILED"
	Cancelled JobStatus = "CANCELLED"
	// The stages of a pipelined daemon: Synthesizing on the CPU,
	// WaitingDevice (synthesized, waiting for a device worker), Proving.
	Synthesizing  JobStatus = "SYNTHESIZING"
	WaitingDevice JobStatus = "WAITING_DEVICE"
	Proving       JobStatus = "PROVING"
)

func statusFrom(s cuzkv1.JobStatus) JobStatus {
	switch s {
	case cuzkv1.JobStatus_JOB_STATUS_QUEUED:
		return Queued
	case cuzkv1.JobStatus_JOB_STATUS_RUNNING:
		return Running
	case cuzkv1.JobStatus_JOB_STATUS_SUCCEEDED:
		return Succeeded
	case cuzkv1.JobStatus_JOB_STATUS_FAILED:
		return Failed
	case cuzkv1.JobStatus_JOB_STATUS_CANCELLED:
		return Cancelled
	case cuzkv1.JobStatus_JOB_STATUS_SYNTHESIZING:
		return Synthesizing
	case cuzkv1.JobStatus_JOB_STATUS_WAITING_DEVICE:
		return WaitingDevice
	case cuzkv1.JobStatus_JOB_STATUS_PROVING:
		return Proving
	}
	return ""
}

// Request is one proof to ask for.
type Request struct {
	// RequestID is the idempotency key: asking again with the same id
	// returns the same job. Required.
	RequestID string
	// Circuit is a circuit registered in the daemon ("mulchain", "merkle").
	Circuit string
	// Constraints sizes a built-in circuit (R1CS constraints).
	Constraints uint64
	// Witness is a full witness in gnark's binary format; nil asks a
	// built-in circuit for its own sample witness.
	Witness  []byte
	Priority Priority
	// Correlation with the caller, recorded on the daemon's engine.job.
	MinerID      string
	SectorNumber int64
	TaskID       int64
	TaskName     string
	// Verify asks the daemon to check the proof with gnark's verifier.
	Verify bool
	// Partitions, with two or more witnesses, asks for a multi-partition
	// proof (a PoRep C2 has 10): one proof per witness, in
	// Result.Partitions; Witness must then be nil. A nil entry asks for
	// the built-in sample.
	Partitions [][]byte
}

func (r Request) proto() (*cuzkv1.SubmitProofRequest, error) {
	p, err := cuzkv1.FromPriority(r.Priority)
	if err != nil {
		return nil, err
	}
	if r.SectorNumber < 0 {
		return nil, fmt.Errorf("sector number %d is negative", r.SectorNumber)
	}
	return &cuzkv1.SubmitProofRequest{
		RequestId: r.RequestID, Circuit: r.Circuit, Constraints: r.Constraints, Witness: r.Witness,
		Priority: p, Miner: r.MinerID, SectorNumber: uint64(r.SectorNumber), TaskId: r.TaskID,
		TaskName: r.TaskName, Verify: r.Verify, Partitions: r.Partitions,
	}, nil
}

// Timings are the daemon's durations for one proof.
//
// MemoryWait is the wait for the daemon's memory budget, DeviceWait the
// wait of the synthesized proof for a device worker.
type Timings struct {
	QueueWait, KeyLoad, Synthesis, Prove, Serialize, Verify, Total time.Duration
	MemoryWait, DeviceWait                                         time.Duration
}

// Result is the outcome of a job.
type Result struct {
	JobID, RequestID string
	Status           JobStatus
	// Error says why a Failed or Cancelled job ended.
	Error string
	// Proof is gnark's groth16.Proof (BLS12-381), WriteTo encoding.
	Proof []byte
	// PublicWitness is the public part of the witness, gnark binary format.
	PublicWitness []byte
	// TraceID is the hex W3C trace id of the proof's trace.
	TraceID  string
	Timings  Timings
	Verified bool
	Backend  string
	Worker   string
	// Partitions are a multi-partition job's proofs, in partition order
	// (Proof and PublicWitness are partition 0's).
	Partitions []PartitionProof
}

// PartitionProof is the proof of one partition of a multi-partition job.
type PartitionProof struct {
	Index         int
	Proof         []byte
	PublicWitness []byte
	Timings       Timings
	Verified      bool
}

func fromMS(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func resultFrom(r *cuzkv1.AwaitProofResponse) *Result {
	res := &Result{
		JobID: r.GetJobId(), RequestID: r.GetRequestId(), Status: statusFrom(r.GetJobStatus()),
		Error: r.GetErrorMessage(), Proof: r.GetProof(), PublicWitness: r.GetPublicWitness(),
		TraceID: r.GetTraceId(), Verified: r.GetVerified(), Backend: r.GetBackend(), Worker: r.GetWorker(),
		Timings: timingsFrom(r.GetTimings()),
	}
	for _, p := range r.GetPartitions() {
		res.Partitions = append(res.Partitions, PartitionProof{Index: int(p.GetIndex()), Proof: p.GetProof(),
			PublicWitness: p.GetPublicWitness(), Timings: timingsFrom(p.GetTimings()), Verified: p.GetVerified()})
	}
	return res
}

func timingsFrom(t *cuzkv1.Timings) Timings {
	return Timings{
		QueueWait: fromMS(t.GetQueueWaitMs()), KeyLoad: fromMS(t.GetKeyLoadMs()),
		Synthesis: fromMS(t.GetSynthesisMs()), Prove: fromMS(t.GetProveMs()),
		Serialize: fromMS(t.GetSerializeMs()), Verify: fromMS(t.GetVerifyMs()), Total: fromMS(t.GetTotalMs()),
		MemoryWait: fromMS(t.GetMemoryWaitMs()), DeviceWait: fromMS(t.GetDeviceWaitMs()),
	}
}

// replyCodes are the codes of a job that did not complete, when the
// daemon gave none (a daemon that is cuzk itself, through an upstream).
var replyCodes = map[cuzkv1.AwaitProofResponse_Status]codes.Code{
	cuzkv1.AwaitProofResponse_FAILED:    codes.Internal,
	cuzkv1.AwaitProofResponse_CANCELLED: codes.Canceled,
	cuzkv1.AwaitProofResponse_TIMEOUT:   codes.DeadlineExceeded,
	cuzkv1.AwaitProofResponse_UNKNOWN:   codes.Unknown,
}

// replyErr is nil for a completed job; otherwise the gRPC status error of
// the reply's error_code (or its status's code), carrying the reply, so
// that callers branch on status.Code and ResultOf finds the job.
func replyErr(r *cuzkv1.AwaitProofResponse) error {
	if r.GetStatus() == cuzkv1.AwaitProofResponse_COMPLETED {
		return nil
	}
	code := codes.Code(r.GetErrorCode())
	if code == codes.OK {
		code = replyCodes[r.GetStatus()]
	}
	msg := r.GetErrorMessage()
	if msg == "" {
		msg = "job " + r.GetJobId() + " " + strings.ToLower(r.GetStatus().String())
	}
	st := status.New(code, msg)
	if d, err := st.WithDetails(r); err == nil {
		st = d
	}
	return st.Err()
}

// resultOfError returns the reply the daemon attached to a failed
// job's status, or nil.
func resultOfError(err error) *Result {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Details() {
		if r, ok := d.(*cuzkv1.AwaitProofResponse); ok {
			return resultFrom(r)
		}
	}
	return nil
}

// Job is a submitted job.
type Job struct {
	ID string
	// Existing is true when the request id named a job already known.
	Existing bool
	Status   JobStatus
	TraceID  string
}

// Client calls one daemon (Dial) or several (DialAddrs). It is safe for
// concurrent use.
type Client struct {
	conn *grpc.ClientConn
	api  cuzkv1.ProvingEngineClient
	// addrs are the daemons of a client made by DialAddrs; nil for Dial.
	addrs []string
	view  *fleetView // DialAddrs: the daemons' states
}

// Dial returns a client of the daemon at addr ("host:port"); the
// connection is made lazily, at the first call. Errors: a malformed
// address or options.
func Dial(addr string, opts ...Option) (*Client, error) {
	conn, err := grpc.NewClient(addr, dialOptions(newConfig(opts))...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return &Client{conn: conn, api: cuzkv1.NewProvingEngineClient(conn)}, nil
}

// dialOptions are the options Dial and DialAddrs share.
func dialOptions(cfg config) []grpc.DialOption {
	creds := insecure.NewCredentials()
	if cfg.tls != nil {
		creds = credentials.NewTLS(cfg.tls)
	}
	dopts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		// A poll (Status, Metrics, Await) is traced only inside the
		// caller's sampled span, not as a root span of its own each
		// (internal/rpctrace).
		grpc.WithStatsHandler(rpctrace.Handler(otelgrpc.NewClientHandler(
			otelgrpc.WithTracerProvider(cfg.tp), otelgrpc.WithPropagators(cfg.propagators),
			// The health watch of each daemon is no part of any proof's
			// trace: it would be a root span as long as the connection.
			otelgrpc.WithFilter(filters.Not(filters.HealthCheck()))), rpctrace.CallerSampled)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.maxMsg), grpc.MaxCallSendMsgSize(cfg.maxMsg)),
	}
	if cfg.token != "" {
		dopts = append(dopts, grpc.WithPerRPCCredentials(bearer{token: cfg.token}))
	}
	return append(dopts, cfg.dialOpts...)
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// bearer sends the token as call metadata. It does not require transport
// security so that a daemon on loopback can use a token without TLS.
type bearer struct{ token string }

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return false }

// Submit queues r and returns its job at once. Errors are gRPC status
// errors (status.Code gives INVALID_ARGUMENT, NOT_FOUND,
// RESOURCE_EXHAUSTED, UNAVAILABLE ...).
func (c *Client) Submit(ctx context.Context, r Request) (Job, error) {
	pr, err := r.proto()
	if err != nil {
		return Job{}, err
	}
	ctx, rt, held := c.routeRequest(ctx, r.RequestID)
	if held != nil {
		return Job{ID: held.JobID, Existing: true, Status: held.Status, TraceID: held.TraceID}, nil
	}
	resp, err := c.api.SubmitProof(ctx, pr)
	if err != nil {
		return Job{}, err
	}
	return Job{ID: rt.jobID(resp.GetJobId()), Existing: resp.GetExisting(), Status: statusFrom(resp.GetStatus()), TraceID: resp.GetTraceId()}, nil
}

// Await waits up to timeout (0: until ctx's deadline) for job id to end.
// For a job that did not succeed it returns the gRPC status error
// (CANCELLED, INVALID_ARGUMENT, INTERNAL ...) and, when the daemon sent
// it, the Result with the job id, trace id and error; DEADLINE_EXCEEDED
// when the wait ended first.
func (c *Client) Await(ctx context.Context, id string, timeout time.Duration) (*Result, error) {
	ctx, id, err := c.routeJob(ctx, id)
	if err != nil {
		return nil, err
	}
	return c.await(ctx, &cuzkv1.AwaitProofRequest{JobId: id, TimeoutMs: uint64(max(timeout, 0) / time.Millisecond)})
}

// AwaitRequest is Await for the job of a request id.
func (c *Client) AwaitRequest(ctx context.Context, requestID string, timeout time.Duration) (*Result, error) {
	ctx, _, _ = c.routeRequest(ctx, requestID)
	return c.await(ctx, &cuzkv1.AwaitProofRequest{RequestId: requestID, TimeoutMs: uint64(max(timeout, 0) / time.Millisecond)})
}

func (c *Client) await(ctx context.Context, r *cuzkv1.AwaitProofRequest) (*Result, error) {
	resp, err := c.api.AwaitProof(ctx, r)
	rt := routeOf(ctx)
	if err != nil {
		return rt.result(resultOfError(err)), err
	}
	return rt.result(resultFrom(resp)), replyErr(resp)
}

// Prove submits r and waits for its proof, in one call; errors as Submit's
// and Await's.
func (c *Client) Prove(ctx context.Context, r Request) (*Result, error) {
	pr, err := r.proto()
	if err != nil {
		return nil, err
	}
	ctx, rt, held := c.routeRequest(ctx, r.RequestID)
	if held != nil {
		// A daemon skipped for NOT_SERVING holds it: wait for that job.
		return c.await(ctx, &cuzkv1.AwaitProofRequest{RequestId: r.RequestID})
	}
	resp, err := c.api.Prove(ctx, &cuzkv1.ProveRequest{Submit: pr})
	if err != nil {
		return rt.result(resultOfError(err)), err
	}
	if resp.GetResult() == nil {
		return nil, status.Error(codes.Internal, "Prove answered no result")
	}
	return rt.result(resultFrom(resp.GetResult())), replyErr(resp.GetResult())
}

// Cancel cancels job id (queued: removed; running: its context cancelled)
// and returns its status after the call. NOT_FOUND for an unknown job,
// FAILED_PRECONDITION for one that already ended.
func (c *Client) Cancel(ctx context.Context, id string) (JobStatus, error) {
	ctx, id, err := c.routeJob(ctx, id)
	if err != nil {
		return "", err
	}
	resp, err := c.api.CancelProof(ctx, &cuzkv1.CancelProofRequest{JobId: id})
	if err != nil {
		return "", err
	}
	return statusFrom(resp.GetStatus()), nil
}

// CancelRequest is Cancel for the job of a request id: it returns the
// job's id (a client of several daemons: ADDRESS/JOB, as Submit's) and its
// status after the call. NOT_FOUND when the daemon has no job of that
// request id, FAILED_PRECONDITION for one that already ended.
func (c *Client) CancelRequest(ctx context.Context, requestID string) (jobID string, st JobStatus, err error) {
	ctx, rt, _ := c.routeRequest(ctx, requestID)
	resp, err := c.api.CancelProof(ctx, &cuzkv1.CancelProofRequest{RequestId: requestID})
	if err != nil {
		return "", "", err
	}
	return rt.jobID(resp.GetJobId()), statusFrom(resp.GetStatus()), nil
}

// Device is a device of the daemon.
type Device struct {
	Ordinal                 int
	Name, Backend           string
	MemoryTotal, MemoryUsed uint64
}

// WorkerStatus is the state of one of the daemon's device workers, as
// GetStatus reports it (engine.WorkerStatus on the daemon's side).
type WorkerStatus struct {
	Name, JobID string
	// Succeeded, Failed and Cancelled count the proofs it ended: one
	// per partition, so a job of N partitions counts N.
	Succeeded, Failed, Cancelled uint64
	// Busy is the time it spent proving since the daemon started.
	Busy time.Duration
	// Faulted is true once its device faulted (it takes no more work);
	// Fault is the error.
	Faulted bool
	Fault   string
}

// Key is a proving key the daemon holds.
type Key struct {
	Circuit     string
	Constraints uint64
	// ID is the key's id: the hex SHA-256 of the compiled constraint
	// system when the daemon knows it (prover.Prover does), else the
	// circuit's "name/constraints".
	ID string
	// Bytes is the daemon's estimate of the host memory the keys hold (0
	// when it does not say).
	Bytes uint64
}

// RunningJob is a job being proved.
type RunningJob struct {
	ID, RequestID, Circuit, Worker, TraceID string
	Priority                                Priority
	Started                                 time.Time
	// Status is the job's stage (Synthesizing, WaitingDevice, Proving,
	// or Running in a serial daemon).
	Status JobStatus
	// Partitions is the number of partitions (1 for one witness).
	Partitions int
	// Step is what the job is doing now, the name of its open step span
	// ("keys.setup", "pipeline.prove", ...); "" when the daemon does not
	// say.
	Step string
}

// QueuedJob is a job not started yet.
type QueuedJob struct {
	ID, RequestID, Circuit string
	Constraints            uint64
	Priority               Priority
	// Submitted is when the daemon queued it (its clock).
	Submitted time.Time
	// Partitions is the number of partitions (1 for one witness).
	Partitions int
	// MemoryWait is set while it holds a synthesis slot and waits for the
	// daemon's memory budget; otherwise it is in the queue.
	MemoryWait bool
}

// Tuning is how a pipelined daemon synthesizes one circuit and size:
// Workers syntheses at once, SolverTasks solver tasks each (gnark's
// solver.WithNbTasks), from the measured SynthesisMs and DeviceMs (moving
// averages, ms; 0 until measured) or fixed by --synthesis-workers; Reason
// is a line saying why.
type Tuning struct {
	Circuit               string
	Constraints           uint64
	Workers, SolverTasks  int
	SynthesisMs, DeviceMs float64
	Synthesized, Proved   uint64
	Reason                string
}

// Status is the daemon's state.
type Status struct {
	Devices []Device
	Workers []WorkerStatus
	Keys    []Key
	// Queued is the number of queued partitions per priority.
	Queued        map[Priority]int
	QueueCapacity int
	// Waiting are the jobs not started yet, in the order the daemon takes
	// them up (memory waits first, then the queue: CRITICAL first, FIFO
	// within a priority). A daemon older than this field lists none.
	Waiting []QueuedJob
	// Tuning is the synthesis stage's choice per circuit and size seen
	// (empty for a serial daemon).
	Tuning  []Tuning
	Running []RunningJob
	// Succeeded, Failed and Cancelled count the jobs (requests) ended
	// since the daemon started, whatever their number of partitions.
	Succeeded, Failed, Cancelled uint64
	Uptime                       time.Duration
	Closing                      bool
	Version                      string
	// Stages are the depths of the daemon's pipeline.
	Stages Stages
	// Memory is the daemon's host memory budget and what is in flight.
	Memory Memory
	// Ready is true when the daemon answers SERVING on grpc.health.v1;
	// NotReadyReason says why not.
	Ready          bool
	NotReadyReason string
	// Kinds are cuzk's queues per proof kind: "local" for this daemon's
	// own circuits, then those of an upstream cuzk (cuzk serve
	// --upstream), or one kind "upstream unavailable: ADDR" when it did
	// not answer.
	Kinds []KindQueue
}

// KindQueue is one proof kind's jobs pending and in progress.
type KindQueue struct {
	Kind                string
	Pending, InProgress int
}

// Stages are the depths of a daemon's pipeline, in partitions.
type Stages struct {
	// SynthesisWorkers is 0 for a serial daemon.
	SynthesisWorkers            int
	WaitingMemory, Synthesizing int
	// WaitingDevice is the number of synthesized proofs waiting for a
	// device worker, per priority.
	WaitingDevice map[Priority]int
	Proving       int
	// Abandoned is the work cancelled jobs left running (a key setup or
	// compile that cannot stop), each holding its worker and memory until
	// it ends.
	Abandoned []Abandoned
}

// Abandoned is a key setup or circuit compile a cancelled or timed-out
// job left running on the daemon.
type Abandoned struct {
	// Step is "keys.setup" or "circuit.compile".
	Step                      string
	JobID, RequestID, Circuit string
	Constraints               int
	// Worker is the device worker it holds, "" for a synthesis slot.
	Worker string
	// Age is the time since its job left it running.
	Age time.Duration
	// MemoryBytes is what it keeps reserved in the memory budget.
	MemoryBytes uint64
}

// Memory is a daemon's host memory budget, in bytes (Budget 0: none),
// and its buffer pools beside it.
type Memory struct {
	Budget, Reserved, Keys, Peak uint64
	// ReleaseMode is how the daemon frees a proof's large host buffers:
	// "sync", "async" or "pool" (serve --release); "" from a daemon that
	// does not say. In pool mode PoolLimit is the bytes all its buffer
	// pools may keep for reuse, outside the budget, and PoolHeld the bytes
	// of the idle buffers they keep now; both 0 in the other modes.
	ReleaseMode         string
	PoolLimit, PoolHeld uint64
}

// priorityFrom reads a priority the daemon reported; a value a newer
// daemon added is shown as Normal.
func priorityFrom(p cuzkv1.Priority) Priority {
	v, _ := cuzkv1.ToPriority(p)
	return v
}

// Status returns the daemon's devices, workers, keys, queues and totals.
// A client of several daemons asks each with StatusAt; Status returns
// ErrSeveralDaemons.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	if len(c.addrs) > 0 {
		return nil, ErrSeveralDaemons
	}
	return c.status(ctx)
}

func (c *Client) status(ctx context.Context) (*Status, error) {
	r, err := c.api.GetStatus(ctx, &cuzkv1.GetStatusRequest{})
	if err != nil {
		return nil, err
	}
	s := &Status{
		Queued: map[Priority]int{}, QueueCapacity: int(r.GetQueueCapacity()),
		Succeeded: r.GetSucceeded(), Failed: r.GetFailed(), Cancelled: r.GetCancelled(),
		Uptime:  time.Duration(r.GetUptime() * float64(time.Second)),
		Closing: r.GetClosing(), Version: r.GetVersion(),
		Ready: r.GetReady(), NotReadyReason: r.GetNotReadyReason(),
	}
	st := r.GetStages()
	s.Stages = Stages{SynthesisWorkers: int(st.GetSynthesisWorkers()), WaitingMemory: int(st.GetWaitingMemory()),
		Synthesizing: int(st.GetSynthesizing()), Proving: int(st.GetProving()), WaitingDevice: map[Priority]int{}}
	for _, q := range st.GetWaitingDevice() {
		s.Stages.WaitingDevice[priorityFrom(q.GetPriority())] = int(q.GetDepth())
	}
	for _, a := range st.GetAbandoned() {
		s.Stages.Abandoned = append(s.Stages.Abandoned, Abandoned{Step: a.GetStep(), JobID: a.GetJobId(),
			RequestID: a.GetRequestId(), Circuit: a.GetCircuit(), Constraints: int(a.GetConstraints()),
			Worker: a.GetWorker(), Age: time.Duration(a.GetAgeSeconds() * float64(time.Second)), MemoryBytes: a.GetMemoryBytes()})
	}
	m := r.GetMemory()
	s.Memory = Memory{Budget: m.GetBudgetBytes(), Reserved: m.GetReservedBytes(), Keys: m.GetKeysBytes(), Peak: m.GetPeakBytes(),
		ReleaseMode: m.GetReleaseMode(), PoolLimit: m.GetPoolLimitBytes(), PoolHeld: m.GetPoolHeldBytes()}
	for _, d := range r.GetDevices() {
		s.Devices = append(s.Devices, Device{Ordinal: int(d.GetOrdinal()), Name: d.GetName(), Backend: d.GetBackend(),
			MemoryTotal: d.GetMemoryTotalBytes(), MemoryUsed: d.GetMemoryUsedBytes()})
	}
	for _, w := range r.GetWorkers() {
		s.Workers = append(s.Workers, WorkerStatus{Name: w.GetName(), JobID: w.GetJobId(),
			Succeeded: w.GetSucceeded(), Failed: w.GetFailed(), Cancelled: w.GetCancelled(),
			Busy:    time.Duration(w.GetBusySeconds() * float64(time.Second)),
			Faulted: w.GetFaulted(), Fault: w.GetFault()})
	}
	for _, k := range r.GetKeys() {
		s.Keys = append(s.Keys, keyOf(k))
	}
	for _, q := range r.GetQueueDepths() {
		s.Queued[priorityFrom(q.GetPriority())] = int(q.GetDepth())
	}
	for _, q := range r.GetQueues() {
		s.Kinds = append(s.Kinds, KindQueue{Kind: q.GetProofKind(), Pending: int(q.GetPending()), InProgress: int(q.GetInProgress())})
	}
	for _, j := range r.GetQueued() {
		s.Waiting = append(s.Waiting, QueuedJob{ID: j.GetJobId(), RequestID: j.GetRequestId(), Circuit: j.GetCircuit(),
			Constraints: j.GetConstraints(), Priority: priorityFrom(j.GetPriority()),
			Submitted: time.Unix(0, j.GetSubmittedUnixNano()), Partitions: int(j.GetPartitions()), MemoryWait: j.GetMemoryWait()})
	}
	for _, t := range r.GetTuning() {
		s.Tuning = append(s.Tuning, Tuning{Circuit: t.GetCircuit(), Constraints: t.GetConstraints(),
			Workers: int(t.GetSynthesisWorkers()), SolverTasks: int(t.GetSolverTasks()),
			SynthesisMs: t.GetSynthesisMs(), DeviceMs: t.GetDeviceMs(),
			Synthesized: t.GetSynthesized(), Proved: t.GetProved(), Reason: t.GetReason()})
	}
	for _, j := range r.GetRunning() {
		s.Running = append(s.Running, RunningJob{ID: j.GetJobId(), RequestID: j.GetRequestId(), Circuit: j.GetCircuit(),
			Worker: j.GetWorker(), TraceID: j.GetTraceId(), Priority: priorityFrom(j.GetPriority()),
			Started: time.Unix(0, j.GetStartedUnixNano()), Status: statusFrom(j.GetStatus()),
			Partitions: int(j.GetPartitions()), Step: j.GetStep()})
	}
	return s, nil
}

// PreloadKeys makes the daemon load the proving key of circuit at
// constraints; cacheHit is true when it already held it. A client of
// several daemons asks every daemon in turn (cacheHit: all held it) and
// stops at the first error, which names the daemon.
func (c *Client) PreloadKeys(ctx context.Context, circuit string, constraints uint64) (key Key, cacheHit bool, err error) {
	if len(c.addrs) > 0 {
		return c.preloadAll(ctx, circuit, constraints)
	}
	r, err := c.api.PreloadKeys(ctx, &cuzkv1.PreloadKeysRequest{Circuit: circuit, Constraints: constraints})
	if err != nil {
		return Key{}, false, err
	}
	k := r.GetKey()
	return keyOf(k), r.GetCacheHit(), nil
}

// EvictKeys makes the daemon drop the proving key of circuit at
// constraints; it reports whether the key was held (by any daemon, for a
// client of several, which asks each and stops at the first error).
func (c *Client) EvictKeys(ctx context.Context, circuit string, constraints uint64) (bool, error) {
	if len(c.addrs) > 0 {
		return c.evictAll(ctx, circuit, constraints)
	}
	r, err := c.api.EvictKeys(ctx, &cuzkv1.EvictKeysRequest{Circuit: circuit, Constraints: constraints})
	if err != nil {
		return false, err
	}
	return r.GetEvicted(), nil
}

// ErrNoResult is returned by ResultOf for an error without a job result.
var ErrNoResult = semconv.NewError(semconv.ErrorTypeInvalidRequest, "error carries no job result")

// ResultOf returns the job result the daemon attached to err (a failed or
// cancelled job's id, trace id and error), or ErrNoResult.
func ResultOf(err error) (*Result, error) {
	if r := resultOfError(err); r != nil {
		return r, nil
	}
	return nil, ErrNoResult
}

// keyOf is the Key a daemon's LoadedKey describes.
func keyOf(k *cuzkv1.LoadedKey) Key {
	return Key{Circuit: k.GetCircuit(), Constraints: k.GetConstraints(), ID: k.GetKeyId(), Bytes: k.GetBytes()}
}
