package setup_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/scs"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/commitmenttest"
	"github.com/otelcuzk/otelcuzk/prover/setup"
	"github.com/otelcuzk/otelcuzk/prover/setup/setuptest"
)

// fixture is a circuit of the tests with gnark's own keys and a witness.
type fixture struct {
	name        string
	ccs         constraint.ConstraintSystem
	gnarkPK     groth16.ProvingKey
	gnarkVK     groth16.VerifyingKey
	full, pub   witness.Witness
	commitments int
}

// fixtures: the built-in circuits at 2^10 constraints and the commitment
// circuits (one, two and three api.Commit, public-only, overlapping).
func fixtures(t *testing.T) []fixture {
	t.Helper()
	var fs []fixture
	for _, name := range []string{"merkle", "mulchain"} {
		f := circuitstest.Setup(t, name, 1<<11, 3)
		fs = append(fs, fixture{name: name, ccs: f.CCS, gnarkPK: f.PK, gnarkVK: f.VK, full: f.Witness, pub: f.Public})
	}
	for _, name := range commitmenttest.Names {
		f := commitmenttest.Setup(t, name)
		fs = append(fs, fixture{name: name, ccs: f.CCS, gnarkPK: f.PK, gnarkVK: f.VK, full: f.Witness, pub: f.Public, commitments: f.Commitments})
	}
	return fs
}

func mustSetup(t *testing.T, ccs constraint.ConstraintSystem, opts ...setup.Option) (*groth16_bls12381.ProvingKey, *groth16_bls12381.VerifyingKey) {
	t.Helper()
	pk, vk, err := setup.Setup(context.Background(), ccs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return pk, vk
}

func TestSetupIsByteIdenticalToTheReferenceOfGnarksAlgorithm(t *testing.T) {
	for i, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			tw := setuptest.ToxicWaste(uint64(100+i), f.commitments)
			rpk, rvk, err := setup.Reference(f.ccs, tw)
			if err != nil {
				t.Fatal(err)
			}
			pk, vk := mustSetup(t, f.ccs, setup.WithToxicWaste(tw))
			want, got := setuptest.KeyBytes(t, rpk, rvk), setuptest.KeyBytes(t, pk, vk)
			if d := setuptest.FirstDifference(want, got); d != -1 {
				t.Fatalf("keys differ from the reference at byte %d of %d (%d)", d, len(want), len(got))
			}
		})
	}
}

func TestReferenceIsTheSameAcrossRunsAndChangesWithTheSecrets(t *testing.T) {
	f := commitmenttest.Setup(t, "multicommit")
	tw := setuptest.ToxicWaste(7, f.Commitments)
	a, av, err := setup.Reference(f.CCS, tw)
	if err != nil {
		t.Fatal(err)
	}
	b, bv, err := setup.Reference(f.CCS, tw)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(setuptest.KeyBytes(t, a, av), setuptest.KeyBytes(t, b, bv)) {
		t.Fatal("two references with the same secrets differ")
	}
	c, cv, err := setup.Reference(f.CCS, setuptest.ToxicWaste(8, f.Commitments))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(setuptest.KeyBytes(t, a, av), setuptest.KeyBytes(t, c, cv)) {
		t.Fatal("other secrets gave the same keys")
	}
}

// The layout gnark's prover and verifier rely on, against gnark's own
// setup of the same circuit: which points are at infinity, every vector's
// length, the domain, the commitment keys and their wires.
func TestKeysHaveGnarksLayout(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			g := f.gnarkPK.(*groth16_bls12381.ProvingKey)
			pk, vk := mustSetup(t, f.ccs)
			if !slices.Equal(pk.InfinityA, g.InfinityA) || !slices.Equal(pk.InfinityB, g.InfinityB) ||
				pk.NbInfinityA != g.NbInfinityA || pk.NbInfinityB != g.NbInfinityB {
				t.Errorf("infinity masks differ from gnark's (%d, %d against %d, %d points)", pk.NbInfinityA, pk.NbInfinityB, g.NbInfinityA, g.NbInfinityB)
			}
			for _, l := range [][3]any{
				{"G1.A", len(pk.G1.A), len(g.G1.A)}, {"G1.B", len(pk.G1.B), len(g.G1.B)}, {"G1.Z", len(pk.G1.Z), len(g.G1.Z)},
				{"G1.K", len(pk.G1.K), len(g.G1.K)}, {"G2.B", len(pk.G2.B), len(g.G2.B)}, {"commitment keys", len(pk.CommitmentKeys), len(g.CommitmentKeys)},
			} {
				if l[1] != l[2] {
					t.Errorf("%s: %d points, gnark %d", l[0], l[1], l[2])
				}
			}
			for i := range pk.CommitmentKeys {
				if a, b := len(pk.CommitmentKeys[i].Basis), len(g.CommitmentKeys[i].Basis); a != b {
					t.Errorf("commitment %d: %d bases, gnark %d", i, a, b)
				}
			}
			if pk.Domain.Cardinality != g.Domain.Cardinality || pk.Domain.Generator != g.Domain.Generator {
				t.Errorf("domain %d, gnark %d", pk.Domain.Cardinality, g.Domain.Cardinality)
			}
			gvk := f.gnarkVK.(*groth16_bls12381.VerifyingKey)
			if len(vk.G1.K) != len(gvk.G1.K) || len(vk.CommitmentKeys) != len(gvk.CommitmentKeys) ||
				fmt.Sprint(vk.PublicAndCommitmentCommitted) != fmt.Sprint(gvk.PublicAndCommitmentCommitted) {
				t.Errorf("verifying key: %d K, %d commitment keys, committed %v; gnark %d, %d, %v", len(vk.G1.K), len(vk.CommitmentKeys),
					vk.PublicAndCommitmentCommitted, len(gvk.G1.K), len(gvk.CommitmentKeys), gvk.PublicAndCommitmentCommitted)
			}
		})
	}
}

func TestProofsFromTheKeysAreAcceptedByGnarksVerifier(t *testing.T) {
	for i, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			pk, vk := mustSetup(t, f.ccs, setup.WithToxicWaste(setuptest.ToxicWaste(uint64(200+i), f.commitments)))
			proof, err := groth16.Prove(f.ccs, pk, f.full)
			if err != nil {
				t.Fatal(err)
			}
			if err := groth16.Verify(proof, vk, f.pub); err != nil {
				t.Fatalf("gnark's verifier refused the proof: %v", err)
			}
			// And another key's verifier refuses it.
			_, other := mustSetup(t, f.ccs)
			if groth16.Verify(proof, other, f.pub) == nil {
				t.Fatal("a verifying key of other secrets accepted the proof")
			}
		})
	}
}

func TestSecretsThatMakeNoKeysAreRefused(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 3)
	one := fr.One()
	var minusOne fr.Element
	minusOne.Neg(&one)
	for name, edit := range map[string]func(*setup.ToxicWaste){
		"zero delta":       func(tw *setup.ToxicWaste) { tw.Delta.SetZero() },
		"zero gamma":       func(tw *setup.ToxicWaste) { tw.Gamma.SetZero() },
		"tau one":          func(tw *setup.ToxicWaste) { tw.T = one },
		"tau minus one":    func(tw *setup.ToxicWaste) { tw.T = minusOne },
		"a sigma too many": func(tw *setup.ToxicWaste) { tw.CommitmentSigma = append(tw.CommitmentSigma, one) },
	} {
		tw := setuptest.ToxicWaste(1, 0)
		edit(&tw)
		if _, _, err := setup.Setup(context.Background(), f.CCS, setup.WithToxicWaste(tw)); !errors.Is(err, setup.ErrToxicWaste) {
			t.Errorf("%s: Setup = %v, want ErrToxicWaste", name, err)
		}
		if _, _, err := setup.Reference(f.CCS, tw); !errors.Is(err, setup.ErrToxicWaste) {
			t.Errorf("%s: Reference = %v, want ErrToxicWaste", name, err)
		}
	}
}

type square struct {
	X frontend.Variable `gnark:",public"`
	Y frontend.Variable
}

func (c *square) Define(api frontend.API) error {
	api.AssertIsEqual(api.Mul(c.X, c.X), c.Y)
	return nil
}

func TestAPlonkConstraintSystemIsRefused(t *testing.T) {
	ccs := circuitstest.Compile(t, ecc.BLS12_381.ScalarField(), scs.NewBuilder, &square{})
	if _, _, err := setup.Setup(context.Background(), ccs); !errors.Is(err, setup.ErrUnsupported) {
		t.Fatalf("Setup of a SparseR1CS = %v, want ErrUnsupported", err)
	}
	if _, _, err := setup.Setup(context.Background(), nil); !errors.Is(err, setup.ErrUnsupported) {
		t.Fatalf("Setup(nil) = %v, want ErrUnsupported", err)
	}
}

func TestSetupRecordsItsStepsAsSpans(t *testing.T) {
	f := commitmenttest.Setup(t, "multicommit")
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	mustSetup(t, f.CCS, setup.WithTracerProvider(tp))
	vectors := map[string]int{}
	names := map[string]int{}
	for _, s := range rec.Ended() {
		names[s.Name()]++
		for _, a := range s.Attributes() {
			if a.Key == semconv.KeySetupVector {
				vectors[s.Name()+" "+a.Value.AsString()]++
			}
		}
	}
	for _, want := range []string{semconv.SpanSetupEvaluate, semconv.SpanSetupCommitment, semconv.SpanSetupVerifyingKey} {
		if names[want] != 1 {
			t.Errorf("%d %s spans, want 1 (%v)", names[want], want, names)
		}
	}
	for _, want := range []string{"setup.g1 a", "setup.g1 b", "setup.g1 z", "setup.g1 k_pk", "setup.g1 k_vk", "setup.g2 b", "setup.g1 alpha_beta_delta", "setup.g2 beta_delta_gamma"} {
		if vectors[want] != 1 {
			t.Errorf("%d spans %q, want 1 (%v)", vectors[want], want, vectors)
		}
	}
	if got, want := vectors["setup.g1 commitment"], 2*f.Commitments; got != want {
		t.Errorf("%d commitment G1 spans, want %d (basis and σ·basis per commitment)", got, want)
	}
}

func TestACancelledSetupReturnsTheContextsError(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := setup.Setup(ctx, f.CCS); !errors.Is(err, context.Canceled) {
		t.Fatalf("Setup = %v, want context.Canceled", err)
	}
}

// failingMultiplier fails every G1 multiplication as a device out of
// memory would.
type failingMultiplier struct{ setup.CPU }

var errNoMemory = errors.New("out of device memory: 9.0 GiB needed, 1.0 GiB free")

func (failingMultiplier) MulG1(context.Context, []fr.Element, []curve.G1Affine) error {
	return errNoMemory
}

func TestAMultiplierErrorNamesTheSizeAndTheVector(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 3)
	_, _, err := setup.Setup(context.Background(), f.CCS, setup.WithMultiplier(failingMultiplier{}, "cuda"))
	if !errors.Is(err, errNoMemory) || !strings.Contains(err.Error(), "setup of 1024 constraints: [alpha_beta_delta]₁ (3 points): out of device memory") {
		t.Fatalf("Setup with a failing multiplier = %v", err)
	}
}

// failingG2Multiplier fails every G2 multiplication.
type failingG2Multiplier struct{ setup.CPU }

func (failingG2Multiplier) MulG2(context.Context, []fr.Element, []curve.G2Affine) error {
	return errNoMemory
}

func TestAG2MultiplierErrorNamesTheG2Vector(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 3)
	_, _, err := setup.Setup(context.Background(), f.CCS, setup.WithMultiplier(failingG2Multiplier{}, "cuda"))
	if !errors.Is(err, errNoMemory) || !strings.Contains(err.Error(), "setup of 1024 constraints: [b]₂ (") {
		t.Fatalf("Setup with a failing G2 multiplier = %v", err)
	}
}

// The CPU Multiplier gives [s]₁ and [s]₂ of the generators (zero to
// infinity), refuses an output of another length and stops at a
// cancelled context.
func TestCPUMultiplierMultipliesTheGeneratorsAndRefusesBadInput(t *testing.T) {
	_, _, g1, g2 := curve.Generators()
	scalars := make([]fr.Element, 5)
	for i := range scalars {
		scalars[i].SetUint64(uint64(i * 7)) // 0 first: the point at infinity
	}
	ctx := context.Background()
	out1 := make([]curve.G1Affine, len(scalars))
	out2 := make([]curve.G2Affine, len(scalars))
	if err := (setup.CPU{}).MulG1(ctx, scalars, out1); err != nil {
		t.Fatal(err)
	}
	if err := (setup.CPU{}).MulG2(ctx, scalars, out2); err != nil {
		t.Fatal(err)
	}
	for i := range scalars {
		var b big.Int
		scalars[i].BigInt(&b)
		var w1 curve.G1Affine
		var w2 curve.G2Affine
		w1.ScalarMultiplication(&g1, &b)
		w2.ScalarMultiplication(&g2, &b)
		if !out1[i].Equal(&w1) || !out2[i].Equal(&w2) {
			t.Errorf("scalar %d: G1 %v (want %v), G2 equal %v", i, out1[i], w1, out2[i].Equal(&w2))
		}
	}
	if err := (setup.CPU{}).MulG1(ctx, scalars, out1[:4]); err == nil || !strings.Contains(err.Error(), "4 G1 outputs for 5 scalars") {
		t.Errorf("G1 with 4 outputs: %v", err)
	}
	if err := (setup.CPU{}).MulG2(ctx, scalars[:4], out2); err == nil || !strings.Contains(err.Error(), "5 G2 outputs for 4 scalars") {
		t.Errorf("G2 with 5 outputs: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := (setup.CPU{}).MulG2(cancelled, scalars, out2); !errors.Is(err, context.Canceled) {
		t.Errorf("G2 on a cancelled context: %v", err)
	}
}
