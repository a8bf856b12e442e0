package server

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
)

func TestCheckStringLimitsNamesTheFieldAndItsLimit(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		msg  proto.Message
		want string // "" when accepted
	}{
		{&cuzkv1.SubmitProofRequest{RequestId: long(256), TaskName: long(256), Miner: long(256)}, ""},
		{&cuzkv1.SubmitProofRequest{RequestId: long(257)}, "request_id is 257 bytes, at most 256"},
		{&cuzkv1.SubmitProofRequest{TaskName: long(32 << 20)}, "task_name is 33554432 bytes, at most 256"},
		{&cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{Miner: long(300)}}, "submit.miner is 300 bytes, at most 256"},
		{&cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{Circuit: long(1000)}}, "submit.circuit is 1000 bytes, at most 256"},
		{&cuzkv1.AwaitProofRequest{JobId: long(257)}, "job_id is 257 bytes, at most 256"},
		{&cuzkv1.CancelProofRequest{RequestId: long(257)}, "request_id is 257 bytes, at most 256"},
		{&cuzkv1.PreloadKeysRequest{Circuit: long(257)}, "circuit is 257 bytes, at most 256"},
		// A field the table does not list has the default bound.
		{&cuzkv1.AwaitProofResponse{ErrorMessage: long(DefaultMaxStringBytes)}, ""},
		{&cuzkv1.AwaitProofResponse{ErrorMessage: long(DefaultMaxStringBytes + 1)}, "error_message is 4097 bytes, at most 4096"},
		{&cuzkv1.GetStatusResponse{Running: []*cuzkv1.JobInfo{{}, {TraceId: long(DefaultMaxStringBytes + 1)}}}, "running[1].trace_id is 4097 bytes"},
		{nil, ""},
	} {
		err := CheckStringLimits(tc.msg)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%T: %v, want accepted", tc.msg, err)
			}
			continue
		}
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%T: %v, want INVALID_ARGUMENT %q", tc.msg, err, tc.want)
		}
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// The finding: 15 Prove calls with a 32 MiB task_name took the daemon from
// 123 MB to 1.17 GB RSS (each kept with its job, copied into spans).
func TestOverlongTaskNameIsRefusedAndNothingIsKept(t *testing.T) {
	d := startDaemon(t, nil)
	pc := cuzkv1.NewProvingEngineClient(d.conn(t))
	// 15 messages of 32 MiB each are decoded and checked: seconds under
	// the race detector, so a longer deadline than ctx5's.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := pc.GetStatus(ctx, &cuzkv1.GetStatusRequest{}); err != nil {
		t.Fatal(err)
	}
	before := heapInUse()
	for i := range 15 {
		req := &cuzkv1.SubmitProofRequest{RequestId: "big", Circuit: "mulchain", Constraints: 8, TaskName: strings.Repeat("t", 32<<20)}
		var err error
		if i%2 == 0 {
			_, err = pc.Prove(ctx, &cuzkv1.ProveRequest{Submit: req})
		} else {
			_, err = pc.SubmitProof(ctx, req)
		}
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "task_name is 33554432 bytes, at most 256") {
			t.Fatalf("call %d: %v, want INVALID_ARGUMENT naming task_name and 256", i, err)
		}
	}
	if grew := int64(heapInUse()) - int64(before); grew > 16<<20 {
		t.Errorf("heap grew by %d MiB over 15 refused calls", grew>>20)
	}
	if _, ok := d.eng.JobByRequest("big"); ok || d.run.runs.Load() != 0 {
		t.Errorf("a refused request reached the engine (job kept: %v, runs %d)", ok, d.run.runs.Load())
	}
	d.tp.ForceFlush(ctx)
	for _, s := range d.exp.GetSpans() {
		for _, a := range s.Attributes {
			if len(a.Value.Emit()) > 1024 {
				t.Errorf("span %s has attribute %s of %d bytes", s.Name, a.Key, len(a.Value.Emit()))
			}
		}
	}
}

// rawCodec sends a request's bytes as they are (rawMsg) and decodes
// answers as protobuf: a caller that sends what it likes.
type rawCodec struct{}

type rawMsg []byte

func (rawCodec) Marshal(v any) ([]byte, error) { return []byte(*v.(*rawMsg)), nil }
func (rawCodec) Unmarshal(b []byte, v any) error {
	return proto.Unmarshal(b, v.(proto.Message))
}
func (rawCodec) Name() string { return "proto" }

func TestMalformedMessagesAreInvalidArgument(t *testing.T) {
	d := startDaemon(t, nil)
	conn := d.conn(t)
	good, err := proto.Marshal(&cuzkv1.SubmitProofRequest{RequestId: "r", Circuit: "mulchain", Constraints: 8})
	if err != nil {
		t.Fatal(err)
	}
	// Field 1 (SubmitProofRequest.request_id, ProveRequest.submit) with
	// bytes that are neither UTF-8 nor a request with a UTF-8 request_id.
	inner := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "\xff\xfe")
	badUTF8 := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), inner)
	overlong := append(protowire.AppendTag(nil, 2, protowire.VarintType), 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01)
	for name, b := range map[string][]byte{
		"truncated":       good[:len(good)-2], // inside the last field's two-byte tag
		"garbage":         []byte("\xff\xff\xff\xff\xff\xff garbage"),
		"overlong varint": append(protowire.AppendTag(nil, 1, protowire.BytesType), overlong[1:]...),
		"invalid UTF-8":   badUTF8,
	} {
		m := rawMsg(b)
		for _, method := range []string{"/cuzk.v1.ProvingEngine/SubmitProof", "/cuzk.v1.ProvingEngine/Prove"} {
			err := conn.Invoke(ctx5(t), method, &m, &cuzkv1.SubmitProofResponse{}, grpc.ForceCodec(rawCodec{}))
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "malformed request message") {
				t.Errorf("%s to %s: %v, want INVALID_ARGUMENT malformed request message", name, method, err)
			}
		}
	}
	if d.run.runs.Load() != 0 {
		t.Errorf("%d malformed requests ran", d.run.runs.Load())
	}
	// The same connection still serves a well-formed request.
	m := rawMsg(good)
	if err := conn.Invoke(ctx5(t), "/cuzk.v1.ProvingEngine/SubmitProof", &m, &cuzkv1.SubmitProofResponse{}, grpc.ForceCodec(rawCodec{})); err != nil {
		t.Fatalf("well-formed request after malformed ones: %v", err)
	}
}

// The finding: a 20 MiB metadata header was UNAVAILABLE with the
// connection dropped, which clients retry forever.
func TestOversizedHeaderIsRefusedWithoutRetryAndKeepsTheConnection(t *testing.T) {
	d := startDaemon(t, nil)
	pc := cuzkv1.NewProvingEngineClient(d.conn(t))
	if _, err := pc.GetStatus(ctx5(t), &cuzkv1.GetStatusRequest{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{MaxHeaderBytes + 1, 20 << 20} {
		ctx := metadata.AppendToOutgoingContext(ctx5(t), "x-big", strings.Repeat("h", n))
		_, err := pc.GetStatus(ctx, &cuzkv1.GetStatusRequest{})
		if c := status.Code(err); c == codes.OK || c == codes.Unavailable {
			t.Errorf("%d-byte header: %v, want a code no retry policy retries by default (not OK or UNAVAILABLE)", n, err)
		} else if !strings.Contains(err.Error(), "header list size") {
			t.Errorf("%d-byte header: %v, want it named as the header list size", n, err)
		}
		if _, err := pc.GetStatus(ctx5(t), &cuzkv1.GetStatusRequest{}); err != nil {
			t.Fatalf("after a %d-byte header the connection no longer serves: %v", n, err)
		}
	}
	ctx := metadata.AppendToOutgoingContext(ctx5(t), "x-fits", strings.Repeat("h", MaxHeaderBytes/2))
	if _, err := pc.GetStatus(ctx, &cuzkv1.GetStatusRequest{}); err != nil {
		t.Errorf("a header of half the limit: %v", err)
	}
}

// The finding: merkle at 100 constraints was accepted at submit and
// failed when it ran.
func TestBuiltinBelowItsSmallestSizeIsRefusedAtSubmit(t *testing.T) {
	d := startDaemon(t, nil)
	pc := cuzkv1.NewProvingEngineClient(d.conn(t))
	for _, tc := range []struct {
		circuit     string
		constraints uint64
		want        string
	}{
		{"merkle", 100, "merkle needs at least"},
		{"mulchain", 0, "must be positive: want 1 to 2^32 = 4294967296"},
		{"mulchain", 1 << 40, "bad constraint count: 1099511627776 (above 2^32 = 4294967296, the largest FFT domain"},
		{"mulchain", 1<<32 + 1, "bad constraint count: 4294967297 (above 2^32 = 4294967296"},
	} {
		_, err := pc.SubmitProof(ctx5(t), &cuzkv1.SubmitProofRequest{
			RequestId: "small-" + tc.circuit, Circuit: tc.circuit, Constraints: tc.constraints})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s at %d: %v, want INVALID_ARGUMENT %q", tc.circuit, tc.constraints, err, tc.want)
		}
		if _, ok := d.eng.JobByRequest("small-" + tc.circuit); ok {
			t.Errorf("%s at %d was queued", tc.circuit, tc.constraints)
		}
	}
	if _, err := pc.SubmitProof(ctx5(t), &cuzkv1.SubmitProofRequest{
		RequestId: "merkle-ok", Circuit: "merkle", Constraints: 1 << 14}); err != nil {
		t.Errorf("merkle at 2^14: %v", err)
	}
}
