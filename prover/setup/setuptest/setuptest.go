// Package setuptest gives the tests of prover/setup and of the GPU's
// fixed-base multiplications fixed secrets and the byte encoding their
// keys are compared by.
package setuptest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/otelcuzk/otelcuzk/prover/setup"
)

// ToxicWaste returns secrets derived from seed (SHA-256 of the seed and a
// counter, reduced mod r), with nbCommitments values of σ: the same seed,
// the same secrets, in every process.
func ToxicWaste(seed uint64, nbCommitments int) setup.ToxicWaste {
	ctr := uint64(0)
	next := func() fr.Element {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:8], seed)
		binary.LittleEndian.PutUint64(b[8:], ctr)
		ctr++
		h := sha256.Sum256(b[:])
		var e fr.Element
		e.SetBytes(h[:])
		return e
	}
	tw := setup.ToxicWaste{T: next(), Alpha: next(), Beta: next(), Gamma: next(), Delta: next(), CommitmentG2: next()}
	for range nbCommitments {
		tw.CommitmentSigma = append(tw.CommitmentSigma, next())
	}
	return tw
}

// KeyBytes is the keys as the key cache and gnark exchange them: the
// verifying key's WriteTo (compressed), the proving key's WriteTo
// (compressed) and its WriteDump (raw), concatenated.
func KeyBytes(t testing.TB, pk *groth16_bls12381.ProvingKey, vk *groth16_bls12381.VerifyingKey) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := vk.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if _, err := pk.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if err := pk.WriteDump(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// FirstDifference returns the offset of the first byte where a and b
// differ (the shorter length when one is a prefix of the other), or −1.
func FirstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}
