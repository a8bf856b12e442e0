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

// The built cuzk, as a user runs it: trace diff's header says what each
// side ran (circuit, size, backend, release mode, host, build), and
// --constraints picks the jobs of one size out of a file holding several
// (a daemon's file), which without a filter, or with a size B lacks, is
// refused in one line saying why and what picks one.
func TestTraceDiffHeaderAndSizeFiltersOfTheBuiltCuzk(t *testing.T) {
	bin := cuzkBin(t)
	dir := t.TempDir()
	env := []string{"CUZK_CACHE_DIR=" + filepath.Join(dir, "cache"), "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="}
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	for i, run := range []struct {
		file, size, release string
	}{{a, "1024", "sync"}, {a, "2048", "async"}, {b, "1024", "async"}} {
		runProgram(t, 5*time.Minute, env, bin, "prove", "--circuit", "mulchain", "--constraints", run.size, "--backend", "cpu",
			"--release", run.release, "--trace-file", run.file, "--proof", filepath.Join(dir, "p"+string(rune('0'+i))))
	}
	out, _ := runProgram(t, time.Minute, env, bin, "trace", "diff", "--constraints", "1024", a, b)
	for _, re := range []string{
		`(?m)^A: mulchain 2\^10 \(1024 constraints\), backend cpu, release sync, host \S+, build \S+`,
		`(?m)^B: mulchain 2\^10 \(1024 constraints\), backend cpu, release async, host \S+, build \S+`,
		`(?m)^\s+1 trace, median [0-9.]+ ms`,
		`(?m)engine\.job`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("trace diff --constraints 1024: output lacks %s:\n%s", re, out)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--all", a, b}, "trace diff: traces cannot be compared: side A mixes sizes of mulchain: 1024 and 2048 constraints (--constraints picks one, --normalize compares per constraint)"},
		{[]string{"--constraints", "2048", a, b}, "holds no job of --constraints 2048 (it holds mulchain 1024 ×1)"},
	} {
		stderr, err := runFailing(t, env, bin, append([]string{"trace", "diff"}, c.args...)...)
		if err == nil || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("trace diff %v: exit %v, stderr %q; want one line with %q", c.args, err, stderr, c.want)
		}
	}
}

// runFailing runs bin expecting it to fail, and returns its stderr and
// exit error.
func runFailing(t *testing.T, env []string, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var e strings.Builder
	cmd.Stderr = &e
	err := cmd.Run()
	return e.String(), err
}
