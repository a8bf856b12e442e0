package groth16

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend"
	"github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
	"github.com/consensys/gnark/frontend/cs/scs"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/commitmenttest"
)

func proveCommit(t *testing.T, f *commitmenttest.Fixture, opts ...ProveOption) *groth16_bls12381.Proof {
	t.Helper()
	proof, err := Prove(context.Background(), f.CCS, f.PK, f.Witness, opts...)
	if err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	return proof.(*groth16_bls12381.Proof)
}

func TestCircuitsWithCommitmentsProveAndVerify(t *testing.T) {
	for _, name := range commitmenttest.Names {
		t.Run(name, func(t *testing.T) {
			f := commitmenttest.Setup(t, name)
			if f.Commitments == 0 {
				t.Fatalf("%s has no commitment: the test proves nothing new", name)
			}
			if name == "multicommit" && f.Commitments < 2 {
				t.Fatalf("multicommit has %d commitments, want several", f.Commitments)
			}
			p := proveCommit(t, f)
			if len(p.Commitments) != f.Commitments {
				t.Fatalf("proof has %d commitments, the circuit %d", len(p.Commitments), f.Commitments)
			}
			if err := groth16.Verify(p, f.VK, f.Public); err != nil {
				t.Fatalf("gnark rejects our proof: %v", err)
			}
			// Round trip through gnark's serialization, as cuzk sends it.
			var buf bytes.Buffer
			if _, err := p.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			back := groth16.NewProof(ecc.BLS12_381)
			if _, err := back.ReadFrom(&buf); err != nil {
				t.Fatal(err)
			}
			if err := groth16.Verify(back, f.VK, f.Public); err != nil {
				t.Fatalf("serialized proof rejected: %v", err)
			}
		})
	}
}

func TestTamperedCommitmentPokOrPublicInputIsRejected(t *testing.T) {
	for _, name := range []string{"rangecheck", "multicommit", "publiconly", "overlap"} {
		t.Run(name, func(t *testing.T) {
			f := commitmenttest.Setup(t, name)
			p := proveCommit(t, f)
			if err := groth16.Verify(p, f.VK, f.Public); err != nil {
				t.Fatal(err)
			}
			_, _, g1, _ := curve.Generators()
			for i := range p.Commitments {
				bad := *p
				bad.Commitments = append([]curve.G1Affine(nil), p.Commitments...)
				bad.Commitments[i].Add(&bad.Commitments[i], &g1)
				if err := groth16.Verify(&bad, f.VK, f.Public); err == nil {
					t.Errorf("verifier accepted tampered commitment %d", i)
				}
			}
			// A fresh copy for each call: gnark's Verify returns on a
			// failed check while its goroutine may still read the proof.
			badPok := *p
			badPok.CommitmentPok.Add(&badPok.CommitmentPok, &g1)
			if err := groth16.Verify(&badPok, f.VK, f.Public); err == nil {
				t.Error("verifier accepted a tampered proof of knowledge")
			}
			comAsPok := *p
			comAsPok.CommitmentPok = p.Commitments[0]
			if err := groth16.Verify(&comAsPok, f.VK, f.Public); err == nil {
				t.Error("verifier accepted a commitment as its proof of knowledge")
			}
		})
	}
	f := commitmenttest.Setup(t, "multicommit")
	p := proveCommit(t, f)
	wrong, err := frontend.NewWitness(&commitmenttest.MultiCommit{P: 40503*77777 + 1}, ecc.BLS12_381.ScalarField(), frontend.PublicOnly())
	if err != nil {
		t.Fatal(err)
	}
	if err := groth16.Verify(p, f.VK, wrong); err == nil {
		t.Error("verifier accepted a wrong public input (committed to by a commitment)")
	}
	// A circuit without secret inputs whose commitment is over its public
	// inputs: a wrong one is rejected.
	f = commitmenttest.Setup(t, "publiconly")
	p = proveCommit(t, f)
	wrong, err = frontend.NewWitness(&commitmenttest.PublicOnly{A: 12346, B: 12345 * 12345}, ecc.BLS12_381.ScalarField(), frontend.PublicOnly())
	if err != nil {
		t.Fatal(err)
	}
	if err := groth16.Verify(p, f.VK, wrong); err == nil {
		t.Error("verifier accepted a wrong public input of a circuit without secret inputs")
	}
}

func TestCommitmentProofIsFixedByTheRandomness(t *testing.T) {
	f := commitmenttest.Setup(t, "multicommit")
	requireFixedByRandomness(t, " (commitment masks not fixed)", f.VK, f.Public, func(opts ...ProveOption) groth16.Proof {
		return proveCommit(t, f, opts...)
	})
}

// TestCommitmentKeyReadBackThroughDumpProves: the key cache stores keys
// with gnark's WriteDump; a commitment key read back with ReadDump proves.
func TestCommitmentKeyReadBackThroughDumpProves(t *testing.T) {
	f := commitmenttest.Setup(t, "lookup")
	var buf bytes.Buffer
	if err := f.PK.(*groth16_bls12381.ProvingKey).WriteDump(&buf); err != nil {
		t.Fatal(err)
	}
	var pk groth16_bls12381.ProvingKey
	if err := pk.ReadDump(&buf); err != nil {
		t.Fatal(err)
	}
	if len(pk.CommitmentKeys) != f.Commitments {
		t.Fatalf("read back %d commitment keys, want %d", len(pk.CommitmentKeys), f.Commitments)
	}
	proof, err := Prove(context.Background(), f.CCS, &pk, f.Witness)
	if err != nil {
		t.Fatal(err)
	}
	if err := groth16.Verify(proof, f.VK, f.Public); err != nil {
		t.Fatalf("proof with the dumped key rejected: %v", err)
	}
}

// TestPLONKAndOtherCurvesAreStillRefused: what the prover does not do (a
// PLONK constraint system, a Groth16 R1CS over another curve) is refused
// with ErrUnsupported and a one-line error naming it.
func TestPLONKAndOtherCurvesAreStillRefused(t *testing.T) {
	f := commitmenttest.Setup(t, "lookup")
	plonk := circuitstest.Compile(t, ecc.BLS12_381.ScalarField(), scs.NewBuilder, &circuitstest.Square{})
	bn := circuitstest.Compile(t, ecc.BN254.ScalarField(), r1cs.NewBuilder, &circuitstest.Square{})
	for _, c := range []struct {
		what string
		ccs  constraint.ConstraintSystem
		want string
	}{{"PLONK", plonk, "SparseR1CS"}, {"BN254", bn, "bn254"}} {
		_, err := Prove(context.Background(), c.ccs, f.PK, f.Witness)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want ErrUnsupported naming %s on one line", c.what, err, c.want)
		}
	}
}

func TestCommitmentsWithoutTheirKeysAreAKeyMismatch(t *testing.T) {
	f := commitmenttest.Setup(t, "multicommit")
	other := commitmenttest.Setup(t, "lookup")
	ctx := context.Background()
	if _, err := Synthesize(ctx, f.CCS, f.Witness); !errors.Is(err, ErrKeyMismatch) || !strings.Contains(err.Error(), "WithProvingKey") {
		t.Errorf("synthesis without the key: %v, want ErrKeyMismatch naming WithProvingKey", err)
	}
	if _, err := Synthesize(ctx, f.CCS, f.Witness, WithProvingKey(other.PK)); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("synthesis with another circuit's key: %v, want ErrKeyMismatch", err)
	}
	if _, err := Prove(ctx, f.CCS, other.PK, f.Witness); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("prove with another circuit's key: %v, want ErrKeyMismatch", err)
	}
	// An assignment with commitments against a key without any.
	asg, err := Synthesize(ctx, f.CCS, f.Witness, WithProvingKey(f.PK))
	if err != nil {
		t.Fatal(err)
	}
	plain := circuitstest.Setup(t, "mulchain", 1<<10, 42)
	if _, err := ProveAssignment(ctx, plain.PK, asg); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("prove of a commitment assignment with a plain key: %v, want ErrKeyMismatch", err)
	}
	// Another setup of the same circuit: same shape, other commitment key.
	pk2, _, err := groth16.Setup(f.CCS)
	if err != nil {
		t.Fatal(err)
	}
	asg, err = Synthesize(ctx, f.CCS, f.Witness, WithProvingKey(f.PK))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ProveAssignment(ctx, pk2, asg); !errors.Is(err, ErrKeyMismatch) || !strings.Contains(err.Error(), "another proving key") {
		t.Errorf("prove with another setup's key than synthesis had: %v, want ErrKeyMismatch naming it", err)
	}
}

func TestCommitmentMSMsHaveTheirSpans(t *testing.T) {
	f := commitmenttest.Setup(t, "multicommit")
	tp, exp := spantest.NewMemory()
	ctx, root := tp.Tracer("test").Start(context.Background(), "root")
	if _, err := Prove(ctx, f.CCS, f.PK, f.Witness, WithTracerProvider(tp)); err != nil {
		t.Fatal(err)
	}
	root.End()
	tree := spantest.NewTree(exp.GetSpans())
	for _, c := range []struct{ span, parent string }{
		{semconv.SpanMSMG1Commitment, semconv.SpanSynthesizeSolve},
		{semconv.SpanMSMG1CommitmentPok, semconv.SpanGroth16Prove},
	} {
		spans := tree.Named(c.span)
		if len(spans) != f.Commitments {
			t.Fatalf("%d %s spans, want one per commitment (%d)", len(spans), c.span, f.Commitments)
		}
		for _, s := range spans {
			if par, ok := tree.Parent(s); !ok || par.Name != c.parent {
				t.Errorf("%s is under %q, want %s", c.span, par.Name, c.parent)
			}
			if n, ok := spantest.StubValue(s, string(semconv.KeyMSMSize)); !ok || n == "0" {
				t.Errorf("%s: %s = %q", c.span, semconv.KeyMSMSize, n)
			}
		}
	}
	seen := map[string]bool{}
	for _, s := range tree.Named(semconv.SpanMSMG1Commitment) {
		i, _ := spantest.StubValue(s, string(semconv.KeyCommitmentIndex))
		seen[i] = true
	}
	for i := 0; i < f.Commitments; i++ {
		if !seen[strconv.Itoa(i)] {
			t.Errorf("no %s span with %s = %d", semconv.SpanMSMG1Commitment, semconv.KeyCommitmentIndex, i)
		}
	}
	g := tree.Named(semconv.SpanGroth16Prove)
	if n, _ := spantest.StubValue(g[0], string(semconv.KeyCommitmentCount)); n != strconv.Itoa(f.Commitments) {
		t.Errorf("groth16.prove %s = %q, want %d", semconv.KeyCommitmentCount, n, f.Commitments)
	}
}

func TestKWiresLeaveOutExactlyTheExcludedWires(t *testing.T) {
	wires := make([]fr.Element, 20)
	for i := range wires {
		wires[i].SetUint64(uint64(100 + i))
	}
	for _, excl := range [][]int{{3}, {3, 4, 19}, {5, 9, 10, 11}, {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}} {
		hb, got, err := kWires(nil, wires, 3, excl)
		if err != nil {
			t.Fatal(err)
		}
		var want []fr.Element
		for i := 3; i < len(wires); i++ {
			if !containsInt(excl, i) {
				want = append(want, wires[i])
			}
		}
		if len(got) != len(want) {
			t.Fatalf("excluding %v: %d wires, want %d", excl, len(got), len(want))
		}
		for i := range want {
			if !got[i].Equal(&want[i]) {
				t.Fatalf("excluding %v: wire %d is %s, want %s", excl, i, got[i].String(), want[i].String())
			}
		}
		if hb != nil {
			hb.Free()
		}
	}
	if _, _, err := kWires(nil, wires, 3, []int{2}); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("excluding a public wire: %v, want ErrKeyMismatch", err)
	}
	if _, _, err := kWires(nil, wires, 3, []int{20}); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("excluding a wire past the end: %v, want ErrKeyMismatch", err)
	}
	info := constraint.Groth16Commitments{{PrivateCommitted: []int{9, 4}, CommitmentIndex: 12}, {PrivateCommitted: []int{4, 7}, CommitmentIndex: 13}}
	if got := fmt.Sprint(kExcluded(info)); got != "[4 7 9 12 13]" {
		t.Errorf("kExcluded = %s, want [4 7 9 12 13]", got)
	}
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestFoldIsGnarksFold(t *testing.T) {
	for n := 1; n <= 4; n++ {
		pts := make([]curve.G1Affine, n)
		jac := make([]curve.G1Jac, n)
		for i := range pts {
			var k fr.Element
			k.SetUint64(uint64(3*i + 5))
			pts[i].ScalarMultiplicationBase(k.BigInt(new(big.Int)))
			jac[i].FromAffine(&pts[i])
		}
		var c fr.Element
		c.SetString("123456789123456789")
		var want curve.G1Affine
		if _, err := want.Fold(pts, c, ecc.MultiExpConfig{}); err != nil {
			t.Fatal(err)
		}
		if got := foldPoks(jac, c); !got.Equal(&want) {
			t.Errorf("fold of %d points differs from gnark-crypto's", n)
		}
	}
}

// TestCommitmentsAndTheirPokAreGnarks: with the commitments' masks fixed
// alike (gnark's Randomize hint overridden in gnark's prover too), our
// commitments and folded proof of knowledge are exactly gnark's for every
// circuit: they depend only on the committed values and the key, not on
// r, s.
func TestCommitmentsAndTheirPokAreGnarks(t *testing.T) {
	var r, s fr.Element
	r.SetUint64(3)
	s.SetUint64(5)
	cfg := newConfig([]SynthesizeOption{WithRandomness(r, s)}, SynthesizeOption.applySynthesize)
	mask := commitKeysOf(nil, &cfg).mask
	if mask == nil {
		t.Fatal("no mask under WithRandomness")
	}
	fixed := fixedMaskOption(*mask)
	if fixed == nil {
		t.Fatalf("gnark's %s hint is not registered", randomizeHintName)
	}
	for _, name := range commitmenttest.Names {
		f := commitmenttest.Setup(t, name)
		ours := proveCommit(t, f, WithRandomness(r, s))
		theirs, err := groth16.Prove(f.CCS, f.PK, f.Witness, backend.WithSolverOptions(fixed))
		if err != nil {
			t.Fatalf("%s: gnark: %v", name, err)
		}
		g := theirs.(*groth16_bls12381.Proof)
		if err := groth16.Verify(g, f.VK, f.Public); err != nil {
			t.Fatalf("%s: gnark's own proof with the fixed mask: %v", name, err)
		}
		if len(g.Commitments) != len(ours.Commitments) {
			t.Fatalf("%s: %d commitments, gnark %d", name, len(ours.Commitments), len(g.Commitments))
		}
		for i := range g.Commitments {
			if !g.Commitments[i].Equal(&ours.Commitments[i]) {
				t.Errorf("%s: commitment %d differs from gnark's", name, i)
			}
		}
		if !g.CommitmentPok.Equal(&ours.CommitmentPok) {
			t.Errorf("%s: folded proof of knowledge differs from gnark's", name)
		}
	}
}
