package otelcuzk

// Version is the version of this instrumentation, reported as the
// instrumentation scope version of the spans this package emits itself.
func Version() string { return "0.1.0" }
