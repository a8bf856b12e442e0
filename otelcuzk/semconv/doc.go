// Package semconv is this project's vocabulary, in the spirit of
// OpenTelemetry's semconv packages: the span names, attribute keys and
// metric names of the proof's span tree (names.go), the error.type values
// and the one way a span records an error (errors.go: SetError, ErrorType,
// NewError for typed sentinels), the cuzk.aggregate.* counts of an
// aggregate kernel span (aggregate.go) and the hw.* attributes of the GPUs
// (device.go).
//
// It depends on the OpenTelemetry API only (attribute, codes, trace and
// the API's semconv), not on the SDK, an exporter or gRPC, so the packages
// that name spans (buffer, cudaspans, cupti, the prover) link none of them;
// package otelcuzk builds the SDK and re-exports these names for older code.
package semconv
