// Package gpu is the CUDA backend of the prover, registered with
// prover.RegisterBackend as "cuda", and the GPU engines it is made of:
//
//   - backend.go: Backend (prover.Backend, ProofScoper, Warmer): Open,
//     Warmup (every kernel module compiled or loaded at once), the proof's
//     device scope (gpu.lock, gpu.total) and the host-copy staging of
//     vectors through pinned memory (HostCopy);
//   - ntt.go, nttplan.go: NTT, the number-theoretic transforms over Fr and
//     groth16's compute_h on the device, and the plan of their passes;
//   - msm.go: MSM, Pippenger's bucket method on G1 and on G2 (one generic
//     Go path over the two groups, as the kernels are one template), its
//     device plan, options and the C layouts of the points;
//   - keys.go: ResidentKeys, proving-key base sets kept on the device
//     across proofs (cuzk's hot tier of the SRS);
//   - rate.go: the multiply-rate probes of the bench.
//
// The kernels are CUDA C++ in kernels/ (ff.cuh: the fields; fp2.cuh: Fp2;
// ec.cuh: G1 and G2 as one template; ntt.cuh/ntt.cu; msm.cuh/msm.cu, one
// source compiled as several modules), embedded in the binary and
// compiled at run time by NVRTC through cudaspans, which caches the
// images on disk; so one binary runs with or without a GPU (Open wraps
// prover.ErrBackendUnavailable without one). The same headers are
// compiled as plain C++ by the test packages under internal/ (hostarith,
// hostec) and checked against gnark-crypto without a GPU.
//
// Spans: every device operation is a cudaspans span (kernels by function
// name, copies, allocations, cuda.compile); this package adds the step
// spans (groth16.compute_h's ntt.*, msm.g1.*, msm.g2.b, keys.preload,
// cuda.host_stage, gpu.warmup, gpu.lock). Names are in otelcuzk/names.go.
package gpu
