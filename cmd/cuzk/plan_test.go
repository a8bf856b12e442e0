package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestProvePlanPrintsTheTableAndTheVerdictWithoutProving(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	out, _, err := runCuzk(t, "prove", "--plan", "--circuit", "porep", "--constraints", "134217728",
		"--proof", filepath.Join(dir, "p.bin"), "--trace-file", filepath.Join(dir, "t.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"plan of porep at 134217728 constraints", "| porep | 2^20 |", "| porep | 2^27 | 4.0 GiB | 16.0 GiB | 72.0 GiB | 72.3 GiB |",
		"this host: ", "does not fit: ", "host memory 176.8 GiB needed"} {
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
		{"prove", "--backend", "auto", "--circuit", "porep", "--constraints", "134217728", "--proof", filepath.Join(dir, "p.bin"), "--trace-file", filepath.Join(dir, "t.jsonl")},
		{"prove", "--ephemeral-keys", "--circuit", "porep", "--constraints", "134217728", "--proof", filepath.Join(dir, "p.bin"), "--trace-file", filepath.Join(dir, "t.jsonl")},
	} {
		_, _, err := runCuzk(t, args...)
		if err == nil || !strings.Contains(err.Error(), "porep at 134217728 constraints: host memory 176.8 GiB needed") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line with the plan's host memory", args, err)
		}
	}
	noKeyFiles(t, filepath.Join(dir, "cache"))
}
