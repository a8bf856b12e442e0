package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"

	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/keycache/keycachetest"
)

// verifyWithKeyFile fails t unless the proof file at proofPath, of mulchain
// at n constraints with the sample witness of seed 1, verifies against the
// verifying key at the start of the key file keyPath.
func verifyWithKeyFile(t *testing.T, proofPath, keyPath string, n int) {
	t.Helper()
	kf, err := os.Open(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	vk := groth16.NewVerifyingKey(ecc.BLS12_381)
	if _, err := vk.ReadFrom(kf); err != nil {
		t.Fatalf("verifying key of %s: %v", keyPath, err)
	}
	pf, err := os.ReadFile(proofPath)
	if err != nil {
		t.Fatal(err)
	}
	proof := groth16.NewProof(ecc.BLS12_381)
	if _, err := proof.ReadFrom(bytes.NewReader(pf)); err != nil {
		t.Fatalf("proof %s: %v", proofPath, err)
	}
	pub, err := circuitstest.SampleWitness(t, "mulchain", n, 1).Public()
	if err != nil {
		t.Fatal(err)
	}
	if err := groth16.Verify(proof, vk, pub); err != nil {
		t.Errorf("%s does not verify against the key on disk %s: %v", proofPath, keyPath, err)
	}
}

// readTraceSpans returns the spans of the OTLP JSON lines file at path
// (cuzk prove's --trace-file); it fails t on any error.
func readTraceSpans(t *testing.T, path string) []tracefile.Span {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spans, err := tracefile.ReadOTLPJSONLines(f)
	if err != nil {
		t.Fatal(err)
	}
	return spans
}

// Two cuzk prove processes started at once on one fresh cache directory
// run one key setup between them (the second waits for the first's, then
// reads its key) and both proofs verify against the key file left on disk:
// without a lock across processes both set up, and the second key file
// replaced the first, whose proof then verified against nothing on disk.
func TestTwoProvesSharingAFreshCacheBothVerifyAgainstTheKeyOnDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("two processes and a key setup of 2^13 constraints")
	}
	const n = 1 << 13
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	type run struct {
		cmd            *exec.Cmd
		stdout, stderr bytes.Buffer
		proof, trace   string
	}
	runs := make([]*run, 2)
	for i := range runs {
		r := &run{proof: filepath.Join(dir, "p"+string(rune('0'+i))+".bin"), trace: filepath.Join(dir, "t"+string(rune('0'+i))+".jsonl")}
		r.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcessMain$", "--",
			"prove", "--circuit", "mulchain", "--constraints", strconv.Itoa(n), "--backend", "cpu",
			"--cache-dir", cache, "--proof", r.proof, "--trace-file", r.trace)
		r.cmd.Env = append(os.Environ(), "CUZK_HELPER_MAIN=1", "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=")
		r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
		runs[i] = r
	}
	for _, r := range runs {
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	setups := 0
	for i, r := range runs {
		if err := r.cmd.Wait(); err != nil {
			t.Fatalf("prove %d: %v\nstderr:\n%s", i, err, r.stderr.String())
		}
		for _, s := range readTraceSpans(t, r.trace) {
			if s.Name == "keys.setup" {
				setups++
			}
		}
	}
	keys, _ := filepath.Glob(filepath.Join(cache, "*.keys"))
	if len(keys) != 1 {
		t.Fatalf("key files %v, want one", keys)
	}
	for _, r := range runs {
		verifyWithKeyFile(t, r.proof, keys[0], n)
	}
	if setups != 1 {
		t.Errorf("%d keys.setup spans in the two traces, want 1 (the other process read the key)", setups)
	}
}

// A second cuzk prove process (a cache hit) reads the component solver's
// plan stored beside the cached circuit by the first: its trace has
// circuit.plan.read with cuzk.solver.plan=cache and no synthesize.plan,
// where the first made the plan (synthesize.plan, circuit.plan.store);
// both proofs verify against the key on disk.
func TestASecondProveReadsTheSolverPlanTheFirstStored(t *testing.T) {
	const n = 1 << 12
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	prove := func(run int) map[string][]tracefile.Span {
		t.Helper()
		proof, trace := filepath.Join(dir, fmt.Sprintf("p%d.bin", run)), filepath.Join(dir, fmt.Sprintf("t%d.jsonl", run))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcessMain$", "--",
			"prove", "--circuit", "mulchain", "--constraints", strconv.Itoa(n), "--backend", "cpu",
			"--cache-dir", cache, "--proof", proof, "--trace-file", trace)
		cmd.Env = append(os.Environ(), "CUZK_HELPER_MAIN=1", "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("prove %d: %v\n%s", run, err, out)
		}
		byName := map[string][]tracefile.Span{}
		for _, s := range readTraceSpans(t, trace) {
			byName[s.Name] = append(byName[s.Name], s)
		}
		keys, _ := filepath.Glob(filepath.Join(cache, "*.keys"))
		if len(keys) != 1 {
			t.Fatalf("key files %v, want one", keys)
		}
		verifyWithKeyFile(t, proof, keys[0], n)
		return byName
	}
	first := prove(1)
	if len(first["synthesize.plan"]) != 1 || len(first["circuit.plan.store"]) != 1 || len(first["circuit.plan.read"]) != 0 {
		t.Errorf("first run: %d synthesize.plan, %d circuit.plan.store, %d circuit.plan.read; want the plan made and stored",
			len(first["synthesize.plan"]), len(first["circuit.plan.store"]), len(first["circuit.plan.read"]))
	}
	if plans, _ := filepath.Glob(filepath.Join(cache, "circuit-mulchain-*.plan")); len(plans) != 1 {
		t.Fatalf("plan files %v, want one", plans)
	}
	second := prove(2)
	if c := second["circuit.compile"]; len(c) != 1 || c[0].Attrs["cuzk.circuit.cache"] != "hit" {
		t.Fatalf("second run: circuit.compile %v, want a hit", c)
	}
	read := second["circuit.plan.read"]
	if len(read) != 1 || read[0].Attrs["cuzk.solver.plan"] != "cache" || read[0].ParentID != second["circuit.compile"][0].SpanID {
		t.Errorf("second run: circuit.plan.read %v, want one under circuit.compile with cuzk.solver.plan=cache", read)
	}
	if len(second["synthesize.plan"]) != 0 || len(second["circuit.plan.store"]) != 0 {
		t.Errorf("second run: %d synthesize.plan, %d circuit.plan.store; want the plan read, not made", len(second["synthesize.plan"]), len(second["circuit.plan.store"]))
	}
	if s := second["synthesize.solve"]; len(s) != 1 || s[0].Attrs["cuzk.solver"] != "components" {
		t.Errorf("second run: synthesize.solve %v, want one by components", s)
	}
}

// cuzk prove with a cache directory nothing can be stored in proves
// uncached (the proof verifies) with one line saying where and why nothing
// was stored; it failed the proof after the compile. cuzk setup, whose key
// would be lost, refuses it at once on one line.
func TestProveWithAnUnwritableCacheProvesUncachedAndSetupRefusesIt(t *testing.T) {
	for how, cache := range keycachetest.UnwritableDirs(t) {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			proof := filepath.Join(dir, "p.bin")
			out, errOut, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "512", "--backend", "cpu",
				"--cache-dir", cache, "--proof", proof, "--trace-file", filepath.Join(dir, "t.jsonl"))
			if err != nil {
				t.Fatalf("prove with an unwritable cache: %v\n%s", err, errOut)
			}
			if !strings.Contains(out, "ACCEPTED") {
				t.Errorf("output lacks the verifier's verdict:\n%s", out)
			}
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
				if strings.Contains(l, "cache") && !strings.HasPrefix(l, "circuit cache: keyed") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || !strings.Contains(lines[0], "nothing can be stored in the cache directory "+cache+" (") {
				t.Errorf("stderr %q, want one line naming the directory and why", errOut)
			}
			_, _, err = runCuzk(t, "setup", "--circuit", "mulchain", "--constraints", "512", "--backend", "cpu", "--cache-dir", cache)
			if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "the cache directory "+cache+" cannot store files (") {
				t.Errorf("setup with an unwritable cache: %v, want one line refusing it", err)
			}
		})
	}
}

// A damaged key file is refused on one line naming it, and left as it is:
// a new setup would make a new verifying key, and every proof checked
// against the old one would fail without a word.
func TestProveRefusesADamagedKeyFileNamingItAndKeepsIt(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	if _, errOut, err := runCuzk(t, "setup", "--circuit", "mulchain", "--constraints", "512", "--backend", "cpu", "--cache-dir", cache); err != nil {
		t.Fatalf("setup: %v\n%s", err, errOut)
	}
	keys, _ := filepath.Glob(filepath.Join(cache, "*.keys"))
	if len(keys) != 1 {
		t.Fatalf("key files %v, want one", keys)
	}
	data, err := os.ReadFile(keys[0])
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/3] ^= 0xff
	if err := os.WriteFile(keys[0], data, 0o600); err != nil {
		t.Fatal(err)
	}
	proof := filepath.Join(dir, "p.bin")
	_, _, err = runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "512", "--backend", "cpu",
		"--cache-dir", cache, "--proof", proof, "--trace-file", filepath.Join(dir, "t.jsonl"))
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "corrupt key file "+keys[0]) ||
		!strings.Contains(err.Error(), "refused, not replaced") {
		t.Fatalf("prove with a damaged key: %v, want one line naming the file", err)
	}
	if after, _ := os.ReadFile(keys[0]); !bytes.Equal(after, data) {
		t.Error("the damaged key file was replaced")
	}
	if _, err := os.Stat(proof); !os.IsNotExist(err) {
		t.Errorf("a proof was written with a damaged key: %v", err)
	}
}
