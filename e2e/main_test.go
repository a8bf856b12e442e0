package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

// binDir holds the programs the tests build themselves (gapspan, and cuzk
// or curio-task when run.sh did not pass them in).
var binDir string

func TestMain(m *testing.M) {
	// Every daemon a test starts keeps its jobs in memory, unless the test
	// gives it a --state-dir: none shares the user's journal.
	os.Setenv("CUZK_STATE_DIR", "none")
	dir, err := os.MkdirTemp("", "otelcuzk-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// program returns the path of a program: $env when set, else it is built
// from pkg into binDir, once per run. pkg is relative to dir: "." for this
// module, ".." for the root module (built there, with the root go.mod).
func program(t testing.TB, env, name, dir, pkg string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	p := filepath.Join(binDir, name)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	cmd := exec.Command("go", "build", "-o", p, pkg)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return p
}

func gapspanBin(t testing.TB) string {
	return program(t, "OTELCUZK_GAPSPAN_BIN", "gapspan", ".", "./cmd/gapspan")
}

func cuzkBin(t testing.TB) string {
	return program(t, "CUZK_BIN", "cuzk", "..", "./cmd/cuzk")
}

func curioTaskBin(t testing.TB) string {
	return program(t, "OTELCUZK_CURIO_TASK_BIN", "curio-task", "..", "./examples/curio-task")
}

// runProgram runs bin with args and extra environment, failing the test on
// a non-zero exit or after timeout, and returns stdout and stderr.
func runProgram(t testing.TB, timeout time.Duration, env []string, bin string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: still running after %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), strings.Join(args, " "), timeout, o.String(), e.String())
	}
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), strings.Join(args, " "), err, o.String(), e.String())
	}
	return o.String(), e.String()
}

// traceOf waits until Jaeger holds trace id with every span name of want
// (and no new span arrived in the last poll), then returns its spans.
func traceOf(t testing.TB, j *jaegerInstance, id string, want ...string) []tracefile.Span {
	t.Helper()
	var spans []tracefile.Span
	last := -1
	err := waitFor(context.Background(), 30*time.Second, func() error {
		got, err := tracefile.FetchJaeger(context.Background(), nil, j.QueryURL(), id)
		if err != nil {
			return err
		}
		spans = got
		if missing := missingNames(got, want); len(missing) > 0 {
			return fmt.Errorf("trace %s has %d spans, lacks %v", id, len(got), missing)
		}
		if len(got) != last { // a batch may still be on its way
			last = len(got)
			return errors.New("span count still changing")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return spans
}

// spanTree indexes one trace's spans.
type spanTree struct {
	byID   map[string]tracefile.Span
	byName map[string][]tracefile.Span
}

func newSpanTree(spans []tracefile.Span) spanTree {
	t := spanTree{byID: map[string]tracefile.Span{}, byName: map[string][]tracefile.Span{}}
	for _, s := range spans {
		t.byID[s.SpanID] = s
		t.byName[s.Name] = append(t.byName[s.Name], s)
	}
	return t
}

// one returns the single span called name, failing when there are none or
// several.
func (st spanTree) one(t testing.TB, name string) tracefile.Span {
	t.Helper()
	got := st.byName[name]
	if len(got) != 1 {
		t.Fatalf("%d spans named %q, want 1", len(got), name)
	}
	return got[0]
}

// parentName returns the name of s's parent, "" for a root or a parent not
// in the trace.
func (st spanTree) parentName(s tracefile.Span) string {
	return st.byID[s.ParentID].Name
}

// TestUntracedGapArrivesInJaeger: a program using otelcuzk.Setup with a
// planted 50 ms sleep between two children exports over OTLP gRPC; Jaeger
// must hold an `untraced` child of the root of about 50 ms, carrying
// cuzk.untraced.ms.
func TestUntracedGapArrivesInJaeger(t *testing.T) {
	j := startJaeger(t)
	service := "e2e-gap-" + fmt.Sprint(time.Now().UnixNano())
	out, _ := runProgram(t, time.Minute, j.otlpEnv("grpc", service), gapspanBin(t))
	id := strings.TrimSpace(out)
	spans := traceOf(t, j, id, "e2e.gap", "e2e.before", "e2e.after", "untraced")
	st := newSpanTree(spans)
	u := st.one(t, "untraced")
	if p := st.parentName(u); p != "e2e.gap" {
		t.Errorf("untraced parent %q, want e2e.gap", p)
	}
	if d := u.Duration(); d < 45*time.Millisecond || d > 150*time.Millisecond {
		t.Errorf("untraced lasts %v, want about 50ms", d)
	}
	ms, ok := u.Attrs["cuzk.untraced.ms"].(float64)
	if !ok || ms < 45 || ms > 150 {
		t.Errorf("cuzk.untraced.ms = %v, want about 50", u.Attrs["cuzk.untraced.ms"])
	}
	before, after := st.one(t, "e2e.before"), st.one(t, "e2e.after")
	if u.Start.Before(before.End) || u.End.After(after.Start) {
		t.Errorf("untraced [%v, %v] not between the children [.., %v] [%v, ..]", u.Start, u.End, before.End, after.Start)
	}
	if u.Service != service {
		t.Errorf("service %q, want %q", u.Service, service)
	}
}
