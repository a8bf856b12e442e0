package main

import (
	"bytes"
	"context"
	"io"
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
	dir := t.TempDir()
	fx := commitmenttest.Setup(t, "multicommit")
	write := func(name string, w io.WriterTo) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteTo(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return path
	}
	spec := "committed:" + write("c.r1cs", fx.CCS) + ":" + write("c.pk", fx.PK) + ":" + write("c.vk", fx.VK)
	wb, err := fx.Witness.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrCh := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- serve(ctx, serveConfig{listen: "127.0.0.1:0", backend: "cpu", release: "pool", cpuWorkers: 1,
			queueSize: 4, shutdownTimeout: 5 * time.Second, maxMessage: 1 << 20, log: io.Discard,
			traceFile: filepath.Join(dir, "t.jsonl"), cacheDir: filepath.Join(dir, "cache"),
			circuitFiles: []string{spec}, ready: func(a, _ string) { addrCh <- a }})
	}()
	var addr string
	select {
	case addr = <-addrCh:
	case err := <-served:
		t.Fatalf("serve: %v", err)
	}
	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pctx, pcancel := context.WithTimeout(ctx, 60*time.Second)
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
	cancel()
	if err := <-served; err != nil {
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
