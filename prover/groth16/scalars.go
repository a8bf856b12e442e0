package groth16

import (
	"runtime"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"go.opentelemetry.io/otel/attribute"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// ScalarCounts are the scalars of one MSM by kind: Zero equal to 0, One
// equal to 1, Small in [2, 2^64) and the rest full-width, out of Total.
type ScalarCounts struct {
	Total, Zero, One, Small int
}

// scalarChunk is the least work one goroutine of CountScalars takes.
const scalarChunk = 1 << 14

// CountScalars counts scalars by kind in one pass split over GOMAXPROCS
// goroutines. 0 and 1 are found by comparing the Montgomery form with
// those of 0 and 1 (no arithmetic); only the other scalars leave
// Montgomery form (one multiplication each) to test whether they fit in
// one 64-bit word.
func CountScalars(scalars []fr.Element) ScalarCounts {
	return inParallel(scalars, countScalars)
}

// countZeroOne is CountScalars without Small (left 0): comparisons only,
// about a hundredth of CountScalars' time on full-width scalars, so a
// proof can take it on the device's path and count the rest beside its
// MSMs (countSmall).
func countZeroOne(scalars []fr.Element) ScalarCounts {
	return inParallel(scalars, func(v []fr.Element) ScalarCounts {
		one := fr.One()
		c := ScalarCounts{Total: len(v)}
		for i := range v {
			s := &v[i]
			switch {
			case s[0]|s[1]|s[2]|s[3] == 0:
				c.Zero++
			case *s == one:
				c.One++
			}
		}
		return c
	})
}

// countSmall is CountScalars' Small alone (the other counts left 0).
func countSmall(scalars []fr.Element) int {
	return inParallel(scalars, func(v []fr.Element) ScalarCounts {
		one := fr.One()
		c := ScalarCounts{}
		for i := range v {
			s := &v[i]
			if s[0]|s[1]|s[2]|s[3] != 0 && *s != one && s.IsUint64() {
				c.Small++
			}
		}
		return c
	}).Small
}

// inParallel sums count over chunks of scalars of at least scalarChunk,
// one goroutine a chunk, up to GOMAXPROCS.
func inParallel(scalars []fr.Element, count func([]fr.Element) ScalarCounts) ScalarCounts {
	n := len(scalars)
	tasks := min(runtime.GOMAXPROCS(0), (n+scalarChunk-1)/scalarChunk)
	if tasks <= 1 {
		return count(scalars)
	}
	parts := make([]ScalarCounts, tasks)
	var wg sync.WaitGroup
	for t := 0; t < tasks; t++ {
		lo, hi := n*t/tasks, n*(t+1)/tasks
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[t] = count(scalars[lo:hi])
		}()
	}
	wg.Wait()
	var c ScalarCounts
	for _, p := range parts {
		c.Total += p.Total
		c.Zero += p.Zero
		c.One += p.One
		c.Small += p.Small
	}
	return c
}

func countScalars(scalars []fr.Element) ScalarCounts {
	one := fr.One() // Montgomery form of 1, R mod r
	c := ScalarCounts{Total: len(scalars)}
	for i := range scalars {
		s := &scalars[i]
		switch {
		case s[0]|s[1]|s[2]|s[3] == 0:
			c.Zero++
		case *s == one:
			c.One++
		case s.IsUint64():
			c.Small++
		}
	}
	return c
}

// Attributes returns the cuzk.msm.scalars.* attributes of c.
func (c ScalarCounts) Attributes() []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.KeyMSMScalarsZero.Int(c.Zero),
		semconv.KeyMSMScalarsOne.Int(c.One),
		semconv.KeyMSMScalarsSmall.Int(c.Small),
	}
}
