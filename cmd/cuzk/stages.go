package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/server"
)

// defaultBudgetShare is the share of physical memory the proofs in flight
// may hold when --memory-budget is not given: the rest is for the Go heap
// of the daemon, the page cache of the key files and the other processes.
const defaultBudgetShare = 0.7

// memoryBudget is a parsed --memory-budget: bytes, or a share of physical
// memory.
type memoryBudget struct {
	bytes uint64
	share float64 // used when > 0
}

// parseMemoryBudget reads "" (the default share), "0" (none), a number of
// bytes with an optional KiB, MiB, GiB or TiB suffix (KB, MB, GB, TB and
// K, M, G, T mean the same powers of 1024), or a percentage of physical
// memory ("70%"). Errors name the value.
func parseMemoryBudget(s string) (memoryBudget, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return memoryBudget{share: defaultBudgetShare}, nil
	}
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil || v <= 0 || v > 100 || math.IsNaN(v) {
			return memoryBudget{}, fmt.Errorf("%q: want a share above 0%% and at most 100%%", s)
		}
		return memoryBudget{share: v / 100}, nil
	}
	num := strings.TrimRight(s, "KMGTiBkmgtib")
	unit := strings.ToUpper(strings.TrimSpace(s[len(num):]))
	shift := map[string]uint{"": 0, "B": 0, "K": 10, "KB": 10, "KIB": 10, "M": 20, "MB": 20, "MIB": 20,
		"G": 30, "GB": 30, "GIB": 30, "T": 40, "TB": 40, "TIB": 40}
	sh, ok := shift[unit]
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || v*float64(uint64(1)<<sh) >= 1<<63 {
		return memoryBudget{}, fmt.Errorf("%q: want bytes (64GiB, 512MiB, 1073741824), a share (70%%) or 0", s)
	}
	n := uint64(v * float64(uint64(1)<<sh))
	if n == 0 && v != 0 {
		// "0.5" is no budget of half a byte, and not "0" (none) either.
		return memoryBudget{}, fmt.Errorf("%q: less than one byte; want bytes (64GiB, 512MiB, 1073741824), a share (70%%) or 0", s)
	}
	return memoryBudget{bytes: n}, nil
}

// resolve returns the budget in bytes on a host with total bytes of
// physical memory (0 when unknown: no budget from a share).
func (b memoryBudget) resolve(total uint64) uint64 {
	if b.share > 0 {
		return uint64(float64(total) * b.share)
	}
	return b.bytes
}

// physicalMemory returns the host's physical memory in bytes
// (circuits.MemTotal), 0 where it cannot be read.
func physicalMemory() uint64 {
	n, err := circuits.MemTotal()
	if err != nil {
		return 0
	}
	return n
}

// serveStages is how serve runs the engine's stages: its options, and the
// warm-up of the backends that have one.
type serveStages struct {
	opts      []engine.Option
	synthesis int
	tuned     bool // synthesis is the tuner's most, not --synthesis-workers
	tuner     *engine.Tuner
	budget    uint64
	pipes     []*prover.Pipeline
	ready     chan struct{} // nil when no backend warms up
	srv       atomic.Pointer[server.Server]
}

// stageOptions makes the engine's stage options for serve: the synthesis
// workers (pipelined beside GPUs by default, serial on the CPU alone), the
// memory budget (estimates of the first pipeline, which synthesizes for
// all; the keys held by every pipeline), and readiness when a backend has
// a warm-up (the CUDA backend's kernels).
func stageOptions(cfg serveConfig, pipes []*prover.Pipeline, devices []server.Device, budget memoryBudget) *serveStages {
	st := &serveStages{pipes: pipes}
	gpus := 0
	for _, d := range devices {
		if d.Ordinal >= 0 {
			gpus++
		}
	}
	mem := physicalMemory()
	// The tuner sizes the synthesis stage from the stage times the engine
	// measures (engine.Tuner); --synthesis-workers N fixes its number.
	st.tuner = engine.NewTuner(runtime.NumCPU(), max(gpus, len(devices)), 0)
	st.synthesis = cfg.synthesisWorkers
	if st.synthesis < 0 {
		st.synthesis = 0
		if gpus > 0 {
			st.synthesis, st.tuned = st.tuner.MaxWorkers(), true
		}
	} else if st.synthesis > 0 {
		st.tuner.Override(st.synthesis)
	}
	if len(pipes) > 0 {
		st.opts = append(st.opts, engine.WithTuner(st.tuner))
	}
	if st.synthesis > 0 && len(pipes) > 0 {
		st.opts = append(st.opts, engine.WithSynthesisWorkers(st.synthesis), engine.WithSynthesizer(pipes[0]))
	}
	st.budget = budget.resolve(mem)
	if st.budget > 0 && len(pipes) > 0 {
		st.opts = append(st.opts, engine.WithMemoryBudget(st.budget, pipes[0].EstimateMemory, func() uint64 {
			return prover.KeyMemoryOf(pipes...)
		}))
	}
	// A device that faults leaves the health service (the engine has
	// already sent its job to another worker).
	st.opts = append(st.opts, engine.WithFaultHook(func(worker string, err error) {
		fmt.Fprintf(cfg.log, "cuzk serve: %s faulted, taking no more work: %s\n", worker, oneLine(err))
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
func (st *serveStages) warmup(ctx context.Context, srv *server.Server, log io.Writer) {
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
				if err := p.Warmup(ctx); err != nil {
					errs[i] = fmt.Errorf("warm-up of the %s backend failed: %v", p.Backend(), err)
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			srv.SetNotReady(err.Error())
			fmt.Fprintf(log, "cuzk serve: %s\n", oneLine(err))
			return
		}
		srv.SetReady()
		fmt.Fprintln(log, "cuzk serve: ready (kernels compiled or loaded)")
	}()
}

// describe is the stages part of serve's start line.
func (st *serveStages) describe() string {
	s := "serial engine"
	switch {
	case st.tuned:
		s = fmt.Sprintf("synthesis workers tuned (up to %d, %d cores)", st.synthesis, st.tuner.Cores())
	case st.synthesis > 0:
		s = fmt.Sprintf("%d synthesis workers", st.synthesis)
	}
	if st.budget > 0 {
		return s + ", memory budget " + bytesStr(st.budget)
	}
	return s + ", no memory budget"
}
