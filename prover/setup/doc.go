// Package setup makes Groth16 keys for a BLS12-381 R1CS compiled by gnark,
// in gnark's own types (groth16/bls12-381 ProvingKey and VerifyingKey,
// Pedersen commitment keys included), with the work split the way a GPU
// wants it:
//
//   - the evaluation of the constraint polynomials at the secret point τ
//     (A(τ), B(τ), C(τ) per wire, the K and Z scalars) on the CPU, on all
//     cores (evaluate.go);
//   - the fixed-base scalar multiplications [s]₁ and [s]₂ of every key
//     vector by a Multiplier: CPU (gnark-crypto's batch multiplication) or
//     the GPU's (prover/gpu/fixedbase);
//   - the assembly of the keys exactly as gnark's groth16.Setup lays them
//     out (setup.go): points at infinity filtered out of A and B with
//     InfinityA/B and NbInfinityA/B, the Z query bit-reversed and cut to
//     n−1 points, K split between the proving key (private wires, ÷δ), the
//     verifying key (public wires and commitments, ÷γ) and the commitment
//     bases, and the Pedersen keys of each api.Commit.
//
// The secrets (ToxicWaste) are sampled from crypto/rand unless given
// (WithToxicWaste, for tests and reproducible benchmarks). Reference is
// gnark's setup algorithm as written in gnark v0.14 (sequential
// evaluation, gnark-crypto's batch multiplication, Pedersen keys from
// their σ) with given secrets; Setup with any Multiplier produces keys
// byte-identical to it (setup_test.go on the CPU, the GPU tests of
// prover/gpu/fixedbase on a device).
//
// Spans: setup.evaluate, setup.g1 and setup.g2 (one per key vector, with
// cuzk.setup.vector and cuzk.setup.points), setup.commitment,
// setup.verifying_key.
package setup
