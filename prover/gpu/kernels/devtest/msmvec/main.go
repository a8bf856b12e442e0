// Command msmvec writes MSM test vectors for the devtest harness
// (prover/gpu/kernels/devtest/msm_harness.cu), with the expected results
// computed by gnark-crypto's MultiExp, so the CUDA kernels can be checked
// on a GPU host that has no Go toolchain.
//
// File format (little-endian), kind 0 ("full"):
//
//	"MSMV0\x00\x00\x00", n u64, scalars n×32 bytes (fr.Element, Montgomery),
//	bases n×96 bytes (G1Affine, Montgomery), expected 96 bytes (G1Affine)
//
// kind 1 ("seeded", for sizes too large to carry):
//
//	"MSMV1\x00\x00\x00", n u64, seed u64, pool size P u64, pool P×96 bytes,
//	expected 96 bytes
//
// where scalar i is four splitmix64 outputs (limbs 0..3, top two bits of
// limb 3 cleared, so below r) taken as a Montgomery-form fr.Element, and
// base i is pool[i mod P].
//
// Usage: go run ./prover/gpu/kernels/devtest/msmvec OUTDIR
package main

import (
	"encoding/binary"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: msmvec OUTDIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fatal(err)
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	g1, _, _, _ := curve.Generators()

	randPoints := func(n int) []curve.G1Affine {
		// Random multiples of the generator, converted in one batch.
		jac := make([]curve.G1Jac, n)
		for i := range jac {
			var k big.Int
			k.SetUint64(rng.Uint64())
			k.Lsh(&k, 64).Or(&k, new(big.Int).SetUint64(rng.Uint64()))
			jac[i].ScalarMultiplication(&g1, &k)
		}
		return curve.BatchJacobianToAffineG1(jac)
	}
	randScalars := func(n int) []fr.Element {
		s := make([]fr.Element, n)
		for i := range s {
			if _, err := s[i].SetRandom(); err != nil {
				fatal(err)
			}
		}
		return s
	}
	var one, rm1 fr.Element
	one.SetOne()
	rm1.Neg(&one) // r − 1

	write := func(name string, scalars []fr.Element, bases []curve.G1Affine) {
		writeFull(filepath.Join(dir, name), scalars, bases)
	}

	// Edge inputs.
	gaff := randPoints(4)
	p, q := gaff[0], gaff[1]
	var negP curve.G1Affine
	negP.Neg(&p)
	inf := curve.G1Affine{}
	write("edge_size1_zero.msmv", []fr.Element{{}}, []curve.G1Affine{p})
	write("edge_size1_one.msmv", []fr.Element{one}, []curve.G1Affine{p})
	write("edge_size1_rm1.msmv", []fr.Element{rm1}, []curve.G1Affine{p})
	write("edge_size1_inf.msmv", []fr.Element{rm1}, []curve.G1Affine{inf})
	write("edge_p_plus_p.msmv", []fr.Element{one, one}, []curve.G1Affine{p, p})
	write("edge_p_minus_p.msmv", []fr.Element{one, one}, []curve.G1Affine{p, negP})
	write("edge_mixed5.msmv", []fr.Element{{}, one, rm1, one, rm1}, []curve.G1Affine{q, p, p, inf, negP})
	{
		// All scalars r−1 on one repeated base: every point lands in the
		// same bucket of each window (the heavy-bucket path).
		n := 4099
		s := make([]fr.Element, n)
		b := make([]curve.G1Affine, n)
		for i := range s {
			s[i], b[i] = rm1, p
		}
		write("edge_heavy_4099.msmv", s, b)
	}
	{
		// 1000 points (not a power of two): random, with scalars 0, 1,
		// r−1, bases at infinity, repeated bases and opposite pairs mixed in.
		n := 1000
		s := randScalars(n)
		b := randPoints(n)
		for i := 0; i < n; i++ {
			switch i % 10 {
			case 1:
				s[i] = fr.Element{}
			case 2:
				s[i] = one
			case 3:
				s[i] = rm1
			case 4:
				b[i] = inf
			case 5:
				b[i] = b[i-5]
			case 6:
				b[i].Neg(&b[i-6])
				s[i] = s[i-6]
			}
		}
		write("edge_mixed_1000.msmv", s, b)
	}
	// Fresh random inputs.
	for _, n := range []int{1 << 10, 1<<16 + 3} {
		write(fmt.Sprintf("rand_%d.msmv", n), randScalars(n), randPoints(n))
	}
	// Seeded, large.
	pool := randPoints(1 << 12)
	for _, logn := range []int{20, 22, 24} {
		writeSeeded(filepath.Join(dir, fmt.Sprintf("seeded_%d.msmv", 1<<logn)), 1<<logn, 0x5eed0000+uint64(logn), pool)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "msmvec:", err)
	os.Exit(1)
}

func expected(scalars []fr.Element, bases []curve.G1Affine) curve.G1Affine {
	var r curve.G1Affine
	if _, err := r.MultiExp(bases, scalars, ecc.MultiExpConfig{}); err != nil {
		fatal(err)
	}
	return r
}

func writeFull(path string, scalars []fr.Element, bases []curve.G1Affine) {
	want := expected(scalars, bases)
	f, err := os.Create(path)
	if err != nil {
		fatal(err)
	}
	defer f.Close()
	f.Write([]byte("MSMV0\x00\x00\x00"))
	binary.Write(f, binary.LittleEndian, uint64(len(scalars)))
	f.Write(unsafe.Slice((*byte)(unsafe.Pointer(&scalars[0])), len(scalars)*32))
	f.Write(unsafe.Slice((*byte)(unsafe.Pointer(&bases[0])), len(bases)*96))
	f.Write(unsafe.Slice((*byte)(unsafe.Pointer(&want)), 96))
}

// splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014); the harness uses the same sequence.
type splitmix64 uint64

func (s *splitmix64) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func writeSeeded(path string, n int, seed uint64, pool []curve.G1Affine) {
	// Σ s_i·pool[i mod P] = Σ_p (Σ_{i≡p} s_i)·pool[p]: fr addition works on
	// Montgomery forms directly, so the sums are exact.
	sums := make([]fr.Element, len(pool))
	st := splitmix64(seed)
	for i := 0; i < n; i++ {
		var s fr.Element
		for l := 0; l < 4; l++ {
			s[l] = st.next()
		}
		s[3] &= 0x3fffffffffffffff
		sums[i%len(pool)].Add(&sums[i%len(pool)], &s)
	}
	want := expected(sums, pool)
	f, err := os.Create(path)
	if err != nil {
		fatal(err)
	}
	defer f.Close()
	f.Write([]byte("MSMV1\x00\x00\x00"))
	binary.Write(f, binary.LittleEndian, []uint64{uint64(n), seed, uint64(len(pool))})
	f.Write(unsafe.Slice((*byte)(unsafe.Pointer(&pool[0])), len(pool)*96))
	f.Write(unsafe.Slice((*byte)(unsafe.Pointer(&want)), 96))
}
