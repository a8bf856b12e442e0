package gpu

import (
	"context"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
)

// copiesUnder counts the cuda.memcpy.htod and cuda.memcpy.dtod spans below
// every span named parent among the spans recorded since from.
func copiesUnder(rec *tracetest.SpanRecorder, from int, parent string) (htod, dtod, parents int) {
	ended := rec.Ended()[from:]
	byID := map[[8]byte]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		byID[s.SpanContext().SpanID()] = s
	}
	under := func(s sdktrace.ReadOnlySpan) bool {
		for p := byID[s.Parent().SpanID()]; p != nil; p = byID[p.Parent().SpanID()] {
			if p.Name() == parent {
				return true
			}
		}
		return false
	}
	for _, s := range ended {
		switch {
		case s.Name() == parent:
			parents++
		case s.Name() == semconv.SpanMemcpyHtoD && under(s):
			htod++
		case s.Name() == semconv.SpanMemcpyDtoD && under(s):
			dtod++
		}
	}
	return htod, dtod, parents
}

// A warm proof's H MSM reads H where ComputeH left it on the device: below
// msm.g1.h a device-to-device copy and no copy from the host (the bases are
// resident, the scalars are H), while msm.g1.a still copies its scalars
// from the host; and the buffer goes back to the key after the MSM, so a
// third proof allocates nothing either.
func TestTheHMSMReadsHWhereComputeHLeftIt(t *testing.T) {
	b, _, rec := fakeProvingBackend(t, nil)
	f := circuitstest.Setup(t, "mulchain", 1<<9, 7)
	proveOnFake(t, b, rec, f, "k") // uploads the bases
	from := len(rec.Ended())
	proveOnFake(t, b, rec, f, "k")
	htod, dtod, n := copiesUnder(rec, from, semconv.SpanMSMG1H)
	if n != 1 || htod != 0 || dtod == 0 {
		t.Errorf("warm proof: %d msm.g1.h spans with %d host-to-device and %d device-to-device copies below, want 1 with 0 and at least 1", n, htod, dtod)
	}
	if htodA, _, _ := copiesUnder(rec, from, semconv.SpanMSMG1A); htodA == 0 {
		t.Error("msm.g1.a copied nothing from the host: the test cannot tell the two paths apart")
	}
	if again := proveOnFake(t, b, rec, f, "k"); len(again) != 0 {
		t.Errorf("the proof after: %d cuda.malloc spans inside groth16.prove, want none (compute_h.a must be back with its key)", len(again))
	}
}

// Only scalars that are the kept H of the same key are read on the device:
// another vector, another key or a call without FromComputeH copies from
// the host, and a later ComputeH replaces what was kept.
func TestOnlyTheKeptHOfTheSameKeyIsReadOnTheDevice(t *testing.T) {
	b, _, rec := fakeProvingBackend(t, nil)
	f := circuitstest.Setup(t, "mulchain", 1<<9, 7)
	proveOnFake(t, b, rec, f, "k") // sizes the key's buffers, uploads the bases
	pk := f.PK.(*groth16_bls12381.ProvingKey)
	ctx := context.Background()
	n := int(pk.Domain.Cardinality)
	vec := func() []fr.Element {
		v := make([]fr.Element, n)
		for i := range v {
			v[i].SetUint64(uint64(i + 1))
		}
		return v
	}
	a, bv, c := vec(), vec(), vec()
	other := vec()
	bases := backend.BaseSet[curve.G1Affine]{ID: "k:g1.z", Points: pk.G1.Z}
	h := len(pk.G1.Z)
	msmH := func(name, key string, fromH bool, scalars []fr.Element) (htod, dtod int) {
		t.Helper()
		from := len(rec.Ended())
		if _, err := b.MSMG1(ctx, backend.Call{Span: name, KeyID: key, FromComputeH: fromH}, bases, scalars); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		htod, dtod, _ = copiesUnder(rec, from, name)
		return htod, dtod
	}
	computeH := func() {
		t.Helper()
		if err := b.ComputeH(ctx, "k", &pk.Domain, a, bv, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		key     string
		fromH   bool
		scalars []fr.Element
		device  bool
	}{
		{"another vector", "k", true, other[:h], false},
		{"another key", "k2", true, a[:h], false},
		{"without FromComputeH", "k", false, a[:h], false},
		{"the kept H", "k", true, a[:h], true},
	} {
		computeH()
		htod, dtod := msmH("msm.test", tc.key, tc.fromH, tc.scalars)
		if got := dtod > 0 && htod == 0; got != tc.device {
			t.Errorf("%s: %d host-to-device and %d device-to-device copies, want the scalars read on the device: %v", tc.name, htod, dtod, tc.device)
		}
	}
	// Read once: the same call again copies from the host.
	if htod, _ := msmH("msm.test", "k", true, a[:h]); htod == 0 {
		t.Error("a second MSM over the kept H read it on the device again: the loan must end with the first")
	}
}
