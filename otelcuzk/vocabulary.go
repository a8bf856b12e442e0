package otelcuzk

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// The vocabulary of this project's spans (span names, attribute keys,
// error.type values) moved to package semconv, a leaf that depends on the
// OpenTelemetry API only, so that buffer, cudaspans, cupti and the prover
// name their spans without linking the exporters and gRPC that this
// package does. The names below are aliases of semconv's, kept for code
// written against otelcuzk; each is the same constant, type or function.
//
// Deprecated: use the same name in package semconv.
const (
	ErrorTypeBadWitness       = semconv.ErrorTypeBadWitness
	ErrorTypeCUDA             = semconv.ErrorTypeCUDA
	ErrorTypeCanceled         = semconv.ErrorTypeCanceled
	ErrorTypeConflict         = semconv.ErrorTypeConflict
	ErrorTypeCorrupt          = semconv.ErrorTypeCorrupt
	ErrorTypeDeadlineExceeded = semconv.ErrorTypeDeadlineExceeded
	ErrorTypeDeviceFault      = semconv.ErrorTypeDeviceFault
	ErrorTypeEvicted          = semconv.ErrorTypeEvicted
	ErrorTypeFinished         = semconv.ErrorTypeFinished
	ErrorTypeIO               = semconv.ErrorTypeIO
	ErrorTypeInterrupted      = semconv.ErrorTypeInterrupted
	ErrorTypeInvalidRequest   = semconv.ErrorTypeInvalidRequest
	ErrorTypeKeyMismatch      = semconv.ErrorTypeKeyMismatch
	ErrorTypeNoDevice         = semconv.ErrorTypeNoDevice
	ErrorTypeNotFound         = semconv.ErrorTypeNotFound
	ErrorTypeOther            = semconv.ErrorTypeOther
	ErrorTypeOutOfMemory      = semconv.ErrorTypeOutOfMemory
	ErrorTypeOverBudget       = semconv.ErrorTypeOverBudget
	ErrorTypePanic            = semconv.ErrorTypePanic
	ErrorTypeQueueFull        = semconv.ErrorTypeQueueFull
	ErrorTypeUnavailable      = semconv.ErrorTypeUnavailable
	ErrorTypeUnsatisfied      = semconv.ErrorTypeUnsatisfied
	ErrorTypeUnsupported      = semconv.ErrorTypeUnsupported
	ErrorTypeVerifyFailed     = semconv.ErrorTypeVerifyFailed
	KeyAggregatedCount        = semconv.KeyAggregatedCount
	KeyAggregatedMaxMS        = semconv.KeyAggregatedMaxMS
	KeyAggregatedMinMS        = semconv.KeyAggregatedMinMS
	KeyAggregatedTotalMS      = semconv.KeyAggregatedTotalMS
	KeyBackend                = semconv.KeyBackend
	KeyBaseSetID              = semconv.KeyBaseSetID
	KeyBufferBytes            = semconv.KeyBufferBytes
	KeyBufferKind             = semconv.KeyBufferKind
	KeyBufferName             = semconv.KeyBufferName
	KeyCUDAArch               = semconv.KeyCUDAArch
	KeyCUDABlock              = semconv.KeyCUDABlock
	KeyCUDABusyMS             = semconv.KeyCUDABusyMS
	KeyCUDABytes              = semconv.KeyCUDABytes
	KeyCUDACacheHit           = semconv.KeyCUDACacheHit
	KeyCUDACacheKey           = semconv.KeyCUDACacheKey
	KeyCUDAClamped            = semconv.KeyCUDAClamped
	KeyCUDAClock              = semconv.KeyCUDAClock
	KeyCUDADeviceOrdinal      = semconv.KeyCUDADeviceOrdinal
	KeyCUDAGBPerSecond        = semconv.KeyCUDAGBPerSecond
	KeyCUDAGPUMS              = semconv.KeyCUDAGPUMS
	KeyCUDAGrid               = semconv.KeyCUDAGrid
	KeyCUDAIdleMS             = semconv.KeyCUDAIdleMS
	KeyCUDAKernelName         = semconv.KeyCUDAKernelName
	KeyCUDAModuleName         = semconv.KeyCUDAModuleName
	KeyCUDANVRTCOpts          = semconv.KeyCUDANVRTCOpts
	KeyCUDAOpCount            = semconv.KeyCUDAOpCount
	KeyCUDASharedBytes        = semconv.KeyCUDASharedBytes
	KeyCUDAStream             = semconv.KeyCUDAStream
	KeyCircuitCache           = semconv.KeyCircuitCache
	KeyCircuitCacheKeySource  = semconv.KeyCircuitCacheKeySource
	KeyCircuitConstraints     = semconv.KeyCircuitConstraints
	KeyCircuitID              = semconv.KeyCircuitID
	KeyCircuitWires           = semconv.KeyCircuitWires
	KeyClampedSpans           = semconv.KeyClampedSpans
	KeyCommitmentCount        = semconv.KeyCommitmentCount
	KeyCommitmentIndex        = semconv.KeyCommitmentIndex
	KeyDomainSize             = semconv.KeyDomainSize
	KeyErrorType              = semconv.KeyErrorType
	KeyFileBytes              = semconv.KeyFileBytes
	KeyHWGPUMemoryLimit       = semconv.KeyHWGPUMemoryLimit
	KeyHostCopyMode           = semconv.KeyHostCopyMode
	KeyJobID                  = semconv.KeyJobID
	KeyKeyCacheHit            = semconv.KeyKeyCacheHit
	KeyKeyChecked             = semconv.KeyKeyChecked
	KeyKeyHashSource          = semconv.KeyKeyHashSource
	KeyMSMChunks              = semconv.KeyMSMChunks
	KeyMSMScalarsOne          = semconv.KeyMSMScalarsOne
	KeyMSMScalarsSmall        = semconv.KeyMSMScalarsSmall
	KeyMSMScalarsZero         = semconv.KeyMSMScalarsZero
	KeyMSMSize                = semconv.KeyMSMSize
	KeyMSMWindowBits          = semconv.KeyMSMWindowBits
	KeyMemoryBudget           = semconv.KeyMemoryBudget
	KeyMemoryBytes            = semconv.KeyMemoryBytes
	KeyMinerID                = semconv.KeyMinerID
	KeyNTTSize                = semconv.KeyNTTSize
	KeyPartitionIndex         = semconv.KeyPartitionIndex
	KeyPartitions             = semconv.KeyPartitions
	KeyPriority               = semconv.KeyPriority
	KeyProofBytes             = semconv.KeyProofBytes
	KeyProofVerified          = semconv.KeyProofVerified
	KeyQueueDepth             = semconv.KeyQueueDepth
	KeyReleaseMode            = semconv.KeyReleaseMode
	KeyRequestID              = semconv.KeyRequestID
	KeyRequeuedFrom           = semconv.KeyRequeuedFrom
	KeyResidentBytes          = semconv.KeyResidentBytes
	KeySectorNumber           = semconv.KeySectorNumber
	KeySolverHintCPU          = semconv.KeySolverHintCPU
	KeySolverHintCalls        = semconv.KeySolverHintCalls
	KeySolverLevels           = semconv.KeySolverLevels
	KeySolverParts            = semconv.KeySolverParts
	KeySolverTasks            = semconv.KeySolverTasks
	KeyTaskDone               = semconv.KeyTaskDone
	KeyTaskID                 = semconv.KeyTaskID
	KeyTaskName               = semconv.KeyTaskName
	KeyUntracedMS             = semconv.KeyUntracedMS
	KeyUntracedParent         = semconv.KeyUntracedParent
	KeyWarmupShared           = semconv.KeyWarmupShared
	KeyWiresA                 = semconv.KeyWiresA
	KeyWiresB                 = semconv.KeyWiresB
	KeyWiresK                 = semconv.KeyWiresK
	KeyWitnessSource          = semconv.KeyWitnessSource
	MetricSpansDropped        = semconv.MetricSpansDropped
	ScopeName                 = semconv.ScopeName
	SpanBufferRelease         = semconv.SpanBufferRelease
	SpanCUDACompile           = semconv.SpanCUDACompile
	SpanCUDAFree              = semconv.SpanCUDAFree
	SpanCUDAHostRegister      = semconv.SpanCUDAHostRegister
	SpanCUDAHostUnregister    = semconv.SpanCUDAHostUnregister
	SpanCUDAMalloc            = semconv.SpanCUDAMalloc
	SpanCUDAMemset            = semconv.SpanCUDAMemset
	SpanCUDAModuleLoad        = semconv.SpanCUDAModuleLoad
	SpanCUDANVRTC             = semconv.SpanCUDANVRTC
	SpanCircuitBuild          = semconv.SpanCircuitBuild
	SpanCircuitCacheDecode    = semconv.SpanCircuitCacheDecode
	SpanCircuitCacheKey       = semconv.SpanCircuitCacheKey
	SpanCircuitCacheRead      = semconv.SpanCircuitCacheRead
	SpanCircuitCacheStore     = semconv.SpanCircuitCacheStore
	SpanCircuitCompile        = semconv.SpanCircuitCompile
	SpanCircuitFrontend       = semconv.SpanCircuitFrontend
	SpanComputeH              = semconv.SpanComputeH
	SpanCurioTask             = semconv.SpanCurioTask
	SpanEngineBudget          = semconv.SpanEngineBudget
	SpanEngineJob             = semconv.SpanEngineJob
	SpanEnginePartition       = semconv.SpanEnginePartition
	SpanEngineQueue           = semconv.SpanEngineQueue
	SpanEngineWarmup          = semconv.SpanEngineWarmup
	SpanFilterWires           = semconv.SpanFilterWires
	SpanGPULock               = semconv.SpanGPULock
	SpanGPUQueue              = semconv.SpanGPUQueue
	SpanGPUTotal              = semconv.SpanGPUTotal
	SpanGPUWarmup             = semconv.SpanGPUWarmup
	SpanGroth16Assemble       = semconv.SpanGroth16Assemble
	SpanGroth16Prove          = semconv.SpanGroth16Prove
	SpanHostStage             = semconv.SpanHostStage
	SpanKeyLoad               = semconv.SpanKeyLoad
	SpanKeysDecode            = semconv.SpanKeysDecode
	SpanKeysHash              = semconv.SpanKeysHash
	SpanKeysPreload           = semconv.SpanKeysPreload
	SpanKeysRead              = semconv.SpanKeysRead
	SpanKeysSetup             = semconv.SpanKeysSetup
	SpanKeysStore             = semconv.SpanKeysStore
	SpanMSMG1A                = semconv.SpanMSMG1A
	SpanMSMG1B                = semconv.SpanMSMG1B
	SpanMSMG1Commitment       = semconv.SpanMSMG1Commitment
	SpanMSMG1CommitmentPok    = semconv.SpanMSMG1CommitmentPok
	SpanMSMG1H                = semconv.SpanMSMG1H
	SpanMSMG1K                = semconv.SpanMSMG1K
	SpanMSMG2B                = semconv.SpanMSMG2B
	SpanMemcpyDtoD            = semconv.SpanMemcpyDtoD
	SpanMemcpyDtoH            = semconv.SpanMemcpyDtoH
	SpanMemcpyHtoD            = semconv.SpanMemcpyHtoD
	SpanNTTCoset              = semconv.SpanNTTCoset
	SpanNTTInverse            = semconv.SpanNTTInverse
	SpanNTTInverseCoset       = semconv.SpanNTTInverseCoset
	SpanPipelineProve         = semconv.SpanPipelineProve
	SpanPipelineSerialize     = semconv.SpanPipelineSerialize
	SpanPipelineSynthesize    = semconv.SpanPipelineSynthesize
	SpanPointwise             = semconv.SpanPointwise
	SpanProofVerify           = semconv.SpanProofVerify
	SpanSynthesizeCopy        = semconv.SpanSynthesizeCopy
	SpanSynthesizeSolve       = semconv.SpanSynthesizeSolve
	SpanSynthesizeWitness     = semconv.SpanSynthesizeWitness
	SpanUntraced              = semconv.SpanUntraced
)

// AggregateStats is semconv.AggregateStats.
//
// Deprecated: use semconv.AggregateStats.
type AggregateStats = semconv.AggregateStats

// Device is semconv.GPU, one GPU of the resource (WithDevices).
//
// Deprecated: use semconv.GPU.
type Device = semconv.GPU

// DeviceAttributes is semconv.GPUAttributes: the resource attributes
// of devices (hw.*), nil for none.
//
// Deprecated: use semconv.GPUAttributes.
func DeviceAttributes(devices []Device) []attribute.KeyValue {
	return semconv.GPUAttributes(devices)
}

// ErrorType is semconv.ErrorType: the error.type value of err, one of the
// ErrorType* constants ("" for nil).
//
// Deprecated: use semconv.ErrorType.
func ErrorType(err error) string { return semconv.ErrorType(err) }

// NewError is semconv.NewError: a sentinel with text and error.type
// errorType; it panics on a value outside the vocabulary.
//
// Deprecated: use semconv.NewError.
func NewError(errorType, text string) error { return semconv.NewError(errorType, text) }

// SetError is semconv.SetError: span marked failed with err (exception
// event, status Error, error.type); a nil err records nothing.
//
// Deprecated: use semconv.SetError.
func SetError(span trace.Span, err error) { semconv.SetError(span, err) }
