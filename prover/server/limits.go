package server

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// MaxStringBytes is the longest value, in bytes, the daemon accepts in a
// string field of a request, by the field's proto name (the same limit in
// every message that has the field). A request with a longer value is
// refused with INVALID_ARGUMENT naming the field and its limit before it
// reaches the engine: nothing of it is kept with a job or put in a span.
// A string field not listed here is bounded by DefaultMaxStringBytes.
//
// The limits are wide for the values callers send (a request id is a
// UUID or a task key, a miner "f0" and a number, a circuit or task
// name a short word) and small beside an OTLP export batch: a job's
// spans carry request_id, miner and task_name, so one job can add at
// most about 1.3 KiB of them.
var MaxStringBytes = map[protoreflect.Name]int{
	"request_id":   256,
	"job_id":       256,
	"circuit":      256,
	"circuit_name": 256,
	"miner":        256,
	"task_name":    256,
	"proof_kind":   64,
	"key_id":       256,
	"service":      256, // grpc.health.v1.HealthCheckRequest
}

// DefaultMaxStringBytes bounds a request's string field that
// MaxStringBytes does not list.
const DefaultMaxStringBytes = 4096

// stringLimit is the limit of field f.
func stringLimit(f protoreflect.FieldDescriptor) int {
	if n, ok := MaxStringBytes[f.Name()]; ok {
		return n
	}
	return DefaultMaxStringBytes
}

// CheckStringLimits walks m (every set field, nested messages, lists and
// maps) and returns an INVALID_ARGUMENT status error for the first string
// value (or string map key) longer than its limit (MaxStringBytes), naming
// the field by its path from m ("submit.task_name") and the limit; nil
// when every string fits. It reads any message type, so it holds for
// fields added to the API later.
func CheckStringLimits(m proto.Message) error {
	if m == nil {
		return nil
	}
	return checkMessage(m.ProtoReflect(), "")
}

func checkMessage(m protoreflect.Message, path string) error {
	var err error
	m.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := string(f.Name())
		if path != "" {
			p = path + "." + p
		}
		switch {
		case f.IsList():
			l := v.List()
			for i := 0; i < l.Len() && err == nil; i++ {
				err = checkValue(f, l.Get(i), fmt.Sprintf("%s[%d]", p, i))
			}
		case f.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if f.MapKey().Kind() == protoreflect.StringKind {
					err = checkString(f.MapKey(), k.String(), p+" key")
				}
				if err == nil {
					err = checkValue(f.MapValue(), mv, p+"["+clip(k.String())+"]")
				}
				return err == nil
			})
		default:
			err = checkValue(f, v, p)
		}
		return err == nil
	})
	return err
}

func checkValue(f protoreflect.FieldDescriptor, v protoreflect.Value, path string) error {
	switch f.Kind() {
	case protoreflect.StringKind:
		return checkString(f, v.String(), path)
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return checkMessage(v.Message(), path)
	}
	return nil
}

func checkString(f protoreflect.FieldDescriptor, s, path string) error {
	if n := stringLimit(f); len(s) > n {
		return status.Errorf(codes.InvalidArgument, "%s is %d bytes, at most %d", path, len(s), n)
	}
	return nil
}

// clip keeps a map key short enough to name in an error.
func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

// limitUnary refuses a request whose strings are over their limits before
// the handler (and the token check) sees it.
func limitUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if m, ok := req.(proto.Message); ok {
		if err := CheckStringLimits(m); err != nil {
			return nil, err
		}
	}
	return h(ctx, req)
}

// limitStream applies CheckStringLimits to every message a stream receives.
func limitStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, limitedStream{ss})
}

type limitedStream struct{ grpc.ServerStream }

func (s limitedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if pm, ok := m.(proto.Message); ok {
		return CheckStringLimits(pm)
	}
	return nil
}
