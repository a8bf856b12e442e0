package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/internal/testcert"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
)

// fakeDaemon is an in-process ProvingEngine on 127.0.0.1 with the
// daemon's idempotency (one job per request id), grpc.health.v1 and an
// otelgrpc server handler, so routing, job ids and traces can be checked
// against several of them.
type fakeDaemon struct {
	cuzkv1.UnimplementedProvingEngineServer
	name, addr string
	srv        *grpc.Server
	health     *health.Server

	mu    sync.Mutex
	jobs  map[string]*cuzkv1.AwaitProofResponse // by job id
	byReq map[string]string                     // request id -> job id
	stall bool                                  // AwaitProof hangs until the call ends
}

func startFakeDaemon(t *testing.T, name string, tp trace.TracerProvider, opts ...grpc.ServerOption) *fakeDaemon {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &fakeDaemon{name: name, addr: lis.Addr().String(), health: health.NewServer(),
		jobs: map[string]*cuzkv1.AwaitProofResponse{}, byReq: map[string]string{}}
	d.srv = grpc.NewServer(append(opts, grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(propagation.TraceContext{}))))...)
	cuzkv1.RegisterProvingEngineServer(d.srv, d)
	healthpb.RegisterHealthServer(d.srv, d.health)
	go d.srv.Serve(lis)
	t.Cleanup(d.srv.Stop)
	return d
}

func (d *fakeDaemon) submit(ctx context.Context, r *cuzkv1.SubmitProofRequest) (*cuzkv1.AwaitProofResponse, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id, ok := d.byReq[r.GetRequestId()]; ok {
		return d.jobs[id], true
	}
	id := fmt.Sprintf("job-%s-%d", d.name, len(d.jobs)+1)
	res := &cuzkv1.AwaitProofResponse{JobId: id, RequestId: r.GetRequestId(), Status: cuzkv1.AwaitProofResponse_COMPLETED, JobStatus: cuzkv1.JobStatus_JOB_STATUS_SUCCEEDED,
		Worker: d.name, TraceId: trace.SpanContextFromContext(ctx).TraceID().String()}
	d.jobs[id], d.byReq[r.GetRequestId()] = res, id
	return res, false
}

func (d *fakeDaemon) SubmitProof(ctx context.Context, r *cuzkv1.SubmitProofRequest) (*cuzkv1.SubmitProofResponse, error) {
	res, existing := d.submit(ctx, r)
	return &cuzkv1.SubmitProofResponse{JobId: res.JobId, Existing: existing, Status: res.JobStatus, TraceId: res.TraceId}, nil
}

func (d *fakeDaemon) Prove(ctx context.Context, r *cuzkv1.ProveRequest) (*cuzkv1.ProveResponse, error) {
	res, _ := d.submit(ctx, r.GetSubmit())
	return &cuzkv1.ProveResponse{Result: res}, nil
}

// jobLocked is the job of jobID, or of requestID when jobID is empty;
// NOT_FOUND when d has none. d.mu must be held.
func (d *fakeDaemon) jobLocked(jobID, requestID string) (*cuzkv1.AwaitProofResponse, error) {
	if jobID == "" {
		jobID = d.byReq[requestID]
	}
	res, ok := d.jobs[jobID]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "%s: no job %q", d.name, jobID)
	}
	return res, nil
}

func (d *fakeDaemon) AwaitProof(ctx context.Context, r *cuzkv1.AwaitProofRequest) (*cuzkv1.AwaitProofResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stall {
		d.mu.Unlock()
		<-ctx.Done()
		d.mu.Lock()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return d.jobLocked(r.GetJobId(), r.GetRequestId())
}

func (d *fakeDaemon) CancelProof(_ context.Context, r *cuzkv1.CancelProofRequest) (*cuzkv1.CancelProofResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	res, err := d.jobLocked(r.GetJobId(), r.GetRequestId())
	if err != nil {
		return nil, err
	}
	res.Status, res.JobStatus = cuzkv1.AwaitProofResponse_CANCELLED, cuzkv1.JobStatus_JOB_STATUS_CANCELLED
	return &cuzkv1.CancelProofResponse{JobId: res.JobId, Status: res.JobStatus}, nil
}

func (d *fakeDaemon) GetStatus(context.Context, *cuzkv1.GetStatusRequest) (*cuzkv1.GetStatusResponse, error) {
	return &cuzkv1.GetStatusResponse{Version: d.name}, nil
}

// holds reports which job id d made for requestID ("" when none).
func (d *fakeDaemon) holds(requestID string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.byReq[requestID]
}

// idsRankedFirst returns n request ids, with prefix, whose rendezvous
// ranking puts addr first among addrs.
func idsRankedFirst(addr string, addrs []string, prefix string, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if rank(id, addrs)[0] == addr {
			out = append(out, id)
		}
	}
	return out
}

// TestFleetRoutesByRequestIDAndJobID runs a client over two daemons, one of
// which goes NOT_SERVING, comes back, and is then stopped: request ids
// spread over both and stay on their daemon (a retry finds its job), job
// ids name the daemon that holds the job and Await and Cancel go there,
// unhealthy or stopped daemons are skipped for new jobs, and every call's
// spans are in the caller's trace.
func TestFleetRoutesByRequestIDAndJobID(t *testing.T) {
	clientSpans, serverSpans := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	ctp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(clientSpans))
	stp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(serverSpans))
	a, b := startFakeDaemon(t, "a", stp), startFakeDaemon(t, "b", stp)
	addrs := []string{a.addr, b.addr}
	byAddr := map[string]*fakeDaemon{a.addr: a, b.addr: b}
	c := dialFleet(t, addrs, WithTracerProvider(ctp))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Both up: 16 request ids spread over both, each on exactly one.
	ctx, task := ctp.Tracer("curio").Start(ctx, "curio.task")
	jobs := map[string]Job{}
	on := map[string]int{}
	for i := range 16 {
		rid := fmt.Sprintf("req-%d", i)
		j, err := c.Submit(ctx, Request{RequestID: rid, Circuit: "mulchain"})
		if err != nil {
			t.Fatal(err)
		}
		addr, id, ok := strings.Cut(j.ID, "/job-")
		d := byAddr[addr]
		if !ok || d == nil || d.holds(rid) != "job-"+id || byAddr[other(addrs, addr)].holds(rid) != "" {
			t.Fatalf("request %s: job id %q, want ADDRESS/JOB of the one daemon that holds it (a: %q, b: %q)", rid, j.ID, a.holds(rid), b.holds(rid))
		}
		if addr != rank(rid, addrs)[0] {
			t.Errorf("request %s went to %s, not its first-ranked daemon", rid, addr)
		}
		jobs[rid] = j
		on[addr]++
	}
	task.End()
	if on[a.addr] == 0 || on[b.addr] == 0 {
		t.Errorf("16 request ids all on one daemon: %v", on)
	}
	// A retry is the same job on the same daemon; Await, AwaitRequest and
	// Cancel reach the daemon the job id names.
	for rid, j := range jobs {
		again, err := c.Submit(ctx, Request{RequestID: rid, Circuit: "mulchain"})
		if err != nil || !again.Existing || again.ID != j.ID {
			t.Errorf("retry of %s: %+v %v, want the existing job %s", rid, again, err, j.ID)
		}
		addr, _, _ := strings.Cut(j.ID, "/")
		res, err := c.Await(ctx, j.ID, time.Second)
		if err != nil || res.JobID != j.ID || res.Worker != byAddr[addr].name {
			t.Errorf("Await(%s): %+v %v, want the job from daemon %s", j.ID, res, err, byAddr[addr].name)
		}
		res, err = c.AwaitRequest(ctx, rid, time.Second)
		if err != nil || res.JobID != j.ID {
			t.Errorf("AwaitRequest(%s): %+v %v, want job %s", rid, res, err, j.ID)
		}
		if res, err := c.Prove(ctx, Request{RequestID: rid, Circuit: "mulchain"}); err != nil || res.JobID != j.ID {
			t.Errorf("Prove retry of %s: %+v %v, want job %s", rid, res, err, j.ID)
		}
	}
	one := jobs["req-0"]
	if st, err := c.Cancel(ctx, one.ID); err != nil || st != Cancelled {
		t.Errorf("Cancel(%s): %v %v", one.ID, st, err)
	}
	// CancelRequest reaches the daemon the request id ranks first and
	// returns the job's id as Submit did.
	two := jobs["req-1"]
	if id, st, err := c.CancelRequest(ctx, "req-1"); err != nil || id != two.ID || st != Cancelled {
		t.Errorf("CancelRequest(req-1): %q %v %v, want %s CANCELLED", id, st, err, two.ID)
	}
	if _, _, err := c.CancelRequest(ctx, "no-such-request"); status.Code(err) != codes.NotFound {
		t.Errorf("CancelRequest(no-such-request): %v, want NOT_FOUND", err)
	}
	// One trace: every Submit's client span (16, then 16 retries) is a
	// child of the task span, and the daemon's server span a child of the
	// client span.
	clientOf := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range clientSpans.Ended() {
		if s.SpanKind() == trace.SpanKindClient && s.Name() == "cuzk.v1.ProvingEngine/SubmitProof" &&
			s.Parent().SpanID() == task.SpanContext().SpanID() {
			clientOf[s.SpanContext().SpanID()] = s
		}
	}
	if len(clientOf) != 32 {
		t.Errorf("%d SubmitProof client spans under the task span, want 32", len(clientOf))
	}
	servers := 0
	for _, s := range serverSpans.Ended() {
		if s.Name() != "cuzk.v1.ProvingEngine/SubmitProof" || s.SpanContext().TraceID() != task.SpanContext().TraceID() {
			continue
		}
		if _, ok := clientOf[s.Parent().SpanID()]; ok {
			servers++
		}
	}
	if servers != 32 {
		t.Errorf("%d SubmitProof server spans under those client spans, want 32", servers)
	}
	if one.TraceID != task.SpanContext().TraceID().String() {
		t.Errorf("job trace id %s, want the task's %s", one.TraceID, task.SpanContext().TraceID())
	}
	for _, s := range append(clientSpans.Ended(), serverSpans.Ended()...) {
		if strings.HasPrefix(s.Name(), "grpc.health.v1") && s.SpanKind() == trace.SpanKindClient {
			t.Errorf("the client traced its health watch: %s", s.Name())
		}
	}

	// a NOT_SERVING: new request ids that rank a first go to b; a still
	// answers for the jobs it holds.
	a.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	aFirst := idsRankedFirst(a.addr, addrs, "drain", 40)
	landed := -1
	for i, rid := range aFirst[:20] { // the health update is on its way
		j, err := c.Submit(ctx, Request{RequestID: rid, Circuit: "mulchain"})
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(j.ID, b.addr+"/") {
			landed = i
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if landed < 0 {
		t.Fatal("20 submits after a went NOT_SERVING all went to a")
	}
	for _, rid := range aFirst[landed+1 : landed+6] {
		if j, err := c.Submit(ctx, Request{RequestID: rid, Circuit: "mulchain"}); err != nil || !strings.HasPrefix(j.ID, b.addr+"/") {
			t.Errorf("a NOT_SERVING: %s went to %q (%v), want b", rid, j.ID, err)
		}
	}
	// A job a holds that neither cancel above reached (req-0 and req-1
	// are CANCELLED; the map's order is random, so both are skipped).
	var aJob Job
	for rid, j := range jobs {
		if strings.HasPrefix(j.ID, a.addr+"/") && rid != "req-0" && rid != "req-1" {
			aJob = j
		}
	}
	if aJob.ID == "" {
		t.Fatal("a holds no job besides the cancelled req-0 and req-1")
	}
	if res, err := c.Await(ctx, aJob.ID, time.Second); err != nil || res.JobID != aJob.ID {
		t.Errorf("Await(%s) on NOT_SERVING a: %+v %v, want its job", aJob.ID, res, err)
	}
	// A retry of a request a holds, while a is NOT_SERVING, finds its job on a:
	// never proved again on b.
	aReq := requestIDOf(jobs, aJob)
	if j, err := c.Submit(ctx, Request{RequestID: aReq, Circuit: "mulchain"}); err != nil || j.ID != aJob.ID || !j.Existing {
		t.Errorf("a NOT_SERVING: retry of %s: %+v %v, want a's existing job %s", aReq, j, err, aJob.ID)
	}
	if res, err := c.Prove(ctx, Request{RequestID: aReq, Circuit: "mulchain"}); err != nil || res.JobID != aJob.ID {
		t.Errorf("a NOT_SERVING: Prove retry of %s: %+v %v, want a's job %s", aReq, res, err, aJob.ID)
	}
	if res, err := c.AwaitRequest(ctx, aReq, time.Second); err != nil || res.JobID != aJob.ID {
		t.Errorf("a NOT_SERVING: AwaitRequest(%s): %+v %v, want a's job %s", aReq, res, err, aJob.ID)
	}
	if id := b.holds(aReq); id != "" {
		t.Errorf("a NOT_SERVING: b made job %s for %s, which a holds", id, aReq)
	}

	// a SERVING again: its request ids go back to it and find their jobs.
	a.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	if err := waitUntil(ctx, func() bool {
		j, err := c.Submit(ctx, Request{RequestID: requestIDOf(jobs, aJob), Circuit: "mulchain"})
		return err == nil && j.ID == aJob.ID && j.Existing
	}); err != nil {
		t.Fatalf("a SERVING again: its request id did not find its job %s: %v", aJob.ID, err)
	}

	// a stopped midway: its jobs are UNAVAILABLE, its request ids move to
	// b, b's stay where they are.
	a.srv.Stop()
	if err := waitUntil(ctx, func() bool {
		_, err := c.Await(ctx, aJob.ID, time.Second)
		return status.Code(err) == codes.Unavailable
	}); err != nil {
		t.Fatalf("Await of a job on the stopped daemon: want UNAVAILABLE: %v", err)
	}
	for _, rid := range idsRankedFirst(a.addr, addrs, "after-stop", 5) {
		if j, err := c.Submit(ctx, Request{RequestID: rid, Circuit: "mulchain"}); err != nil || !strings.HasPrefix(j.ID, b.addr+"/") {
			t.Errorf("a stopped: %s went to %q (%v), want b", rid, j.ID, err)
		}
	}
	for rid, j := range jobs {
		if strings.HasPrefix(j.ID, b.addr+"/") {
			if again, err := c.Submit(ctx, Request{RequestID: rid, Circuit: "mulchain"}); err != nil || again.ID != j.ID {
				t.Errorf("a stopped: b's request %s now %+v %v, want its job %s", rid, again, err, j.ID)
			}
		}
	}

	if st, err := c.StatusAt(ctx, b.addr); err != nil || st.Version != "b" {
		t.Errorf("StatusAt(b): %+v %v", st, err)
	}
	if _, err := c.Status(ctx); !errors.Is(err, ErrSeveralDaemons) {
		t.Errorf("Status on a client of two daemons: %v, want ErrSeveralDaemons", err)
	}
}

// requestIDOf returns the request id whose job is j in jobs.
func requestIDOf(jobs map[string]Job, j Job) string {
	for rid, x := range jobs {
		if x.ID == j.ID {
			return rid
		}
	}
	return ""
}

func other(addrs []string, a string) string {
	if addrs[0] == a {
		return addrs[1]
	}
	return addrs[0]
}

func waitUntil(ctx context.Context, f func() bool) error {
	for !f() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// TestFleetAllDaemonsDownIsUnavailable: with every daemon down a submit
// fails with UNAVAILABLE naming them, rather than hanging.
func TestFleetAllDaemonsDownIsUnavailable(t *testing.T) {
	var addrs []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, l.Addr().String())
		l.Close()
	}
	c := dialFleet(t, addrs)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := c.Submit(ctx, Request{RequestID: "r", Circuit: "mulchain"})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), addrs[0]) || !strings.Contains(err.Error(), addrs[1]) {
		t.Errorf("submit with both daemons down: %v, want UNAVAILABLE naming both", err)
	}
}

// TestFleetRejectsBadAddressesAndJobIDs: the address list and job ids
// that name no daemon of the client are refused with a clear error.
func TestFleetRejectsBadAddressesAndJobIDs(t *testing.T) {
	for _, bad := range [][]string{nil, {""}, {"127.0.0.1:1", "127.0.0.1:1"}, {"dns:///x:1"}, {"prover-1"}, {"127.0.0.1:1", "[::1"}} {
		if _, err := DialAddrs(bad); err == nil {
			t.Errorf("DialAddrs(%q): want error", bad)
		}
	}
	c := dialFleet(t, []string{"127.0.0.1:1", "127.0.0.1:2"})
	ctx := context.Background()
	for _, id := range []string{"job-x", "127.0.0.1:3/job-x", "127.0.0.1:1/", "/job-x"} {
		if _, err := c.Await(ctx, id, 0); status.Code(err) != codes.InvalidArgument {
			t.Errorf("Await(%q): %v, want INVALID_ARGUMENT", id, err)
		}
		if _, err := c.Cancel(ctx, id); status.Code(err) != codes.InvalidArgument {
			t.Errorf("Cancel(%q): %v, want INVALID_ARGUMENT", id, err)
		}
	}
	if got := c.Addrs(); len(got) != 2 || got[0] != "127.0.0.1:1" {
		t.Errorf("Addrs() = %v", got)
	}
}

// TestRendezvousMovesOnlyTheKeysOfARemovedDaemon: ranking is stable, and
// dropping one daemon from the list moves only the request ids it ranked
// first (the property that keeps retries on their daemon).
func TestRendezvousMovesOnlyTheKeysOfARemovedDaemon(t *testing.T) {
	all := []string{"10.0.0.1:9820", "10.0.0.2:9820", "10.0.0.3:9820"}
	count := map[string]int{}
	for i := range 3000 {
		key := fmt.Sprintf("porep-%d", i)
		top := rank(key, all)[0]
		count[top]++
		if again := rank(key, []string{all[2], all[0], all[1]})[0]; again != top {
			t.Fatalf("%s: first %s, or %s when the list is reordered", key, top, again)
		}
		after := rank(key, all[:2])[0]
		if top != all[2] && after != top {
			t.Fatalf("%s moved from %s to %s when %s left", key, top, after, all[2])
		}
	}
	for _, a := range all {
		if count[a] < 800 || count[a] > 1200 {
			t.Errorf("%s is first for %d of 3000 keys, want about 1000", a, count[a])
		}
	}
}

// TestFleetAllNotServingStillTakesJobs: while every daemon says
// NOT_SERVING (a fleet warming up, which queues proofs), a request id goes
// to its first-ranked daemon rather than failing; once one serves, new
// requests skip the other.
func TestFleetAllNotServingStillTakesJobs(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	a, b := startFakeDaemon(t, "a", tp), startFakeDaemon(t, "b", tp)
	for _, d := range []*fakeDaemon{a, b} {
		d.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	}
	addrs := []string{a.addr, b.addr}
	c := dialFleet(t, addrs)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 8 {
		rid := fmt.Sprintf("warm-%d", i)
		j, err := c.Submit(ctx, Request{RequestID: rid, Circuit: "mulchain"})
		if err != nil || !strings.HasPrefix(j.ID, rank(rid, addrs)[0]+"/") {
			t.Errorf("all NOT_SERVING: %s went to %q (%v), want its first-ranked daemon %s", rid, j.ID, err, rank(rid, addrs)[0])
		}
	}
	b.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	probes := idsRankedFirst(a.addr, addrs, "probe", 400)
	if err := waitUntil(ctx, func() bool {
		rid := probes[0] // ranks a first: goes to b only once b serves
		probes = probes[1:]
		j, err := c.Submit(ctx, Request{RequestID: rid, Circuit: "mulchain"})
		return err == nil && strings.HasPrefix(j.ID, b.addr+"/")
	}); err != nil {
		t.Fatalf("b SERVING, a not: requests never moved to b: %v", err)
	}
	for _, rid := range idsRankedFirst(a.addr, addrs, "served", 5) {
		if j, err := c.Submit(ctx, Request{RequestID: rid, Circuit: "mulchain"}); err != nil || !strings.HasPrefix(j.ID, b.addr+"/") {
			t.Errorf("b SERVING, a not: %s went to %q (%v), want b", rid, j.ID, err)
		}
	}
}

// TestFleetOverTLSVerifiesEachDaemon: over TLS, each daemon's certificate
// is checked against its own host (127.0.0.1 or localhost here), not
// against the client's internal target name; a certificate for another
// host is still refused.
func TestFleetOverTLSVerifiesEachDaemon(t *testing.T) {
	cert, pool := testcert.New(t)
	tp := sdktrace.NewTracerProvider()
	creds := grpc.Creds(credentials.NewServerTLSFromCert(&cert))
	a, b := startFakeDaemon(t, "a", tp, creds), startFakeDaemon(t, "b", tp, creds)
	_, bPort, _ := net.SplitHostPort(b.addr)
	addrs := []string{a.addr, net.JoinHostPort("localhost", bPort)}
	c := dialFleet(t, addrs, WithTLS(&tls.Config{RootCAs: pool}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, addr := range addrs {
		rid := idsRankedFirst(addr, addrs, "tls", 1)[0]
		j, err := c.Submit(ctx, Request{RequestID: rid, Circuit: "mulchain"})
		if err != nil || !strings.HasPrefix(j.ID, addr+"/") {
			t.Errorf("TLS: %s went to %q (%v), want %s", rid, j.ID, err, addr)
		}
	}
	// A name the certificate does not hold: refused by verification.
	bad := dialFleet(t, []string{a.addr}, WithTLS(&tls.Config{RootCAs: pool, ServerName: "prover.example"}))
	if _, err := bad.Submit(ctx, Request{RequestID: "r", Circuit: "mulchain"}); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("TLS to a daemon whose certificate names another host: %v, want UNAVAILABLE about the certificate", err)
	}
}

// TestFleetSkippedDaemonThatDoesNotAnswerIsDown: a first-ranked daemon
// that is NOT_SERVING and does not answer the question whether it holds a
// request (a hung host) costs a Submit at most the probe's bound; the job
// then goes to the daemon that serves.
func TestFleetSkippedDaemonThatDoesNotAnswerIsDown(t *testing.T) {
	old := probeTimeout
	probeTimeout = 200 * time.Millisecond
	t.Cleanup(func() { probeTimeout = old })
	tp := sdktrace.NewTracerProvider()
	a, b := startFakeDaemon(t, "a", tp), startFakeDaemon(t, "b", tp)
	addrs := []string{a.addr, b.addr}
	c := dialFleet(t, addrs)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a.mu.Lock()
	a.stall = true
	a.mu.Unlock()
	a.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	probes := idsRankedFirst(a.addr, addrs, "hung", 400)
	if err := waitUntil(ctx, func() bool {
		rid := probes[0]
		probes = probes[1:]
		j, err := c.Submit(ctx, Request{RequestID: rid, Circuit: "mulchain"})
		return err == nil && strings.HasPrefix(j.ID, b.addr+"/")
	}); err != nil {
		t.Fatalf("a NOT_SERVING and hung: requests never moved to b: %v", err)
	}
	start := time.Now()
	rid := probes[0]
	if j, err := c.Submit(ctx, Request{RequestID: rid, Circuit: "mulchain"}); err != nil || !strings.HasPrefix(j.ID, b.addr+"/") {
		t.Errorf("a NOT_SERVING and hung: %s went to %q (%v), want b", rid, j.ID, err)
	}
	if a.holds(rid) != "" {
		t.Errorf("a made a job for %s", rid)
	}
	t.Logf("submit past the hung daemon: %v", time.Since(start))
}

// dialFleet dials the daemons at addrs, closed when the test ends.
func dialFleet(t *testing.T, addrs []string, opts ...Option) *Client {
	t.Helper()
	c, err := DialAddrs(addrs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
