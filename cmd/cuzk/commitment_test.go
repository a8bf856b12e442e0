package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/daemon"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/commitmenttest"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
)

// TestServeProvesCommitmentCircuitFromFiles: a circuit with three
// commitments (api.Commit twice and a range check), registered from files
// (--circuit-file), proves through cuzk serve with the caller's witness;
// the proof carries its commitments and verifies with gnark.
func TestServeProvesCommitmentCircuitFromFiles(t *testing.T) {
	clearOTLPEnv(t)
	fx := commitmenttest.Setup(t, "multicommit")
	// A name of its own per run: the circuit registry is the process's.
	name := fmt.Sprintf("committed-%d", time.Now().UnixNano())
	spec, wb := circuitFiles(t, name, fx.CCS, fx.PK, fx.VK, fx.Witness)
	d := startDaemon(t, daemon.Config{Backend: "cpu", Release: "pool", CPUWorkers: 1,
		QueueSize: 4, ShutdownTimeout: 5 * time.Second, MaxMessageBytes: 1 << 20,
		CircuitFiles: []string{spec}})
	c := d.client(t)
	pctx, pcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer pcancel()
	for i := range 2 { // the second with the pooled buffers of the first
		res, err := c.Prove(pctx, client.Request{RequestID: "commit-" + string(rune('a'+i)), Circuit: name, Witness: wb, Verify: true})
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

// cpuAsGPU is the CPU backend posing as a GPU, so serve runs the pipelined
// engine (synthesis workers beside the devices) on a machine without one.
type cpuAsGPU struct{ *cpu.Backend }

func (cpuAsGPU) Name() string { return "cuda" }

var (
	cpuAsGPUOnce    sync.Once
	cpuAsGPUFactory = "fake-cpu-as-gpu-commit-test"
)

// TestServePipelinedProvesCommitmentCircuitFromFiles: in the pipelined
// engine the synthesis stage has no device, yet makes the commitments
// (msm.g1.commitment) with the key's commitment keys; the proofs of a
// circuit from files with three commitments verify.
func TestServePipelinedProvesCommitmentCircuitFromFiles(t *testing.T) {
	clearOTLPEnv(t)
	cpuAsGPUOnce.Do(func() {
		backend.Register(cpuAsGPUFactory, func(_ context.Context, o backend.Options) (backend.Backend, error) {
			return cpuAsGPU{cpu.New(o.TracerProvider)}, nil
		})
	})
	fx := commitmenttest.Setup(t, "multicommit")
	name := fmt.Sprintf("committed-piped-%d", time.Now().UnixNano())
	spec, wb := circuitFiles(t, name, fx.CCS, fx.PK, fx.VK, fx.Witness)
	d := startDaemon(t, daemon.Config{Backend: "cuda", Release: "async", CPUWorkers: -1, QueueSize: 8,
		SynthesisWorkers: 2, MemoryBudget: "4GiB", ShutdownTimeout: 10 * time.Second, MaxMessageBytes: 1 << 20,
		GPUFactory: cpuAsGPUFactory, CircuitFiles: []string{spec},
		GPUs: func() ([]cudaspans.DeviceInfo, error) {
			return []cudaspans.DeviceInfo{{Ordinal: 0, Name: "GPU zero", TotalMemory: 1 << 30}}, nil
		},
	})
	if !strings.Contains(d.log.String(), "2 synthesis workers") {
		t.Fatalf("not the pipelined engine:\n%s", d.log.String())
	}
	c := d.client(t)
	pctx, pcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer pcancel()
	var wg sync.WaitGroup
	for i := range 3 { // at once: synthesis of one beside the prove of another
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Prove(pctx, client.Request{RequestID: "piped-commit-" + string(rune('a'+i)), Circuit: name, Witness: wb, Verify: true})
			if err != nil || !res.Verified {
				t.Errorf("prove a commitment circuit through the pipelined engine: %+v %v", res, err)
				return
			}
			proof := groth16.NewProof(ecc.BLS12_381)
			if _, err := proof.ReadFrom(bytes.NewReader(res.Proof)); err != nil {
				t.Error(err)
				return
			}
			if n := len(proof.(*groth16_bls12381.Proof).Commitments); n != fx.Commitments {
				t.Errorf("proof carries %d commitments, want %d", n, fx.Commitments)
			}
			if err := groth16.Verify(proof, fx.VK, fx.Public); err != nil {
				t.Errorf("served proof rejected by gnark: %v", err)
			}
		}()
	}
	wg.Wait()
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
