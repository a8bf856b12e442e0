package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/logtest"
	"github.com/otelcuzk/otelcuzk/prover/client"
)

// A signal is announced the moment it arrives; a command that returns on
// its own prints nothing. (That a second one quits:
// TestASecondSIGINTQuitsServeStartedWithSIGINTIgnored.)
func TestAnInterruptIsAnnouncedAtOnce(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	var w logtest.Buffer
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() { announceInterrupt(ctx, finished, &w); close(done) }()
	interrupt()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("no notice 2 s after the interrupt")
	}
	if w.String() != interruptNotice+"\n" {
		t.Errorf("notice %q, want %q", w.String(), interruptNotice)
	}

	ctx, interrupt = context.WithCancel(context.Background())
	var quiet bytes.Buffer
	finished = make(chan struct{})
	close(finished) // the command returned, then its deferred stop cancels ctx
	interrupt()
	announceInterrupt(ctx, finished, &quiet)
	if quiet.Len() > 0 {
		t.Errorf("a finished command printed %q", quiet.String())
	}
}

// Ctrl-C while cuzk prove is in a step that cannot stop (here the key
// setup; a CPU MSM is the same case) says at once that it is stopping and
// ends with exit 130 within about a second of the engine's cancel grace,
// not when the step ends (it waited silently for the whole step).
func TestProveInterruptedInAStepThatCannotStopSaysSoAndEndsWithinSeconds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a key setup of 2^17 constraints")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcessMain$", "--",
		"prove", "--circuit", "mulchain", "--constraints", "131072", "--backend", "cpu", "--progress",
		"--cache-dir", filepath.Join(dir, "cache"), "--proof", filepath.Join(dir, "p.bin"),
		"--trace-file", filepath.Join(dir, "t.jsonl"))
	cmd.Env = append(os.Environ(), "CUZK_HELPER_MAIN=1")
	var stdout, stderr logtest.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(stderr.String(), "groth16 setup") && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	took := time.Since(sent)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		t.Fatalf("prove on SIGINT: %v, want exit %d\nstderr %q", err, exitInterrupted, stderr.String())
	}
	if took > 4*time.Second {
		t.Errorf("prove ended %v after SIGINT; a step that cannot stop was waited for", took)
	}
	var lines []string // as a terminal shows them: what follows the last \r
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if i := strings.LastIndexByte(l, '\r'); i >= 0 {
			l = l[i+1:]
		}
		lines = append(lines, l)
	}
	if n := len(lines); n < 2 || lines[n-2] != interruptNotice || lines[n-1] != "cuzk: interrupted by a signal; no proof written" {
		t.Errorf("stderr ends %q, want the notice then that no proof was written", lines)
	}
	if _, err := os.Stat(filepath.Join(dir, "p.bin")); !os.IsNotExist(err) {
		t.Errorf("an interrupted prove left a proof file (%v)", err)
	}
}

// A shell starts a background job (`cuzk serve ... &`) with SIGINT
// ignored. The second SIGINT to a serve waiting for a running job must
// still quit at once (exit 130): serve removed its handler after the
// first signal, which restored the ignored disposition, and the daemon
// ran on until the job ended. prove, submit and setup share the handler
// (interrupt.Context).
func TestASecondSIGINTQuitsServeStartedWithSIGINTIgnored(t *testing.T) {
	if testing.Short() {
		t.Skip("holds a key setup of 2^17 constraints in a serve")
	}
	clearOTLPEnv(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// trap "" INT makes SIGINT ignored in the process exec replaces the
	// shell with, as a non-interactive shell does for a background job.
	cmd := exec.CommandContext(ctx, "sh", "-c", `trap "" INT; exec "$@"`, "sh", os.Args[0], "-test.run=^TestHelperProcessMain$", "--",
		"serve", "--backend", "cpu", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--state-dir", "none",
		"--shutdown-timeout", "5m", "--cache-dir", filepath.Join(dir, "cache"), "--trace-file", filepath.Join(dir, "t.jsonl"))
	cmd.Env = append(os.Environ(), "CUZK_HELPER_MAIN=1")
	var stderr logtest.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := regexp.MustCompile(`listening on (\S+) `)
	var addr string
	waitFor(t, "serve listening", time.Minute, func() bool {
		if m := listening.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Submit(ctx, client.Request{RequestID: "held", Circuit: "mulchain", Constraints: 1 << 17}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, c, "held")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the shutdown notice", time.Minute, func() bool { return strings.Contains(stderr.String(), "shutting down") })
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		t.Fatalf("serve after a second SIGINT: %v, want exit %d at once (not a shutdown after the job)\nstderr %q", err, exitInterrupted, stderr.String())
	}
}
