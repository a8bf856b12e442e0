// Package backend is the interface between the Groth16 prove
// (prover/groth16) and what runs its heavy steps: Backend (ComputeH, the
// MSMs on G1 and G2, each call's Call passed explicitly), its optional
// interfaces (KeyPreparer, ProofScoper, BatchAdder, BaseEvicter, Warmer),
// and the registry that opens one by name (Register, Lookup, Factory,
// Options, DeviceSettings). The CPU backend is prover/cpu, the CUDA
// backend prover/gpu. backend.go holds the interfaces, registry.go the
// registry, errors.go the sentinels.
package backend
