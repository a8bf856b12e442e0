// Package e2e runs the cuzk binary, examples/curio-task and small programs
// of its own against a real Jaeger (built from the Go module proxy, see
// tools/jaeger) and reads the traces back over Jaeger's HTTP query API.
// It is its own module so that the Jaeger and Collector dependency graphs
// stay out of the root go.mod. Run it with e2e/run.sh.
package e2e
