package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/prover/client"
)

// jaegerOperations returns the span names Jaeger holds for service.
func jaegerOperations(t *testing.T, j *jaegerInstance, service string) []string {
	t.Helper()
	resp, err := http.Get(j.QueryURL() + "/api/services/" + url.PathEscape(service) + "/operations")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data []string `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Data
}

// TestDialAddrsSpreadsJobsOverTwoDaemons: prover/client.DialAddrs over two
// real `cuzk serve` daemons, one stopped midway. Request ids spread over
// both, a retry returns the same job, each job id names the daemon that
// proved it; once one daemon is stopped, new requests go to the other and
// a job id of the stopped one is UNAVAILABLE (Await, Cancel, StatusAt),
// the other's still answer. Each job is one trace from
// the caller's task span through the client span to the daemon's
// engine.job, and the clients' health watches leave no spans in the
// daemons' traces.
func TestDialAddrsSpreadsJobsOverTwoDaemons(t *testing.T) {
	j := startJaeger(t)
	stamp := time.Now().UnixNano()
	svc := map[int]string{0: fmt.Sprintf("e2e-multi-a-%d", stamp), 1: fmt.Sprintf("e2e-multi-b-%d", stamp)}
	daemons := []*daemon{startDaemon(t, j.otlpEnv("grpc", svc[0])), startDaemon(t, j.otlpEnv("grpc", svc[1]))}
	index := map[string]int{daemons[0].Addr: 0, daemons[1].Addr: 1}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(j.OTLPGRPC), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	callerService := fmt.Sprintf("e2e-multi-caller-%d", stamp)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", callerService))))
	defer tp.Shutdown(context.Background())
	c, err := client.DialAddrs([]string{daemons[0].Addr, daemons[1].Addr},
		client.WithTracerProvider(tp), client.WithPropagators(propagation.TraceContext{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	type job struct{ id, trace string }
	jobs := map[string]job{}
	on := map[int][]string{}
	prove := func(rid string) (*client.Result, error) {
		tctx, task := tp.Tracer("e2e").Start(ctx, "e2e.task")
		defer task.End()
		return c.Prove(tctx, client.Request{RequestID: rid, Circuit: "mulchain", Constraints: e2eConstraints, Verify: true})
	}
	// Request ids hash to a daemon each: until both were used (all of 20
	// on one has probability 2^-19).
	for i := 0; i < 20 && (len(on[0]) == 0 || len(on[1]) == 0 || i < 4); i++ {
		rid := fmt.Sprintf("multi-%d-%d", stamp, i)
		res, err := prove(rid)
		if err != nil {
			t.Fatal(err)
		}
		addr, _, ok := strings.Cut(res.JobID, "/")
		n, known := index[addr]
		if !ok || !known || !res.Verified {
			t.Fatalf("request %s: job id %q (verified %v), want ADDRESS/JOB of one of the daemons", rid, res.JobID, res.Verified)
		}
		jobs[rid] = job{res.JobID, res.TraceID}
		on[n] = append(on[n], rid)
	}
	if len(on[0]) == 0 || len(on[1]) == 0 {
		t.Fatalf("every request went to one daemon: %v", on)
	}
	for rid, jb := range jobs {
		res, err := prove(rid)
		if err != nil || res.JobID != jb.id {
			t.Errorf("retry of %s: %+v %v, want its job %s", rid, res, err, jb.id)
		}
	}
	// The traces: task span → client span → the daemon's server span →
	// engine.job, on the daemon the job id names.
	for n, rids := range on {
		jb := jobs[rids[0]]
		st := daemonLayers(t, j, jb.trace, svc[n])
		s := st.byID[st.byID[st.one(t, "engine.job").ParentID].ParentID] // the client span
		if s.Service != callerService || st.byID[s.ParentID].Name != "e2e.task" {
			t.Errorf("daemon %d, trace %s: engine.job's server span has parent %q of %q under %q, want the caller's client span under e2e.task",
				n, jb.trace, s.Name, s.Service, st.byID[s.ParentID].Name)
		}
	}

	// Daemon 0 stopped: new request ids all go to daemon 1, daemon 0's
	// jobs are UNAVAILABLE, daemon 1's still there.
	daemons[0].Stop(t)
	for i := range 4 {
		rid := fmt.Sprintf("multi-after-%d-%d", stamp, i)
		res, err := prove(rid)
		if err != nil || !strings.HasPrefix(res.JobID, daemons[1].Addr+"/") {
			t.Errorf("after daemon 0 stopped, %s: %+v %v, want a job on daemon 1", rid, res, err)
		}
	}
	if _, err := c.Await(ctx, jobs[on[0][0]].id, time.Second); status.Code(err) != codes.Unavailable {
		t.Errorf("Await of a job on the stopped daemon: %v, want UNAVAILABLE", err)
	}
	if res, err := c.Await(ctx, jobs[on[1][0]].id, time.Second); err != nil || res.JobID != jobs[on[1][0]].id {
		t.Errorf("Await of a job on daemon 1: %+v %v", res, err)
	}
	// Cancel and status go to the daemon named: daemon 1 knows its
	// finished job (FAILED_PRECONDITION, not NOT_FOUND), daemon 0 is away.
	if _, err := c.Cancel(ctx, jobs[on[1][0]].id); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("Cancel of a finished job on daemon 1: %v, want FAILED_PRECONDITION", err)
	}
	if _, err := c.Cancel(ctx, jobs[on[0][0]].id); status.Code(err) != codes.Unavailable {
		t.Errorf("Cancel of a job on the stopped daemon: %v, want UNAVAILABLE", err)
	}
	if st, err := c.StatusAt(ctx, daemons[1].Addr); err != nil || st == nil {
		t.Errorf("StatusAt(daemon 1): %+v %v", st, err)
	}
	if _, err := c.StatusAt(ctx, daemons[0].Addr); status.Code(err) != codes.Unavailable {
		t.Errorf("StatusAt(the stopped daemon): %v, want UNAVAILABLE", err)
	}
	// Daemon 0 has shut down, so its spans, the health watch's included,
	// were exported.
	for _, op := range jaegerOperations(t, j, svc[0]) {
		if strings.HasPrefix(op, "grpc.health.v1") {
			t.Errorf("daemon 0 traced the clients' health watch (%s): a trace per connection, as long as it", op)
		}
	}
}
