// Package benchutil holds what the GPU benchmark programs share: random
// field vectors made fast on all cores, and the statistics they report.
package benchutil

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// Median returns the middle value of d (the upper one of the two middle
// values for an even count); d is not modified and must not be empty.
func Median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// Ms returns d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// RandomScalars returns n valid scalar-field elements (top limb masked, so
// each is below 2^252 < r) from a fast PRNG seeded by the clock, on all
// cores. Not for cryptographic use: benchmark inputs only.
func RandomScalars(n int) []fr.Element {
	v := make([]fr.Element, n)
	var wg sync.WaitGroup
	w := runtime.NumCPU()
	for k := 0; k < w; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(k)))
			for i := k * n / w; i < (k+1)*n/w; i++ {
				v[i] = fr.Element{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64() & 0x0fffffffffffffff}
			}
		}(k)
	}
	wg.Wait()
	return v
}
