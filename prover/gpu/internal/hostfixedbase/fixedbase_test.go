package hostfixedbase_test

import (
	"math/big"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/otelcuzk/otelcuzk/prover/gpu/fixedbase"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/hostfixedbase"
)

// scalars: 0, 1, 2, r−1, r−2, 2^c-boundary values and random ones, so
// every digit case (zero, positive, negative, carries into the top
// window) occurs.
func scalars(n int, c int) []fr.Element {
	var s []fr.Element
	add := func(b *big.Int) {
		var e fr.Element
		e.SetBigInt(b)
		s = append(s, e)
	}
	r := fr.Modulus()
	for _, v := range []int64{0, 1, 2, 3} {
		add(big.NewInt(v))
		add(new(big.Int).Sub(r, big.NewInt(v+1)))
	}
	for _, sh := range []uint{uint(c - 1), uint(c), uint(2 * c), 254} {
		one := new(big.Int).Lsh(big.NewInt(1), sh)
		add(one)
		add(new(big.Int).Sub(one, big.NewInt(1)))
		add(new(big.Int).Add(one, big.NewInt(1)))
	}
	for len(s) < n {
		var e fr.Element
		e.SetRandom()
		s = append(s, e)
	}
	return s
}

func TestTheKernelsMultiplicationEqualsGnarkCryptosInG1(t *testing.T) {
	for _, c := range []int{5, 8, 12, 15} {
		for _, group := range []int{1, 7, 16, 32} {
			s := scalars(97, c)
			got, err := hostfixedbase.MulG1(s, fixedbase.G1Table(c), c, group)
			if err != nil {
				t.Fatal(err)
			}
			_, _, g1, _ := curve.Generators()
			want := curve.BatchScalarMultiplicationG1(&g1, s)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("window %d, group %d: point %d (scalar %s) differs from gnark-crypto's", c, group, i, s[i].String())
				}
			}
		}
	}
}

func TestTheKernelsMultiplicationEqualsGnarkCryptosInG2(t *testing.T) {
	for _, c := range []int{6, 10, 12} {
		for _, group := range []int{1, 16} {
			s := scalars(41, c)
			got, err := hostfixedbase.MulG2(s, fixedbase.G2Table(c), c, group)
			if err != nil {
				t.Fatal(err)
			}
			_, _, _, g2 := curve.Generators()
			want := curve.BatchScalarMultiplicationG2(&g2, s)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("window %d, group %d: point %d (scalar %s) differs from gnark-crypto's", c, group, i, s[i].String())
				}
			}
		}
	}
}

func TestABadWindowOrTableIsRefused(t *testing.T) {
	if _, err := hostfixedbase.MulG1(scalars(3, 8), fixedbase.G1Table(8), 9, 16); err == nil {
		t.Error("a table of window 8 used as window 9 was accepted")
	}
	if _, err := hostfixedbase.MulG1(scalars(3, 8), fixedbase.G1Table(8), 8, 33); err == nil {
		t.Error("a group of 33 was accepted")
	}
}
