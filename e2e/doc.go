// Package e2e runs the cuzk binary and the examples against a real Jaeger
// (built from the Go module proxy) and reads the traces back over Jaeger's
// HTTP query API. It is its own module so that the Jaeger and Collector
// dependency graphs stay out of the root go.mod.
package e2e

import "github.com/otelcuzk/otelcuzk/otelcuzk"

// layerNames are the CPU layers of DESIGN.md's span tree.
var layerNames = []string{otelcuzk.SpanEngineJob}
