package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// cuzk without a command is a usage error: the usage on stderr, nothing on
// stdout, exit status 2 (as Go's flag package); cuzk help still prints to
// stdout and exits 0.
func TestNoCommandPrintsUsageToStderrAndExits2(t *testing.T) {
	run := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcessMain$", "--"}, args...)...)
		cmd.Env = append(os.Environ(), "CUZK_HELPER_MAIN=1")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			code = exit.ExitCode()
		case err != nil:
			t.Fatal(err)
		}
		return out.String(), errOut.String(), code
	}
	stdout, stderr, code := run()
	if code != exitUsage {
		t.Errorf("cuzk: exit %d, want %d", code, exitUsage)
	}
	// The test binary's own PASS/ok lines never come: main exits first.
	if stdout != "" {
		t.Errorf("cuzk: stdout %q, want nothing", stdout)
	}
	for _, want := range []string{"USAGE:", "prove", "serve", "submit", "trace"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("cuzk: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "cuzk: \n") {
		t.Errorf("cuzk: an empty error line after the usage:\n%s", stderr)
	}
	stdout, _, code = run("help")
	if code != 0 || !strings.Contains(stdout, "USAGE:") {
		t.Errorf("cuzk help: exit %d, stdout %q; want 0 and the usage", code, stdout)
	}
}
