package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --ephemeral-keys: setup, prove, verify (even with --verify=false),
// discard; the cache directory holds no key file afterwards, and a second
// run makes its keys again. Nor is the compiled circuit stored (issue 24:
// its store was 78.4 s of porep 2^26's 102.2 s compile): no circuit file,
// no circuit.cache.store span, nor its solver plan. A run without the flag
// stores both, and an ephemeral run then reads them and leaves the
// circuit as it was.
func TestProveWithEphemeralKeysWritesNoKey(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	t.Setenv("CUZK_CACHE_DIR", cache)
	prove := func(run int, flags ...string) (out, compile string, spans map[string]bool) {
		t.Helper()
		proof, traceFile := filepath.Join(dir, "p.bin"), filepath.Join(dir, fmt.Sprintf("t%d.jsonl", run))
		out, errOut, err := runCuzk(t, append([]string{"prove", "--circuit", "mulchain", "--constraints", "256", "--backend", "cpu",
			"--proof", proof, "--trace-file", traceFile}, flags...)...)
		if err != nil {
			t.Fatalf("run %d: %v\n%s", run, err, errOut)
		}
		if fi, err := os.Stat(proof); err != nil || fi.Size() == 0 {
			t.Fatalf("run %d: proof file: %v", run, err)
		}
		spans = map[string]bool{}
		for _, s := range readTraceSpans(t, traceFile) {
			spans[s.Name] = true
			if s.Name == "circuit.compile" {
				compile, _ = s.Attrs["cuzk.circuit.cache"].(string)
			}
		}
		return out, compile, spans
	}
	circuitFiles := func() []string {
		m, _ := filepath.Glob(filepath.Join(cache, "circuit-*.ccs"))
		return m
	}
	planFiles := func() []string {
		m, _ := filepath.Glob(filepath.Join(cache, "circuit-*.plan"))
		return m
	}
	for run := range 2 {
		out, compile, spans := prove(run, "--ephemeral-keys", "--verify=false")
		for _, want := range []string{"keys.setup", "ACCEPTED", "made in memory by the cpu setup for this proof and discarded"} {
			if !strings.Contains(out, want) {
				t.Errorf("run %d: output lacks %q:\n%s", run, want, out)
			}
		}
		if strings.Contains(out, "keys.store") || strings.Contains(out, "keys.read") {
			t.Errorf("run %d: an ephemeral run read or stored keys:\n%s", run, out)
		}
		if spans["circuit.cache.store"] || spans["keys.hash"] || compile != "no_store" {
			t.Errorf("run %d: an ephemeral run's trace: circuit.cache.store %v, keys.hash %v, cuzk.circuit.cache %q; want neither span, no_store",
				run, spans["circuit.cache.store"], spans["keys.hash"], compile)
		}
		noKeyFiles(t, cache)
		if m := append(circuitFiles(), planFiles()...); len(m) != 0 {
			t.Fatalf("run %d: an ephemeral run stored the compiled circuit or its solver plan: %v", run, m)
		}
	}
	// Without the flag the store happens.
	if _, compile, spans := prove(2); !spans["circuit.cache.store"] || !spans["circuit.plan.store"] || compile != "miss" || len(circuitFiles()) != 1 || len(planFiles()) != 1 {
		t.Fatalf("a run without --ephemeral-keys: circuit.cache.store %v, circuit.plan.store %v, cuzk.circuit.cache %q, circuit files %v, plan files %v; want the stores",
			spans["circuit.cache.store"], spans["circuit.plan.store"], compile, circuitFiles(), planFiles())
	}
	stored := circuitFiles()[0]
	before, err := os.ReadFile(stored)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(stored)
	// Then an ephemeral run reads the cached circuit and writes nothing.
	if _, compile, spans := prove(3, "--ephemeral-keys"); compile != "hit" || spans["circuit.cache.store"] || spans["keys.read"] ||
		!spans["circuit.plan.read"] || spans["synthesize.plan"] || spans["circuit.plan.store"] {
		t.Errorf("an ephemeral run over a cached circuit: cuzk.circuit.cache %q, circuit.cache.store %v, keys.read %v, circuit.plan.read %v, synthesize.plan %v, circuit.plan.store %v; want a hit, no store, no key read, the plan read",
			compile, spans["circuit.cache.store"], spans["keys.read"], spans["circuit.plan.read"], spans["synthesize.plan"], spans["circuit.plan.store"])
	}
	after, err := os.ReadFile(stored)
	fi2, _ := os.Stat(stored)
	if err != nil || !bytes.Equal(before, after) || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("an ephemeral run changed the cached circuit %s (%v)", stored, err)
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

// --compressed-keys chooses a key file's encoding, and ephemeral keys have
// no file: the pair is refused in one line before anything runs (it was
// taken silently), with --plan too.
func TestProveRefusesCompressedKeysWithEphemeralKeys(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	proof := filepath.Join(dir, "p.bin")
	for _, extra := range [][]string{nil, {"--plan"}} {
		args := append([]string{"prove", "--circuit", "mulchain", "--constraints", "256", "--backend", "cpu", "--ephemeral-keys", "--compressed-keys",
			"--proof", proof, "--trace-file", filepath.Join(dir, "t.jsonl")}, extra...)
		_, _, err := runCuzk(t, args...)
		want := "--compressed-keys with --ephemeral-keys: ephemeral keys are never written to or read from a key file, so nothing is compressed; drop one of the two"
		if err == nil || err.Error() != want {
			t.Errorf("prove --ephemeral-keys --compressed-keys %v: %v, want %q", extra, err, want)
		}
	}
	if _, err := os.Stat(proof); err == nil {
		t.Error("a proof file was written")
	}
}
