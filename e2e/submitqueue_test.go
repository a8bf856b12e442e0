package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The built cuzk against a real `cuzk serve` whose one worker is held (a
// job in its key setup, seconds of it): a second `cuzk submit` prints
// each state it sees, QUEUED with its place first, SUCCEEDED last (it
// printed only SUCCEEDED after waiting); meanwhile `cuzk status` says the
// holding job is in keys.setup.
func TestSubmitToAHeldQueuePrintsQueuedWithItsPlaceThenItsEnd(t *testing.T) {
	bin := cuzkBin(t)
	dir := t.TempDir()
	// The serial engine: the key setup holds the one device worker (a
	// pipelined daemon, the default, runs it in a synthesis slot).
	d := startDaemon(t, nil, "--cache-dir", filepath.Join(dir, "keys"), "--trace-file", filepath.Join(dir, "t.jsonl"), "--cpu-workers", "1",
		"--synthesis-workers", "0")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A size no key is cached for: its setup holds the worker.
	big := exec.CommandContext(ctx, bin, "submit", "--addr", d.Addr, "--circuit", "mulchain", "--constraints", "20000", "--request-id", "big", "--timeout", "5m")
	big.Env = os.Environ()
	var bigOut strings.Builder
	big.Stdout, big.Stderr = &bigOut, &bigOut
	if err := big.Start(); err != nil {
		t.Fatal(err)
	}
	bigDone := make(chan error, 1)
	go func() { bigDone <- big.Wait() }()
	err := waitFor(ctx, time.Minute, func() error {
		out, _ := runProgram(t, 30*time.Second, nil, bin, "status", "--addr", d.Addr)
		// The step it is in, on its job line and its worker's (status
		// said "proving" through the whole setup).
		if !strings.Contains(out, "request big  mulchain  RUNNING: keys.setup") ||
			!regexp.MustCompile(`(?m)^worker +cpu:0 +\S+ RUNNING: keys\.setup `).MatchString(out) {
			return errorString("big not in its key setup yet:\n" + out)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := runProgram(t, 5*time.Minute, nil, bin, "submit", "--addr", d.Addr, "--circuit", "mulchain", "--constraints", "16",
		"--request-id", "behind", "--timeout", "5m")
	var states []string
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "state     "); ok {
			states = append(states, rest)
		}
	}
	got := strings.Join(states, "; ")
	if !strings.HasPrefix(got, "QUEUED, position 1 of 1") || !strings.HasSuffix(got, "SUCCEEDED") {
		t.Errorf("states printed: %s, want QUEUED, position 1 of 1 first and SUCCEEDED last\n%s", got, out)
	}
	select {
	case err := <-bigDone:
		if err != nil {
			t.Errorf("the holding job: %v\n%s", err, bigOut.String())
		}
	case <-ctx.Done():
		t.Fatal("the holding job did not end")
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
