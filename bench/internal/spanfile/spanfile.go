// Package spanfile reads the trace files the benchmarks get from a daemon
// (cuzk serve --trace-file) or a capture (cuzk gpu-trace): OTLP JSON
// lines. It is apart from benchutil so a benchmark that reads trace files
// (upstreamgpu) does not link the prover.
package spanfile

import (
	"os"

	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

// Read returns the spans of the OTLP JSON lines file at path, skipping
// lines that do not parse (a write cut short when the daemon was
// stopped). Errors are opening or reading the file.
func Read(path string) ([]tracefile.Span, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	spans, _, err := tracefile.ReadOTLPJSONLinesSkipping(f)
	return spans, err
}
