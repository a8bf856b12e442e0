package cuzkv1_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/api/cuzkv1/cuzkschematest"
)

// typeName is a field's type as the facts write it.
func typeName(f protoreflect.FieldDescriptor) string {
	switch f.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return strings.TrimPrefix(string(f.Message().FullName()), cuzkschematest.Package+".")
	case protoreflect.EnumKind:
		return strings.TrimPrefix(string(f.Enum().FullName()), cuzkschematest.Package+".")
	}
	return f.Kind().String()
}

// TestDescriptorCarriesCuzkSchema fails when our cuzk.v1 drifts from
// cuzk's: a message, field (name, number, type, label), enum value or
// method of cuzk's schema missing or different in ours.
func TestDescriptorCarriesCuzkSchema(t *testing.T) {
	fd := cuzkv1.File_cuzk_v1_engine_proto
	if got := string(fd.Package()); got != cuzkschematest.Package {
		t.Fatalf("package %q, cuzk's is %q", got, cuzkschematest.Package)
	}
	for _, m := range cuzkschematest.Messages {
		d, err := findMessage(fd, m.Name)
		if err != "" {
			t.Errorf("%s", err)
			continue
		}
		for _, f := range m.Fields {
			got := d.Fields().ByNumber(protoreflect.FieldNumber(f.Number))
			if got == nil {
				t.Errorf("%s: no field %d (cuzk's %s)", m.Name, f.Number, f.Name)
				continue
			}
			if string(got.Name()) != f.Name {
				t.Errorf("%s field %d: named %s, cuzk's is %s", m.Name, f.Number, got.Name(), f.Name)
			}
			if typeName(got) != f.Type {
				t.Errorf("%s.%s: type %s, cuzk's is %s", m.Name, f.Name, typeName(got), f.Type)
			}
			if got.IsList() != f.Repeated {
				t.Errorf("%s.%s: repeated %v, cuzk's %v", m.Name, f.Name, got.IsList(), f.Repeated)
			}
			if got.HasPresence() && got.Kind() != protoreflect.MessageKind {
				t.Errorf("%s.%s: explicit presence (optional), cuzk's is proto3 implicit", m.Name, f.Name)
			}
		}
		// Our own fields stay clear of cuzk's range so a future cuzk
		// field cannot land on one.
		for i := 0; i < d.Fields().Len(); i++ {
			f := d.Fields().Get(i)
			if f.Number() < 100 && !hasNumber(m, int32(f.Number())) {
				t.Errorf("%s.%s: our field numbered %d, below 100 (cuzk's range)", m.Name, f.Name(), f.Number())
			}
		}
	}
	for _, e := range cuzkschematest.Enums {
		ed := findEnum(fd, e.Name)
		if ed == nil {
			t.Errorf("no enum %s", e.Name)
			continue
		}
		for _, v := range e.Values {
			got := ed.Values().ByNumber(protoreflect.EnumNumber(v.Number))
			if got == nil || string(got.Name()) != v.Name {
				t.Errorf("enum %s: value %d is %v, cuzk's is %s", e.Name, v.Number, got, v.Name)
			}
		}
	}
	sd := fd.Services().ByName(cuzkschematest.Service)
	if sd == nil {
		t.Fatalf("no service %s", cuzkschematest.Service)
	}
	for _, m := range cuzkschematest.Methods {
		md := sd.Methods().ByName(protoreflect.Name(m.Name))
		if md == nil {
			t.Errorf("no method %s", m.Name)
			continue
		}
		if got := typeName2(md.Input()); got != m.Request {
			t.Errorf("%s takes %s, cuzk's takes %s", m.Name, got, m.Request)
		}
		if got := typeName2(md.Output()); got != m.Response {
			t.Errorf("%s returns %s, cuzk's returns %s", m.Name, got, m.Response)
		}
		if md.IsStreamingClient() || md.IsStreamingServer() {
			t.Errorf("%s streams; cuzk's is unary", m.Name)
		}
	}
}

// TestFactsMakeAFile checks the facts themselves: they build a valid
// descriptor with every message, enum and method.
func TestFactsMakeAFile(t *testing.T) {
	fd := cuzkschematest.File()
	if n := fd.Services().ByName(cuzkschematest.Service).Methods().Len(); n != len(cuzkschematest.Methods) {
		t.Fatalf("%d methods, want %d", n, len(cuzkschematest.Methods))
	}
	for _, m := range cuzkschematest.Messages {
		if _, err := findMessage(fd, m.Name); err != "" {
			t.Error(err)
		}
	}
}

func typeName2(m protoreflect.MessageDescriptor) string {
	return strings.TrimPrefix(string(m.FullName()), cuzkschematest.Package+".")
}

func hasNumber(m cuzkschematest.Message, n int32) bool {
	for _, f := range m.Fields {
		if f.Number == n {
			return true
		}
	}
	return false
}

func findMessage(fd protoreflect.FileDescriptor, name string) (protoreflect.MessageDescriptor, string) {
	outer, inner, nested := strings.Cut(name, ".")
	d := fd.Messages().ByName(protoreflect.Name(outer))
	if d == nil {
		return nil, "no message " + name
	}
	if nested {
		d = d.Messages().ByName(protoreflect.Name(inner))
		if d == nil {
			return nil, "no message " + name
		}
	}
	return d, ""
}

func findEnum(fd protoreflect.FileDescriptor, name string) protoreflect.EnumDescriptor {
	outer, inner, nested := strings.Cut(name, ".")
	if !nested {
		return fd.Enums().ByName(protoreflect.Name(outer))
	}
	m := fd.Messages().ByName(protoreflect.Name(outer))
	if m == nil {
		return nil
	}
	return m.Enums().ByName(protoreflect.Name(inner))
}
