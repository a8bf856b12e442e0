// Package groth16 is the Groth16 prove for BLS12-381 (Groth, EUROCRYPT
// 2016; the steps and notation of gnark's backend/groth16/bls12-381 and
// of DIZK, eprint 2018/691, fig. 4) over a backend.Backend, with every
// step an OpenTelemetry span.
//
// Bring your own circuit: compile it with gnark's frontend (r1cs builder,
// BLS12-381 scalar field), make keys with gnark's groth16.Setup, and call
// Prove with a full witness; gnark's groth16.Verify accepts the proof.
//
//	proof, err := groth16.Prove(ctx, ccs, pk, fullWitness)
//
// The steps, named as gnark's prove.go names them: Synthesize (the solve:
// gnark's R1CS solver or the level solver, the wires and the a, b, c
// evaluations copied into mmap'd buffers outside the Go heap; Solve is the
// same under the caller's span), then ProveAssignment: computeH
// (Backend.ComputeH), the wires filtered for the A, B and K MSMs beside it
// (filterwires.go, with the scalar counts and the bit split, scalars.go
// and bitsplit.go), the MSMs, and the assembly with the blinding r, s
// (prove.go). A circuit with commitments (gnark's api.Commit, BSB22) has
// its one step in commitment.go: the commitment inside the solve's hint,
// the proof of knowledge beside the MSMs, the fold in the proof.
//
// Options choose the backend (WithBackend; default the CPU backend of
// prover/cpu), how the large buffers are released (WithReleaser: sync,
// async or pool, each release a buffer.release span), the proving key's
// ID for backends that keep its bases resident (WithKeyID), fixed blinding
// scalars for tests (WithRandomness), the R1CS solver (WithSolver: by
// independent components or by levels, chosen per circuit by default) and
// the TracerProvider. PLONK systems
// and other curves are not supported (ErrUnsupported). prover.Prover
// runs whole requests over this package.
package groth16
