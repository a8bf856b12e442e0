// Package cuzkschematest holds the facts of cuzk's published gRPC schema
// (Curio's extern/cuzk/cuzk-proto/proto/cuzk/v1/proving.proto): its
// service, methods, messages with their fields (name, number, type,
// label) and enums with their values, written down here as data, and a
// protoreflect file descriptor built from those facts alone. Tests use it
// twice: prover/api/cuzkv1 checks that our descriptor carries every fact,
// and the server's tests call our daemon through dynamicpb messages of
// this descriptor, as a client generated from cuzk's file would.
// Imported by tests only.
package cuzkschematest

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Package and Service are the proto package and the service's name.
const (
	Package = "cuzk.v1"
	Service = "ProvingEngine"
)

// Method is one RPC: its name and its request and response messages.
type Method struct{ Name, Request, Response string }

// Methods are cuzk's RPCs, in the file's order.
var Methods = []Method{
	{"SubmitProof", "SubmitProofRequest", "SubmitProofResponse"},
	{"AwaitProof", "AwaitProofRequest", "AwaitProofResponse"},
	{"Prove", "ProveRequest", "ProveResponse"},
	{"CancelProof", "CancelProofRequest", "CancelProofResponse"},
	{"GetStatus", "GetStatusRequest", "GetStatusResponse"},
	{"GetMetrics", "GetMetricsRequest", "GetMetricsResponse"},
	{"PreloadSRS", "PreloadSrsRequest", "PreloadSrsResponse"},
	{"EvictSRS", "EvictSrsRequest", "EvictSrsResponse"},
}

// Field is one field of a message. Type is the scalar's proto name
// ("string", "uint64", ...) or, for a message or enum, its name relative
// to the package ("SubmitProofRequest", "AwaitProofResponse.Status").
type Field struct {
	Name     string
	Number   int32
	Type     string
	Repeated bool
}

// Message is one message; a nested message or enum is named
// "Outer.Inner".
type Message struct {
	Name   string
	Fields []Field
}

// EnumValue is one value of an enum.
type EnumValue struct {
	Name   string
	Number int32
}

// Enum is one enum; a nested one is named "Outer.Inner".
type Enum struct {
	Name   string
	Values []EnumValue
}

// Enums are cuzk's enums.
var Enums = []Enum{
	{"ProofKind", []EnumValue{{"PROOF_KIND_UNSPECIFIED", 0}, {"POREP_SEAL_COMMIT", 1}, {"SNAP_DEALS_UPDATE", 2}, {"WINDOW_POST_PARTITION", 3}, {"WINNING_POST", 4}}},
	{"Priority", []EnumValue{{"PRIORITY_UNSPECIFIED", 0}, {"LOW", 1}, {"NORMAL", 2}, {"HIGH", 3}, {"CRITICAL", 4}}},
	{"AwaitProofResponse.Status", []EnumValue{{"UNKNOWN", 0}, {"COMPLETED", 1}, {"FAILED", 2}, {"CANCELLED", 3}, {"TIMEOUT", 4}}},
	{"SRSStatus.Tier", []EnumValue{{"HOT", 0}, {"WARM", 1}, {"COLD", 2}}},
}

// Messages are cuzk's messages with all their fields.
var Messages = []Message{
	{"SubmitProofRequest", []Field{
		{"request_id", 1, "string", false},
		{"proof_kind", 2, "ProofKind", false},
		{"sector_size", 3, "uint64", false},
		{"registered_proof", 4, "uint64", false},
		{"priority", 5, "Priority", false},
		{"vanilla_proof", 10, "bytes", false},
		{"vanilla_proofs", 11, "bytes", true},
		{"sector_number", 20, "uint64", false},
		{"miner_id", 21, "uint64", false},
		{"randomness", 22, "bytes", false},
		{"partition_index", 23, "uint32", false},
		{"comm_r_old", 30, "bytes", false},
		{"comm_r_new", 31, "bytes", false},
		{"comm_d_new", 32, "bytes", false},
	}},
	{"SubmitProofResponse", []Field{
		{"job_id", 1, "string", false},
		{"queue_position", 2, "uint32", false},
		{"assigned_gpu", 3, "string", false},
	}},
	{"AwaitProofRequest", []Field{
		{"job_id", 1, "string", false},
		{"timeout_ms", 2, "uint64", false},
	}},
	{"AwaitProofResponse", []Field{
		{"job_id", 1, "string", false},
		{"status", 2, "AwaitProofResponse.Status", false},
		{"proof", 3, "bytes", false},
		{"error_message", 4, "string", false},
		{"queue_wait_ms", 10, "uint64", false},
		{"srs_load_ms", 11, "uint64", false},
		{"synthesis_ms", 12, "uint64", false},
		{"gpu_compute_ms", 13, "uint64", false},
		{"total_ms", 14, "uint64", false},
	}},
	{"ProveRequest", []Field{{"submit", 1, "SubmitProofRequest", false}}},
	{"ProveResponse", []Field{{"result", 1, "AwaitProofResponse", false}}},
	{"CancelProofRequest", []Field{{"job_id", 1, "string", false}}},
	{"CancelProofResponse", []Field{{"was_running", 1, "bool", false}}},
	{"GetStatusRequest", nil},
	{"GetStatusResponse", []Field{
		{"gpus", 1, "GPUStatus", true},
		{"loaded_srs", 2, "SRSStatus", true},
		{"queues", 3, "QueueStatus", true},
		{"total_proofs_completed", 4, "uint64", false},
		{"total_proofs_failed", 5, "uint64", false},
		{"uptime_seconds", 6, "uint64", false},
		{"pinned_memory_bytes", 7, "uint64", false},
		{"pinned_memory_limit_bytes", 8, "uint64", false},
	}},
	{"GPUStatus", []Field{
		{"ordinal", 1, "uint32", false},
		{"name", 2, "string", false},
		{"vram_total_bytes", 3, "uint64", false},
		{"vram_free_bytes", 4, "uint64", false},
		{"current_job_id", 5, "string", false},
		{"current_proof_kind", 6, "string", false},
	}},
	{"SRSStatus", []Field{
		{"circuit_id", 1, "string", false},
		{"tier", 2, "SRSStatus.Tier", false},
		{"size_bytes", 3, "uint64", false},
		{"ref_count", 4, "uint32", false},
	}},
	{"QueueStatus", []Field{
		{"proof_kind", 1, "string", false},
		{"pending", 2, "uint32", false},
		{"in_progress", 3, "uint32", false},
	}},
	{"PreloadSrsRequest", []Field{{"circuit_id", 1, "string", false}}},
	{"PreloadSrsResponse", []Field{{"already_loaded", 1, "bool", false}, {"load_time_ms", 2, "uint64", false}}},
	{"EvictSrsRequest", []Field{{"circuit_id", 1, "string", false}}},
	{"EvictSrsResponse", []Field{{"was_loaded", 1, "bool", false}, {"freed_bytes", 2, "uint64", false}}},
	{"GetMetricsRequest", nil},
	{"GetMetricsResponse", []Field{{"prometheus_text", 1, "string", false}}},
}

var scalars = map[string]descriptorpb.FieldDescriptorProto_Type{
	"string": descriptorpb.FieldDescriptorProto_TYPE_STRING,
	"bytes":  descriptorpb.FieldDescriptorProto_TYPE_BYTES,
	"bool":   descriptorpb.FieldDescriptorProto_TYPE_BOOL,
	"uint32": descriptorpb.FieldDescriptorProto_TYPE_UINT32,
	"uint64": descriptorpb.FieldDescriptorProto_TYPE_UINT64,
	"int32":  descriptorpb.FieldDescriptorProto_TYPE_INT32,
	"int64":  descriptorpb.FieldDescriptorProto_TYPE_INT64,
	"double": descriptorpb.FieldDescriptorProto_TYPE_DOUBLE,
}

// File builds the file descriptor of cuzk's schema from the facts above
// alone (a file "cuzk_schema_facts.proto" of package cuzk.v1). It panics
// when the facts do not make a valid file, which a test would show first.
func File() protoreflect.FileDescriptor {
	enums := map[string]bool{}
	for _, e := range Enums {
		enums[e.Name] = true
	}
	fp := &descriptorpb.FileDescriptorProto{
		Name:    str("cuzk_schema_facts.proto"),
		Package: str(Package),
		Syntax:  str("proto3"),
	}
	msgs := map[string]*descriptorpb.DescriptorProto{}
	for _, m := range Messages {
		d := &descriptorpb.DescriptorProto{Name: str(m.Name)}
		for _, f := range m.Fields {
			label := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
			if f.Repeated {
				label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED
			}
			fd := &descriptorpb.FieldDescriptorProto{Name: str(f.Name), Number: &f.Number, Label: &label, JsonName: str(jsonName(f.Name))}
			if t, ok := scalars[f.Type]; ok {
				fd.Type = &t
			} else if enums[f.Type] {
				t := descriptorpb.FieldDescriptorProto_TYPE_ENUM
				fd.Type, fd.TypeName = &t, str("."+Package+"."+f.Type)
			} else {
				t := descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
				fd.Type, fd.TypeName = &t, str("."+Package+"."+f.Type)
			}
			d.Field = append(d.Field, fd)
		}
		msgs[m.Name] = d
		fp.MessageType = append(fp.MessageType, d)
	}
	for _, e := range Enums {
		ed := &descriptorpb.EnumDescriptorProto{}
		for _, v := range e.Values {
			ed.Value = append(ed.Value, &descriptorpb.EnumValueDescriptorProto{Name: str(v.Name), Number: &v.Number})
		}
		outer, inner, nested := cut(e.Name)
		if !nested {
			ed.Name = str(e.Name)
			fp.EnumType = append(fp.EnumType, ed)
			continue
		}
		ed.Name = str(inner)
		msgs[outer].EnumType = append(msgs[outer].EnumType, ed)
	}
	sd := &descriptorpb.ServiceDescriptorProto{Name: str(Service)}
	for _, m := range Methods {
		sd.Method = append(sd.Method, &descriptorpb.MethodDescriptorProto{
			Name: str(m.Name), InputType: str("." + Package + "." + m.Request), OutputType: str("." + Package + "." + m.Response),
		})
	}
	fp.Service = append(fp.Service, sd)
	fd, err := protodesc.NewFile(fp, nil)
	if err != nil {
		panic(fmt.Sprintf("cuzkschematest: the facts make no valid file: %v", err))
	}
	return fd
}

func str(s string) *string { return &s }

func cut(name string) (outer, inner string, ok bool) {
	for i := range name {
		if name[i] == '.' {
			return name[:i], name[i+1:], true
		}
	}
	return name, "", false
}

func jsonName(s string) string {
	out := make([]byte, 0, len(s))
	up := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' {
			up = true
			continue
		}
		if up && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		out = append(out, c)
	}
	return string(out)
}
