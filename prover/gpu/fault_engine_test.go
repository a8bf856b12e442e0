package gpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/engine"
)

var fakePipelines atomic.Int64

// fakePipeline is a prover.Prover over b (a backend on the fake device),
// registered under a name of its own.
func fakePipeline(t *testing.T, b *Backend) *prover.Prover {
	t.Helper()
	name := fmt.Sprintf("fake-gpu-%d", fakePipelines.Add(1))
	backend.Register(name, func(context.Context, backend.Options) (backend.Backend, error) { return b, nil })
	p, err := prover.New(context.Background(), name, prover.WithKeyCacheDir(t.TempDir()), prover.WithTracerProvider(b.tp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// The whole path with the fake driver (issue 11 item 11): two workers,
// each a Prover over its own fake device; gpu0's driver starts failing
// with a sticky error. The job gpu0 takes fails there with
// backend.ErrDeviceFault, the engine takes gpu0 out of service (Healthy
// false, the fault named) and requeues the job: every job is proved on
// gpu1, and gpu0's driver sees nothing after the fault.
func TestAFaultingFakeDeviceIsFencedAndItsJobsProvedOnTheOther(t *testing.T) {
	b0, drv0, _ := fakeProvingBackend(t, nil)
	b1, _, _ := fakeProvingBackend(t, nil)
	drv0.Fault(illegalAddress)
	eng, err := engine.New([]engine.Worker{
		{Name: "gpu0", Runner: fakePipeline(t, b0)},
		{Name: "gpu1", Runner: fakePipeline(t, b1)},
	}, engine.WithTracerProvider(b0.tp))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(func() { _ = eng.Shutdown(ctx) })
	defer cancel()
	var ids []string
	for i := range 4 {
		info, err := eng.Submit(ctx, &prover.Request{RequestID: fmt.Sprint("f", i), Circuit: "mulchain", Constraints: 256})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	for _, id := range ids {
		info, err := eng.Await(ctx, id)
		if err != nil || info.Result == nil || info.Worker != "gpu1" {
			t.Fatalf("%s: %v on %q, want proved on gpu1", info.RequestID, err, info.Worker)
		}
	}
	st := eng.Status()
	var w0, w1 engine.WorkerStatus
	for _, w := range st.Workers {
		switch w.Name {
		case "gpu0":
			w0 = w
		case "gpu1":
			w1 = w
		}
	}
	if w0.Healthy || !strings.Contains(w0.Fault, "CUDA_ERROR_ILLEGAL_ADDRESS") || !w1.Healthy {
		t.Errorf("workers gpu0 %+v, gpu1 %+v: want gpu0 unhealthy naming the fault, gpu1 healthy", w0, w1)
	}
	if f := b0.Fault(); !errors.Is(f, backend.ErrDeviceFault) {
		t.Errorf("gpu0's backend Fault() = %v, want fenced", f)
	}
	launches := len(drv0.Launches())
	drv0.Fault(nil)
	if _, err := eng.Prove(ctx, &prover.Request{RequestID: "after", Circuit: "mulchain", Constraints: 256}); err != nil {
		t.Fatalf("a proof after the fault: %v", err)
	}
	if n := len(drv0.Launches()); n != launches {
		t.Errorf("%d kernels launched on the fenced gpu0", n-launches)
	}
}
