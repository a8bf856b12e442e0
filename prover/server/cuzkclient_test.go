package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/prover/api/cuzkv1/cuzkschematest"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/upstream/standin"
)

// cuzkClient calls the daemon with messages of cuzk's schema alone
// (cuzkschematest.File, built from the schema's facts), as a Curio whose
// client is generated from cuzk's proving.proto: it knows none of our
// fields or methods.
type cuzkClient struct {
	t    *testing.T
	conn *grpc.ClientConn
	fd   protoreflect.FileDescriptor
}

func newCuzkClient(t *testing.T, d *daemon) *cuzkClient {
	return &cuzkClient{t: t, conn: d.conn(t), fd: cuzkschematest.File()}
}

// msg is a new message of cuzk's schema ("SubmitProofRequest"), its
// fields set from fields by name (an enum by its value's name).
func (c *cuzkClient) msg(name string, fields map[string]any) *dynamicpb.Message {
	c.t.Helper()
	d := c.fd.Messages().ByName(protoreflect.Name(name))
	if d == nil {
		c.t.Fatalf("no message %s in cuzk's schema", name)
	}
	m := dynamicpb.NewMessage(d)
	for k, v := range fields {
		f := d.Fields().ByName(protoreflect.Name(k))
		if f == nil {
			c.t.Fatalf("%s has no field %s in cuzk's schema", name, k)
		}
		switch v := v.(type) {
		case string:
			if f.Kind() == protoreflect.EnumKind {
				ev := f.Enum().Values().ByName(protoreflect.Name(v))
				if ev == nil {
					c.t.Fatalf("%s.%s: no enum value %s", name, k, v)
				}
				m.Set(f, protoreflect.ValueOfEnum(ev.Number()))
				continue
			}
			m.Set(f, protoreflect.ValueOfString(v))
		case protoreflect.EnumNumber:
			m.Set(f, protoreflect.ValueOfEnum(v))
		case uint64:
			m.Set(f, protoreflect.ValueOfUint64(v))
		case uint32:
			m.Set(f, protoreflect.ValueOfUint32(v))
		case []byte:
			m.Set(f, protoreflect.ValueOfBytes(v))
		case [][]byte:
			l := m.Mutable(f).List()
			for _, b := range v {
				l.Append(protoreflect.ValueOfBytes(b))
			}
		case *dynamicpb.Message:
			m.Set(f, protoreflect.ValueOfMessage(v))
		default:
			c.t.Fatalf("%s.%s: value %T", name, k, v)
		}
	}
	return m
}

// call invokes method with req and returns the reply message of cuzk's
// schema.
func (c *cuzkClient) call(ctx context.Context, method string, req *dynamicpb.Message) (*dynamicpb.Message, error) {
	md := c.fd.Services().ByName(cuzkschematest.Service).Methods().ByName(protoreflect.Name(method))
	if md == nil {
		c.t.Fatalf("no method %s in cuzk's schema", method)
	}
	out := dynamicpb.NewMessage(md.Output())
	err := c.conn.Invoke(ctx, "/"+cuzkschematest.Package+"."+cuzkschematest.Service+"/"+method, req, out)
	return out, err
}

// get reads a field by name: a string, uint64, bool, bytes, enum value
// name, message or list length.
func get(m protoreflect.Message, name string) any {
	f := m.Descriptor().Fields().ByName(protoreflect.Name(name))
	v := m.Get(f)
	switch {
	case f.IsList():
		return v.List().Len()
	case f.Kind() == protoreflect.EnumKind:
		return string(f.Enum().Values().ByNumber(v.Enum()).Name())
	case f.Kind() == protoreflect.MessageKind:
		return v.Message()
	}
	return v.Interface()
}

// A client that knows only cuzk's schema can use every method cuzk has:
// Submit, Await, Prove, Cancel, GetStatus, GetMetrics, PreloadSRS and
// EvictSRS. Our own fields are unknown fields to it, which it skips.
func TestCuzkSchemaClientUsesEveryMethod(t *testing.T) {
	keys := &fakeCircuits{loaded: map[string]bool{}}
	gate := make(chan struct{})
	d := startDaemon(t, nil, WithCircuitManager(CircuitManagers{keys}))
	d.run.gate = gate
	c := newCuzkClient(t, d)
	ctx := ctx5(t)

	// Submit: a Filecoin kind this daemon does not prove is refused
	// naming the kind.
	_, err := c.call(ctx, "SubmitProof", c.msg("SubmitProofRequest", map[string]any{
		"request_id": "porep-1-2", "proof_kind": "POREP_SEAL_COMMIT", "sector_size": uint64(32 << 30),
		"registered_proof": uint64(8), "priority": "NORMAL", "vanilla_proof": []byte(`{"SectorNum":2}`),
		"sector_number": uint64(2), "miner_id": uint64(1),
	}))
	if status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "POREP_SEAL_COMMIT") {
		t.Errorf("PoRep C2 without an upstream: %v, want UNIMPLEMENTED naming the kind", err)
	}
	for _, k := range []string{"SNAP_DEALS_UPDATE", "WINDOW_POST_PARTITION", "WINNING_POST"} {
		rp := map[string]uint64{"SNAP_DEALS_UPDATE": 3, "WINDOW_POST_PARTITION": 13, "WINNING_POST": 3}[k]
		_, err := c.call(ctx, "Prove", c.msg("ProveRequest", map[string]any{"submit": c.msg("SubmitProofRequest", map[string]any{
			"request_id": "k-" + k, "proof_kind": k, "sector_size": uint64(32 << 30), "registered_proof": rp})}))
		if status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), k) {
			t.Errorf("%s without an upstream: %v, want UNIMPLEMENTED naming it", k, err)
		}
	}

	// Cancel and Await of a job of ours, named by cuzk's job_id.
	sub := submitLocal(t, d, "held", false)
	resp, err := c.call(ctx, "CancelProof", c.msg("CancelProofRequest", map[string]any{"job_id": sub}))
	if err != nil {
		t.Fatalf("cancel: %v", err)
	}
	_ = get(resp, "was_running")
	aw, err := c.call(ctx, "AwaitProof", c.msg("AwaitProofRequest", map[string]any{"job_id": sub, "timeout_ms": uint64(3000)}))
	if err != nil || get(aw, "status") != "CANCELLED" || get(aw, "job_id") != sub {
		t.Errorf("await of a cancelled job: %v %v, want an OK reply CANCELLED", aw, err)
	}
	close(gate)

	// A proof kind cuzk does not define is refused naming the field.
	pr, err := c.call(ctx, "Prove", c.msg("ProveRequest", map[string]any{"submit": c.msg("SubmitProofRequest", map[string]any{
		"request_id": "unknown-kind", "proof_kind": protoreflect.EnumNumber(9)})}))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "proof_kind") {
		t.Errorf("proof kind 9: %v %v, want INVALID_ARGUMENT naming proof_kind", pr, err)
	}

	// A request with cuzk's fields and no kind is refused, saying what is
	// missing; a job of ours (submitted by our client) is awaited as
	// cuzk's, COMPLETED with its proof.
	_, err = c.call(ctx, "SubmitProof", c.msg("SubmitProofRequest", map[string]any{"request_id": "nothing"}))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "proof_kind") {
		t.Errorf("no kind, no circuit: %v, want INVALID_ARGUMENT", err)
	}
	done := submitLocal(t, d, "done", true)
	aw, err = c.call(ctx, "AwaitProof", c.msg("AwaitProofRequest", map[string]any{"job_id": done}))
	if err != nil || get(aw, "status") != "COMPLETED" || string(get(aw, "proof").([]byte)) != "proof:done" {
		t.Errorf("await: %v %v, want COMPLETED with the proof", aw, err)
	}
	// An unknown job is NOT_FOUND, as cuzk's.
	if _, err := c.call(ctx, "AwaitProof", c.msg("AwaitProofRequest", map[string]any{"job_id": "nosuch"})); status.Code(err) != codes.NotFound {
		t.Errorf("await of an unknown job: %v, want NOT_FOUND", err)
	}

	// GetStatus: cuzk's totals and queues.
	st, err := c.call(ctx, "GetStatus", c.msg("GetStatusRequest", nil))
	if err != nil || get(st, "total_proofs_completed") != uint64(1) || get(st, "queues") != 1 {
		t.Errorf("status: %v %v, want 1 completed and one queue", st, err)
	}
	// GetMetrics: Prometheus text.
	mt, err := c.call(ctx, "GetMetrics", c.msg("GetMetricsRequest", nil))
	if err != nil || !strings.Contains(get(mt, "prometheus_text").(string), "cuzk_proofs_completed_total 1") {
		t.Errorf("metrics: %v %v", mt, err)
	}
	// PreloadSRS and EvictSRS by our key's id.
	pl, err := c.call(ctx, "PreloadSRS", c.msg("PreloadSrsRequest", map[string]any{"circuit_id": "mulchain/1024"}))
	if err != nil || get(pl, "already_loaded") != false || !keys.loaded["mulchain/1024"] {
		t.Errorf("preload: %v %v (loaded %v)", pl, err, keys.loaded)
	}
	pl, err = c.call(ctx, "PreloadSRS", c.msg("PreloadSrsRequest", map[string]any{"circuit_id": "mulchain/1024"}))
	if err != nil || get(pl, "already_loaded") != true {
		t.Errorf("second preload: %v %v, want already_loaded", pl, err)
	}
	st, err = c.call(ctx, "GetStatus", c.msg("GetStatusRequest", nil))
	if err != nil || get(st, "loaded_srs") != 1 {
		t.Errorf("status after preload: %v %v, want one loaded_srs", st, err)
	}
	ev, err := c.call(ctx, "EvictSRS", c.msg("EvictSrsRequest", map[string]any{"circuit_id": "mulchain/1024"}))
	if err != nil || get(ev, "was_loaded") != true || keys.loaded["mulchain/1024"] {
		t.Errorf("evict: %v %v", ev, err)
	}
	// cuzk's Filecoin SRS ids, without an upstream: UNIMPLEMENTED naming
	// the id and what this daemon takes instead; an id naming nothing is
	// NOT_FOUND.
	for m, req := range map[string]string{"PreloadSRS": "PreloadSrsRequest", "EvictSRS": "EvictSrsRequest"} {
		_, err := c.call(ctx, m, c.msg(req, map[string]any{"circuit_id": "porep-32g"}))
		if status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), `"porep-32g"`) || !strings.Contains(err.Error(), "NAME/CONSTRAINTS") {
			t.Errorf("%s of cuzk's porep-32g here: %v, want UNIMPLEMENTED naming it and what is taken instead", m, err)
		}
	}
	if _, err := c.call(ctx, "PreloadSRS", c.msg("PreloadSrsRequest", map[string]any{"circuit_id": "nosuch/16"})); status.Code(err) != codes.NotFound {
		t.Errorf("preload of an unknown circuit: %v, want NOT_FOUND", err)
	}
}

// submitLocal submits one of our circuits through our own client and
// returns its job id; wait waits for it to end.
func submitLocal(t *testing.T, d *daemon, id string, wait bool) string {
	t.Helper()
	c := d.client(t)
	job, err := c.Submit(ctx5(t), clientRequest(id))
	if err != nil {
		t.Fatal(err)
	}
	if wait {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := d.eng.Await(ctx, job.ID); err != nil {
			t.Fatal(err)
		}
	}
	return job.ID
}

// A Filecoin request with an unknown sector size or registered proof is
// refused naming the field; a registered proof of another size names
// both numbers.
func TestFilecoinFieldsAreChecked(t *testing.T) {
	d := startDaemon(t, nil)
	c := newCuzkClient(t, d)
	for _, tc := range []struct {
		kind        string
		size, proof uint64
		want        string
	}{
		{"POREP_SEAL_COMMIT", 1 << 30, 8, "sector_size 1073741824 unknown"},
		{"POREP_SEAL_COMMIT", 32 << 30, 20, "registered_proof 20 unknown"},
		{"POREP_SEAL_COMMIT", 32 << 30, 4, "registered_proof 4 is for 68719476736-byte sectors"},
		{"WINDOW_POST_PARTITION", 32 << 30, 3, "registered_proof 3 unknown for WINDOW_POST_PARTITION"},
		{"WINNING_POST", 2 << 10, 5, "registered_proof 5 unknown for WINNING_POST"},
		{"SNAP_DEALS_UPDATE", 0, 3, "sector_size 0 unknown"},
	} {
		_, err := c.call(ctx5(t), "SubmitProof", c.msg("SubmitProofRequest", map[string]any{
			"request_id": "bad", "proof_kind": tc.kind, "sector_size": tc.size, "registered_proof": tc.proof}))
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %d %d: %v, want INVALID_ARGUMENT %q", tc.kind, tc.size, tc.proof, err, tc.want)
		}
	}
	if n := d.eng.Status().Succeeded + d.eng.Status().Failed; n != 0 || len(d.eng.Status().Running) != 0 {
		t.Errorf("refused requests reached the engine: %d ended", n)
	}
}

func clientRequest(id string) client.Request {
	return client.Request{RequestID: id, Circuit: "mulchain", Constraints: 16}
}

// GetMetrics answers with the metrics handler's text (the daemon's
// /metrics), and a handler that fails is INTERNAL naming its status.
func TestGetMetricsServesTheHandlersText(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE cuzk_jobs_running gauge\ncuzk_jobs_running 0\n")
	})
	c := newCuzkClient(t, startDaemon(t, nil, WithMetricsHandler(ok)))
	mt, err := c.call(ctx5(t), "GetMetrics", c.msg("GetMetricsRequest", nil))
	if err != nil || get(mt, "prometheus_text") != "# TYPE cuzk_jobs_running gauge\ncuzk_jobs_running 0\n" {
		t.Errorf("metrics: %v %v", mt, err)
	}
	bad := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "gather failed", 500) })
	c = newCuzkClient(t, startDaemon(t, nil, WithMetricsHandler(bad)))
	if _, err := c.call(ctx5(t), "GetMetrics", c.msg("GetMetricsRequest", nil)); status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "gather failed") {
		t.Errorf("failing handler: %v, want INTERNAL with its message", err)
	}
}

// cuzk's job id is the request id (cuzk-server's proto_to_request): a
// client written for cuzk awaits and cancels by the request id it sent,
// in job_id, and this daemon resolves it to its own job.
func TestCuzkJobIDIsTheRequestID(t *testing.T) {
	gate := make(chan struct{})
	d := startDaemon(t, nil)
	d.run.gate = gate
	c := newCuzkClient(t, d)
	ctx := ctx5(t)

	held := submitLocal(t, d, "wdpost-7-f01234-3", false)
	aw, err := c.call(ctx, "AwaitProof", c.msg("AwaitProofRequest", map[string]any{"job_id": "wdpost-7-f01234-3", "timeout_ms": uint64(20)}))
	if err != nil || get(aw, "status") != "TIMEOUT" || get(aw, "job_id") != held {
		t.Fatalf("await by request id of a running job: %v %v, want TIMEOUT of %s", aw, err, held)
	}
	cr, err := c.call(ctx, "CancelProof", c.msg("CancelProofRequest", map[string]any{"job_id": "wdpost-7-f01234-3"}))
	if err != nil {
		t.Fatalf("cancel by request id: %v", err)
	}
	_ = get(cr, "was_running")
	if st := d.eng.Job(held).State; st != engine.StateCancelled && st != engine.StateRunning {
		t.Errorf("the job named by its request id is %v after the cancel", st)
	}
	close(gate)
	aw, err = c.call(ctx, "AwaitProof", c.msg("AwaitProofRequest", map[string]any{"job_id": "wdpost-7-f01234-3"}))
	if err != nil || get(aw, "status") != "CANCELLED" {
		t.Errorf("await by request id after the cancel: %v %v, want CANCELLED", aw, err)
	}

	// Our own job id still names the job; a request id is looked up only
	// when no job has that id.
	done := submitLocal(t, d, "porep-1-2", true)
	for _, id := range []string{done, "porep-1-2"} {
		aw, err := c.call(ctx, "AwaitProof", c.msg("AwaitProofRequest", map[string]any{"job_id": id}))
		if err != nil || get(aw, "status") != "COMPLETED" || string(get(aw, "proof").([]byte)) != "proof:porep-1-2" {
			t.Errorf("await job_id %q: %v %v, want COMPLETED with the proof", id, aw, err)
		}
	}
	if _, err := c.call(ctx, "AwaitProof", c.msg("AwaitProofRequest", map[string]any{"job_id": "porep-9-9"})); status.Code(err) != codes.NotFound {
		t.Errorf("await of a request id never sent: %v, want NOT_FOUND", err)
	}
}

// poll asks AwaitProof for job with a short timeout_ms until the reply is
// not TIMEOUT (a cuzk client polling), for at most 10 s.
func (c *cuzkClient) poll(ctx context.Context, job string) *dynamicpb.Message {
	c.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		aw, err := c.call(ctx, "AwaitProof", c.msg("AwaitProofRequest", map[string]any{"job_id": job, "timeout_ms": uint64(50)}))
		if err != nil {
			c.t.Fatalf("await %s: %v", job, err)
		}
		if get(aw, "status") != "TIMEOUT" {
			return aw
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("job %s still running after 10 s", job)
		}
	}
}

// A client that knows only cuzk's schema, in front of a cuzk (the
// stand-in) as Curio is: proofs in cuzk's shape are submitted, polled,
// awaited and cancelled by cuzk's job id (the request id), GetStatus adds
// the upstream's GPUs, queues and pinned memory to ours, and PreloadSRS
// and EvictSRS of cuzk's SRS ids reach the upstream.
func TestCuzkSchemaClientInFrontOfCuzk(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	fake := &standin.Fake{PinnedBytes: 3 << 30, PinnedLimitBytes: 8 << 30,
		Work: func(ctx context.Context, _ int, requestID string) error {
			if requestID != "wdpost-1000-4-0" {
				return nil
			}
			select {
			case <-hold:
			case <-ctx.Done():
			}
			return ctx.Err()
		}}
	addr := startFake(t, fake)
	f := startFront(t, addr)
	c := newCuzkClient(t, f.daemon)
	ctx := ctx5(t)

	// PoRep C2 as Curio sends it; cuzk's job id is the request id.
	sub, err := c.call(ctx, "SubmitProof", c.msg("SubmitProofRequest", map[string]any{
		"request_id": "porep-1000-7", "proof_kind": "POREP_SEAL_COMMIT", "sector_size": uint64(32 << 30),
		"registered_proof": uint64(8), "vanilla_proof": []byte(`{"SectorNum":7}`), "sector_number": uint64(7), "miner_id": uint64(1000),
	}))
	if err != nil || get(sub, "job_id") != "porep-1000-7" {
		t.Fatalf("submit: %v %v, want job porep-1000-7", sub, err)
	}
	aw := c.poll(ctx, "porep-1000-7")
	if get(aw, "status") != "COMPLETED" || string(get(aw, "proof").([]byte)) != "proof:porep-1000-7" || get(aw, "job_id") != "porep-1000-7" {
		t.Errorf("polled PoRep: %v, want COMPLETED with the upstream's proof", aw)
	}

	// WindowPoSt with cuzk's repeated vanilla_proofs, randomness and
	// partition; held on the upstream's GPU, then cancelled.
	vps := [][]byte{[]byte("sector-1"), []byte("sector-2")}
	_, err = c.call(ctx, "SubmitProof", c.msg("SubmitProofRequest", map[string]any{
		"request_id": "wdpost-1000-4-0", "proof_kind": "WINDOW_POST_PARTITION", "sector_size": uint64(32 << 30),
		"registered_proof": uint64(8), "vanilla_proofs": vps, "randomness": make([]byte, 32), "partition_index": uint32(0), "miner_id": uint64(1000),
	}))
	if err != nil {
		t.Fatalf("submit WindowPoSt: %v", err)
	}
	reqs := fake.Requests()
	if w := reqs[len(reqs)-1]; len(w.GetVanillaProofs()) != 2 || string(w.GetVanillaProofs()[1]) != "sector-2" || len(w.GetRandomness()) != 32 || w.GetPriority() != 0 {
		t.Errorf("the upstream got %v, want the request as sent", w)
	}
	var st *dynamicpb.Message
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st, err = c.call(ctx, "GetStatus", c.msg("GetStatusRequest", nil)); err != nil {
			t.Fatal(err)
		}
		gpus := st.Get(st.Descriptor().Fields().ByName("gpus")).List()
		if gpus.Len() == 1 && get(gpus.Get(0).Message(), "current_job_id") == "wdpost-1000-4-0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %v: the upstream's GPU never held the WindowPoSt", st)
		}
	}
	// Ours (no buffer pool here) plus the upstream's.
	if get(st, "pinned_memory_bytes") != uint64(3<<30) || get(st, "pinned_memory_limit_bytes") != uint64(8<<30) || get(st, "total_proofs_completed") != uint64(1) {
		t.Errorf("status %v, want the upstream's pinned memory 3 GiB of 8 GiB and 1 proof completed", st)
	}
	if aw, err := c.call(ctx, "AwaitProof", c.msg("AwaitProofRequest", map[string]any{"job_id": "wdpost-1000-4-0", "timeout_ms": uint64(20)})); err != nil || get(aw, "status") != "TIMEOUT" {
		t.Errorf("await of the held job: %v %v, want TIMEOUT", aw, err)
	}
	if cr, err := c.call(ctx, "CancelProof", c.msg("CancelProofRequest", map[string]any{"job_id": "wdpost-1000-4-0"})); err != nil || get(cr, "was_running") != true {
		t.Errorf("cancel: %v %v, want was_running", cr, err)
	}
	if aw := c.poll(ctx, "wdpost-1000-4-0"); get(aw, "status") != "CANCELLED" {
		t.Errorf("await after the cancel: %v, want CANCELLED", aw)
	}

	// cuzk's SRS ids go to the upstream; its errors come back with its
	// code, naming it.
	for i, want := range []bool{false, true} {
		pl, err := c.call(ctx, "PreloadSRS", c.msg("PreloadSrsRequest", map[string]any{"circuit_id": "porep-32g"}))
		if err != nil || get(pl, "already_loaded") != want {
			t.Errorf("preload %d of porep-32g: %v %v, want already_loaded %v", i+1, pl, err, want)
		}
	}
	if ev, err := c.call(ctx, "EvictSRS", c.msg("EvictSrsRequest", map[string]any{"circuit_id": "porep-32g"})); err != nil || get(ev, "was_loaded") != true {
		t.Errorf("evict of porep-32g: %v %v, want was_loaded", ev, err)
	}
	_, err = c.call(ctx, "PreloadSRS", c.msg("PreloadSrsRequest", map[string]any{"circuit_id": "porep-1g"}))
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "upstream "+addr+": unknown circuit ID: porep-1g") {
		t.Errorf("preload of an id the upstream does not know: %v, want its INTERNAL naming it", err)
	}
}

// GetStatus fills cuzk's pinned_memory_bytes and pinned_memory_limit_bytes
// from the buffer pools (serve --release pool): what they hold now and may
// hold; and each loaded key's ref_count with the jobs proving with it.
func TestCuzkPinnedMemoryAndRefCount(t *testing.T) {
	const page = 4096
	rel, err := buffer.NewReleaser(buffer.ReleasePool, buffer.WithPoolLimit(16*page))
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Close(context.Background())
	keys := &fakeCircuits{loaded: map[string]bool{}}
	gate := make(chan struct{})
	d := startDaemon(t, []engine.Option{engine.WithReleasers(rel)}, WithCircuitManager(CircuitManagers{keys}))
	d.run.gate = gate
	c := newCuzkClient(t, d)
	ctx := ctx5(t)

	m, err := buffer.NewMmap(3 * page)
	if err != nil {
		t.Fatal(err)
	}
	if err := rel.Release(ctx, "wires", m); err != nil {
		t.Fatal(err)
	}
	if _, err := c.call(ctx, "PreloadSRS", c.msg("PreloadSrsRequest", map[string]any{"circuit_id": "mulchain/16"})); err != nil {
		t.Fatal(err)
	}
	a, b := submitLocal(t, d, "r1", false), submitLocal(t, d, "r2", false)
	var srs protoreflect.Message
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st, err := c.call(ctx, "GetStatus", c.msg("GetStatusRequest", nil))
		if err != nil {
			t.Fatal(err)
		}
		if get(st, "pinned_memory_bytes") != uint64(3*page) || get(st, "pinned_memory_limit_bytes") != uint64(16*page) {
			t.Fatalf("pinned memory %v of %v, want the pool's %d of %d", get(st, "pinned_memory_bytes"), get(st, "pinned_memory_limit_bytes"), 3*page, 16*page)
		}
		l := st.Get(st.Descriptor().Fields().ByName("loaded_srs")).List()
		if l.Len() != 1 {
			t.Fatalf("loaded_srs %v, want mulchain/16", st)
		}
		srs = l.Get(0).Message()
		if get(srs, "ref_count") == uint32(2) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ref_count %v with jobs %s and %s running (%v, %v), want 2", get(srs, "ref_count"), a, b, d.eng.Job(a).State, d.eng.Job(b).State)
		}
	}
	close(gate)
	for _, id := range []string{a, b} {
		if aw := c.poll(ctx, id); get(aw, "status") != "COMPLETED" {
			t.Fatalf("job %s: %v", id, aw)
		}
	}
	st, err := c.call(ctx, "GetStatus", c.msg("GetStatusRequest", nil))
	if err != nil {
		t.Fatal(err)
	}
	if l := st.Get(st.Descriptor().Fields().ByName("loaded_srs")).List(); l.Len() != 1 || get(l.Get(0).Message(), "ref_count") != uint32(0) {
		t.Errorf("loaded_srs after the jobs ended: %v, want ref_count 0", st)
	}
}
