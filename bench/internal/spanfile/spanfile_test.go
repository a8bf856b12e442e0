package spanfile

import (
	"os"
	"path/filepath"
	"testing"
)

func spanLine(id, name string) string {
	return `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"` + id +
		`","name":"` + name + `","startTimeUnixNano":"1000","endTimeUnixNano":"2000"}]}]}]}`
}

// The spans of every whole line come back; a line cut short (the daemon
// stopped mid-write) is passed over; a missing file is an error.
func TestReadSkipsACutLineAndRefusesAMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	body := spanLine("0000000000000001", "engine.job") + "\n" + spanLine("0000000000000002", "pipeline.prove") + "\n" +
		spanLine("0000000000000003", "cut")[:40] + "\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	spans, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 || spans[0].Name != "engine.job" || spans[1].Name != "pipeline.prove" {
		t.Errorf("spans %+v, want engine.job and pipeline.prove", spans)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "none.jsonl")); err == nil {
		t.Error("a missing file: no error")
	}
}
