// Package ntt runs number-theoretic transforms over the BLS12-381 scalar
// field on one CUDA device (Engine): forward, inverse and on a coset,
// sizes 2^0 to 2^MaxLogN, in gnark-crypto's element layout and orders
// (Decimation), and groth16's compute_h (inverse NTT, coset NTT,
// pointwise (a·b − c)/Z, inverse coset NTT) as gnark's computeH does it.
//
// ntt.go holds the engine (kernels compiled from prover/gpu/kernels'
// ntt.cu by NVRTC through cudaspans, Module; twiddle and coset tables
// built on the device once per domain); plan.go the passes a transform is
// cut into, the same plan the host tests run through hostarith's
// emulation of the kernels. Spans: ntt.inverse, ntt.coset,
// groth16.pointwise, ntt.inverse_coset, with the kernels (ntt_pass,
// groth16_pointwise) as children.
package ntt
