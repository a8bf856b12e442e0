package server

import (
	"encoding/binary"
	"fmt"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// CheckWitness checks that w is a full witness in gnark's binary format
// over BLS12-381's scalar field (gnark backend/witness, MarshalBinary):
//
//	uint32 nbPublic | uint32 nbSecret | uint32 n | n × 32-byte big-endian elements
//
// with n = nbPublic + nbSecret, no trailing bytes, and every element
// canonical (less than the modulus r). It reads w in place: the length
// header is checked against len(w) before anything is allocated, so a
// forged header cannot make the daemon allocate. Errors wrap
// groth16.ErrBadWitness.
// Whether the counts fit the circuit is checked when the job runs.
func CheckWitness(w []byte) error {
	if len(w) < 12 {
		return fmt.Errorf("%w: %d bytes, shorter than the 12-byte header", groth16.ErrBadWitness, len(w))
	}
	pub := uint64(binary.BigEndian.Uint32(w[0:4]))
	sec := uint64(binary.BigEndian.Uint32(w[4:8]))
	n := uint64(binary.BigEndian.Uint32(w[8:12]))
	if pub+sec != n {
		return fmt.Errorf("%w: header says %d public + %d secret values but the vector holds %d", groth16.ErrBadWitness, pub, sec, n)
	}
	if want := 12 + n*fr.Bytes; uint64(len(w)) != want {
		return fmt.Errorf("%w: %d values need %d bytes, got %d", groth16.ErrBadWitness, n, want, len(w))
	}
	var buf [fr.Bytes]byte
	for i := uint64(0); i < n; i++ {
		copy(buf[:], w[12+i*fr.Bytes:])
		if _, err := fr.BigEndian.Element(&buf); err != nil {
			return fmt.Errorf("%w: value %d is not in the scalar field of BLS12-381 (not less than r)", groth16.ErrBadWitness, i)
		}
	}
	return nil
}
