package cuzkv1

import (
	"google.golang.org/grpc/codes"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// This file is written by hand: the one classification of errors. An
// error's kind is its error.type (semconv.ErrorType, declared by each
// sentinel), and the gRPC status code the daemon answers with follows
// from it by this table alone.

// errorCodes maps every error.type value to its gRPC code. A code's first
// row is also the error.type a code read back from another daemon records
// (ErrorTypeOf), so the general word of each code comes first.
var errorCodes = []struct {
	errorType string
	code      codes.Code
}{
	{semconv.ErrorTypeCanceled, codes.Canceled},
	{semconv.ErrorTypeDeadlineExceeded, codes.DeadlineExceeded},
	{semconv.ErrorTypeInvalidRequest, codes.InvalidArgument},
	{semconv.ErrorTypeBadWitness, codes.InvalidArgument},
	{semconv.ErrorTypeUnsatisfied, codes.InvalidArgument},
	{semconv.ErrorTypeUnsupported, codes.InvalidArgument},
	{semconv.ErrorTypeKeyMismatch, codes.InvalidArgument},
	{semconv.ErrorTypeNotFound, codes.NotFound},
	{semconv.ErrorTypeConflict, codes.AlreadyExists},
	{semconv.ErrorTypeFinished, codes.FailedPrecondition},
	{semconv.ErrorTypeInterrupted, codes.Aborted},
	{semconv.ErrorTypeQueueFull, codes.ResourceExhausted},
	{semconv.ErrorTypeOverBudget, codes.ResourceExhausted},
	{semconv.ErrorTypeOutOfMemory, codes.ResourceExhausted},
	{semconv.ErrorTypeUnavailable, codes.Unavailable},
	{semconv.ErrorTypeNoDevice, codes.Unavailable},
	{semconv.ErrorTypeOther, codes.Internal},
	{semconv.ErrorTypeVerifyFailed, codes.Internal},
	{semconv.ErrorTypeDeviceFault, codes.Internal},
	{semconv.ErrorTypeEvicted, codes.Internal},
	{semconv.ErrorTypeCUDA, codes.Internal},
	{semconv.ErrorTypeIO, codes.Internal},
	{semconv.ErrorTypeCorrupt, codes.Internal},
	{semconv.ErrorTypePanic, codes.Internal},
}

// CodeOf is the gRPC status code of an error whose error.type is
// errorType (one of the semconv.ErrorType* values): INVALID_ARGUMENT for a
// malformed request, bad witness, unsatisfied constraints, an unsupported
// system or a key that does not match; NOT_FOUND, ALREADY_EXISTS (a
// request id reused), FAILED_PRECONDITION (a job already finished),
// ABORTED (interrupted by a restart: submit again), RESOURCE_EXHAUSTED (a
// full queue, the memory budget, out of memory), UNAVAILABLE (shut down,
// no device), CANCELLED, DEADLINE_EXCEEDED; INTERNAL for the rest and for
// a word outside the vocabulary. "" (no error) is OK.
func CodeOf(errorType string) codes.Code {
	if errorType == "" {
		return codes.OK
	}
	for _, r := range errorCodes {
		if r.errorType == errorType {
			return r.code
		}
	}
	return codes.Internal
}

// ErrorTypeOf is the error.type of a failure another daemon answered with
// code c: the first error.type of the table that CodeOf maps to c (the
// general word: invalid_request for INVALID_ARGUMENT, unavailable for
// UNAVAILABLE, _OTHER for INTERNAL), _OTHER for a code no error.type maps
// to (UNKNOWN, UNIMPLEMENTED, ...), "" for OK.
func ErrorTypeOf(c codes.Code) string {
	if c == codes.OK {
		return ""
	}
	for _, r := range errorCodes {
		if r.code == c {
			return r.errorType
		}
	}
	return semconv.ErrorTypeOther
}
