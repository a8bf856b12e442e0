// Package msm computes multi-scalar multiplications on G1 and G2 of
// BLS12-381 on one CUDA device with Pippenger's bucket method (MSM;
// prover/gpu/kernels' msm.cuh describes the steps), and keeps proving-key
// base sets resident on the device across proofs (DeviceBases, cuzk's
// hot tier of the SRS).
//
// msm.go: the MSM, New, FromModules, Close; options.go its options
// (WithTracerProvider and WithReleaser are shared with NewDeviceBases);
// compile.go the modules msm.cu is compiled as (Modules: a scalar part
// shared by both groups and four point parts per group, compiled at
// once); plan.go the device plan of one pass (window bits, workspace
// layout); points.go the C layouts of the window sums and their
// combination on the host; call.go the calls (BaseSet and Call, what a
// caller passes explicitly: span, key ID, attributes), G1 and G2 as one
// generic Go path over the gnark-crypto types (the G1*/G2* methods are its
// instances); run.go the chunked device passes and their workspace.
// devicebases.go: DeviceBases and ResidentBases; proofbuffers.go: the
// device buffers kept per proving key; errors.go: the sentinel errors
// (ErrTooLarge, ErrBaseSetEvicted, ErrBaseBudget). Scalars and points are
// gnark-crypto values in Montgomery form, copied byte for byte.
//
// Spans: msm.g1.*, msm.g2.b (with cuzk.msm.size, window bits, chunks) and
// keys.preload, the kernels, copies and allocations as children.
package msm
