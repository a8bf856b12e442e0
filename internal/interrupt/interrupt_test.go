package interrupt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestHelperProcess is the program the tests signal: it prints "ready"
// once Context's handler is installed, "cancelled" when ctx ends, then
// stands for a command whose shutdown takes long (20 s), ending with
// status 0 unless a second signal ends it first.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("INTERRUPT_HELPER") != "1" {
		t.Skip("helper process")
	}
	ctx, stop := Context(context.Background())
	defer stop()
	fmt.Println("ready")
	<-ctx.Done()
	fmt.Println("cancelled")
	time.Sleep(20 * time.Second)
	os.Exit(0)
}

// The first SIGINT or SIGTERM cancels the context and the process goes
// on; the second ends it with 128 + the signal's number, also when the
// process started with SIGINT ignored (a shell's background job), where
// signal.NotifyContext's stop would restore the ignoring.
func TestASecondSignalEndsTheProcess(t *testing.T) {
	for _, tc := range []struct {
		what    string
		sig     syscall.Signal
		ignored bool
		want    int
	}{{"SIGINT", syscall.SIGINT, false, 130}, {"SIGTERM", syscall.SIGTERM, false, 143}, {"SIGINT, started ignoring it", syscall.SIGINT, true, 130}} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		args := []string{os.Args[0], "-test.run=^TestHelperProcess$"}
		if tc.ignored {
			// exec keeps the ignored disposition trap "" gave the shell.
			args = append([]string{"sh", "-c", `trap "" INT; exec "$@"`, "sh"}, args...)
		}
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "INTERRUPT_HELPER=1")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		for _, want := range []string{"ready", "cancelled"} {
			if !lines.Scan() || lines.Text() != want {
				t.Fatalf("%s: helper wrote %q, want %q", tc.what, lines.Text(), want)
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
		}
		err = cmd.Wait()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != tc.want {
			t.Errorf("%s: after the second signal the process ended with %v, want exit status %d", tc.what, err, tc.want)
		}
	}
}
