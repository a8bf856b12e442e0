package circuits_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
)

// within fails t unless got is within [lo, hi] times want.
func within(t *testing.T, what string, got, want uint64, lo, hi float64) {
	t.Helper()
	if r := float64(got) / float64(want); r < lo || r > hi {
		t.Errorf("%s: plan %d bytes, measured %d (ratio %.3f, want %.2f to %.2f)", what, got, want, r, lo, hi)
	}
}

// The plan's key files and wires against keys made and written at small
// sizes: the raw file the key cache writes (verifying key, then the
// proving key's WriteDump) and gnark's compressed WriteTo; the plan counts
// every wire in A and B, so it may be over by the points at infinity.
func TestPlanKeyFilesAndWiresAgainstRealKeys(t *testing.T) {
	for _, name := range []string{"merkle", "mulchain", "rangecheck"} {
		f := circuitstest.Setup(t, name, 1<<12, 1)
		p, err := circuits.PlanFor(name, 1<<12)
		if err != nil {
			t.Fatal(err)
		}
		pk := f.PK.(*groth16_bls12381.ProvingKey)
		var raw, comp bytes.Buffer
		if _, err := f.VK.WriteTo(&raw); err != nil {
			t.Fatal(err)
		}
		comp.Write(raw.Bytes())
		if err := pk.WriteDump(&raw); err != nil {
			t.Fatal(err)
		}
		if _, err := pk.WriteTo(&comp); err != nil {
			t.Fatal(err)
		}
		within(t, name+" key file", p.KeyDisk, uint64(raw.Len()), 0.9, 1.5)
		within(t, name+" compressed key file", p.KeyDiskCompressed, uint64(comp.Len()), 0.9, 1.5)
		wires := f.CCS.GetNbInternalVariables() + f.CCS.GetNbPublicVariables() + f.CCS.GetNbSecretVariables()
		// rangecheck's shape was measured at 2^14 to 2^20 (1.41 wires a
		// constraint); at 2^12 it has 1.56.
		within(t, name+" wires", uint64(p.Wires), uint64(wires), 0.85, 1.05)
		within(t, name+" witness", p.Witness, uint64(32*wires), 0.85, 1.05)
	}
}

// The host figures against the peaks measured on the H200 host (16 cores,
// 125 GiB): merkle's GPU setup (bench/setup.md, setupbench's VmHWM, which
// grows with the sizes run in order: 4.1 GB at 2^22, 15.5 GB at 2^24) and
// its CUDA prove at 2^24 in a fresh process (issue 24: peak RSS 19.6 GB).
func TestPlanHostFiguresAgainstTheH200Peaks(t *testing.T) {
	for _, m := range []struct {
		what     string
		lg       int
		measured uint64
		plan     func(circuits.Plan) uint64
	}{
		{"GPU setup 2^22", 22, 4.1e9, func(p circuits.Plan) uint64 { return p.SetupHost }},
		{"GPU setup 2^24", 24, 15.5e9, func(p circuits.Plan) uint64 { return p.SetupHost }},
		{"CUDA prove 2^24", 24, 19.6e9, func(p circuits.Plan) uint64 { return p.ProveHost }},
	} {
		p, err := circuits.PlanFor("merkle", 1<<m.lg)
		if err != nil {
			t.Fatal(err)
		}
		within(t, m.what, m.plan(p), m.measured, 0.85, 1.15)
	}
}

// The compile figure against the peak RSS (/usr/bin/time) of a process
// that builds and compiles each circuit, measured on the 2-core VM
// (bench/memory.md, compile peaks), and against the H200 host's porep
// compile at 2^26, which had passed 60.7 GB when it was stopped.
func TestPlanCompileFigureAgainstMeasuredCompiles(t *testing.T) {
	for _, m := range []struct {
		name     string
		lg       int
		measured uint64
	}{
		{"merkle", 19, 144556 << 10},
		{"mulchain", 19, 164144 << 10},
		{"rangecheck", 18, 217072 << 10},
		{"rangecheck", 19, 416864 << 10},
		{"porep", 18, 305252 << 10},
		{"porep", 19, 699044 << 10},
		{"porep", 20, 1165644 << 10},
	} {
		p, err := circuits.PlanFor(m.name, 1<<m.lg)
		if err != nil {
			t.Fatal(err)
		}
		within(t, m.name+" compile", p.CompileHost, m.measured, 0.85, 1.25)
	}
	p, err := circuits.PlanFor("porep", 1<<26)
	if err != nil {
		t.Fatal(err)
	}
	if p.CompileHost < 60.7e9 {
		t.Errorf("porep 2^26 compile: plan %d bytes, under the 60.7 GB the H200 host's compile had reached", p.CompileHost)
	}
	if p.HostFor(false, circuits.KeysCached, true) < p.CompileHost || p.HostFor(false, circuits.KeysCached, false) != p.ProveHost {
		t.Error("HostFor does not count the compile only when asked")
	}
}

func TestAPlanThatDoesNotFitNamesEveryFigure(t *testing.T) {
	p, err := circuits.PlanFor("porep", 1<<27)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Fits(false, 120<<30, 64<<30, false)
	if !errors.Is(err, circuits.ErrTooLargeForHost) || !strings.Contains(err.Error(), "host memory 177.3 GiB needed, 120.0 GiB available") ||
		!strings.Contains(err.Error(), "key file 72.3 GiB, 64.0 GiB free") {
		t.Fatalf("porep 2^27 on a 120 GiB host with a 64 GiB disk: %v", err)
	}
	// The line is cuzk setup's refusal too, and setup has no
	// --ephemeral-keys: the hint names the command that has it.
	if !strings.Contains(err.Error(), "(cuzk prove --ephemeral-keys keeps it in memory)") {
		t.Errorf("the key file's hint: %v, want it to name cuzk prove --ephemeral-keys", err)
	}
	// In memory the disk is not needed; the host still is too small.
	if err := p.Fits(false, 120<<30, 64<<30, true); err == nil || strings.Contains(err.Error(), "key file") {
		t.Fatalf("ephemeral: %v, want the host memory only", err)
	}
	// 2^26 fits that host on the GPU's figures, not on gnark's CPU setup.
	p, _ = circuits.PlanFor("porep", 1<<26)
	if err := p.Fits(false, 120<<30, 64<<30, false); err != nil {
		t.Fatalf("porep 2^26, cuda: %v", err)
	}
	if err := p.Fits(true, 110<<30, 64<<30, false); !errors.Is(err, circuits.ErrTooLargeForHost) {
		t.Fatalf("porep 2^26, cpu, 110 GiB: %v, want ErrTooLargeForHost", err)
	}
	if _, err := circuits.PlanFor("nosuch", 1<<20); !errors.Is(err, circuits.ErrUnknownCircuit) {
		t.Fatalf("unknown circuit: %v", err)
	}
}
