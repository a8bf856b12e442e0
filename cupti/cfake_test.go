package cupti

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
)

// fakeLib is testdata/fakecupti.c built once per test process: CUPTI is
// one per process (cBackend.open), so a second build at another path
// could not be loaded by a second run (go test -count=2). TestMain
// removes its folder.
var fakeLib struct {
	once      sync.Once
	dir, path string
	err       error
}

// fakeCUPTILibrary returns the path of the fake libcupti, building it on first use.
func fakeCUPTILibrary() (string, error) {
	fakeLib.once.Do(func() {
		dir, err := os.MkdirTemp("", "cupti-fake-")
		if err != nil {
			fakeLib.err = err
			return
		}
		fakeLib.dir, fakeLib.path = dir, filepath.Join(dir, "libcupti-fake.so")
		if out, err := exec.Command("cc", "-shared", "-fPIC", "-o", fakeLib.path, "testdata/fakecupti.c", "-lpthread").CombinedOutput(); err != nil {
			fakeLib.err = fmt.Errorf("building the fake: %v\n%s", err, out)
		}
	})
	return fakeLib.path, fakeLib.err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fakeLib.dir != "" {
		os.RemoveAll(fakeLib.dir)
	}
	os.Exit(code)
}

// TestCallPutsForeignWorkUnderTheGoSpanThroughTheCSide runs the real C
// side (cz_core.c: loading, subscription, buffers, NVTX callbacks,
// external correlation pushed by Call) against testdata/fakecupti.c, a
// libcupti stand-in, so the path a GPU host takes is covered in CI.
func TestCallPutsForeignWorkUnderTheGoSpanThroughTheCSide(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	if _, err := cudaspans.LoadDriver(); err == nil {
		// CUPTI is one per process: on a GPU host the *GPU tests need the
		// real one, not this fake.
		t.Skip("a CUDA driver is here: the GPU tests use the real CUPTI")
	}
	lib, err := fakeCUPTILibrary()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NVTX_INJECTION64_PATH", "")
	rec, tp := spantest.New()
	c, err := Start(context.Background(), WithLibraryPaths(lib), WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if c.Path() != lib {
		t.Fatalf("loaded %q, want %q", c.Path(), lib)
	}
	job := loadedSymbol("fake_job_cb")
	if job == nil {
		t.Fatal("the fake has no fake_job_cb")
	}
	ctx, span := tp.Tracer("t").Start(context.Background(), "job")
	Call(ctx, job, nil)
	c.Flush(ctx)
	span.End()
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	byName := spantest.ByName(rec)
	phase, kernel := byName["fake.phase"], byName["fake_kernel"]
	if phase == nil || kernel == nil {
		t.Fatalf("range %v, kernel %v (stats %+v)", phase != nil, kernel != nil, c.Stats())
	}
	if phase.Parent().SpanID() != span.SpanContext().SpanID() {
		t.Error("the NVTX range is not under the Go span of Call")
	}
	if kernel.Parent().SpanID() != phase.SpanContext().SpanID() {
		t.Error("the kernel is not under the range it was launched in")
	}
	if d := kernel.EndTime().Sub(kernel.StartTime()); d.Microseconds() != 1000 {
		t.Errorf("kernel lasted %v, want 1ms", d)
	}
}

func TestAnotherCUPTICannotBeLoadedOnceOneIs(t *testing.T) {
	if openPath == "" {
		t.Skip("no CUPTI loaded in this test process")
	}
	_, err := Start(context.Background(), WithLibraryPaths("/elsewhere/libcupti.so.13"))
	if err == nil || !strings.Contains(err.Error(), "already loaded") {
		t.Fatalf("err %v", err)
	}
}
