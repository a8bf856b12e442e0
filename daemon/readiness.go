package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/server"
)

// engineStages is how serve runs the engine's stages: its options, and the
// warm-up of the backends that have one.
type engineStages struct {
	opts      []engine.Option
	synthesis int
	tuned     bool // synthesis is the tuner's most, not --synthesis-workers
	tuner     *engine.Tuner
	budget    uint64
	pipes     []*prover.Prover
	places    []string      // where each pipeline runs, for its warm-up error ("GPU 0 (NVIDIA H200)")
	ready     chan struct{} // nil when no backend warms up
	srv       atomic.Pointer[server.Server]
}

// newEngineStages makes the engine's stage options for serve: the synthesis
// workers (pipelined by default, tuned: beside GPUs, and on the CPU alone,
// where the CPU workers' proves are the devices), the
// memory budget (estimates of the first pipeline, which synthesizes for
// all; the keys held by every pipeline), the pipelines' Releasers (for
// Status's release mode and buffer pools), and readiness when a backend
// has a warm-up (the CUDA backend's kernels).
func newEngineStages(cfg Config, pipes []*prover.Prover, devices []server.Device, budget uint64) *engineStages {
	st := &engineStages{pipes: pipes}
	gpus := 0
	for _, d := range devices {
		if d.Ordinal >= 0 {
			gpus++
		}
	}
	// devices[i] is served by pipes[i] (deviceMemory).
	for i := range pipes {
		place := "host"
		if i < len(devices) && devices[i].Ordinal >= 0 {
			place = fmt.Sprintf("GPU %d (%s)", devices[i].Ordinal, devices[i].Name)
		}
		st.places = append(st.places, place)
	}
	// The tuner sizes the synthesis stage from the stage times the engine
	// measures (engine.Tuner); --synthesis-workers N fixes its number.
	st.tuner = engine.NewTuner(runtime.NumCPU(), max(gpus, len(devices)), 0)
	if gpus == 0 {
		// The CPU workers are the devices: each synthesis under load
		// gets one solver task beside their proves, so the next job is
		// synthesized while one is proved (a serial worker left the
		// cores idle during a narrow synthesis); a lone job gets them all.
		st.tuner.HostDevices()
	}
	st.synthesis = cfg.SynthesisWorkers
	if st.synthesis < 0 {
		st.synthesis, st.tuned = st.tuner.MaxWorkers(), true
	} else if st.synthesis > 0 {
		st.tuner.Override(st.synthesis)
	}
	if len(pipes) > 0 {
		st.opts = append(st.opts, engine.WithTuner(st.tuner))
	}
	if st.synthesis > 0 && len(pipes) > 0 {
		st.opts = append(st.opts, engine.WithSynthesisWorkers(st.synthesis), engine.WithSynthesizer(pipes[0]))
	}
	st.budget = budget
	if st.budget > 0 && len(pipes) > 0 {
		st.opts = append(st.opts, engine.WithMemoryBudget(st.budget, pipes[0].EstimateMemory, func() uint64 {
			return prover.KeyMemoryOf(pipes...)
		}))
	}
	// GetStatus and the metrics say the release mode, and in pool mode the
	// pools' limit and what they hold (each pipeline's Releaser).
	rels := make([]*buffer.Releaser, 0, len(pipes))
	for _, p := range pipes {
		rels = append(rels, p.Releaser())
	}
	st.opts = append(st.opts, engine.WithReleasers(rels...))
	// A device that faults leaves the health service (the engine has
	// already sent its job to another worker).
	st.opts = append(st.opts, engine.WithFaultHook(func(worker string, err error) {
		fmt.Fprintf(cfg.Log, "cuzk serve: %s faulted, taking no more work: %s\n", worker, human.OneLine(err))
		if srv := st.srv.Load(); srv != nil {
			srv.DeviceFault(worker, err)
		}
	}))
	for _, p := range pipes {
		if p.HasWarmup() {
			st.ready = make(chan struct{})
			st.opts = append(st.opts, engine.WithReady(st.ready))
			break
		}
	}
	return st
}

// warmup reports NOT_SERVING and warms every backend up in the
// background, then SERVING; proofs submitted meanwhile queue (and are
// synthesized) and wait for it in engine.warmup spans. A warm-up that
// fails leaves the daemon NOT_SERVING with the reason in GetStatus; the
// devices are then handed their jobs anyway, which fail or compile on use.
func (st *engineStages) warmup(ctx context.Context, srv *server.Server, log io.Writer) {
	st.srv.Store(srv)
	if st.ready == nil {
		return
	}
	srv.SetNotReady("warming up: compiling or loading the kernel modules")
	go func() {
		defer close(st.ready)
		// Every device warms up at once: the wait is the slowest one's.
		errs := make([]error, len(st.pipes))
		var wg sync.WaitGroup
		for i, p := range st.pipes {
			if !p.HasWarmup() {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				// The error names the backend (prover.Prover.Warmup:
				// "cuda backend: warm-up: REASON"); this adds the device.
				if err := p.Warmup(ctx); err != nil {
					errs[i] = fmt.Errorf("%s: %w", st.places[i], err)
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			srv.SetNotReady(err.Error())
			fmt.Fprintf(log, "cuzk serve: %s\n", human.OneLine(err))
			return
		}
		srv.SetReady()
		fmt.Fprintln(log, "cuzk serve: ready (kernels compiled or loaded)")
	}()
}

// describe is the stages part of serve's start line.
func (st *engineStages) describe() string {
	s := "serial engine"
	switch {
	case st.tuned:
		s = fmt.Sprintf("synthesis workers tuned (up to %d, %d cores)", st.synthesis, st.tuner.Cores())
	case st.synthesis > 0:
		s = fmt.Sprintf("%d synthesis workers", st.synthesis)
	}
	if st.budget > 0 {
		s += ", memory budget " + human.Bytes(st.budget)
	} else {
		s += ", no memory budget"
	}
	return s + st.describePool()
}

// describePool is the buffer pools' part of serve's start line with
// --release pool (empty otherwise): what the pipelines' Releasers may
// keep in all, outside the memory budget, and each one's share
// (poolLimit).
func (st *engineStages) describePool() string {
	if len(st.pipes) == 0 || st.pipes[0].Releaser().Mode() != buffer.ReleasePool {
		return ""
	}
	var total uint64
	for _, p := range st.pipes {
		total += uint64(max(p.Releaser().PoolLimit(), 0))
	}
	if len(st.pipes) == 1 {
		return ", buffer pool " + human.Bytes(total)
	}
	return fmt.Sprintf(", buffer pools %s (%s for each of %d pipelines)",
		human.Bytes(total), human.Bytes(uint64(max(st.pipes[0].Releaser().PoolLimit(), 0))), len(st.pipes))
}
