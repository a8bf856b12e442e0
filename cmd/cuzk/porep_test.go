package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProveThePoRepCircuit: cuzk prove --circuit porep proves the
// Filecoin-shaped circuit at its smallest power of two on the CPU,
// verifies it, and its trace carries the MSM scalar counts; a size below
// one challenge fails on one line naming the minimum.
func TestProveThePoRepCircuit(t *testing.T) {
	clearOTLPEnv(t)
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	proof, traceFile := filepath.Join(dir, "p.bin"), filepath.Join(dir, "t.jsonl")
	if _, _, err := runCuzk(t, "prove", "--circuit", "porep", "--constraints", "50000", "--backend", "cpu",
		"--proof", proof, "--trace-file", traceFile); err == nil || !strings.Contains(err.Error(), "porep needs at least") ||
		strings.Contains(err.Error(), "\n") {
		t.Errorf("porep at 50000 constraints: %v, want one line naming the minimum", err)
	}
	out, errOut, err := runCuzk(t, "prove", "--circuit", "porep", "--constraints", "131072", "--backend", "cpu",
		"--proof", proof, "--trace-file", traceFile)
	if err != nil {
		t.Fatalf("cuzk prove --circuit porep: %v\n%s", err, errOut)
	}
	for _, want := range []string{"ACCEPTED", "1 challenge (SHA-256 of 192 bytes, MiMC path of depth 30)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	trace, err := os.ReadFile(traceFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"cuzk.msm.scalars.zero", "cuzk.msm.scalars.one", "cuzk.msm.scalars.small"} {
		if !bytes.Contains(trace, []byte(key)) {
			t.Errorf("trace file has no %s", key)
		}
	}
}
