// Package gputest holds the helpers the GPU tests of prover/gpu and its
// packages share: vectors, their comparison, compute_h
// inputs with the CPU's result, base sets, the nesting check of the NTT's
// kernel spans, and the check of Go mirrors of kernel constants. For
// tests only.
package gputest

import (
	"context"
	"regexp"
	"strconv"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
)

// ComputeHCase returns a compute_h input of n elements (a power of two):
// its domain, random vectors a, b and c, and want, the CPU backend's H
// (gnark's computeH) from them. a, b and c are not modified.
func ComputeHCase(t testing.TB, n int) (d *fft.Domain, a, b, c, want []fr.Element) {
	t.Helper()
	d = fft.NewDomain(uint64(n))
	a, b, c = RandomVector(n), RandomVector(n), RandomVector(n)
	want = append([]fr.Element(nil), a...)
	if err := cpu.New(nil).ComputeH(context.Background(), "", d, want, append([]fr.Element(nil), b...), append([]fr.Element(nil), c...)); err != nil {
		t.Fatal(err)
	}
	return d, a, b, c, want
}

// BaseSet is a G1 base set of n distinct points, Points(n).
func BaseSet(id string, n int) backend.BaseSet[curve.G1Affine] {
	return backend.BaseSet[curve.G1Affine]{ID: id, Points: Points(n)}
}

// Points is n distinct G1 points, the first n multiples of the generator
// (for the fake device, which never does arithmetic, any bytes do).
func Points(n int) []curve.G1Affine {
	_, _, g, _ := curve.Generators()
	pts := make([]curve.G1Affine, n)
	var acc curve.G1Affine
	for i := range pts {
		acc.Add(&acc, &g)
		pts[i] = acc
	}
	return pts
}

// RandomVector returns n random field elements (crypto/rand, through
// gnark-crypto).
func RandomVector(n int) []fr.Element {
	v := make([]fr.Element, n)
	for i := range v {
		v[i].MustSetRandom()
	}
	return v
}

// SameVectors fails t at the first element where got differs from want.
func SameVectors(t testing.TB, name string, got, want []fr.Element) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: element %d: got %s, want %s", name, i, got[i].String(), want[i].String())
		}
	}
}

// CheckKernelSpansNested checks that every ntt_pass and groth16_pointwise
// span under an NTT step span (ntt.inverse, ntt.coset, groth16.pointwise,
// ntt.inverse_coset) lies inside it, and that there is at least one.
func CheckKernelSpansNested(t *testing.T, rec *tracetest.SpanRecorder) {
	t.Helper()
	spans := rec.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, sp := range spans {
		byID[sp.SpanContext().SpanID()] = sp
	}
	steps := map[string]bool{semconv.SpanNTTInverse: true, semconv.SpanNTTCoset: true,
		semconv.SpanPointwise: true, semconv.SpanNTTInverseCoset: true}
	kernels := 0
	for _, sp := range spans {
		if sp.Name() != "ntt_pass" && sp.Name() != "groth16_pointwise" {
			continue
		}
		parent, ok := byID[sp.Parent().SpanID()]
		if !ok {
			continue // launched outside compute_h (table builds, Transform calls)
		}
		if !steps[parent.Name()] {
			continue
		}
		kernels++
		if sp.StartTime().Before(parent.StartTime()) || sp.EndTime().After(parent.EndTime()) {
			t.Errorf("kernel span %s [%v, %v] outside its parent %s [%v, %v]", sp.Name(),
				sp.StartTime(), sp.EndTime(), parent.Name(), parent.StartTime(), parent.EndTime())
		}
	}
	if kernels == 0 {
		t.Fatal("no kernel span under a compute_h step span")
	}
}

// HeaderInt returns the integer value of a #define, a "NAME = v," enum
// entry or a "static const unsigned NAME = v;" in a kernel source (decimal
// or hex, with an optional u suffix); it fails the test when absent.
func HeaderInt(t testing.TB, src, name string) int {
	t.Helper()
	for _, pat := range []string{
		`(?m)^#define\s+` + name + `\s+(0x[0-9a-fA-F]+|\d+)u?\b`,
		`(?m)^\s*` + name + `\s*=\s*(0x[0-9a-fA-F]+|\d+)u?\s*[,;]`,
		`(?m)static\s+const\s+unsigned\s+` + name + `\s*=\s*(0x[0-9a-fA-F]+|\d+)u?\s*;`,
	} {
		if m := regexp.MustCompile(pat).FindStringSubmatch(src); m != nil {
			v, err := strconv.ParseInt(m[1], 0, 64)
			if err != nil {
				t.Fatalf("%s = %q: %v", name, m[1], err)
			}
			return int(v)
		}
	}
	t.Fatalf("%s not found in the kernel source", name)
	return 0
}

// Mirror is a constant of a kernel source, Name, that Go code repeats as
// Go.
type Mirror struct {
	Name string
	Go   int
}

// CheckMirrors fails t for every mirror whose value in the kernel source
// src (file, for the messages; read with HeaderInt) is not its Go value.
func CheckMirrors(t testing.TB, file, src string, mirrors ...Mirror) {
	t.Helper()
	for _, m := range mirrors {
		if v := HeaderInt(t, src, m.Name); v != m.Go {
			t.Errorf("%s is %d in %s, %d on the Go side", m.Name, v, file, m.Go)
		}
	}
}
