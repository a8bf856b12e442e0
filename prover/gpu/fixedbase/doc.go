// Package fixedbase computes the fixed-base scalar multiplications of a
// Groth16 key setup on one GPU: [sᵢ]₁ and [sᵢ]₂ of the BLS12-381
// generators for whole key vectors (kernels/fixedbase.cuh: a windowed
// table of the generator with signed digits, one thread per scalar, then
// a batch affine conversion with one inversion per run of points). Engine
// is a prover/setup.Multiplier, so setup.Setup with an Engine makes the
// same keys, byte for byte, as with the CPU's.
//
//   - table.go: the generator's window tables (G1Table, G2Table), built
//     on the host with gnark-crypto;
//   - engine.go: Engine (New on an open device context, Open on a device
//     ordinal), its passes over device memory and its errors.
package fixedbase
