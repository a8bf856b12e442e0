package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/logtest"
)

// noKeyFiles fails t if the cache directory dir holds a key file or the
// temporary file of an interrupted key write (".HASH.keys.tmp-*").
func noKeyFiles(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(d.Name(), ".keys") {
			t.Errorf("an interrupted setup left %s", path)
		}
		return nil
	})
}

// A setup whose context has ended (the signal's context is its child)
// exits 130 with prove's one line, and writes no key (it returned
// "context canceled", exit 1).
func TestAnInterruptedSetupExits130WithoutAKey(t *testing.T) {
	// Not t.TempDir: the compile a cancelled call starts goes on in the
	// background (keycache.AbandonedError; a process that exits ends it)
	// and may still be writing its circuit file and timing records into
	// the folder when this test returns, so its removal is retried (TempDir's
	// cleanup failed once under load with "directory not empty").
	tmp, err := os.MkdirTemp("", "cuzk-interrupted-setup-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if err := os.RemoveAll(tmp); err == nil || time.Now().After(deadline) {
				return
			}
		}
	})
	cache := filepath.Join(tmp, "cache")
	ctx, interrupt := context.WithCancel(context.Background())
	interrupt()
	app := newApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	err = app.RunContext(ctx, []string{"cuzk", "setup", "--circuit", "mulchain", "--constraints", "64", "--cache-dir", cache})
	var ec interface{ ExitCode() int }
	if !errors.As(err, &ec) || ec.ExitCode() != exitInterrupted || err.Error() != "interrupted by a signal; no key written" {
		t.Errorf("interrupted setup: %v, want exit %d saying no key was written", err, exitInterrupted)
	}
	noKeyFiles(t, cache)
}

// SIGINT and SIGTERM during groth16.Setup end cuzk setup with exit 130
// and one line, and leave no key file (they killed it with no message).
// The signal is sent once setup's spinner shows, so the handler is in
// place; the setup of 2^18 constraints lasts far longer than the spinner's
// 2 s delay.
func TestSetupStopsOnASignalWithOneLine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a setup of 2^18 constraints")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cache := filepath.Join(t.TempDir(), "cache")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcessMain$", "--",
			"setup", "--circuit", "mulchain", "--constraints", "262144", "--cache-dir", cache, "--progress")
		cmd.Env = append(os.Environ(), "CUZK_HELPER_MAIN=1")
		var stdout, stderr logtest.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for !strings.Contains(stderr.String(), "groth16 setup") && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
			t.Errorf("setup on %v: %v, want exit %d\nstdout %q\nstderr %q", sig, err, exitInterrupted, stdout.String(), stderr.String())
		}
		if !strings.HasSuffix(stderr.String(), "cuzk: interrupted by a signal; no key written\n") {
			t.Errorf("setup on %v: stderr %q, want it to end in one line saying no key was written", sig, stderr.String())
		}
		noKeyFiles(t, cache)
	}
}

// prove and setup refuse a size above 2^32 constraints as such, in one
// line: they printed a memory estimate saturated at 2^64 bytes ("needs
// about 17179869184.0 GiB").
func TestProveAndSetupRefuseSizesNoProofHas(t *testing.T) {
	t.Setenv("CUZK_CACHE_DIR", t.TempDir())
	for _, cmd := range []string{"prove", "setup"} {
		for _, n := range []string{"4294967297", "1099511627777", "9223372036854775807"} {
			_, _, err := runCuzk(t, cmd, "--circuit", "mulchain", "--constraints", n)
			want := "bad constraint count: " + n + " (above 2^32 = 4294967296, the largest FFT domain of BLS12-381's scalar field: no Groth16 proof of that size exists)"
			if err == nil || err.Error() != want {
				t.Errorf("%s --constraints %s: %v, want %q", cmd, n, err, want)
			}
		}
	}
}

// On a host without a GPU, setup --backend cuda fails before compiling
// and caching the circuit (it compiled first, then failed in the setup),
// in one line that says what to do.
func TestSetupCUDAWithoutDeviceFailsBeforeTheCompile(t *testing.T) {
	if _, err := cudaspans.Devices(); err == nil {
		t.Skip("this host has a CUDA device")
	}
	cache := filepath.Join(t.TempDir(), "cache")
	_, errOut, err := runCuzk(t, "setup", "--circuit", "mulchain", "--constraints", "4096", "--backend", "cuda", "--cache-dir", cache)
	if err == nil || !strings.HasPrefix(err.Error(), "setup backend cuda: no CUDA device: ") ||
		!strings.HasSuffix(err.Error(), "; use --backend cpu, or --backend auto to fall back to the CPU") || strings.Contains(err.Error(), "\n") {
		t.Errorf("setup --backend cuda without a device: %v, want one line saying so and what to do", err)
	}
	if !errors.Is(err, cudaspans.ErrNoDevice) {
		t.Errorf("%v does not wrap cudaspans.ErrNoDevice", err)
	}
	if strings.Contains(errOut, "circuit cache") || strings.Contains(errOut, "compil") {
		t.Errorf("setup compiled before failing: %q", errOut)
	}
	filepath.WalkDir(cache, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("setup --backend cuda without a device wrote %s", path)
		}
		return nil
	})
}
