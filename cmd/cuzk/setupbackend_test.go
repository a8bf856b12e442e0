package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/cudaspans"
)

func runSetup(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	app := newApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	err = app.RunContext(context.Background(), append([]string{"cuzk", "setup"}, args...))
	return out.String(), errOut.String(), err
}

func TestSetupRefusesAnUnknownBackendBeforeAnyWork(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	_, _, err := runSetup(t, "--circuit", "mulchain", "--constraints", "64", "--cache-dir", cache, "--backend", "tpu")
	if err == nil || !strings.Contains(err.Error(), `--backend "tpu": unknown backend (want cpu, cuda or auto)`) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("--backend tpu: %v, want one line naming the flag", err)
	}
	noKeyFiles(t, cache)
}

// Without a device (CI), auto makes the keys on the CPU and says so in
// one line; cuda is an error naming the missing device and writes no key.
func TestSetupBackendAutoFallsBackToTheCPUWithoutAGPU(t *testing.T) {
	if devs, err := cudaspans.Devices(); err == nil && len(devs) > 0 {
		t.Skip("a CUDA device is present: auto uses it (the GPU tests cover it)")
	}
	cache := filepath.Join(t.TempDir(), "cache")
	out, errOut, err := runSetup(t, "--circuit", "mulchain", "--constraints", "64", "--cache-dir", cache)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "backend auto: ") || !strings.Contains(errOut, "; using cpu") || !strings.Contains(out, "made by groth16.Setup") {
		t.Fatalf("auto without a GPU: stdout %q, stderr %q; want the fallback line and a CPU setup", out, errOut)
	}
	cache2 := filepath.Join(t.TempDir(), "cache")
	_, _, err = runSetup(t, "--circuit", "mulchain", "--constraints", "64", "--cache-dir", cache2, "--backend", "cuda")
	if err == nil || !strings.Contains(err.Error(), "setup backend cuda") {
		t.Fatalf("--backend cuda without a GPU: %v, want an error naming the backend", err)
	}
	noKeyFiles(t, cache2)
	// --backend cuda asks for the device: it is checked before the
	// compile, as prove --backend cuda checks it, also when the key is
	// cached (TestSetupCUDAWithoutDeviceFailsBeforeTheCompile).
	_, _, err = runSetup(t, "--circuit", "mulchain", "--constraints", "64", "--cache-dir", cache, "--backend", "cuda")
	if err == nil || !strings.Contains(err.Error(), "setup backend cuda") {
		t.Fatalf("--backend cuda with the key cached, without a GPU: %v, want an error naming the backend", err)
	}
}

// cuzk setup --compressed-keys writes <hash>.keyz, and cuzk prove
// --compressed-keys proves from it without a setup of its own.
func TestSetupAndProveWithCompressedKeys(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	out, _, err := runSetup(t, "--circuit", "mulchain", "--constraints", "64", "--cache-dir", cache, "--backend", "cpu", "--compressed-keys")
	if err != nil || !strings.Contains(out, ".keyz") {
		t.Fatalf("setup --compressed-keys: %v, %q", err, out)
	}
	out, errOut, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "64", "--backend", "cpu", "--cache-dir", cache,
		"--compressed-keys", "--proof", filepath.Join(dir, "p.bin"), "--trace-file", filepath.Join(dir, "t.jsonl"))
	if err != nil {
		t.Fatalf("prove --compressed-keys: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, "ACCEPTED") || strings.Contains(out, "keys.setup") {
		t.Fatalf("prove from the compressed key: want ACCEPTED without a setup:\n%s", out)
	}
}
