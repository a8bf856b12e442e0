package keycache

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A named pipe where a cache file goes (the compiled circuit, its solver
// plan, the keys) is refused at once as "a named pipe, not a file", the
// circuit and keys are made in memory and prove: opened for reading it
// would wait for a writer forever, and cuzk prove with it. A directory
// there is said as "a directory, not a file" (it was "mmap PATH: no such
// device" for the circuit and the keys).
func TestANamedPipeOrDirectoryInACacheFilesPlaceIsRefusedNotWaitedOn(t *testing.T) {
	for _, kind := range []string{"named pipe", "directory"} {
		for _, file := range []string{"circuit", "plan", "keys"} {
			t.Run(kind+" as the "+file, func(t *testing.T) {
				dir := t.TempDir()
				stored := compilePlanRun(t, dir)
				k, err := mustNew(t, dir).LoadHashed(context.Background(), stored.comp.CCS, stored.comp.Hash)
				if err != nil {
					t.Fatal(err)
				}
				path := map[string]string{"circuit": stored.comp.Path, "plan": planPath(stored.comp.Path), "keys": k.Path}[file]
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				if kind == "named pipe" {
					if err := unix.Mkfifo(path, 0o600); err != nil {
						t.Skipf("mkfifo: %v", err)
					}
				} else if err := os.Mkdir(path, 0o755); err != nil {
					t.Fatal(err)
				}
				var notice bytes.Buffer
				c := mustNew(t, dir, WithRevision("rev1"), WithProgress(&notice, false))
				type result struct {
					comp *Compiled
					keys *Keys
					err  error
				}
				done := make(chan result, 1)
				go func() {
					comp, err := c.Compile(context.Background(), "mulchain", 1<<10, (&compiler{n: 1 << 10}).compile)
					if err != nil {
						done <- result{err: err}
						return
					}
					k, err := c.LoadHashed(context.Background(), comp.CCS, comp.Hash)
					done <- result{comp, k, err}
				}()
				var r result
				select {
				case r = <-done:
				case <-time.After(2 * time.Minute):
					// Let the blocked open return, so the test ends.
					if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
						f.Close()
					}
					t.Fatalf("the load still waits on the %s after 2 minutes; said %q", kind, notice.String())
				}
				if r.err != nil {
					t.Fatalf("with a %s as the %s: %v, want the circuit and keys made again", kind, file, r.err)
				}
				requireProveAndVerify(t, r.comp.CCS, r.keys, 1<<10)
				// The path once a line: "P is not a key file (P is a named
				// pipe, not a file)" named it twice.
				want := filepath.Base(path) + " " + map[string]string{"circuit": "unreadable", "plan": "refused", "keys": "is not a key file"}[file] +
					" (a " + kind + ", not a file); "
				if !strings.Contains(notice.String(), want) {
					t.Errorf("said %q, want it to say %q", notice.String(), want)
				}
				for _, line := range strings.Split(strings.TrimSpace(notice.String()), "\n") {
					if n := strings.Count(line, path); n != 1 {
						t.Errorf("a line names %s %d times: %q", path, n, line)
					}
				}
			})
		}
	}
}
