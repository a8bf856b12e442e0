package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"net"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/internal/testcert"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// fakeRunner proves instantly (or after gate), records a pipeline.prove
// child span, and fails as its circuit name asks: "fail-size" with
// ErrWitnessSize, "fail-internal" with a plain error.
type fakeRunner struct {
	tp    trace.TracerProvider
	gate  chan struct{}
	delay time.Duration
	runs  atomic.Int64
}

func (f *fakeRunner) Run(ctx context.Context, r *prover.Request) (*prover.Result, error) {
	f.runs.Add(1)
	_, span := f.tp.Tracer("test").Start(ctx, semconv.SpanPipelineProve)
	defer span.End()
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	time.Sleep(f.delay)
	switch r.Circuit {
	case "fail-size":
		return nil, fmt.Errorf("synthesize: %w: 3 values, circuit wants 4", groth16.ErrWitnessSize)
	case "fail-internal":
		return nil, errors.New("device lost")
	}
	return &prover.Result{Proof: []byte("proof:" + r.RequestID), Backend: "fake", Verified: r.Verify,
		Timings: prover.Timings{Prove: time.Millisecond}}, nil
}

type daemon struct {
	srv  *Server
	eng  *engine.Engine
	exp  *tracetest.InMemoryExporter
	tp   *sdktrace.TracerProvider
	run  *fakeRunner
	addr string
}

var testCircuits = map[string]bool{"mulchain": true, "merkle": true, "fail-size": true, "fail-internal": true}

func startDaemon(t *testing.T, engOpts []engine.Option, opts ...Option) *daemon {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	run := &fakeRunner{tp: tp}
	eng, err := engine.New([]engine.Worker{{Name: "w0", Runner: run}, {Name: "w1", Runner: run}},
		append([]engine.Option{engine.WithTracerProvider(tp)}, engOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(eng, append([]Option{WithTracerProvider(tp),
		WithKnownCircuit(func(c string) bool { return testCircuits[c] })}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) }) // after the server's shutdown
	addr := serve(t, srv)
	return &daemon{srv: srv, eng: eng, exp: exp, tp: tp, run: run, addr: addr}
}

// serve serves srv on a free port of 127.0.0.1 until the test ends (then
// shuts it down, waiting up to 5 s) and gives the address.
func serve(t *testing.T, srv *Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return lis.Addr().String()
}

// conn is a plain gRPC connection to the daemon (as a caller without
// prover/client has), closed when the test ends.
func (d *daemon) conn(t *testing.T) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(d.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func (d *daemon) client(t *testing.T, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.Dial(d.addr, append([]client.Option{client.WithTracerProvider(d.tp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctx5(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestProveJoinsTheCallersTrace(t *testing.T) {
	d := startDaemon(t, nil)
	c := d.client(t)
	ctx, task := d.tp.Tracer("curio").Start(ctx5(t), semconv.SpanCurioTask)
	res, err := c.Prove(ctx, client.Request{RequestID: "r1", Circuit: "mulchain", Constraints: 256,
		Priority: client.High, MinerID: "f01234", SectorNumber: 9, TaskID: 77, TaskName: "WdPost", Verify: true})
	task.End()
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Proof) != "proof:r1" || !res.Verified || res.Status != client.Succeeded || res.Backend != "fake" {
		t.Fatalf("result %+v", res)
	}
	if res.TraceID != task.SpanContext().TraceID().String() {
		t.Errorf("trace id %s, want the caller's %s", res.TraceID, task.SpanContext().TraceID())
	}
	// The server's RPC span ends after its reply is sent, so it may end
	// just after the client has the result: wait for it.
	const rpc = "cuzk.v1.ProvingEngine/Prove"
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if slices.ContainsFunc(d.exp.GetSpans(), func(s tracetest.SpanStub) bool {
			return s.Name == rpc && s.SpanKind == trace.SpanKindServer
		}) {
			break
		}
	}
	spans := map[string]tracetest.SpanStub{}
	for _, s := range d.exp.GetSpans() {
		spans[s.Name] = s
		if s.SpanContext.TraceID() != task.SpanContext().TraceID() {
			t.Errorf("span %s in trace %s, want one trace", s.Name, s.SpanContext.TraceID())
		}
	}
	// curio.task → client RPC span → server RPC span → engine.job → engine.queue, pipeline.prove
	var clientSpan, serverSpan tracetest.SpanStub
	for _, s := range d.exp.GetSpans() {
		if s.Name == rpc && s.SpanKind == trace.SpanKindClient {
			clientSpan = s
		}
		if s.Name == rpc && s.SpanKind == trace.SpanKindServer {
			serverSpan = s
		}
	}
	chain := []struct{ child, parent tracetest.SpanStub }{
		{clientSpan, spans[semconv.SpanCurioTask]},
		{serverSpan, clientSpan},
		{spans[semconv.SpanEngineJob], serverSpan},
		{spans[semconv.SpanEngineQueue], spans[semconv.SpanEngineJob]},
		{spans[semconv.SpanPipelineProve], spans[semconv.SpanEngineJob]},
	}
	for _, l := range chain {
		if !l.child.SpanContext.IsValid() || l.child.Parent.SpanID() != l.parent.SpanContext.SpanID() {
			t.Errorf("%s (%v) is not a child of %s (%v)", l.child.Name, l.child.SpanKind, l.parent.Name, l.parent.SpanKind)
		}
	}
	got := map[attribute.Key]attribute.Value{}
	for _, kv := range spans[semconv.SpanEngineJob].Attributes {
		got[kv.Key] = kv.Value
	}
	for k, v := range map[attribute.Key]attribute.Value{
		semconv.KeyRequestID: attribute.StringValue("r1"), semconv.KeyMinerID: attribute.StringValue("f01234"),
		semconv.KeySectorNumber: attribute.Int64Value(9), semconv.KeyTaskID: attribute.Int64Value(77),
		semconv.KeyTaskName: attribute.StringValue("WdPost"), semconv.KeyPriority: attribute.StringValue("HIGH"),
		semconv.KeyCircuitConstraints: attribute.IntValue(256),
	} {
		if got[k] != v {
			t.Errorf("engine.job %s = %s, want %s", k, got[k].Emit(), v.Emit())
		}
	}
}

func TestMalformedTraceparentStartsANewTrace(t *testing.T) {
	d := startDaemon(t, nil)
	api := cuzkv1.NewProvingEngineClient(d.conn(t))
	for i, tp := range []string{
		"00-zzzz-not-hex-01",
		"00-00000000000000000000000000000000-0000000000000000-01", // all-zero ids are invalid
		"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", // version ff is forbidden
	} {
		ctx := metadata.AppendToOutgoingContext(ctx5(t), "traceparent", tp)
		res, err := api.Prove(ctx, &cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{
			RequestId: fmt.Sprintf("bad-tp-%d", i), Circuit: "mulchain", Constraints: 16}})
		if err != nil {
			t.Fatalf("traceparent %q: %v (must be ignored)", tp, err)
		}
		if res.GetResult().GetTraceId() == "" || res.GetResult().GetTraceId() == "00000000000000000000000000000000" {
			t.Errorf("traceparent %q: trace id %q", tp, res.GetResult().GetTraceId())
		}
	}
	for _, s := range d.exp.GetSpans() {
		if s.SpanKind == trace.SpanKindServer && s.Parent.IsValid() {
			t.Errorf("server span has parent %v from a malformed traceparent", s.Parent)
		}
	}
}

// witness builds gnark's binary full witness: nbPublic | nbSecret | n | n × 32 bytes.
func witness(pub, sec uint32, vals ...[]byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, pub)
	b = binary.BigEndian.AppendUint32(b, sec)
	b = binary.BigEndian.AppendUint32(b, uint32(len(vals)))
	for _, v := range vals {
		var e [32]byte
		copy(e[32-len(v):], v)
		b = append(b, e[:]...)
	}
	return b
}

func TestCheckWitness(t *testing.T) {
	r := fr.Modulus().Bytes()
	rMinus1 := new(big.Int).Sub(fr.Modulus(), big.NewInt(1)).Bytes()
	good := witness(1, 1, []byte{3}, rMinus1)
	if err := CheckWitness(good); err != nil {
		t.Fatalf("good witness: %v", err)
	}
	for name, w := range map[string][]byte{
		"empty":             nil,
		"short header":      good[:7],
		"counts disagree":   witness(1, 2, []byte{1}, []byte{2}),
		"truncated":         good[:len(good)-1],
		"trailing byte":     append(append([]byte{}, good...), 0),
		"value r":           witness(1, 0, r),
		"value 2^256-1":     witness(0, 1, bytesOf(0xff, 32)),
		"forged huge count": binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 1<<31), 1<<31-1), 1<<32-1),
	} {
		if err := CheckWitness(w); !errors.Is(err, groth16.ErrBadWitness) {
			t.Errorf("%s: %v, want groth16.ErrBadWitness", name, err)
		}
	}
}

func bytesOf(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

func TestBadRequestsInterleavedWithGoodOnes(t *testing.T) {
	d := startDaemon(t, nil, WithMaxMessageBytes(1<<20))
	c := d.client(t)
	ctx := ctx5(t)
	big := witness(0, 1, []byte{1})
	big = append(big, make([]byte, 2<<20)...)
	bad := []struct {
		name string
		req  client.Request
		want codes.Code
	}{
		{"empty request id", client.Request{Circuit: "mulchain", Constraints: 16}, codes.InvalidArgument},
		{"unknown circuit", client.Request{RequestID: "u", Circuit: "nope", Constraints: 16}, codes.NotFound},
		{"witness wrong length", client.Request{RequestID: "l", Circuit: "mulchain", Witness: witness(1, 1, []byte{1})}, codes.InvalidArgument},
		{"witness outside field", client.Request{RequestID: "f", Circuit: "mulchain", Witness: witness(1, 0, fr.Modulus().Bytes())}, codes.InvalidArgument},
		{"witness the circuit rejects", client.Request{RequestID: "s", Circuit: "fail-size", Witness: witness(1, 0, []byte{1})}, codes.InvalidArgument},
		{"message over the limit", client.Request{RequestID: "big", Circuit: "mulchain", Witness: big}, codes.ResourceExhausted},
		{"proof fails inside", client.Request{RequestID: "i", Circuit: "fail-internal"}, codes.Internal},
	}
	for round := range 3 {
		for i, b := range bad {
			b.req.RequestID += fmt.Sprint(round)
			if b.name == "empty request id" {
				b.req.RequestID = ""
			}
			res, err := c.Prove(ctx, b.req)
			if got := status.Code(err); got != b.want {
				t.Errorf("round %d %s: %v (%v), want %v", round, b.name, got, err, b.want)
			}
			if b.want == codes.Internal || b.name == "witness the circuit rejects" {
				// A job that ran and failed comes back with its ids.
				if res == nil || res.JobID == "" || res.TraceID == "" || res.Status != client.Failed || res.Error == "" {
					t.Errorf("%s: result %+v, want the failed job's ids", b.name, res)
				}
			}
			good, err := c.Prove(ctx, client.Request{RequestID: fmt.Sprintf("good-%d-%d", round, i), Circuit: "mulchain", Constraints: 16})
			if err != nil || good.Status != client.Succeeded {
				t.Fatalf("good request after %q: %v", b.name, err)
			}
		}
	}
}

func TestAwaitTimeoutCancelAndIdempotency(t *testing.T) {
	d := startDaemon(t, nil)
	d.run.gate = make(chan struct{})
	c := d.client(t)
	ctx := ctx5(t)
	job, err := c.Submit(ctx, client.Request{RequestID: "slow", Circuit: "mulchain", Constraints: 16})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Submit(ctx, client.Request{RequestID: "slow", Circuit: "mulchain", Constraints: 16})
	if err != nil || again.ID != job.ID || !again.Existing || again.TraceID != job.TraceID {
		t.Fatalf("resubmit: %+v %v, want the same job", again, err)
	}
	if _, err := c.Await(ctx, job.ID, 30*time.Millisecond); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("await timeout: %v, want DEADLINE_EXCEEDED", err)
	}
	st, err := c.Cancel(ctx, job.ID)
	if err != nil || (st != client.Running && st != client.Cancelled) {
		t.Fatalf("cancel: %v %v", st, err)
	}
	res, err := c.AwaitRequest(ctx, "slow", 0)
	if status.Code(err) != codes.Canceled || res == nil || res.Status != client.Cancelled || res.JobID != job.ID {
		t.Fatalf("await cancelled: %+v %v, want CANCELLED with the job's result", res, err)
	}
	if r, err2 := client.ResultOf(err); err2 != nil || r.TraceID != job.TraceID {
		t.Errorf("ResultOf: %+v %v", r, err2)
	}
	if _, err := c.Cancel(ctx, job.ID); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("second cancel: %v, want FAILED_PRECONDITION", err)
	}
	if _, err := c.Cancel(ctx, "job-unknown"); status.Code(err) != codes.NotFound {
		t.Errorf("cancel unknown: %v, want NOT_FOUND", err)
	}
	if _, err := c.Await(ctx, "job-unknown", time.Second); status.Code(err) != codes.NotFound {
		t.Errorf("await unknown: %v, want NOT_FOUND", err)
	}
	if _, err := c.AwaitRequest(ctx, "never-sent", time.Second); status.Code(err) != codes.NotFound {
		t.Errorf("await unknown request: %v, want NOT_FOUND", err)
	}
}

func TestFullQueueIsResourceExhausted(t *testing.T) {
	d := startDaemon(t, []engine.Option{engine.WithQueueSize(1)})
	d.run.gate = make(chan struct{})
	c := d.client(t)
	ctx := ctx5(t)
	// Two workers busy, one queued: the next is refused.
	for i := range 3 {
		if _, err := c.Submit(ctx, client.Request{RequestID: fmt.Sprint("q", i), Circuit: "mulchain", Constraints: 16}); err != nil {
			t.Fatal(err)
		}
		for i < 2 && d.run.runs.Load() <= int64(i) {
			time.Sleep(time.Millisecond)
		}
	}
	if _, err := c.Submit(ctx, client.Request{RequestID: "q3", Circuit: "mulchain", Constraints: 16}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("full queue: %v, want RESOURCE_EXHAUSTED", err)
	}
	close(d.run.gate)
	if _, err := c.AwaitRequest(ctx, "q2", 0); err != nil {
		t.Fatal(err)
	}
}

func TestBearerToken(t *testing.T) {
	d := startDaemon(t, nil, WithBearerToken("s3cret"))
	ctx := ctx5(t)
	req := client.Request{RequestID: "tok", Circuit: "mulchain", Constraints: 16}
	for name, opts := range map[string][]client.Option{
		"none":  nil,
		"wrong": {client.WithBearerToken("guess")},
	} {
		if _, err := d.client(t, opts...).Prove(ctx, req); status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s token: %v, want UNAUTHENTICATED", name, err)
		}
	}
	if _, err := d.client(t, client.WithBearerToken("s3cret")).Prove(ctx, req); err != nil {
		t.Errorf("right token: %v", err)
	}
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	d := startDaemon(t, nil, WithTLS(certFile, keyFile))
	ctx := ctx5(t)
	req := client.Request{RequestID: "tls", Circuit: "mulchain", Constraints: 16}
	if _, err := d.client(t, client.WithTLS(&tls.Config{RootCAs: pool})).Prove(ctx, req); err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	if _, err := d.client(t).Prove(ctx, req); status.Code(err) != codes.Unavailable {
		t.Errorf("plaintext client on a TLS server: %v, want UNAVAILABLE", err)
	}
	if _, err := New(d.eng, WithTLS(filepath.Join(dir, "missing.pem"), keyFile)); err == nil {
		t.Error("missing certificate file: want error")
	}
}

func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	cert, pool := testcert.New(t)
	certFile, keyFile = testcert.WritePEM(t, dir, cert)
	return certFile, keyFile, pool
}

type fakeCircuits struct {
	mu     sync.Mutex
	loaded map[string]bool
}

func (k *fakeCircuits) LoadCircuit(_ context.Context, c string, n int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.loaded[fmt.Sprintf("%s/%d", c, n)] = true
	return nil
}

func (k *fakeCircuits) EvictCircuit(c string, n int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	id := fmt.Sprintf("%s/%d", c, n)
	ok := k.loaded[id]
	delete(k.loaded, id)
	return ok
}

func (k *fakeCircuits) LoadedCircuits() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for id := range k.loaded {
		out = append(out, id)
	}
	return out
}

func TestStatusKeysAndDevices(t *testing.T) {
	gpu0, gpu1 := &fakeCircuits{loaded: map[string]bool{}}, &fakeCircuits{loaded: map[string]bool{}}
	devs := func() []Device {
		return []Device{{Ordinal: 0, Name: "NVIDIA H200", Backend: "cuda", MemoryTotal: 141 << 30, MemoryUsed: 3 << 30},
			{Ordinal: 1, Name: "NVIDIA H200", Backend: "cuda", MemoryTotal: 141 << 30}}
	}
	d := startDaemon(t, nil, WithCircuitManager(CircuitManagers{gpu0, gpu1}), WithDevices(devs), WithVersion("v-test"))
	c := d.client(t)
	ctx := ctx5(t)
	key, hit, err := c.PreloadKeys(ctx, "mulchain", 1024)
	if err != nil || hit || key.ID != "mulchain/1024" || key.Constraints != 1024 {
		t.Fatalf("preload: %+v %v %v", key, hit, err)
	}
	if _, hit, _ := c.PreloadKeys(ctx, "mulchain", 1024); !hit {
		t.Error("second preload: want cache hit")
	}
	if _, _, err := c.PreloadKeys(ctx, "nope", 1); status.Code(err) != codes.NotFound {
		t.Errorf("preload unknown circuit: %v", err)
	}
	if _, err := c.Prove(ctx, client.Request{RequestID: "st", Circuit: "mulchain", Constraints: 16}); err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Devices) != 2 || st.Devices[0].MemoryUsed != 3<<30 || st.Devices[1].MemoryTotal != 141<<30 {
		t.Errorf("devices %+v", st.Devices)
	}
	if len(st.Keys) != 1 || st.Keys[0].ID != "mulchain/1024" {
		t.Errorf("keys %+v", st.Keys)
	}
	if len(st.Workers) != 2 || st.Succeeded != 1 || st.Version != "v-test" || st.QueueCapacity != engine.DefaultQueueSize || len(st.Queued) != 4 {
		t.Errorf("status %+v", st)
	}
	if ok, err := c.EvictKeys(ctx, "mulchain", 1024); err != nil || !ok {
		t.Errorf("evict: %v %v", ok, err)
	}
	if ok, _ := c.EvictKeys(ctx, "mulchain", 1024); ok {
		t.Error("second evict: want false")
	}
	if len(gpu0.LoadedCircuits())+len(gpu1.LoadedCircuits()) != 0 {
		t.Error("evict left keys on a device")
	}

	bare := startDaemon(t, nil)
	if _, _, err := bare.client(t).PreloadKeys(ctx, "mulchain", 16); status.Code(err) != codes.Unimplemented {
		t.Errorf("preload without a key manager: %v, want UNIMPLEMENTED", err)
	}
}

func TestHundredConcurrentProofsNoneLostOrDoubled(t *testing.T) {
	d := startDaemon(t, []engine.Option{engine.WithQueueSize(16), engine.WithMaxResults(64)})
	d.run.delay = 5 * time.Millisecond // long enough for the queue to fill
	c := d.client(t)
	ctx := ctx5(t)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	var ok, refused atomic.Int64
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			id := fmt.Sprintf("load-%03d", i)
			res, err := c.Prove(ctx, client.Request{RequestID: id, Circuit: "mulchain", Constraints: 16, Priority: priority.All[i%len(priority.All)]})
			switch status.Code(err) {
			case codes.OK:
				ok.Add(1)
				mu.Lock()
				if prev, dup := seen[res.JobID]; dup {
					t.Errorf("job %s answered twice (%s, %s)", res.JobID, prev, id)
				}
				seen[res.JobID] = id
				mu.Unlock()
				if string(res.Proof) != "proof:"+id {
					t.Errorf("%s got %q", id, res.Proof)
				}
			case codes.ResourceExhausted:
				refused.Add(1)
			default:
				t.Errorf("%s: %v", id, err)
			}
		})
	}
	wg.Wait()
	if ok.Load() == 0 || refused.Load() == 0 {
		t.Errorf("ok %d refused %d: the load should both prove and overflow the queue", ok.Load(), refused.Load())
	}
	if ok.Load()+refused.Load() != 100 || ok.Load() != d.run.runs.Load() {
		t.Errorf("ok %d refused %d, runner ran %d", ok.Load(), refused.Load(), d.run.runs.Load())
	}
	st := d.eng.Status()
	if st.QueueDepth() != 0 || len(st.Running) != 0 || st.Succeeded != uint64(ok.Load()) {
		t.Errorf("engine after load: %+v", st)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grow := int64(after.HeapAlloc) - int64(before.HeapAlloc); grow > 32<<20 {
		t.Errorf("heap grew %d MiB over 100 proofs", grow>>20)
	}
	t.Logf("100 concurrent: %d proved, %d refused with RESOURCE_EXHAUSTED", ok.Load(), refused.Load())
}

func TestShutdownAnswersRunningAndRefusesNew(t *testing.T) {
	d := startDaemon(t, nil)
	d.run.gate = make(chan struct{})
	c := d.client(t)
	ctx := ctx5(t)
	type out struct {
		res *client.Result
		err error
	}
	running := make(chan out, 1)
	go func() {
		r, err := c.Prove(ctx, client.Request{RequestID: "inflight", Circuit: "mulchain", Constraints: 16})
		running <- out{r, err}
	}()
	for d.run.runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	done := make(chan error, 1)
	go func() { done <- d.srv.Shutdown(ctx) }()
	for !d.eng.Status().Closing {
		time.Sleep(time.Millisecond)
	}
	if _, err := d.eng.Submit(ctx, &prover.Request{RequestID: "late", Circuit: "mulchain"}); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("submit while closing: %v", err)
	}
	close(d.run.gate)
	o := <-running
	if o.err != nil || string(o.res.Proof) != "proof:inflight" {
		t.Errorf("in-flight Prove during shutdown: %+v %v", o.res, o.err)
	}
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// describedCircuits is a fakeCircuits that also describes its keys
// (KeyDescriber), as prover.Prover does.
type describedCircuits struct{ *fakeCircuits }

func (d describedCircuits) LoadedKey(id string) (string, uint64, bool) {
	for _, l := range d.LoadedCircuits() {
		if l == id {
			return "sha256-of-" + id, 4096, true
		}
	}
	return "", 0, false
}

// A manager that describes its keys gives GetStatus and PreloadKeys the
// key id the proto documents (the constraint system's hash) and the
// bytes; one that does not, the circuit id and 0 (TestStatusKeysAndDevices).
func TestStatusAndPreloadNameTheKeyByItsHash(t *testing.T) {
	gpu0 := describedCircuits{&fakeCircuits{loaded: map[string]bool{}}}
	d := startDaemon(t, nil, WithCircuitManager(CircuitManagers{gpu0}))
	c := d.client(t)
	ctx := ctx5(t)
	key, _, err := c.PreloadKeys(ctx, "mulchain", 1024)
	if err != nil || key.ID != "sha256-of-mulchain/1024" || key.Bytes != 4096 || key.Circuit != "mulchain" {
		t.Fatalf("preload: %+v %v", key, err)
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Keys) != 1 || st.Keys[0].ID != "sha256-of-mulchain/1024" || st.Keys[0].Bytes != 4096 {
		t.Errorf("status keys %+v", st.Keys)
	}
}

// A poll (GetStatus, GetMetrics, AwaitProof) alone makes no span, on the
// daemon or in a client that has no span in its context: cuzk submit's
// stage polls were each a trace of their own (52 beside 7 proofs in one
// daemon's file). In a trace its caller samples, a poll is a span of that
// trace; a call that starts work (Prove) is traced without one.
func TestPollsAreTracedOnlyInTheCallersTrace(t *testing.T) {
	d := startDaemon(t, nil)
	api := cuzkv1.NewProvingEngineClient(d.conn(t))
	c := d.client(t)
	for range 3 {
		if _, err := api.GetStatus(ctx5(t), &cuzkv1.GetStatusRequest{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Status(ctx5(t)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := api.GetMetrics(ctx5(t), &cuzkv1.GetMetricsRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AwaitRequest(ctx5(t), "nosuch", time.Millisecond); status.Code(err) != codes.NotFound {
		t.Fatalf("await of an unknown request: %v", err)
	}
	if _, err := api.Prove(ctx5(t), &cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{RequestId: "work", Circuit: "mulchain", Constraints: 16}}); err != nil {
		t.Fatal(err)
	}
	const prove, getStatus = "cuzk.v1.ProvingEngine/Prove", "cuzk.v1.ProvingEngine/GetStatus"
	waitSpan := func(name string, kind trace.SpanKind) tracetest.SpanStub {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			for _, s := range d.exp.GetSpans() {
				if s.Name == name && s.SpanKind == kind {
					return s
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %v span %s", kind, name)
			}
		}
	}
	waitSpan(prove, trace.SpanKindServer) // ends after the reply, as a poll's would
	for _, s := range d.exp.GetSpans() {
		if s.Name != prove && s.SpanKind != trace.SpanKindInternal {
			t.Errorf("a poll without a caller's span made the %v span %s (trace %s)", s.SpanKind, s.Name, s.SpanContext.TraceID())
		}
	}
	ctx, task := d.tp.Tracer("curio").Start(ctx5(t), semconv.SpanCurioTask)
	_, err := c.Status(ctx)
	task.End()
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
		if s := waitSpan(getStatus, kind); s.SpanContext.TraceID() != task.SpanContext().TraceID() {
			t.Errorf("the %v span of a poll inside a task is in trace %s, want the task's %s", kind, s.SpanContext.TraceID(), task.SpanContext().TraceID())
		}
	}
}
