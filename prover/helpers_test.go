package prover

import (
	"testing"

	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
)

// The test helpers prover/groth16's tests have too (a fixture, the span
// recorder and its look-ups), for this package's Prover tests.

// fixture is a compiled built-in circuit with its keys and a witness.
type fixture struct {
	ccs constraint.ConstraintSystem
	pk  groth16.ProvingKey
	vk  groth16.VerifyingKey
	in  *circuits.Instance
	w   witness.Witness
}

// newFixture is circuitstest's fixture of a built-in circuit (seed 42).
func newFixture(t testing.TB, name string, n int) *fixture {
	t.Helper()
	f := circuitstest.Setup(t, name, n, 42)
	return &fixture{ccs: f.CCS, pk: f.PK, vk: f.VK, in: f.Instance, w: f.Witness}
}

func (f *fixture) public(t testing.TB) witness.Witness {
	t.Helper()
	pub, err := f.w.Public()
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// spanTree indexes recorded spans by id for parent checks.
type spanTree struct {
	spans tracetest.SpanStubs
	byID  map[string]tracetest.SpanStub
}

func newSpanTree(spans tracetest.SpanStubs) *spanTree {
	t := &spanTree{spans: spans, byID: map[string]tracetest.SpanStub{}}
	for _, s := range spans {
		t.byID[s.SpanContext.SpanID().String()] = s
	}
	return t
}

func (t *spanTree) named(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range t.spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func (t *spanTree) parent(s tracetest.SpanStub) (tracetest.SpanStub, bool) {
	p, ok := t.byID[s.Parent.SpanID().String()]
	return p, ok
}

// under reports whether s has an ancestor named name.
func (t *spanTree) under(s tracetest.SpanStub, name string) bool {
	for p, ok := t.parent(s); ok; p, ok = t.parent(p) {
		if p.Name == name {
			return true
		}
	}
	return false
}

func newRecorder() (*tracetest.InMemoryExporter, *sdktrace.TracerProvider) {
	exp := tracetest.NewInMemoryExporter()
	return exp, sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
}

func attr(s tracetest.SpanStub, key string) (string, bool) {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.Emit(), true
		}
	}
	return "", false
}
