package otelcuzk

import "github.com/otelcuzk/otelcuzk/otelcuzk/semconv"

// Version is the version of this module in the running binary
// (semconv.ScopeVersion, derived from the build information): the
// instrumentation scope version of the project's spans, cuzk --version,
// the service.version of cuzk's spans and the version GetStatus reports.
func Version() string { return semconv.ScopeVersion() }
