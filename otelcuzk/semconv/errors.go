package semconv

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// SetError marks span as failed, the one way every span of this project
// records an error (as otelhttp and otelgrpc do): err as an exception
// event, status codes.Error with err's message, and error.type set to
// ErrorType(err), one of the ErrorType* values (names.go). A nil err
// records nothing. It does not end span. Safe for concurrent use as span
// is.
func SetError(span trace.Span, err error) {
	if err == nil || span == nil {
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(KeyErrorType.String(ErrorType(err)))
}

// ErrorType is the error.type value SetError records for err: one of the
// ErrorType* constants, never anything else. It walks err's tree in the
// order errors.As does (err, then what Unwrap returns, depth first) and
// returns the value of the first error that has one:
//
//   - an error that declares it: made by NewError, or with a method
//     ErrorType() string returning one of the ErrorType* values (other
//     words are ignored, so a foreign error cannot widen the set);
//   - context.Canceled: ErrorTypeCanceled;
//   - context.DeadlineExceeded: ErrorTypeDeadlineExceeded;
//   - errors.ErrUnsupported: ErrorTypeUnsupported;
//   - *fs.PathError, *os.LinkError, *os.SyscallError, syscall.Errno,
//     io.ErrUnexpectedEOF: ErrorTypeIO.
//
// Wrapping therefore never changes the value, and the outermost declared
// kind wins: an ErrDeviceFault wrapping an out-of-memory CUDA error is a
// device fault. With none of them it returns ErrorTypeOther; for a nil err
// it returns "".
func ErrorType(err error) string {
	if err == nil {
		return ""
	}
	if t := declaredType(err); t != "" {
		return t
	}
	return ErrorTypeOther
}

// declaredType is the value of the first error of err's tree that has
// one, or "".
func declaredType(err error) string {
	for err != nil {
		if t := ownType(err); t != "" {
			return t
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if t := declaredType(e); t != "" {
					return t
				}
			}
			return ""
		default:
			return ""
		}
	}
	return ""
}

// ownType is err's own value, not looking at what it wraps, or "".
func ownType(err error) string {
	if d, ok := err.(interface{ ErrorType() string }); ok {
		if t := d.ErrorType(); errorTypes[t] {
			return t
		}
	}
	// The standard errors compared by identity, as errors.Is does first
	// (their dynamic types are comparable, so == cannot panic).
	switch err {
	case context.Canceled:
		return ErrorTypeCanceled
	case context.DeadlineExceeded:
		return ErrorTypeDeadlineExceeded
	case errors.ErrUnsupported:
		return ErrorTypeUnsupported
	case io.ErrUnexpectedEOF:
		return ErrorTypeIO
	}
	switch err.(type) {
	case *fs.PathError, *os.LinkError, *os.SyscallError, syscall.Errno:
		return ErrorTypeIO
	}
	return ""
}

// errorTypes is the vocabulary: the ErrorType* values.
var errorTypes = map[string]bool{
	ErrorTypeCanceled: true, ErrorTypeDeadlineExceeded: true, ErrorTypeInvalidRequest: true,
	ErrorTypeBadWitness: true, ErrorTypeUnsatisfied: true, ErrorTypeUnsupported: true,
	ErrorTypeKeyMismatch: true, ErrorTypeVerifyFailed: true, ErrorTypeQueueFull: true,
	ErrorTypeOverBudget: true, ErrorTypeOutOfMemory: true, ErrorTypeNoDevice: true,
	ErrorTypeDeviceFault: true, ErrorTypeEvicted: true, ErrorTypeCUDA: true,
	ErrorTypeIO: true, ErrorTypeCorrupt: true, ErrorTypePanic: true, ErrorTypeOther: true,
	ErrorTypeNotFound: true, ErrorTypeConflict: true, ErrorTypeFinished: true,
	ErrorTypeInterrupted: true, ErrorTypeUnavailable: true,
}

// NewError returns a sentinel error whose message is text, as errors.New
// does, and whose error.type is errorType, one of the ErrorType* values:
// how a package below otelcuzk's callers declares the kind of its
// sentinels, so that ErrorType classifies every error wrapping them. It
// panics on a value outside the vocabulary, which is a programming error
// caught when the declaring package is initialized.
func NewError(errorType, text string) error {
	if !errorTypes[errorType] {
		panic("otelcuzk: NewError: error.type " + errorType + " is not one of the ErrorType* values")
	}
	return &typedError{typ: errorType, text: text}
}

// typedError is NewError's sentinel.
type typedError struct{ typ, text string }

func (e *typedError) Error() string     { return e.text }
func (e *typedError) ErrorType() string { return e.typ }
