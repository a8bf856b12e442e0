// Package prover is a Groth16 prover for BLS12-381 (Groth, EUROCRYPT 2016;
// the steps and notation of gnark's backend/groth16 and of DIZK, eprint
// 2018/691, fig. 4) over a Backend interface, with every step an
// OpenTelemetry span.
//
// Bring your own circuit: compile it with gnark's frontend (r1cs builder,
// BLS12-381 scalar field), make keys with gnark's groth16.Setup, and call
// Prove with a full witness; gnark's groth16.Verify accepts the proof.
//
//	proof, err := prover.Prove(ctx, ccs, pk, fullWitness)
//
// Prove is Synthesize (gnark's R1CS solve; the wires and the a, b, c
// evaluations copied into mmap'd buffers outside the Go heap) then
// ProveAssignment (H by NTTs, the MSMs, assembly), both usable alone.
// Options choose the backend (WithBackend; default the CPU backend on
// gnark-crypto), how the large buffers are released (WithReleaser: sync,
// async or pool, each release a buffer.release span), fixed blinding
// scalars for tests (WithRandomness) and the TracerProvider.
//
// Pipeline runs whole requests for the circuits of prover/circuits' one
// registry (the built-ins, and circuits registered from files with
// circuits.RegisterFiles or CircuitFile.Register): key cache
// (prover/keycache), synthesis, prove, serialization and verification,
// and implements Runner for prover/engine.
//
// Backends register by name (RegisterBackend): "cpu" here, "cuda" from
// prover/gpu. Circuits with commitments (gnark's api.Commit, which
// std/rangecheck, std/math/emulated and std/lookup/logderivlookup use) are
// proved with gnark's BSB22 extension (commitment.go); Synthesize then
// needs the proving key (WithProvingKey; Prove passes it). PLONK systems
// and other curves are not supported (ErrUnsupported).
package prover
