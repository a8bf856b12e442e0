// Command refgen writes reference fingerprints for the standalone CUDA NTT
// harness (ntt_devtest.cu): for each case, the inputs the harness generates
// itself (splitmix64, or an edge pattern), the domain's generators, and the
// FNV-1a 64 hash of gnark-crypto's output. The harness runs on a GPU host
// without Go; this runs here.
//
//	go run ./prover/gpu/kernels/devtest/refgen -seed N -max 24 > .devdata/refs.txt
package main

import (
	"flag"
	"fmt"
	"hash/fnv"
	"math/big"
	"os"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
)

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// input is the harness's input vector: pattern "rand" (seeded), "zero",
// "one" (Montgomery 1) or "rm1" (r-1).
func input(pattern string, seed uint64, n int) []fr.Element {
	v := make([]fr.Element, n)
	var one, rm1 fr.Element
	one.SetOne()
	rm1.Neg(&one)
	for i := range v {
		switch pattern {
		case "rand":
			for j := 0; j < 4; j++ {
				v[i][j] = splitmix64(seed + uint64(i)*4 + uint64(j))
			}
			v[i][3] &= 0x0fffffffffffffff // < 2^252 < r: a valid Montgomery form
		case "one":
			v[i] = one
		case "rm1":
			v[i] = rm1
		}
	}
	return v
}

func hash(v []fr.Element) uint64 {
	h := fnv.New64a()
	if len(v) > 0 {
		h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*32))
	}
	return h.Sum64()
}

func limbs(e fr.Element) string { return fmt.Sprintf("%x %x %x %x", e[0], e[1], e[2], e[3]) }

func main() {
	seed := flag.Uint64("seed", 1, "base seed of the random inputs")
	maxLog := flag.Int("max", 20, "largest log2 size")
	flag.Parse()
	w := os.Stdout
	sizes := []int{1, 2, 10, 11, 16, 17, 20, 24, 27}
	for _, logn := range sizes {
		if logn > *maxLog {
			continue
		}
		n := 1 << logn
		d := fft.NewDomain(uint64(n))
		gens := fmt.Sprintf("%s %s %s %s", limbs(d.Generator), limbs(d.GeneratorInv), limbs(d.FrMultiplicativeGen), limbs(d.FrMultiplicativeGenInv))
		patterns := []string{"rand"}
		if logn == 10 || logn == 16 {
			patterns = append(patterns, "zero", "one", "rm1")
		}
		ops := []string{"fwd_dif", "fwd_dit_coset", "inv_dif", "inv_dif_coset", "inv_dit", "fwd_dif_coset", "computeh"}
		if logn >= 27 {
			ops = []string{"fwd_dif"}
		}
		for _, op := range ops {
			for _, pat := range patterns {
				s := *seed + uint64(logn)<<48 + uint64(len(op))<<40
				a := input(pat, s, n)
				switch op {
				case "fwd_dif":
					d.FFT(a, fft.DIF)
				case "fwd_dif_coset":
					d.FFT(a, fft.DIF, fft.OnCoset())
				case "fwd_dit_coset":
					d.FFT(a, fft.DIT, fft.OnCoset())
				case "inv_dif":
					d.FFTInverse(a, fft.DIF)
				case "inv_dit":
					d.FFTInverse(a, fft.DIT)
				case "inv_dif_coset":
					d.FFTInverse(a, fft.DIF, fft.OnCoset())
				case "computeh":
					b := input(pat, s+1<<36, n)
					c := input(pat, s+2<<36, n)
					d.FFTInverse(a, fft.DIF)
					d.FFTInverse(b, fft.DIF)
					d.FFTInverse(c, fft.DIF)
					d.FFT(a, fft.DIT, fft.OnCoset())
					d.FFT(b, fft.DIT, fft.OnCoset())
					d.FFT(c, fft.DIT, fft.OnCoset())
					var den, one fr.Element
					one.SetOne()
					den.Exp(d.FrMultiplicativeGen, new(big.Int).SetInt64(int64(n)))
					den.Sub(&den, &one).Inverse(&den)
					for i := range a {
						a[i].Mul(&a[i], &b[i]).Sub(&a[i], &c[i]).Mul(&a[i], &den)
					}
					d.FFTInverse(a, fft.DIF, fft.OnCoset())
					fmt.Fprintf(w, "%s %d %s %d %s %s %x\n", op, logn, pat, s, gens, limbs(den), hash(a))
					continue
				}
				fmt.Fprintf(w, "%s %d %s %d %s %s %x\n", op, logn, pat, s, gens, limbs(fr.Element{}), hash(a))
			}
		}
		fmt.Fprintf(os.Stderr, "2^%d done\n", logn)
	}
}
