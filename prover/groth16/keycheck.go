package groth16

import (
	"fmt"
	"strings"

	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
)

// checkKeyShape checks that pk was made for a circuit of asg's shape: as
// many wires, as many public wires (the constant 1 included) and the same
// NTT domain. The error wraps ErrKeyMismatch and names each quantity that
// differs with the key's and the assignment's value, so the two numbers
// printed always differ. Circuits of identical shape cannot be told apart
// here; the Prover keys them by the hash of their constraint system.
//
// nbCommitted is the number of wires the K MSM leaves out for the
// commitments (kExcluded): the key has no [K]₁ base for them.
func checkKeyShape(pk *groth16_bls12381.ProvingKey, asg *Assignment, nbCommitted int) error {
	nbWires := len(asg.Wires)
	var diffs []string
	differ := func(what string, key, asgn int) {
		if key != asgn {
			diffs = append(diffs, fmt.Sprintf("%s: key %d, assignment %d", what, key, asgn))
		}
	}
	differ("wires", len(pk.InfinityA), nbWires)
	if len(pk.InfinityB) != len(pk.InfinityA) {
		// A key that is inconsistent in itself (read from a damaged file).
		differ("wires of [B] bases", len(pk.InfinityB), nbWires)
	}
	differ("public wires", len(pk.InfinityA)-len(pk.G1.K)-nbCommitted, asg.NbPublic)
	differ("domain", int(pk.Domain.Cardinality), asg.DomainSize)
	if int(pk.Domain.Cardinality) == asg.DomainSize {
		differ("[Z] bases", len(pk.G1.Z), asg.DomainSize-1)
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrKeyMismatch, strings.Join(diffs, "; "))
}
