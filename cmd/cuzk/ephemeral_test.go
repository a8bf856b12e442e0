package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --ephemeral-keys: setup, prove, verify (even with --verify=false),
// discard; the cache directory holds no key file afterwards, and a second
// run makes its keys again.
func TestProveWithEphemeralKeysWritesNoKey(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	t.Setenv("CUZK_CACHE_DIR", cache)
	for run := range 2 {
		proof, traceFile := filepath.Join(dir, "p.bin"), filepath.Join(dir, "t.jsonl")
		out, errOut, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "256", "--backend", "cpu",
			"--ephemeral-keys", "--verify=false", "--proof", proof, "--trace-file", traceFile)
		if err != nil {
			t.Fatalf("run %d: %v\n%s", run, err, errOut)
		}
		for _, want := range []string{"keys.setup", "ACCEPTED", "made in memory by the cpu setup for this proof and discarded"} {
			if !strings.Contains(out, want) {
				t.Errorf("run %d: output lacks %q:\n%s", run, want, out)
			}
		}
		if strings.Contains(out, "keys.store") || strings.Contains(out, "keys.read") {
			t.Errorf("run %d: an ephemeral run read or stored keys:\n%s", run, out)
		}
		noKeyFiles(t, cache)
		if fi, err := os.Stat(proof); err != nil || fi.Size() == 0 {
			t.Fatalf("run %d: proof file: %v", run, err)
		}
	}
}

func TestProveWithEphemeralKeysRefusesAnUnknownBackend(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	_, errOut, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "256", "--backend", "tpu",
		"--ephemeral-keys", "--proof", filepath.Join(dir, "p.bin"), "--trace-file", filepath.Join(dir, "t.jsonl"))
	if err == nil || !strings.Contains(errOut+err.Error(), "tpu") {
		t.Fatalf("--backend tpu --ephemeral-keys: %v %q, want a refusal naming it", err, errOut)
	}
}
