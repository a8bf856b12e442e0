package groth16

import (
	"context"
	"fmt"
	"math/big"
	"math/rand"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	cs "github.com/consensys/gnark/constraint/bls12-381"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
)

// naiveCounts classifies each scalar by its integer value.
func naiveCounts(scalars []fr.Element) ScalarCounts {
	c := ScalarCounts{Total: len(scalars)}
	var v big.Int
	for i := range scalars {
		scalars[i].BigInt(&v)
		switch {
		case v.Sign() == 0:
			c.Zero++
		case v.Cmp(big.NewInt(1)) == 0:
			c.One++
		case v.IsUint64():
			c.Small++
		}
	}
	return c
}

func TestCountScalarsClassifiesEdgesAndMatchesNaiveInParallel(t *testing.T) {
	var minus1, two64, max64 fr.Element
	minus1.SetOne().Neg(&minus1)
	two64.SetString("18446744073709551616")
	max64.SetUint64(^uint64(0))
	edges := []fr.Element{{}, fr.One(), fr.NewElement(2), max64, two64, minus1, fr.NewElement(0), fr.One()}
	if got, want := CountScalars(edges), (ScalarCounts{Total: 8, Zero: 2, One: 2, Small: 2}); got != want {
		t.Errorf("edges: %+v, want %+v", got, want)
	}
	if got := CountScalars(nil); got != (ScalarCounts{}) {
		t.Errorf("empty: %+v", got)
	}
	// Several chunks, mixed as a bit-heavy witness.
	rng := rand.New(rand.NewSource(5))
	v := make([]fr.Element, 5*scalarChunk+17)
	for i := range v {
		switch rng.Intn(4) {
		case 0:
		case 1:
			v[i].SetOne()
		case 2:
			v[i].SetUint64(rng.Uint64())
		default:
			v[i].SetRandom()
		}
	}
	got, want := CountScalars(v), naiveCounts(v)
	if got != want {
		t.Errorf("mixed %d: %+v, want %+v", len(v), got, want)
	}
	if want.Zero == 0 || want.One == 0 || want.Small == 0 || want.Zero+want.One+want.Small == want.Total {
		t.Fatalf("test vector lacks a kind: %+v", want)
	}
}

// TestMSMSpansCarryScalarCounts proves mulchain and porep on the CPU
// backend and checks each of msm.g1.a, msm.g1.b, msm.g1.k and msm.g2.b
// carries the counts of its own scalars, recomputed here from gnark's own
// solution of the circuit and the key's infinity masks; porep's proof
// also verifies and its K scalars are mostly 0 and 1.
func TestMSMSpansCarryScalarCounts(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
	}{{"mulchain", 1 << 10}, {"porep", 1 << 17}} {
		t.Run(c.name, func(t *testing.T) {
			f := circuitstest.Setup(t, c.name, c.n, 42)
			tp, exp := spantest.NewMemory()
			proof, err := Prove(context.Background(), f.CCS, f.PK, f.Witness, WithTracerProvider(tp))
			if err != nil {
				t.Fatal(err)
			}
			wires := verifiedWires(t, f, proof)
			pk := f.PK.(*groth16_bls12381.ProvingKey)
			finite := func(inf []bool) []fr.Element {
				var out []fr.Element
				for i := range wires {
					if !inf[i] {
						out = append(out, wires[i])
					}
				}
				return out
			}
			nbPublic := f.CCS.GetNbPublicVariables()
			want := map[string]ScalarCounts{
				semconv.SpanMSMG1A: naiveCounts(finite(pk.InfinityA)),
				semconv.SpanMSMG1B: naiveCounts(finite(pk.InfinityB)),
				semconv.SpanMSMG1K: naiveCounts(wires[nbPublic:]),
				semconv.SpanMSMG2B: naiveCounts(finite(pk.InfinityB)),
			}
			tree := spantest.NewTree(exp.GetSpans())
			for name, w := range want {
				spans := tree.Named(name)
				if len(spans) != 1 {
					t.Fatalf("%d %s spans", len(spans), name)
				}
				for key, v := range map[string]int{
					string(semconv.KeyMSMSize):         w.Total,
					string(semconv.KeyMSMScalarsZero):  w.Zero,
					string(semconv.KeyMSMScalarsOne):   w.One,
					string(semconv.KeyMSMScalarsSmall): w.Small,
				} {
					if got, ok := spantest.StubValue(spans[0], key); !ok || got != strconv.Itoa(v) {
						t.Errorf("%s: %s = %q (present %v), want %d", name, key, got, ok, v)
					}
				}
			}
			// msm.g1.h's scalars are H's coefficients: no counts there.
			if _, ok := spantest.StubValue(tree.Named(semconv.SpanMSMG1H)[0], string(semconv.KeyMSMScalarsZero)); ok {
				t.Error("msm.g1.h carries scalar counts")
			}
			k := want[semconv.SpanMSMG1K]
			share := float64(k.Zero+k.One) / float64(k.Total)
			t.Logf("%s: msm.g1.k %+v, %.1f%% 0 or 1", c.name, k, 100*share)
			if c.name == "porep" && share < 0.8 {
				t.Errorf("porep: %.1f%% of the K scalars are 0 or 1, want ≥ 80%%", 100*share)
			}
			if c.name == "mulchain" && share > 0.01 {
				t.Errorf("mulchain: %.1f%% of the K scalars are 0 or 1, want full-width ones", 100*share)
			}
		})
	}
}

// BenchmarkCountScalars: full-width scalars (every one leaves Montgomery
// form, the worst case) and bits.
func BenchmarkCountScalars(b *testing.B) {
	const n = 1 << 20
	full, bits := make([]fr.Element, n), make([]fr.Element, n)
	for i := range full {
		full[i].SetRandom()
		if i%2 == 1 {
			bits[i].SetOne()
		}
	}
	for _, c := range []struct {
		name string
		v    []fr.Element
	}{{"full", full}, {"bits", bits}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.v)) * fr.Bytes)
			for b.Loop() {
				CountScalars(c.v)
			}
		})
	}
}

// verifiedWires checks that gnark verifies proof and returns gnark's own
// solution of f's circuit (the wire values).
func verifiedWires(t *testing.T, f *circuitstest.Fixture, proof groth16.Proof) []fr.Element {
	t.Helper()
	if err := groth16.Verify(proof, f.VK, f.Public); err != nil {
		t.Fatalf("gnark rejects the proof: %v", err)
	}
	sol, err := f.CCS.Solve(f.Witness)
	if err != nil {
		t.Fatal(err)
	}
	return sol.(*cs.R1CSSolution).W
}

// msmWatcher is the CPU backend reporting each MSM's call as it starts.
type msmWatcher struct {
	*cpu.Backend
	calls chan backend.Call
}

func (w *msmWatcher) MSMG1(ctx context.Context, call backend.Call, bases backend.BaseSet[curve.G1Affine], scalars []fr.Element) (curve.G1Jac, error) {
	w.calls <- call
	return w.Backend.MSMG1(ctx, call, bases, scalars)
}

func (w *msmWatcher) MSMG2(ctx context.Context, call backend.Call, bases backend.BaseSet[curve.G2Affine], scalars []fr.Element) (curve.G2Jac, error) {
	w.calls <- call
	return w.Backend.MSMG2(ctx, call, bases, scalars)
}

// TestWireMSMsStartBeforeTheSmallCount holds the count of the scalars in
// [2, 2^64) until the four wire MSMs have started: they start (with the
// zero and one counts, and no small count, among their attributes), the
// count then ends, each span still carries the right
// cuzk.msm.scalars.small, Prove returns only after every count it
// started, and the proof verifies. Before, the count ran on the device's
// path (the MSMs never started while it was held: the test timed out).
func TestWireMSMsStartBeforeTheSmallCount(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 42)
	release := make(chan struct{})
	var started, finished atomic.Int32
	orig := countSmallFn
	countSmallFn = func(v []fr.Element) int {
		started.Add(1)
		<-release
		defer finished.Add(1)
		return orig(v)
	}
	t.Cleanup(func() { countSmallFn = orig })

	tp, exp := spantest.NewMemory()
	w := &msmWatcher{Backend: cpu.New(tp), calls: make(chan backend.Call, 16)}
	wire := map[string]bool{semconv.SpanMSMG1A: true, semconv.SpanMSMG1B: true, semconv.SpanMSMG1K: true, semconv.SpanMSMG2B: true}
	watched := make(chan error, 1)
	go func() {
		defer close(release)
		seen := map[string]bool{}
		timeout := time.After(60 * time.Second)
		for len(seen) < len(wire) {
			select {
			case c := <-w.calls:
				if !wire[c.Span] {
					continue
				}
				seen[c.Span] = true
				for _, kv := range c.Attributes {
					if kv.Key == semconv.KeyMSMScalarsSmall {
						watched <- fmt.Errorf("%s started with %s = %v: counted before the MSM", c.Span, kv.Key, kv.Value.AsInt64())
						return
					}
				}
				if c.Late == nil {
					watched <- fmt.Errorf("%s started without a Late count", c.Span)
					return
				}
			case <-timeout:
				watched <- fmt.Errorf("after 60 s only %v of the wire MSMs started while the small count was held", seen)
				return
			}
		}
		watched <- nil
	}()
	proof, err := Prove(context.Background(), f.CCS, f.PK, f.Witness, WithBackend(w), WithTracerProvider(tp))
	if werr := <-watched; werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if s, e := started.Load(), finished.Load(); s != 3 || e != 3 {
		t.Fatalf("Prove returned with %d of %d small counts finished (want 3 of 3: A, B, K)", e, s)
	}
	wires := verifiedWires(t, f, proof)
	want := naiveCounts(wires[f.CCS.GetNbPublicVariables():]).Small
	tree := spantest.NewTree(exp.GetSpans())
	if got, ok := spantest.StubValue(tree.Named(semconv.SpanMSMG1K)[0], string(semconv.KeyMSMScalarsSmall)); !ok || got != strconv.Itoa(want) {
		t.Errorf("msm.g1.k: %s = %q (present %v), want %d", semconv.KeyMSMScalarsSmall, got, ok, want)
	}
}

// TestCountZeroOneAndSmallSplitCountScalars: the two partial counts the
// prove uses add up to CountScalars on edges and on a large mixed vector
// (several goroutines).
func TestCountZeroOneAndSmallSplitCountScalars(t *testing.T) {
	var edges []fr.Element
	var x fr.Element
	edges = append(edges, fr.Element{}, fr.One(), *x.SetUint64(2), *x.SetUint64(^uint64(0)), *x.SetInt64(-1), *x.SetUint64(1))
	v := make([]fr.Element, 5*scalarChunk+7)
	for i := range v {
		switch i % 4 {
		case 0:
			v[i].SetUint64(uint64(i))
		case 1:
			v[i].SetOne()
		case 2:
			v[i].SetRandom()
		}
	}
	for _, s := range [][]fr.Element{nil, edges, v} {
		want := CountScalars(s)
		got := countZeroOne(s)
		got.Small = countSmall(s)
		if got != want {
			t.Errorf("%d scalars: countZeroOne+countSmall %+v, CountScalars %+v", len(s), got, want)
		}
	}
}
