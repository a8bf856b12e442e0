package fixedbase_test

import (
	"context"
	"errors"
	"math/big"
	"sync"
	"testing"
	"time"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/commitmenttest"
	"github.com/otelcuzk/otelcuzk/prover/gpu/fixedbase"
	"github.com/otelcuzk/otelcuzk/prover/setup"
	"github.com/otelcuzk/otelcuzk/prover/setup/setuptest"
)

var gpuFix struct {
	once sync.Once
	e    *fixedbase.Engine
	err  error
}

// openGPU returns the engine on device 0 (with passes of at most 2^16
// scalars, so the tests cross pass boundaries), or skips without a device.
func openGPU(t *testing.T) *fixedbase.Engine {
	t.Helper()
	gpuFix.once.Do(func() {
		start := time.Now()
		gpuFix.e, gpuFix.err = fixedbase.Open(context.Background(), 0, fixedbase.WithMaxChunk(1<<16))
		t.Logf("engine opened (kernels compiled or loaded, tables up) in %v", time.Since(start).Round(time.Millisecond))
	})
	if errors.Is(gpuFix.err, cudaspans.ErrNoDevice) {
		t.Skipf("no CUDA device: %v", gpuFix.err)
	}
	if gpuFix.err != nil {
		t.Fatal(gpuFix.err)
	}
	return gpuFix.e
}

func edgeScalars(n int) []fr.Element {
	var s []fr.Element
	r := fr.Modulus()
	for _, v := range []int64{0, 1, 2, 4095, 4096, 4097} {
		var a, b fr.Element
		a.SetBigInt(big.NewInt(v))
		b.SetBigInt(new(big.Int).Sub(r, big.NewInt(v+1)))
		s = append(s, a, b)
	}
	for len(s) < n {
		var e fr.Element
		e.SetRandom()
		s = append(s, e)
	}
	return s[:n]
}

func TestGPUFixedBaseEqualsGnarkCrypto(t *testing.T) {
	e := openGPU(t)
	ctx := context.Background()
	for _, n := range []int{1, 3, 1000, 1<<16 + 77, 3<<16 + 1} {
		s := edgeScalars(n)
		_, _, g1, g2 := curve.Generators()
		got1 := make([]curve.G1Affine, n)
		if err := e.MulG1(ctx, s, got1); err != nil {
			t.Fatal(err)
		}
		want1 := curve.BatchScalarMultiplicationG1(&g1, s)
		for i := range want1 {
			if got1[i] != want1[i] {
				t.Fatalf("n %d: G1 point %d (scalar %s) differs from gnark-crypto's", n, i, s[i].String())
			}
		}
		if n > 1<<17 {
			continue // G2 on the CPU is slow; the pass boundary is crossed below 2^17
		}
		got2 := make([]curve.G2Affine, n)
		if err := e.MulG2(ctx, s, got2); err != nil {
			t.Fatal(err)
		}
		want2 := curve.BatchScalarMultiplicationG2(&g2, s)
		for i := range want2 {
			if got2[i] != want2[i] {
				t.Fatalf("n %d: G2 point %d (scalar %s) differs from gnark-crypto's", n, i, s[i].String())
			}
		}
	}
}

// gpuCase is a circuit whose GPU keys are compared with the reference.
type gpuCase struct {
	name        string
	ccs         constraint.ConstraintSystem
	full, pub   witness.Witness
	commitments int
}

func TestGPUSetupIsByteIdenticalToTheReferenceAndProves(t *testing.T) {
	e := openGPU(t)
	var cases []gpuCase
	for _, sz := range []struct {
		name string
		n    int
	}{{"merkle", 1 << 12}, {"mulchain", 1 << 12}, {"merkle", 1 << 16}, {"porep", 1 << 17}} {
		if testing.Short() && sz.n > 1<<16 {
			continue
		}
		f := circuitstest.Setup(t, sz.name, sz.n, 5)
		cases = append(cases, gpuCase{name: f.Instance.Name, ccs: f.CCS, full: f.Witness, pub: f.Public})
	}
	for _, name := range commitmenttest.Names {
		f := commitmenttest.Setup(t, name)
		cases = append(cases, gpuCase{name: name, ccs: f.CCS, full: f.Witness, pub: f.Public, commitments: f.Commitments})
	}
	for i, c := range cases {
		tw := setuptest.ToxicWaste(uint64(300+i), c.commitments)
		start := time.Now()
		rpk, rvk, err := setup.Reference(c.ccs, tw)
		if err != nil {
			t.Fatal(err)
		}
		ref := time.Since(start)
		start = time.Now()
		pk, vk, err := setup.Setup(context.Background(), c.ccs, setup.WithToxicWaste(tw), setup.WithMultiplier(e, "cuda"))
		if err != nil {
			t.Fatal(err)
		}
		gpu := time.Since(start)
		want, got := setuptest.KeyBytes(t, rpk, rvk), setuptest.KeyBytes(t, pk, vk)
		if d := setuptest.FirstDifference(want, got); d != -1 {
			t.Fatalf("%s, %d constraints: GPU keys differ from the reference at byte %d of %d", c.name, c.ccs.GetNbConstraints(), d, len(want))
		}
		proof, err := groth16.Prove(c.ccs, pk, c.full)
		if err != nil {
			t.Fatal(err)
		}
		if err := groth16.Verify(proof, vk, c.pub); err != nil {
			t.Fatalf("%s: gnark's verifier refused a proof from the GPU's keys: %v", c.name, err)
		}
		t.Logf("%s, %d constraints: %d key bytes identical; reference %v, GPU setup %v", c.name, c.ccs.GetNbConstraints(), len(want),
			ref.Round(time.Millisecond), gpu.Round(time.Millisecond))
	}
}

func TestGPUEngineRefusesMismatchedLengthsAndWorkAfterClose(t *testing.T) {
	openGPU(t)
	c, err := cudaspans.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	e, err := fixedbase.New(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.MulG1(context.Background(), make([]fr.Element, 3), make([]curve.G1Affine, 2)); err == nil {
		t.Error("3 scalars into 2 points accepted")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.MulG2(context.Background(), make([]fr.Element, 1), make([]curve.G2Affine, 1)); !errors.Is(err, fixedbase.ErrClosed) {
		t.Errorf("MulG2 after Close = %v, want ErrClosed", err)
	}
}
