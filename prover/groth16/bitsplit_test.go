package groth16

import (
	"context"
	"math/big"
	"math/rand"
	"slices"
	"strconv"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
)

// bitScalars returns n scalars of the named shape: all 0, all 1, a mix of
// 0, 1, small and full-width values, or none equal to 0 or 1.
func bitScalars(rng *rand.Rand, shape string, n int) []fr.Element {
	v := make([]fr.Element, n)
	for i := range v {
		switch shape {
		case "zeros":
		case "ones":
			v[i].SetOne()
		case "mixed":
			switch rng.Intn(5) {
			case 0, 1:
			case 2, 3:
				v[i].SetOne()
			default:
				v[i].SetUint64(rng.Uint64() | 2)
			}
		case "none":
			v[i].SetUint64(rng.Uint64() | 2)
			if i%2 == 0 {
				v[i].Neg(&v[i])
			}
		}
	}
	return v
}

func randomBasesG1(rng *rand.Rand, n int) []curve.G1Affine {
	_, _, g, _ := curve.Generators()
	out := make([]curve.G1Affine, n)
	for i := range out {
		out[i].ScalarMultiplication(&g, new(big.Int).SetUint64(rng.Uint64()))
	}
	// Duplicates and a point and its negation among the ones.
	out[1] = out[0]
	out[3].Neg(&out[2])
	return out
}

func randomBasesG2(rng *rand.Rand, n int) []curve.G2Affine {
	_, _, _, g := curve.Generators()
	out := make([]curve.G2Affine, n)
	for i := range out {
		out[i].ScalarMultiplication(&g, new(big.Int).SetUint64(rng.Uint64()))
	}
	out[1] = out[0]
	out[3].Neg(&out[2])
	return out
}

// TestBitSplitMSMEqualsThePlainMSMOnTheCPU checks, on G1 and G2, that the
// split MSM (0 skipped, 1 batch-added, the rest through the backend's
// MSM) of all zeros, all ones, a mix and none of either equals gnark's
// plain MultiExp of the same scalars, and that the split records
// NAME.batch_add and NAME.tail under NAME with the counts.
func TestBitSplitMSMEqualsThePlainMSMOnTheCPU(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	const n = 3*scalarChunk + 5 // several chunks of takeOnes and the batch add
	g1 := randomBasesG1(rng, n)
	g2 := randomBasesG2(rng, n/8)
	for _, shape := range []string{"zeros", "ones", "mixed", "none"} {
		t.Run(shape, func(t *testing.T) {
			tp, exp := spantest.NewMemory()
			p := &proving{cfg: &config{tp: tp, bitSplit: BitSplitOn}, backend: cpu.New(tp)}
			s1 := bitScalars(rng, shape, n)
			var want1 curve.G1Jac
			if _, err := want1.MultiExp(g1, s1, ecc.MultiExpConfig{}); err != nil {
				t.Fatal(err)
			}
			w1 := slices.Clone(s1)
			sp1 := p.split(w1)
			got1, err := splitMSM(p, context.Background(), semconv.SpanMSMG1A, "", backend.BaseSet[curve.G1Affine]{Points: g1}, w1, sp1,
				p.backend.MSMG1, p.batchAdder().BatchAddG1)
			if err != nil {
				t.Fatal(err)
			}
			if !got1.Equal(&want1) {
				t.Errorf("G1: split MSM differs from gnark's MultiExp")
			}

			s2 := bitScalars(rng, shape, len(g2))
			var want2 curve.G2Jac
			if _, err := want2.MultiExp(g2, s2, ecc.MultiExpConfig{}); err != nil {
				t.Fatal(err)
			}
			w2 := slices.Clone(s2)
			sp2 := p.split(w2)
			got2, err := splitMSM(p, context.Background(), semconv.SpanMSMG2B, "", backend.BaseSet[curve.G2Affine]{Points: g2}, w2, sp2,
				p.backend.MSMG2, p.batchAdder().BatchAddG2)
			if err != nil {
				t.Fatal(err)
			}
			if !got2.Equal(&want2) {
				t.Errorf("G2: split MSM differs from gnark's MultiExp")
			}

			tree := spantest.NewTree(exp.GetSpans())
			c := naiveCounts(s1)
			parent := tree.Named(semconv.SpanMSMG1A)
			if len(parent) != 1 {
				t.Fatalf("%d msm.g1.a spans", len(parent))
			}
			batch := tree.Named(semconv.SpanMSMG1A + semconv.SpanSuffixBatchAdd)
			tail := tree.Named(semconv.SpanMSMG1A + semconv.SpanSuffixTail)
			if c.One == 0 {
				// Nothing to batch-add: one plain MSM.
				if len(batch)+len(tail) != 0 {
					t.Errorf("no ones, yet %d batch_add and %d tail spans", len(batch), len(tail))
				}
				return
			}
			if len(batch) != 1 || len(tail) != 1 {
				t.Fatalf("%d batch_add and %d tail spans, want one each", len(batch), len(tail))
			}
			for _, s := range append(batch, tail...) {
				if pp, ok := tree.Parent(s); !ok || pp.Name != semconv.SpanMSMG1A {
					t.Errorf("%s not a child of msm.g1.a", s.Name)
				}
			}
			for key, v := range map[string]int{
				string(semconv.KeyMSMBatchAddPoints): c.One,
				string(semconv.KeyMSMTailPoints):     c.Total - c.Zero - c.One,
				string(semconv.KeyMSMScalarsOne):     c.One,
				string(semconv.KeyMSMSize):           n,
			} {
				if got, _ := spantest.StubValue(parent[0], key); got != strconv.Itoa(v) {
					t.Errorf("msm.g1.a %s = %q, want %d", key, got, v)
				}
			}
			if got, _ := spantest.StubValue(batch[0], string(semconv.KeyMSMSize)); got != strconv.Itoa(c.One) {
				t.Errorf("batch_add cuzk.msm.size = %q, want %d", got, c.One)
			}
		})
	}
}

// TestProveWithTheBitSplitEqualsProveWithout proves porep (mostly bits)
// and rangecheck (bits and a commitment, so K's scalars are a copy) with
// the same r, s split and unsplit on the CPU backend: the proofs are the
// same bytes and verify, and the split one's trace has the batch_add and
// tail children of each wire MSM.
func TestProveWithTheBitSplitEqualsProveWithout(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
	}{{"porep", 1 << 17}, {"rangecheck", 1 << 12}} {
		t.Run(c.name, func(t *testing.T) {
			f := circuitstest.Setup(t, c.name, c.n, 42)
			r, s := fr.NewElement(11), fr.NewElement(13)
			prove := func(b BitSplit) (*groth16_bls12381.Proof, *spantest.Tree) {
				tp, exp := spantest.NewMemory()
				proof, err := Prove(context.Background(), f.CCS, f.PK, f.Witness, WithRandomness(r, s), WithBitSplit(b), WithTracerProvider(tp))
				if err != nil {
					t.Fatal(err)
				}
				if err := groth16.Verify(proof, f.VK, f.Public); err != nil {
					t.Fatalf("bit split %v: gnark rejects the proof: %v", b, err)
				}
				return proof.(*groth16_bls12381.Proof), spantest.NewTree(exp.GetSpans())
			}
			off, offTree := prove(BitSplitOff)
			on, onTree := prove(BitSplitOn)
			if !off.Ar.Equal(&on.Ar) || !off.Bs.Equal(&on.Bs) || !off.Krs.Equal(&on.Krs) {
				t.Fatal("split and unsplit proofs differ")
			}
			for _, name := range []string{semconv.SpanMSMG1A, semconv.SpanMSMG1B, semconv.SpanMSMG1K, semconv.SpanMSMG2B} {
				if n := len(offTree.Named(name + semconv.SpanSuffixBatchAdd)); n != 0 {
					t.Errorf("unsplit: %d %s.batch_add spans", n, name)
				}
				parent := onTree.Named(name)
				if len(parent) != 1 {
					t.Fatalf("split: %d %s spans", len(parent), name)
				}
				want := 1
				if ones, _ := spantest.StubValue(parent[0], string(semconv.KeyMSMScalarsOne)); ones == "0" {
					want = 0 // rangecheck's K: its bits are committed, left out of K
				}
				if name == semconv.SpanMSMG1K && c.name == "porep" && want == 0 {
					t.Error("porep's K has no ones")
				}
				for _, suffix := range []string{semconv.SpanSuffixBatchAdd, semconv.SpanSuffixTail} {
					spans := onTree.Named(name + suffix)
					if len(spans) != want {
						t.Errorf("split: %d %s%s spans, want %d", len(spans), name, suffix, want)
						continue
					}
					if want == 0 {
						continue
					}
					if !onTree.Under(spans[0], semconv.SpanGroth16Prove) {
						t.Errorf("%s%s not under groth16.prove", name, suffix)
					}
				}
			}
		})
	}
}

func TestParseBitSplitRefusesUnknownModes(t *testing.T) {
	for in, want := range map[string]BitSplit{"": BitSplitOff, "auto": BitSplitAuto, "off": BitSplitOff, "on": BitSplitOn} {
		if got, err := ParseBitSplit(in); err != nil || got != want {
			t.Errorf("ParseBitSplit(%q) = %v, %v", in, got, err)
		}
		if in != "" && want.String() != in {
			t.Errorf("%v.String() = %q", want, want.String())
		}
	}
	if _, err := ParseBitSplit("yes"); err == nil {
		t.Error(`"yes" accepted`)
	}
}

func TestBatchAddRefusesAnIndexOutOfRange(t *testing.T) {
	c := cpu.New(nil)
	if _, err := c.BatchAddG1(context.Background(), backend.Call{Span: "x"}, backend.BaseSet[curve.G1Affine]{Points: make([]curve.G1Affine, 2)}, []uint32{0, 2}); err == nil {
		t.Error("index 2 of 2 bases accepted")
	}
}
