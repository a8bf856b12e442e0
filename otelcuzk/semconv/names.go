package semconv

import "go.opentelemetry.io/otel/attribute"

// ScopeName is the instrumentation scope of every span this project emits.
const ScopeName = "github.com/otelcuzk/otelcuzk"

// Span names of the proof's span tree (DESIGN.md, "Layers and the span tree
// of one proof"). They are low-cardinality by construction: kernel function
// names are a fixed set and may also be span names.
const (
	SpanEngineJob          = "engine.job"          // one proof request, from submit to result
	SpanEngineQueue        = "engine.queue"        // waiting for a worker
	SpanPipelineSynthesize = "pipeline.synthesize" // R1CS solve: witness -> a, b, c, wires
	SpanPipelineProve      = "pipeline.prove"      // the outer prove timer (cuzk's gpu_ms)
	SpanGroth16Prove       = "groth16.prove"       // the prover call
	SpanGPULock            = "gpu.lock"            // waiting for the device
	SpanMemcpyHtoD         = "cuda.memcpy.htod"    // host to device copy
	SpanMemcpyDtoH         = "cuda.memcpy.dtoh"    // device to host copy
	SpanComputeH           = "groth16.compute_h"   // H = (a·b − c)/Z by NTTs
	SpanNTTInverse         = "ntt.inverse"         // inverse NTT of one vector
	SpanNTTCoset           = "ntt.coset"           // forward NTT on the coset
	SpanNTTInverseCoset    = "ntt.inverse_coset"   // inverse NTT on the coset
	SpanPointwise          = "groth16.pointwise"   // (a·b − c)/Z(g) on the coset
	SpanMSMG1A             = "msm.g1.a"            // Σ wᵢ·[Aᵢ]₁
	SpanMSMG1B             = "msm.g1.b"            // Σ wᵢ·[Bᵢ]₁
	SpanMSMG1K             = "msm.g1.k"            // Σ wᵢ·[Kᵢ]₁ over private wires
	SpanMSMG1H             = "msm.g1.h"            // Σ hᵢ·[Zᵢ]₁
	SpanMSMG2B             = "msm.g2.b"            // Σ wᵢ·[Bᵢ]₂
	SpanGroth16Assemble    = "groth16.assemble"    // r, s blinding and affine conversion
	SpanGPUTotal           = "gpu.total"           // first to last device operation, GPU clock
	SpanBufferRelease      = "buffer.release"      // freeing a large host or device buffer
	SpanPipelineSerialize  = "pipeline.serialize"  // proof to bytes
	SpanProofVerify        = "proof.verify"        // optional self-check with gnark's verifier
	SpanKeyLoad            = "keys.load"           // proving key from cache or setup
	SpanKeysPreload        = "keys.preload"        // a proving-key base set uploaded to the GPU (resident)
	SpanUntraced           = "untraced"            // emitted by the untraced-time processor
	SpanCurioTask          = "curio.task"          // a Curio harmonytask Do, as the caller's root
)

// SpanFilterWires is the span of the A, B and K MSMs' wire vectors (the
// wires whose base is not at infinity), copied while groth16.compute_h
// runs; its attributes are their lengths, cuzk.wires.a, .b and .k.
const SpanFilterWires = "groth16.filter_wires"

// Attribute keys. cuzk.* are proving facts, cuda.* device facts, and the
// filecoin.* / curio.* keys are the caller's, for correlation.
const (
	// Proving facts.
	KeyRequestID          = attribute.Key("cuzk.request.id")          // string, caller's idempotency key
	KeyJobID              = attribute.Key("cuzk.job.id")              // string, engine's job id
	KeyCircuitID          = attribute.Key("cuzk.circuit.id")          // string, e.g. "merkle"
	KeyCircuitConstraints = attribute.Key("cuzk.circuit.constraints") // int, R1CS constraint count
	KeyCircuitWires       = attribute.Key("cuzk.circuit.wires")       // int, wire count (public+private)
	KeyDomainSize         = attribute.Key("cuzk.domain.size")         // int, NTT domain size (power of two)
	KeyPartitionIndex     = attribute.Key("cuzk.partition.index")     // int, partition of a multi-partition proof
	KeyPriority           = attribute.Key("cuzk.priority")            // string: LOW, NORMAL, HIGH, CRITICAL
	KeyBackend            = attribute.Key("cuzk.backend")             // string: cpu or cuda
	KeyMSMSize            = attribute.Key("cuzk.msm.size")            // int, number of points of an MSM
	KeyMSMWindowBits      = attribute.Key("cuzk.msm.window_bits")     // int, Pippenger window size c
	KeyMSMChunks          = attribute.Key("cuzk.msm.chunks")          // int, device passes of one MSM
	KeyBaseSetID          = attribute.Key("cuzk.key.base_set")        // string, BaseSet.ID of a proving-key part
	KeyResidentBytes      = attribute.Key("cuzk.key.resident_bytes")  // int, device bytes of resident base sets
	KeyNTTSize            = attribute.Key("cuzk.ntt.size")            // int, length of an NTT
	KeyWiresA             = attribute.Key("cuzk.wires.a")             // int, wires of the A MSM (finite [A]₁ bases)
	KeyWiresB             = attribute.Key("cuzk.wires.b")             // int, wires of the B MSMs (finite [B]₁ bases)
	KeyWiresK             = attribute.Key("cuzk.wires.k")             // int, wires of the K MSM (private, not committed)
	KeyBufferBytes        = attribute.Key("cuzk.buffer.bytes")        // int, bytes released
	KeyBufferKind         = attribute.Key("cuzk.buffer.kind")         // string: mmap, pinned, device, heap
	KeyBufferName         = attribute.Key("cuzk.buffer.name")         // string: which buffer (a, b, c, wires, h, ...)
	KeyReleaseMode        = attribute.Key("cuzk.release.mode")        // string: sync, async, pool
	KeyUntracedMS         = attribute.Key("cuzk.untraced.ms")         // float, ms of the parent no child covers
	KeyUntracedParent     = attribute.Key("cuzk.untraced.parent")     // string, name of the span the gap is in
	KeyProofVerified      = attribute.Key("cuzk.proof.verified")      // bool, verifier's verdict
	KeyProofBytes         = attribute.Key("cuzk.proof.bytes")         // int, serialized proof size
	KeyQueueDepth         = attribute.Key("cuzk.queue.depth")         // int, jobs ahead at submit
	KeyKeyCacheHit        = attribute.Key("cuzk.key.cache_hit")       // bool, proving key came from the cache
	KeyClampedSpans       = attribute.Key("cuzk.clamped_spans")       // int, device spans clamped into their host parent
	KeyAggregatedCount    = attribute.Key("cuzk.aggregate.count")     // int, launches folded into one span
	KeyAggregatedTotalMS  = attribute.Key("cuzk.aggregate.total_ms")  // float, ms summed over folded launches
	KeyAggregatedMinMS    = attribute.Key("cuzk.aggregate.min_ms")    // float, shortest folded launch, ms
	KeyAggregatedMaxMS    = attribute.Key("cuzk.aggregate.max_ms")    // float, longest folded launch, ms

	// Device facts.
	KeyCUDAKernelName    = attribute.Key("cuda.kernel.name")    // string, kernel function name
	KeyCUDAGrid          = attribute.Key("cuda.grid")           // string "x,y,z", blocks
	KeyCUDABlock         = attribute.Key("cuda.block")          // string "x,y,z", threads
	KeyCUDASharedBytes   = attribute.Key("cuda.shared_bytes")   // int, dynamic shared memory, bytes
	KeyCUDAStream        = attribute.Key("cuda.stream")         // int, stream ordinal within the context
	KeyCUDADeviceOrdinal = attribute.Key("cuda.device.ordinal") // int
	KeyCUDABytes         = attribute.Key("cuda.bytes")          // int, bytes copied or allocated
	KeyCUDAGBPerSecond   = attribute.Key("cuda.gbps")           // float, copy bandwidth, 1e9 bytes/s
	KeyCUDAGPUMS         = attribute.Key("cuda.gpu_ms")         // float, duration measured by CUDA events, ms

	// Caller's correlation keys (Curio / Filecoin).
	KeyMinerID      = attribute.Key("filecoin.miner.id")      // string, e.g. "f01234"
	KeySectorNumber = attribute.Key("filecoin.sector.number") // int
	KeyTaskID       = attribute.Key("curio.task.id")          // int, harmonytask id
	KeyTaskName     = attribute.Key("curio.task.name")        // string, e.g. "WdPost"

	// error.type as the OTel semantic conventions define it: one of the
	// ErrorType* values below, set by SetError.
	KeyErrorType = attribute.Key("error.type")
)

// Values of error.type (KeyErrorType) on a failed span: the one vocabulary
// of the project, a fixed set of low-cardinality words as the OTel
// semantic conventions ask of error.type (never a Go type name, a message
// or an id). ErrorType picks one for an error: the first error in its tree
// (the order errors.As walks) that is one of the standard errors named
// below or declares its value (NewError, or an ErrorType() string method).
// ErrorTypeOther is the conventions' fallback for the rest.
const (
	// The caller's context was canceled (context.Canceled), or the job was
	// (engine.ErrCancelled: Cancel, Shutdown).
	ErrorTypeCanceled = "canceled"
	// A deadline passed (context.DeadlineExceeded).
	ErrorTypeDeadlineExceeded = "deadline_exceeded"
	// The request is malformed: an unknown backend or release mode, a bad
	// constraint count, an empty request id, a circuit file spec that does
	// not parse (engine.ErrInvalidRequest, prover.ErrUnknownBackend,
	// circuits.ErrBadConstraints, ...).
	ErrorTypeInvalidRequest = "invalid_request"
	// What the request names does not exist: a circuit, a job, a trace
	// (circuits.ErrUnknownCircuit, engine.ErrUnknownJob,
	// tracefile.ErrTraceNotFound).
	ErrorTypeNotFound = "not_found"
	// The request id is already used for another proof
	// (engine.ErrRequestConflict).
	ErrorTypeConflict = "conflict"
	// The job has already finished, so it can no longer be cancelled
	// (engine.ErrJobFinished).
	ErrorTypeFinished = "finished"
	// A restart of the daemon interrupted the job; submitting the same
	// request id again proves it (engine.ErrInterrupted).
	ErrorTypeInterrupted = "interrupted"
	// What the work needs is not available now, though it may be later: the
	// engine shut down (engine.ErrClosed), a state file locked by another
	// daemon (journal.ErrLocked), CUPTI held by another tool
	// (cupti.ErrInUse), spans an exporter could not send
	// (otelcuzk.ErrSpansDropped).
	ErrorTypeUnavailable = "unavailable"
	// The witness is not gnark's binary format over the scalar field, is
	// missing, or has the wrong number of values (groth16.ErrBadWitness,
	// groth16.ErrWitnessSize).
	ErrorTypeBadWitness = "bad_witness"
	// The witness does not satisfy the constraints (groth16.ErrUnsatisfied).
	ErrorTypeUnsatisfied = "unsatisfied"
	// Not a BLS12-381 R1CS of gnark, or an operation this build or host
	// does not support (setup.ErrUnsupported, errors.ErrUnsupported,
	// cupti.ErrNoCUPTI, cupti.ErrVersion).
	ErrorTypeUnsupported = "unsupported"
	// The proving key does not belong to the constraint system
	// (groth16.ErrKeyMismatch).
	ErrorTypeKeyMismatch = "key_mismatch"
	// gnark's verifier rejected the proof just made (prover.ErrVerifyFailed).
	ErrorTypeVerifyFailed = "verify_failed"
	// The engine's queue is full (engine.ErrQueueFull).
	ErrorTypeQueueFull = "queue_full"
	// A configured budget cannot hold the work: the engine's host memory
	// budget (engine.ErrOverBudget), the device base budget
	// (msm.ErrBaseBudget).
	ErrorTypeOverBudget = "over_budget"
	// Host or device memory cannot hold the work (cudaspans.ErrOutOfMemory,
	// msm.ErrTooLarge, circuits.ErrTooLargeForHost).
	ErrorTypeOutOfMemory = "out_of_memory"
	// No usable device or backend (cudaspans.ErrNoDevice,
	// backend.ErrUnavailable, backend.ErrNoDeviceMemory,
	// engine.ErrNoWorker).
	ErrorTypeNoDevice = "no_device"
	// The device can no longer be trusted with work: a sticky CUDA error
	// (cudaspans.ErrSticky, backend.ErrDeviceFault).
	ErrorTypeDeviceFault = "device_fault"
	// A resident base set was evicted from the device while in use
	// (msm.ErrBaseSetEvicted).
	ErrorTypeEvicted = "evicted"
	// Any other failed CUDA driver or NVRTC call (cudaspans.Error,
	// cudaspans.CompileError, cudaspans.ErrNoCompiler).
	ErrorTypeCUDA = "cuda"
	// A file or operating-system call failed (*fs.PathError, *os.LinkError,
	// *os.SyscallError, syscall.Errno, io.ErrUnexpectedEOF).
	ErrorTypeIO = "io"
	// Stored or received bytes are not the ones written (failed checksums,
	// no checksum trailer) or cannot be decoded (prover/keycache,
	// journal.ErrCorrupt, tracefile.ErrMalformed).
	ErrorTypeCorrupt = "corrupt"
	// The traced function panicked (RunTask).
	ErrorTypePanic = "panic"
	// None of the above: the OTel semantic conventions' fallback value.
	ErrorTypeOther = "_OTHER"
)

// Span names of device operations recorded by cudaspans. Kernel spans are
// named by the kernel function's name.
const (
	SpanMemcpyDtoD         = "cuda.memcpy.dtod"     // device to device copy
	SpanCUDAMemset         = "cuda.memset"          // device memory fill
	SpanCUDAMalloc         = "cuda.malloc"          // device or pinned host allocation
	SpanCUDAFree           = "cuda.free"            // device or pinned host free
	SpanCUDAHostRegister   = "cuda.host_register"   // pinning existing host memory
	SpanCUDAHostUnregister = "cuda.host_unregister" // unpinning registered host memory
	SpanCUDACompile        = "cuda.compile"         // NVRTC compile or kernel-cache hit
	SpanCUDAModuleLoad     = "cuda.module.load"     // cubin or PTX module load
	// SpanCUDANVRTC is the NVRTC compile itself (loading NVRTC, compiling,
	// writing the kernel cache), a child of cuda.compile on a cache miss,
	// so a minute of compile is not reported as untraced time.
	SpanCUDANVRTC = "cuda.nvrtc.compile"
	// SpanGPUWarmup is a backend compiling or loading all its kernel
	// modules (a cuda.compile child each, in parallel): at cuzk serve's
	// start, or inside the first proof's groth16.prove, before gpu.lock.
	SpanGPUWarmup = "gpu.warmup"
	// KeyWarmupShared is true on a gpu.warmup span that waited for another
	// caller's warm-up instead of compiling (bool).
	KeyWarmupShared = attribute.Key("cuzk.warmup.shared")
)

// Attribute keys of device operations recorded by cudaspans.
const (
	KeyCUDAClamped    = attribute.Key("cuda.clamped")          // bool, span moved into its host parent's interval
	KeyCUDAClock      = attribute.Key("cuda.clock")            // string: gpu (CUDA events) or host (host clock)
	KeyCUDAArch       = attribute.Key("cuda.arch")             // string, e.g. "sm_90"
	KeyCUDACacheHit   = attribute.Key("cuda.kernel_cache.hit") // bool, compiled module came from the disk cache
	KeyCUDAModuleName = attribute.Key("cuda.module.name")      // string, name given to Compile or the file loaded
	KeyCUDAOpCount    = attribute.Key("cuda.op.count")         // int, device operations covered (gpu.total)
	KeyCUDABusyMS     = attribute.Key("cuda.gpu_busy_ms")      // float, gpu.total: time some device operation ran, ms
	KeyCUDAIdleMS     = attribute.Key("cuda.gpu_idle_ms")      // float, gpu.total: device idle inside it, waiting on the host, ms
	KeyCUDACacheKey   = attribute.Key("cuda.kernel_cache.key") // string, SHA-256 (hex) of the compile inputs
	KeyCUDANVRTCOpts  = attribute.Key("cuda.nvrtc.options")    // string slice, NVRTC options in order
)

// Keys added for the resource's GPUs and the Curio task helper.
const (
	// KeyHWGPUMemoryLimit is the total memory of each GPU, bytes (int slice,
	// one per device; hw.gpu.memory.limit of the hardware conventions).
	KeyHWGPUMemoryLimit = attribute.Key("hw.gpu.memory.limit")
	// KeyTaskDone is the bool a harmonytask Do returned: true when the task
	// completed, false when it is to be retried or was given up.
	KeyTaskDone = attribute.Key("curio.task.done")
	// MetricSpansDropped names the counter of spans lost to failed exports.
	MetricSpansDropped = "cuzk.spans.dropped"
)

// Span names of the prover's setup work, outside the proof's critical path.
const (
	SpanCircuitCompile = "circuit.compile" // gnark frontend compile of a built-in circuit to R1CS
	SpanCircuitBuild   = "circuit.build"   // a built-in circuit sized for its constraint count (a size its shape refuses ends here) and its memory checked, before circuit.compile
)

// Span names and keys of the circuit and key caches (prover/keycache): the
// steps of circuit.compile and keys.load.
const (
	SpanCircuitFrontend    = "circuit.frontend"     // gnark frontend.Compile itself (a cache miss)
	SpanCircuitCacheRead   = "circuit.cache.read"   // cached circuit mapped and its checksums verified
	SpanCircuitCacheDecode = "circuit.cache.decode" // gnark's ReadFrom of the cached constraint system
	SpanCircuitCacheStore  = "circuit.cache.store"  // compiled circuit and its hash written to the cache
	SpanCircuitCacheKey    = "circuit.cache.key"    // what keys the circuit cache found, the first circuit.compile of a process (the executable hashed, or its memo)
	SpanKeysHash           = "keys.hash"            // SHA-256 of the serialized constraint system (no cached hash)
	SpanKeysRead           = "keys.read"            // key file mapped and its checksums verified
	SpanKeysDecode         = "keys.decode"          // verifying and proving key decoded from the file
	SpanKeysStore          = "keys.store"           // keys written to the cache after a setup
	SpanKeysSetup          = "keys.setup"           // gnark groth16.Setup (a key cache miss)
	// SpanKeysLock is a wait for the lock of a key another process (or
	// another cache of this one) holds while it makes and stores that key;
	// its key is then read. Only when the lock was held: an uncontended
	// lock has no span.
	SpanKeysLock = "keys.lock"
	// SpanCircuitCacheLock is circuit.compile's wait for the lock of its
	// circuit and size held by another compile and store of it; only when
	// it was held.
	SpanCircuitCacheLock = "circuit.cache.lock"
	// SpanCircuitPlanRead is the component solver's plan of a cached
	// circuit read from its file beside the circuit and checked
	// (prover/groth16.ReadPlan), after circuit.cache.decode;
	// cuzk.solver.plan says what it found. With "cache" the process has
	// the plan: no synthesize.plan makes it.
	SpanCircuitPlanRead = "circuit.plan.read"
	// SpanCircuitPlanStore is the plan written beside the cached circuit
	// (groth16.WritePlan) after a compile, or after a circuit.plan.read
	// that found none or refused it; synthesize.plan, just before it
	// under circuit.compile too, made the plan.
	SpanCircuitPlanStore = "circuit.plan.store"
	// KeySolverPlan is what circuit.plan.read found: cache (the plan,
	// read and kept), missing (no plan file) or refused (a file that did
	// not fit the circuit or was damaged; an event says why).
	KeySolverPlan = attribute.Key("cuzk.solver.plan")

	KeyCircuitCache = attribute.Key("cuzk.circuit.cache") // string: hit, miss, stale, corrupt, off, no_store (ephemeral keys: compiled, not stored)
	// KeyCircuitCacheKeySource is how circuit.cache.key found the key:
	// revision, process, stamp, identity (a go run binary at a new
	// path) or hash (the executable's bytes read).
	KeyCircuitCacheKeySource = attribute.Key("cuzk.circuit.cache.key_source")
	KeyFileBytes             = attribute.Key("cuzk.file.bytes")      // int, bytes of a cache file read
	KeyKeyHashSource         = attribute.Key("cuzk.key.hash_source") // string: circuit_cache (stored), computed, or ephemeral (an ID of an ephemeral setup, nothing hashed)
	KeyKeyChecked            = attribute.Key("cuzk.key.checked")     // bool, the key file's checksums were verified

	// The steps of pipeline.synthesize.
	SpanSynthesizeWitness = "synthesize.witness" // the request's witness parsed, or a built-in's sample computed
	SpanSynthesizeSolve   = "synthesize.solve"   // gnark's R1CS solver (hints included): wires and a, b, c
	// SpanSynthesizePlan is the component solver's plan of a compiled
	// circuit (its independent components) being made, once per circuit
	// in a process, with cuzk.solver.components: just before the first
	// synthesize.solve that asks for it, under the same parent; or under
	// circuit.compile, before circuit.plan.store, when the circuit cache
	// makes it to store it. None when circuit.plan.read read it.
	SpanSynthesizePlan = "synthesize.plan"
	SpanSynthesizeCopy = "synthesize.copy" // wires and a, b, c copied into the mmap'd buffers

	KeyWitnessSource = attribute.Key("cuzk.witness.source") // string: request or sample
	KeySolverTasks   = attribute.Key("cuzk.solver.tasks")   // int, goroutines gnark's solver splits a level into
	KeySolverLevels  = attribute.Key("cuzk.solver.levels")  // int, levels of independent constraints of the R1CS
	// KeySolverParts is the parts the level solver settled on for its
	// widest levels (measured while it solves; 1: one goroutine did them).
	KeySolverParts = attribute.Key("cuzk.solver.parts")
	// KeySolverComponents is the number of independent components the
	// component solver shared out over its goroutines (sets of
	// constraints joined by the wires they share past the first levels;
	// prover/groth16/compsolve.go).
	KeySolverComponents = attribute.Key("cuzk.solver.components")
	// KeySolver names the solver of synthesize.solve: "levels" (this
	// project's, by levels, into the mmap'd buffers: synthesize.copy then
	// only allocates them), "components" (this project's, whole
	// independent components per goroutine, into the buffers too) or
	// "gnark" (gnark's Solve, then the copy).
	KeySolver = attribute.Key("cuzk.solver")
	// KeySolverHintCalls is the calls of the circuit's hints in one solve
	// (the commitment hint not counted: msm.g1.commitment is its span).
	KeySolverHintCalls = attribute.Key("cuzk.solver.hint_calls")
	// KeySolverHintCPU is the time spent in those calls, ms, summed over
	// the solver's goroutines (CPU time, not wall time; float).
	KeySolverHintCPU = attribute.Key("cuzk.solver.hint_cpu_ms")
)

// Span names and keys of host-side staging for device copies (prover/gpu).
const (
	// SpanHostStage is one host vector moved between pageable memory and
	// the device through pinned staging memory (CPU copies overlapping
	// the DMA); its cuda.memcpy.* chunks are children.
	SpanHostStage = "cuda.host_stage"
	// KeyHostCopyMode is how host vectors reach the device: staged,
	// register, registered or pageable (on a cuda.host_stage span, and on
	// the cuda.memcpy.* spans of registered copies).
	KeyHostCopyMode = attribute.Key("cuzk.host_copy")
)

// Span names and keys of Groth16 with commitments (gnark's api.Commit,
// BSB22: eprint 2022/1072), prover/commitment.go.
const (
	// SpanMSMG1Commitment is Σ vⱼ·[Basisⱼ]₁ of one commitment over its
	// private committed wires, on the CPU inside the solver's commitment
	// hint (a child of synthesize.solve, under pipeline.synthesize).
	SpanMSMG1Commitment = "msm.g1.commitment"
	// SpanMSMG1CommitmentPok is Σ vⱼ·[σ·Basisⱼ]₁, the proof of knowledge of
	// one commitment, on the backend (a child of groth16.prove).
	SpanMSMG1CommitmentPok = "msm.g1.commitment_pok"
	// KeyCommitmentIndex is the commitment an msm.g1.commitment* span is
	// for (int, 0-based, gnark's order).
	KeyCommitmentIndex = attribute.Key("cuzk.commitment.index")
	// KeyCommitmentCount is the number of commitments of the circuit (int,
	// on groth16.prove when non-zero).
	KeyCommitmentCount = attribute.Key("cuzk.commitment.count")
)

// Span names and keys of the engine's stages (prover/engine): a job waits
// in engine.queue for a synthesis slot, in engine.budget for host memory,
// is synthesized (pipeline.synthesize), waits in gpu.queue for a device
// worker, and is proved (pipeline.prove). All are children of engine.job.
const (
	SpanEngineBudget = "engine.budget" // waiting for the memory budget to admit the job
	SpanGPUQueue     = "gpu.queue"     // synthesized, waiting for a device worker
	SpanEngineWarmup = "engine.warmup" // waiting for the devices' kernels to be compiled or loaded
	// SpanEnginePartition is one partition of a multi-partition request,
	// under the request's engine.job (cuzk.partition.index).
	SpanEnginePartition = "engine.partition"
	// KeyMemoryBytes is the host memory estimated for a job, bytes (int).
	KeyMemoryBytes = attribute.Key("cuzk.memory.bytes")
	// KeyMemoryBudget is the engine's memory budget, bytes (int).
	KeyMemoryBudget = attribute.Key("cuzk.memory.budget")
	// KeyPartitions is the number of partitions of a request (int).
	KeyPartitions = attribute.Key("cuzk.partitions")
	// KeyRequeuedFrom names the device worker whose fault sent a job back
	// to the queue (on its new engine.queue span and the fault event).
	KeyRequeuedFrom = attribute.Key("cuzk.requeued_from")
	// KeyJobState is the state a cancel found a job in (string, the
	// engine's State names: QUEUED, SYNTHESIZING, WAITING_DEVICE,
	// PROVING, RUNNING), on the "cancelled" event of its engine.job (or
	// engine.partition) span: the stage it stopped in, at the end of that
	// stage's running step.
	KeyJobState = attribute.Key("cuzk.job.state")

	// SpanEngineAbandoned is work a cancelled (or timed-out) job's runner
	// left running because it cannot stop (a key setup, a circuit
	// compile: prover.AbandonedWork), from the runner's return to the
	// work's real end. It is a child of the job's engine.job (or
	// engine.partition), starts as the job ends and outlives it, as an
	// async buffer.release does: cuzk.job.id names the job,
	// cuzk.abandoned.step the work, cuzk.abandoned.synthesis_slot whether
	// it holds a synthesis slot (else it holds the device worker
	// cuzk.abandoned.worker), cuzk.memory.bytes the budget it keeps.
	SpanEngineAbandoned = "engine.abandoned"
	// KeyAbandonedStep is the work left running (string: keys.setup,
	// circuit.compile), on engine.abandoned, on the engine.queue of a job
	// that waited for it, and on EventWaitingForAbandoned.
	KeyAbandonedStep = attribute.Key("cuzk.abandoned.step")
	// KeyAbandonedSynthesisSlot is whether abandoned work holds a
	// synthesis slot (bool, on engine.abandoned; false: a serial engine's
	// device worker, KeyAbandonedWorker).
	KeyAbandonedSynthesisSlot = attribute.Key("cuzk.abandoned.synthesis_slot")
	// KeyAbandonedWorker is the device worker abandoned work holds
	// (string, on engine.abandoned of a serial engine).
	KeyAbandonedWorker = attribute.Key("cuzk.abandoned.worker")
	// KeyAbandonedJobID is the cancelled job whose abandoned work a queued
	// job waited for (string, on its engine.queue and
	// EventWaitingForAbandoned; the first such work when there were
	// several).
	KeyAbandonedJobID = attribute.Key("cuzk.abandoned.job.id")
	// KeyAbandonedWaitMS is the part of an engine.queue wait during which
	// abandoned work held one of the slots the queue feeds (float, ms;
	// only when not 0).
	KeyAbandonedWaitMS = attribute.Key("cuzk.abandoned.wait_ms")
)

// EventWaitingForAbandoned is the event on an engine.queue span whose job
// waits because abandoned work (SpanEngineAbandoned) holds a slot and no
// other is free: when it entered the queue, or when the work was
// abandoned while it waited; KeyAbandonedJobID and KeyAbandonedStep name
// the work, one event for each.
const EventWaitingForAbandoned = "waiting for abandoned work"

// The scalars of msm.g1.a, msm.g1.b, msm.g1.k and msm.g2.b by kind, as
// counts out of cuzk.msm.size (ints, on the MSM span): exactly 0, exactly
// 1, and small, from 2 to 2^64−1 (one 64-bit word once out of Montgomery
// form); the rest are full-width. Filecoin's witnesses are mostly 0 and 1
// (the porep circuit's too), which a bit path sums by batch addition
// instead of Pippenger. The prover counts 0 and 1 while H is computed and
// the small ones beside the MSMs, added when the MSM span ends
// (groth16.CountScalars, backend.Call.Late).
const (
	KeyMSMScalarsZero  = attribute.Key("cuzk.msm.scalars.zero")  // int, scalars equal to 0
	KeyMSMScalarsOne   = attribute.Key("cuzk.msm.scalars.one")   // int, scalars equal to 1
	KeyMSMScalarsSmall = attribute.Key("cuzk.msm.scalars.small") // int, scalars in [2, 2^64)
)

// The steps of a Groth16 key setup made by prover/setup (cuzk setup
// --backend cuda, setup.Setup), under keys.setup: the evaluation of the
// constraint polynomials at the secret point on the CPU, one span per key
// vector's fixed-base scalar multiplications (cuzk.setup.vector: alpha_beta_delta,
// a, b, z, k_vk, k_pk, commitment; cuzk.setup.points), the Pedersen keys and
// the verifying key's pairing; setup.table is the GPU's windowed table of
// the generator (prover/gpu/fixedbase).
const (
	SpanSetupEvaluate     = "setup.evaluate"      // A(τ), B(τ), C(τ), K and Z scalars
	SpanSetupG1           = "setup.g1"            // [s]₁ of one key vector
	SpanSetupG2           = "setup.g2"            // [s]₂ of one key vector
	SpanSetupCommitment   = "setup.commitment"    // Pedersen keys of api.Commit
	SpanSetupVerifyingKey = "setup.verifying_key" // e(α, β) and the negated G2 points
	SpanSetupTable        = "setup.table"         // the generator's window table, built and uploaded

	KeySetupVector  = attribute.Key("cuzk.setup.vector")  // string, which key vector
	KeySetupPoints  = attribute.Key("cuzk.setup.points")  // int, points computed
	KeySetupBackend = attribute.Key("cuzk.setup.backend") // string, cpu or cuda
)

// The bit split of an MSM over wire values (groth16.BitSplit): the MSM's
// span (msm.g1.a, ...) is the parent of NAME.batch_add, the sum of the
// bases of the wires equal to 1 by batch addition, and NAME.tail, the
// Pippenger MSM over the rest; the wires equal to 0 are skipped. The
// parent carries the counts (ints): points batch-added and points left
// to the tail (neither 0 nor 1).
const (
	SpanSuffixBatchAdd   = ".batch_add"
	SpanSuffixTail       = ".tail"
	KeyMSMBatchAddPoints = attribute.Key("cuzk.msm.batch_add.points") // int, wires equal to 1
	KeyMSMTailPoints     = attribute.Key("cuzk.msm.tail.points")      // int, wires neither 0 nor 1
)
