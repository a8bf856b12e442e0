package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/commitmenttest"
)

// TestServeProvesCommitmentCircuitFromFiles: a circuit with three
// commitments (api.Commit twice and a range check), registered from files
// (--circuit-file), proves through cuzk serve with the caller's witness;
// the proof carries its commitments and verifies with gnark.
func TestServeProvesCommitmentCircuitFromFiles(t *testing.T) {
	clearOTLPEnv(t)
	fx := commitmenttest.Setup(t, "multicommit")
	spec, wb := circuitFiles(t, "committed", fx.CCS, fx.PK, fx.VK, fx.Witness)
	d := startDaemon(t, serveConfig{backend: "cpu", release: "pool", cpuWorkers: 1,
		queueSize: 4, shutdownTimeout: 5 * time.Second, maxMessage: 1 << 20,
		circuitFiles: []string{spec}})
	c := d.client(t)
	pctx, pcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer pcancel()
	for i := range 2 { // the second with the pooled buffers of the first
		res, err := c.Prove(pctx, client.Request{RequestID: "commit-" + string(rune('a'+i)), Circuit: "committed", Witness: wb, Verify: true})
		if err != nil || !res.Verified {
			t.Fatalf("prove a commitment circuit from files: %+v %v", res, err)
		}
		proof := groth16.NewProof(ecc.BLS12_381)
		if _, err := proof.ReadFrom(bytes.NewReader(res.Proof)); err != nil {
			t.Fatal(err)
		}
		if n := len(proof.(*groth16_bls12381.Proof).Commitments); n != fx.Commitments {
			t.Errorf("proof carries %d commitments, want %d", n, fx.Commitments)
		}
		if err := groth16.Verify(proof, fx.VK, fx.Public); err != nil {
			t.Errorf("served proof rejected by gnark: %v", err)
		}
	}
	if err := d.stop(); err != nil {
		t.Errorf("serve: %v", err)
	}
}

// TestProveShowsTheRangeCheckCircuit: cuzk prove --circuit rangecheck
// proves the built-in commitment circuit, verifies it and shows both
// commitment MSMs in its waterfall.
func TestProveShowsTheRangeCheckCircuit(t *testing.T) {
	clearOTLPEnv(t)
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	out, errOut, err := runCuzk(t, "prove", "--circuit", "rangecheck", "--constraints", "1024", "--backend", "cpu",
		"--proof", filepath.Join(dir, "p.bin"), "--trace-file", filepath.Join(dir, "t.jsonl"))
	if err != nil {
		t.Fatalf("cuzk prove --circuit rangecheck: %v\n%s", err, errOut)
	}
	for _, want := range []string{"ACCEPTED", "msm.g1.commitment_pok", "range-checked to 64 bits"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	trace, err := os.ReadFile(filepath.Join(dir, "t.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(trace, []byte(`"msm.g1.commitment"`)) {
		t.Error("trace file has no msm.g1.commitment span")
	}
}
