package msm

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"

	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// GPU tests of the batch addition (kernels/batchadd.cu) against
// gnark-crypto's mixed additions; skipped without a device.

var (
	batchOnce sync.Once
	batchFix  *BatchAdd
	batchErr  error
)

// openBatchAddGPU compiles the batch addition once per test binary on the
// MSM fixture's device (openMSMGPU skips without one).
func openBatchAddGPU(t *testing.T) (*msmFixture, *BatchAdd) {
	t.Helper()
	f := openMSMGPU(t)
	batchOnce.Do(func() { batchFix, batchErr = NewBatchAdd(f.ctx, f.c) })
	if batchErr != nil {
		t.Fatal(batchErr)
	}
	return f, batchFix
}

// batchEdgeIndices are the index vectors of the edge cases over bases
// whose point 0 is infinity, 1 and 2 the same point P, 3 its negation −P:
// duplicates (doublings at the first level and deeper, as 5000 copies of
// P double at every level), P + (−P) (infinity in mid-tree), indices of
// the point at infinity, sizes about the host threshold and a thread's
// batch, random indices with repeats.
func batchEdgeIndices(rng *rand.Rand, nbases int) map[string][]uint32 {
	rep := func(n int, v ...uint32) []uint32 {
		out := make([]uint32, 0, n*len(v))
		for range n {
			out = append(out, v...)
		}
		return out
	}
	random := func(n int) []uint32 {
		out := make([]uint32, n)
		for i := range out {
			out[i] = uint32(rng.IntN(nbases))
		}
		return out
	}
	seq := func(n int) []uint32 {
		out := make([]uint32, n)
		for i := range out {
			out[i] = uint32(i % nbases)
		}
		return out
	}
	cases := map[string][]uint32{
		"P 5000 times":           rep(5000, 1),
		"P, P 3001 times":        rep(3001, 1, 2),
		"P, -P 4000 times":       rep(4000, 1, 3),
		"P, -P, P 999 times":     rep(999, 1, 3, 2),
		"infinity 1000 times":    rep(1000, 0),
		"infinity and P":         rep(700, 0, 1, 0),
		"257 (host threshold+1)": seq(batchAddHostPoints + 1),
		"1000 in order":          seq(1000),
		"131073 in order":        seq(1<<17 + 1),
		"random 300001":          random(300001),
	}
	mixed := random(200003)
	for i := range mixed {
		switch i % 7 {
		case 1:
			mixed[i] = 0
		case 2:
			mixed[i] = 0 // infinity again
		case 3:
			mixed[i] = 3
		case 4:
			mixed[i] = 1
		}
	}
	cases["mixed edges 200003"] = mixed
	return cases
}

// mixedAdds is the reference: gnark-crypto's Jacobian mixed additions of
// set.Points[idx[i]], one after the other.
func mixedAdds[A any, J any, PJ affineJac[A, J]](set backend.BaseSet[A], idx []uint32) (J, error) {
	var res J
	var inf A
	PJ(&res).FromAffine(&inf)
	for _, i := range idx {
		PJ(&res).AddMixed(&set.Points[i])
	}
	return res, nil
}

func checkBatchAdd[A any, J any, PJ interface {
	*J
	Equal(*J) bool
}](t *testing.T, name string, bases []A, idx []uint32,
	gpu func(backend.BaseSet[A], []uint32) (J, error), cpu func(backend.BaseSet[A], []uint32) (J, error), id string) {
	t.Helper()
	want, err := cpu(backend.BaseSet[A]{Points: bases}, idx)
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []backend.BaseSet[A]{{ID: id, Points: bases}, {Points: bases}} {
		got, err := gpu(set, idx)
		if err != nil {
			t.Fatalf("%s (set %q): %v", name, set.ID, err)
		}
		if !PJ(&got).Equal(&want) {
			t.Errorf("%s (set %q): GPU batch add differs from gnark-crypto", name, set.ID)
		}
	}
}

func TestBatchAddG1GPUMatchesGnarkOnRandomAndEdgeInputs(t *testing.T) {
	f, b := openBatchAddGPU(t)
	bases := append([]curve.G1Affine(nil), msmTestBases(t, 1<<20)...)
	bases[0] = curve.G1Affine{}
	bases[2] = bases[1]
	bases[3].Neg(&bases[1])
	gpu := func(set backend.BaseSet[curve.G1Affine], idx []uint32) (curve.G1Jac, error) {
		return b.G1Resident(f.ctx, backend.Call{}, f.stream, f.bases, set, idx)
	}
	ref := mixedAdds[curve.G1Affine, curve.G1Jac]
	rng := rand.New(rand.NewPCG(1, 1))
	for name, idx := range batchEdgeIndices(rng, len(bases)) {
		checkBatchAdd(t, name, bases, idx, gpu, ref, "batch-test-g1")
	}
	// A wire vector's worth of ones, timed (the resident set is uploaded
	// by the first call above).
	idx := make([]uint32, 1<<22)
	for i := range idx {
		idx[i] = uint32(rng.IntN(len(bases)))
	}
	set := backend.BaseSet[curve.G1Affine]{ID: "batch-test-g1", Points: bases}
	if _, err := gpu(set, idx); err != nil { // warm
		t.Fatal(err)
	}
	start := time.Now()
	got, err := gpu(set, idx)
	el := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ref(set, idx)
	if !got.Equal(&want) {
		t.Error("2^22 indexes: GPU batch add differs from gnark-crypto")
	}
	t.Logf("G1 batch add of 2^22 resident bases: %v", el)
	if _, err := f.bases.Evict(f.ctx, "batch-test-g1"); err != nil {
		t.Error(err)
	}
	if _, err := gpu(set, []uint32{uint32(len(bases))}); err == nil {
		t.Error("an index past the bases was accepted")
	}
}

func TestBatchAddG2GPUMatchesGnarkOnRandomAndEdgeInputs(t *testing.T) {
	f, b := openBatchAddGPU(t)
	bases := append([]curve.G2Affine(nil), msmTestBasesG2(t, 1<<16)...)
	bases[0] = curve.G2Affine{}
	bases[2] = bases[1]
	bases[3].Neg(&bases[1])
	gpu := func(set backend.BaseSet[curve.G2Affine], idx []uint32) (curve.G2Jac, error) {
		return b.G2Resident(f.ctx, backend.Call{}, f.stream, f.bases, set, idx)
	}
	ref := mixedAdds[curve.G2Affine, curve.G2Jac]
	rng := rand.New(rand.NewPCG(2, 2))
	for name, idx := range batchEdgeIndices(rng, len(bases)) {
		checkBatchAdd(t, name, bases, idx, gpu, ref, "batch-test-g2")
	}
	idx := make([]uint32, 1<<22)
	for i := range idx {
		idx[i] = uint32(rng.IntN(len(bases)))
	}
	set := backend.BaseSet[curve.G2Affine]{ID: "batch-test-g2", Points: bases}
	start := time.Now()
	got, err := gpu(set, idx)
	el := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ref(set, idx)
	if !got.Equal(&want) {
		t.Error("2^22 indexes: GPU batch add differs from gnark-crypto")
	}
	t.Logf("G2 batch add of 2^22 indexes over resident bases: %v", el)
	if _, err := f.bases.Evict(f.ctx, "batch-test-g2"); err != nil {
		t.Error(err)
	}
}
