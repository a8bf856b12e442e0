package main

import (
	"fmt"
	"math/bits"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
)

func TestProvePlanPrintsTheTableAndTheVerdictWithoutProving(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	out, _, err := runCuzk(t, "prove", "--plan", "--backend", "cuda", "--circuit", "porep", "--constraints", "134217728",
		"--proof", filepath.Join(dir, "p.bin"), "--trace-file", filepath.Join(dir, "t.jsonl"))
	// It does not fit (no host here has 177.3 GiB): the table, the
	// verdict, and a non-zero exit (it exited 0).
	if want := "plan: porep at 134217728 constraints does not fit this host (the plan's last line says which figures)"; err == nil || err.Error() != want {
		t.Errorf("--plan of a request that does not fit: %v, want %q", err, want)
	}
	for _, want := range []string{"plan of porep at 134217728 constraints", "| porep | 2^20 |", "| porep | 2^27 | 4.0 GiB | 16.0 GiB | 72.0 GiB | 72.3 GiB |",
		"this host: ", "does not fit: ", "host memory 177.3 GiB needed"} {
		if !strings.Contains(out, want) {
			t.Errorf("--plan output lacks %q:\n%s", want, out)
		}
	}
	noKeyFiles(t, filepath.Join(dir, "cache"))
	noTempFiles(t, dir)
}

// A request whose plan does not fit is refused before the circuit is
// built, in one line with the plan's figures.
func TestARequestOverThePlanIsRefusedWithItsFigures(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	for _, args := range [][]string{
		{"setup", "--backend", "cuda", "--circuit", "porep", "--constraints", "134217728"},
		{"prove", "--ephemeral-keys", "--backend", "cuda", "--circuit", "porep", "--constraints", "134217728", "--proof", filepath.Join(dir, "p.bin"), "--trace-file", filepath.Join(dir, "t.jsonl")},
	} {
		_, _, err := runCuzk(t, args...)
		if err == nil || !strings.Contains(err.Error(), "porep at 134217728 constraints: host memory 177.3 GiB needed") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line with the plan's host memory", args, err)
		}
	}
	noKeyFiles(t, filepath.Join(dir, "cache"))
}

// On a host without a usable CUDA device, --backend auto (the default)
// proves and sets up on the CPU, so its plan is checked with the CPU
// figures: a request the GPU figures would let through but the CPU's do
// not is refused, as with --backend cpu, and --plan says which figures.
func TestAutoWithoutADeviceIsPlannedWithTheCPUFigures(t *testing.T) {
	if _, err := cudaspans.Devices(); err == nil {
		t.Skip("a CUDA device is usable here: auto uses the GPU figures")
	}
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	avail, err := circuits.MemAvailable()
	if err != nil {
		t.Skip(err)
	}
	// The smallest porep size whose CPU figures do not fit this host.
	var n int
	var p circuits.Plan
	for lg := 14; lg <= 30; lg++ {
		if p, err = circuits.PlanFor("porep", 1<<lg); err == nil && p.Host(true) > avail {
			n = 1 << lg
			break
		}
	}
	if n == 0 {
		t.Skip("no porep size over this host's memory")
	}
	args := []string{"prove", "--circuit", "porep", "--constraints", fmt.Sprint(n),
		"--proof", filepath.Join(dir, "p.bin"), "--trace-file", filepath.Join(dir, "t.jsonl")}
	want := "host memory " + human.Bytes(p.Host(true)) + " needed"
	for _, backend := range [][]string{nil, {"--backend", "auto"}} {
		_, _, err := runCuzk(t, append(append([]string{}, args...), backend...)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v at 2^%d: %v, want a refusal naming the CPU figure %q", backend, bits.Len(uint(n))-1, err, want)
		}
	}
	out, _, err := runCuzk(t, "prove", "--plan", "--circuit", "merkle", "--constraints", "4096",
		"--proof", filepath.Join(dir, "p.bin"), "--trace-file", filepath.Join(dir, "t.jsonl"))
	if err != nil || !strings.Contains(out, "(cpu backend figures: auto, no CUDA device usable here)") {
		t.Errorf("--plan with auto and no device: %v\n%s\nwant the CPU figures named", err, out)
	}
	noKeyFiles(t, filepath.Join(dir, "cache"))
}
