// Package otelcuzk is the tracing SDK of the cuzk prover: Setup builds an
// OpenTelemetry TracerProvider from options and the standard OTEL_*
// environment variables, exporting over OTLP (gRPC or HTTP/protobuf) or, when
// no endpoint is configured, to a local file of OTLP JSON lines that the
// OpenTelemetry Collector's otlpjsonfile receiver reads.
//
// It also holds the untraced-time processor that turns time no child span
// covers into visible `untraced` spans, a counter of spans lost to failed
// exports, W3C trace context propagation through the TRACEPARENT environment
// variable, and a helper that wraps a Curio harmonytask in a span. The span
// names, attribute keys and error vocabulary are in the leaf package
// otelcuzk/semconv.
//
// The package imports the OpenTelemetry API, SDK and exporters and
// otelcuzk/semconv only: no gnark, no cgo, so callers such as Curio can
// import it cheaply.
package otelcuzk
