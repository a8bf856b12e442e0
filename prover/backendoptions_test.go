package prover

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/otelcuzk/otelcuzk/buffer"
)

var optionsRuns atomic.Int64

// NewPipeline hands its backend what it was given, through one channel
// each: the Releaser (and so the release mode) of WithReleaser, the
// settings of WithDeviceSettings; without WithReleaser, a sync Releaser.
func TestNewPipelineHandsItsBackendTheReleaserAndDeviceSettings(t *testing.T) {
	// A name of its own per run: a backend registers once (-count=N).
	name := fmt.Sprintf("test-options-%d", optionsRuns.Add(1))
	var got []BackendOptions
	RegisterBackend(name, func(_ context.Context, o BackendOptions) (Backend, error) {
		got = append(got, o)
		return NewCPU(nil), nil
	})
	rel, err := buffer.NewReleaser(buffer.ReleaseAsync)
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Close(context.Background())
	dev := DeviceSettings{HostCopy: "pageable", MSMG2: "cpu"}
	p := newTestPipeline(t, name, buffer.ReleaseSync, WithReleaser(rel), WithDeviceSettings(dev))
	if p.Releaser() != rel {
		t.Error("the Pipeline does not release through the WithReleaser Releaser")
	}
	plain := newTestPipeline(t, name, buffer.ReleaseSync, WithReleaser(nil))
	if len(got) != 2 {
		t.Fatalf("factory called %d times, want 2", len(got))
	}
	if got[0].Releaser != rel || got[0].Releaser.Mode() != buffer.ReleaseAsync || got[0].Device != dev {
		t.Errorf("backend options %+v, want the async Releaser and %+v", got[0], dev)
	}
	if got[1].Releaser == nil || got[1].Releaser != plain.Releaser() || got[1].Releaser.Mode() != buffer.ReleaseSync || got[1].Device != (DeviceSettings{}) {
		t.Errorf("without WithReleaser: backend options %+v, want the pipeline's own sync Releaser and no settings", got[1])
	}
}
