// Package gpu is the CUDA backend of the prover, registered with
// backend.Register as "cuda": Backend (backend.Backend, ProofScoper,
// Warmer) on one device, built from the engines of its sub-packages.
//
//   - backend.go: Backend, Open, Close, EvictBases;
//   - warmup.go: Warmup (every kernel module compiled or loaded at once);
//   - proof.go: the proof's device scope (BeginProof: gpu.warmup,
//     gpu.lock, gpu.total);
//   - computeh.go, msmcall.go, batchadd.go, preparekey.go: ComputeH, the
//     MSMs, the commitment's batch additions and the key's bases made
//     resident;
//   - hostcopy.go: host vectors to and from the device as
//     backend.HostCopy says: staged through two pinned buffers of
//     StageChunk bytes (allocated on first use, kept between proofs,
//     released at Close; the CPU copy of one chunk overlapping the DMA of
//     the previous one, cuda.host_stage spans), registered with the driver
//     for one call (cuda.host_register, then a buffer.release span of kind
//     pinned), or copied from pageable memory as it is;
//   - registered.go: the registered mode's registry of host buffers
//     (buffer.Mmap) registered once and kept until their unmap
//     (Mmap.OnUnmap) or Close, so pooled buffers are copied by direct DMA;
//   - settings.go: SetHostCopy, SetMSMG2 (backend.DeviceSettings changed
//     after Open); fault.go: a sticky device fault;
//   - rate.go: the multiply-rate probes of the bench (MeasureRates).
//
// The sub-packages, one concept each:
//
//   - kernels: the CUDA C++ sources, embedded, and kernels.Module, one
//     NVRTC compile;
//   - ntt: the NTT engine over Fr and groth16's compute_h on the device;
//   - msm: Pippenger's MSM on G1 and G2 (one generic Go path), its plan and
//     point layouts, and DeviceBases, the proving-key bases kept on the
//     device across proofs;
//   - internal/hostarith, internal/hostec: the kernel headers compiled as
//     plain C++ and tested against gnark-crypto without a GPU;
//     internal/fakedevice: a fake CUDA device for tests; internal/gputest:
//     shared test helpers.
//
// Kernels are compiled at run time by NVRTC through cudaspans, which caches
// the images on disk, so one binary runs with or without a GPU (Open wraps
// backend.ErrUnavailable without one). Every device operation is a
// cudaspans span (kernels by function name, copies, allocations,
// cuda.compile); the engines add their step spans (ntt.*, msm.*,
// keys.preload). Names are in otelcuzk/semconv/names.go.
package gpu
