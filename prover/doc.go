// Package prover runs whole proof requests: Prover holds a backend
// (prover/backend's registry: "cpu" from prover/cpu, "cuda" from
// prover/gpu) with the circuits it has loaded from prover/circuits' one
// registry (the built-ins, and circuits registered from files with
// circuits.RegisterFiles or CircuitFile.Register) and their keys
// (prover/keycache), and runs a Request through synthesis, the prove
// (prover/groth16), serialization and verification; it implements Runner
// and StagedRunner for prover/engine: a Synthesized proof proves itself
// on the Device it is handed (Synthesized.Prove; a Prover is a Device),
// so one Prover may synthesize for the Provers of several GPUs.
//
// The Groth16 prove itself is prover/groth16 (Prove, Synthesize,
// ProveAssignment), the interface of its backends prover/backend, the CPU
// backend prover/cpu.
package prover
