package engine

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// deviceMeter times the proves of a fake device (one at a time) from
// start: its busy time, and the time it starved, from its first prove to
// its last. The gap after a prove is starved time when, as that prove
// ended, no finished synthesis was waiting for the device and a job of
// the batch had yet to begin its synthesis (one more at once could have
// been under way). A gap with a synthesis waiting is the engine's
// hand-over, which on a loaded machine is the scheduler's latency (the
// device's goroutine woken milliseconds late); a gap once every job has
// begun is the batch's tail, the last syntheses finishing. Neither is too
// few syntheses at once.
type deviceMeter struct {
	start time.Time
	jobs  int // the batch's jobs (0: unknown, every gap without a synthesis waiting is starved)

	mu      sync.Mutex
	begun   int  // syntheses begun
	waiting int  // syntheses finished whose prove has not begun
	fed     bool // the gap after the last prove is not starved
	first   time.Duration
	last    time.Duration
	busy    time.Duration
	starved time.Duration
}

// synthesizing records a synthesis that begins.
func (m *deviceMeter) synthesizing() {
	m.mu.Lock()
	m.begun++
	m.mu.Unlock()
}

// synthesized records a synthesis that finished.
func (m *deviceMeter) synthesized() {
	m.mu.Lock()
	m.waiting++
	m.mu.Unlock()
}

// prove is one prove of d on the device.
func (m *deviceMeter) prove(d time.Duration) {
	m.mu.Lock()
	m.waiting--
	t0 := time.Since(m.start)
	if m.busy > 0 && !m.fed {
		m.starved += t0 - m.last
	}
	m.mu.Unlock()
	time.Sleep(d)
	t1 := time.Since(m.start)
	m.mu.Lock()
	if m.busy == 0 {
		m.first = t0
	}
	m.busy += t1 - t0
	m.last = t1
	m.fed = m.waiting > 0 || m.jobs > 0 && m.begun >= m.jobs
	m.mu.Unlock()
}

// busyShare is the device's busy time over the span from its first prove
// to its last.
func (m *deviceMeter) busyShare() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return float64(m.busy) / float64(m.last-m.first)
}

// fedShare is the share of that span in which the device did not starve
// (what the number of syntheses at once decides): it proved, a finished
// synthesis waited for it, or no job was left to begin.
func (m *deviceMeter) fedShare() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return 1 - float64(m.starved)/float64(m.last-m.first)
}

// timedFake is a StagedRunner whose synthesis takes synth and whose prove
// (the fake device) takes device; it records the solver tasks each
// synthesis was given, the most syntheses at once and, given the engine's
// tuner, the most workers it allowed as a synthesis started; and it meters
// the device.
type timedFake struct {
	synth, device time.Duration
	tuner         *Tuner
	deviceMeter

	tasks         []int // under deviceMeter.mu
	running, peak int   // under deviceMeter.mu
	allowed       int   // under deviceMeter.mu
}

type timedSyn struct{ freed chan struct{} }

func (s *timedSyn) Release(context.Context) error { return nil }
func (s *timedSyn) Freed() <-chan struct{}        { return s.freed }
func (s *timedSyn) Prove(ctx context.Context, dev prover.Device) (*prover.Result, error) {
	return proveOnFake(ctx, s, dev)
}

func (f *timedFake) Synthesize(ctx context.Context, _ *prover.Request) (prover.Synthesized, error) {
	var allowed int
	if f.tuner != nil {
		for _, tu := range f.tuner.Snapshot() {
			allowed = max(allowed, tu.Workers)
		}
	}
	f.synthesizing()
	f.mu.Lock()
	f.tasks = append(f.tasks, groth16.SolverTasks(ctx))
	f.running++
	f.peak = max(f.peak, f.running)
	f.allowed = max(f.allowed, allowed)
	f.mu.Unlock()
	time.Sleep(f.synth)
	f.mu.Lock()
	f.running--
	f.mu.Unlock()
	f.synthesized()
	s := &timedSyn{freed: make(chan struct{})}
	close(s.freed)
	return s, nil
}

func (f *timedFake) Proving() prover.Proving { return prover.Proving{} }

func (f *timedFake) proveOn(context.Context, prover.Synthesized) (*prover.Result, error) {
	f.prove(f.device)
	return &prover.Result{Proof: []byte("p"), Backend: "fake"}, nil
}

func (f *timedFake) Run(ctx context.Context, r *prover.Request) (*prover.Result, error) {
	s, err := f.Synthesize(ctx, r)
	if err != nil {
		return nil, err
	}
	return s.Prove(ctx, f)
}

// runBatch submits n jobs at once to a one-device pipelined engine over f
// and waits for them; f's device is metered from the batch's start.
func runBatch(t *testing.T, f *timedFake, n int, opts ...Option) *Engine {
	t.Helper()
	f.deviceMeter = deviceMeter{start: time.Now(), jobs: n}
	e := newEngine(t, []prover.Runner{f}, append([]Option{WithSynthesisWorkers(1), WithQueueSize(n)}, opts...)...)
	var ids []string
	for i := range n {
		ids = append(ids, mustSubmit(t, e, req(fmt.Sprintf("j%d", i), priority.Normal)).ID)
	}
	for _, id := range ids {
		if info, err := e.Await(context.Background(), id); err != nil || info.State != StateSucceeded {
			t.Fatalf("job %s: %v %v", id, info.State, err)
		}
	}
	return e
}

// Synthesis twelve times as long as the device's prove: four syntheses
// at once (the old default) keep the device about a third busy; the
// tuner, measuring both, runs enough at once to keep it fed >= 90 % of
// the time (busy, or a synthesis waiting for it: deviceMeter; the
// hand-over's scheduling latency under load, 84-88 % busy, is no tuner's
// doing).
// On a loaded machine the sleeps overshoot, the 10 ms device's most (16
// ms seen under a load of 13 on 2 cores: the ratio fell from 8 to 5 at
// the former 80/10 ms, the fixed case reached 84 % busy and the tuner
// rightly chose 7 workers, failing the fixed bounds 4 runs in 8), so the
// tuner's choice is checked against the times it measured, and the ratio
// is large enough that four workers stay well under the target even then.
func TestTunerKeepsTheDeviceBusy(t *testing.T) {
	const synth, device = 120 * time.Millisecond, 10 * time.Millisecond
	fixed := &timedFake{synth: synth, device: device}
	runBatch(t, fixed, 40, WithSynthesisWorkers(4))
	if s := fixed.busyShare(); s > 0.8 {
		t.Errorf("4 fixed synthesis workers: device busy %.0f %%, want about a third (the case the tuner is for)", 100*s)
	}

	tuned := &timedFake{synth: synth, device: device}
	tuner := NewTuner(16, 1, 24) // room above the 17 it needs
	e := runBatch(t, tuned, 160, WithTuner(tuner))
	if fed := tuned.fedShare(); fed < TargetBusy {
		t.Errorf("tuned: device fed %.1f %% (busy %.1f %%), want >= %.0f %%", 100*fed, 100*tuned.busyShare(), 100*TargetBusy)
	}
	st := e.Status()
	if len(st.Tuning) != 1 {
		t.Fatalf("status tuning %+v, want one circuit and size", st.Tuning)
	}
	tu := st.Tuning[0]
	// 1.25/0.9 x 120/10 = 16.7: 17 syntheses at once when the sleeps are
	// exact; whatever they took, the choice its own measurements give.
	want := min(24, int(math.Ceil(tunerMargin*tu.SynthesisMs/max(tu.DeviceMs, 1e-9))))
	if tu.Circuit != "mulchain" || tu.Constraints != 256 || tu.Workers < want-1 || tu.Workers > want+1 || tu.Workers < 8 ||
		tu.SynthesisMs < 108 || tu.DeviceMs < 9 ||
		!strings.Contains(tu.Reason, "synthesis") || tu.Synthesized != 160 || tu.Proved != 160 {
		t.Errorf("tuning %+v, want %d workers (at least 8) from its synthesis (>= 108 ms) over its device time (>= 9 ms)", tu, want)
	}
	// The engine runs the tuner's choice at once. Under load the choice
	// wanders above the exact times' 17 as slow syntheses move the
	// average (it ended at 23 with 18 at once at most), so the bound is
	// the lower of the two.
	exact := int(math.Ceil(tunerMargin * float64(synth) / float64(device)))
	if tuned.peak < min(tu.Workers, exact)-2 {
		t.Errorf("%d syntheses at once, want the tuner's about %d (%d for the exact times)", tuned.peak, tu.Workers, exact)
	}
	if st.SynthesisWorkers != 24 {
		t.Errorf("synthesis slots %d, want the tuner's most (24, as given)", st.SynthesisWorkers)
	}
	if n := NewTuner(16, 1, 0).MaxWorkers(); n != 8 {
		t.Errorf("default most workers on 16 cores, one device: %d, want 8", n)
	}
	if n := NewTuner(2, 2, 0).MaxWorkers(); n != 1 {
		t.Errorf("default most workers on 2 cores, two devices: %d, want 1", n)
	}
}

// A job alone gets every core for its solver; under load the syntheses
// split them.
func TestTunerGivesALoneJobAllCores(t *testing.T) {
	f := &timedFake{synth: 20 * time.Millisecond, device: 5 * time.Millisecond}
	tuner := NewTuner(16, 1, 0)
	runBatch(t, f, 1, WithTuner(tuner))
	if f.tasks[0] != 16 {
		t.Errorf("lone job: %d solver tasks, want all 16 cores", f.tasks[0])
	}
	f.tasks = nil
	runBatch(t, f, 40, WithTuner(tuner))
	f.mu.Lock()
	defer f.mu.Unlock()
	// The first job may start alone, before runBatch has submitted the
	// second (seen under load): it rightly gets all cores. The next ones
	// start with the batch queued behind them.
	for i, n := range f.tasks[1:9] {
		i++
		if n >= 16 || n < 1 {
			t.Errorf("job %d of a batch of 40: %d solver tasks, want the cores split (%v)", i, n, f.tasks)
		}
	}
}

// --synthesis-workers N (Override) fixes the number at once; the cores are
// still split over them.
func TestTunerOverrideFixesTheWorkers(t *testing.T) {
	f := &timedFake{synth: 40 * time.Millisecond, device: 2 * time.Millisecond}
	tuner := NewTuner(16, 1, 0)
	tuner.Override(3)
	e := runBatch(t, f, 30, WithTuner(tuner))
	if f.peak != 3 {
		t.Errorf("%d syntheses at once, want the override's 3", f.peak)
	}
	tu := e.Status().Tuning[0]
	if tu.Workers != 3 || !strings.Contains(tu.Reason, "--synthesis-workers 3") || tu.SolverTasks != 5 {
		t.Errorf("tuning %+v, want 3 workers fixed by the flag, 15/3 tasks", tu)
	}
	if e.Status().SynthesisWorkers != 3 {
		t.Errorf("synthesis slots %d, want 3", e.Status().SynthesisWorkers)
	}
}

// The choice, unit by unit: unmeasured, measured, the cap, the memory.
func TestTunerChoice(t *testing.T) {
	r := req("x", priority.Normal)
	tu := NewTuner(16, 1, 0)
	if n := tu.Workers(r, 0, 0); n != 8 {
		t.Errorf("unmeasured: %d workers, want cores/2", n)
	}
	tu.ObserveSynthesis(r, 400*time.Millisecond)
	tu.ObserveDevice(r, 100*time.Millisecond)
	if n := tu.Workers(r, 0, 0); n != 6 { // 1.389 x 4 = 5.6
		t.Errorf("synthesis 4x the device: %d workers, want 6", n)
	}
	if n := tu.Workers(r, 10<<30, 32<<30); n != 3 {
		t.Errorf("10 GiB a job in a 32 GiB budget: %d workers, want 3", n)
	}
	// The budget in its own unit: a small one read "0.3 GiB".
	if n := tu.Workers(r, 100<<20, 300<<20); n != 3 {
		t.Errorf("100 MiB a job in a 300 MiB budget: %d workers, want 3", n)
	}
	if s := tu.Snapshot(); !strings.HasSuffix(s[0].Reason, "; 3 fit the memory budget of 300.0 MiB") {
		t.Errorf("reason %q, want the budget named as 300.0 MiB", s[0].Reason)
	}
	tu.ObserveDevice(r, 50*time.Millisecond) // faster: taken at once
	if n := tu.Workers(r, 0, 0); n != 8 {
		t.Errorf("device 50 ms: %d workers, want 12 capped at the default most, 8", n)
	}
	if s := tu.Snapshot(); !strings.Contains(s[0].Reason, "capped at 8") {
		t.Errorf("reason %q, want the cap named", s[0].Reason)
	}
	tu.ObserveDevice(r, 150*time.Millisecond) // slower: moving average, 80 ms
	if n := tu.Workers(r, 0, 0); n != 7 {
		t.Errorf("device 80 ms: %d workers, want 7", n)
	}
	two := NewTuner(4, 2, 0)
	two.ObserveSynthesis(r, time.Second)
	two.ObserveDevice(r, 100*time.Millisecond)
	if n := two.Workers(r, 0, 0); n != 2 {
		t.Errorf("2 devices, 4 cores, synthesis 10x: %d workers, want the cap of 2 (a core per device kept)", n)
	}
	if s := two.Snapshot(); len(s) != 1 || !strings.Contains(s[0].Reason, "capped at 2") {
		t.Errorf("snapshot %+v, want the cap named", s)
	}
	if got := two.SolverTasks(r, 1, 0); got != 4 {
		t.Errorf("lone synthesis: %d tasks, want all 4 cores", got)
	}
	if got := two.SolverTasks(r, 2, 5); got != 1 {
		t.Errorf("2 at once: %d tasks, want the 2 synthesis cores split", got)
	}
	eight := NewTuner(16, 1, 0)
	eight.ObserveSynthesis(r, 800*time.Millisecond)
	eight.ObserveDevice(r, 120*time.Millisecond)
	if got := eight.SolverTasks(r, 3, 10); got != 1 {
		t.Errorf("16 cores, 10 queued behind 3: %d tasks, want 15 cores over 10 workers: 1", got)
	}
	if got := eight.SolverTasks(r, 1, 0); got != 16 {
		t.Errorf("16 cores, a lone job: %d tasks, want 16", got)
	}
	// The devices starve (nothing synthesized, a device idle) and this is
	// the only synthesis: half the synthesis cores; the next ones split
	// the cores as before; a host tuner keeps one task beside the proves.
	if got := eight.SolverTasksStarting(r, 1, 10, 0, true); got != 7 {
		t.Errorf("starved device, first of a batch: %d tasks, want 15/2 = 7", got)
	}
	if got := eight.SolverTasksStarting(r, 2, 9, 0, true); got != 1 {
		t.Errorf("starved device, second of a batch: %d tasks, want 1", got)
	}
	if got := eight.SolverTasksStarting(r, 1, 10, 1, false); got != 1 {
		t.Errorf("fed device: %d tasks, want 1", got)
	}
	host := NewTuner(16, 1, 0)
	host.HostDevices()
	if got := host.SolverTasksStarting(r, 1, 10, 1, true); got != 1 {
		t.Errorf("host tuner, starved: %d tasks, want 1 beside the proves", got)
	}
}

// A daemon without a GPU: its CPU worker's prove is the device. Serial,
// the worker synthesizes and proves in turn (the cores half idle while a
// narrow synthesis runs); pipelined with a host tuner, one synthesis runs
// ahead of the proves with one solver task, so the prover is fed >= 90 %
// of the time (deviceMeter), and a lone job still gets every core.
func TestHostTunerKeepsTheCPUProverBusy(t *testing.T) {
	const synth, device = 30 * time.Millisecond, 60 * time.Millisecond
	serial := &timedFake{synth: synth, device: device}
	serial.start = time.Now()
	e := newEngine(t, []prover.Runner{serial}, WithQueueSize(30))
	var ids []string
	for i := range 20 {
		ids = append(ids, mustSubmit(t, e, req(fmt.Sprintf("s%d", i), priority.Normal)).ID)
	}
	for _, id := range ids {
		e.Await(context.Background(), id)
	}
	if s := serial.busyShare(); s > 0.85 {
		t.Errorf("serial: prover busy %.0f %%, want about 67 %% (the case pipelining is for)", 100*s)
	}

	tuner := NewTuner(16, 1, 0)
	tuner.HostDevices()
	f := &timedFake{synth: synth, device: device, tuner: tuner}
	runBatch(t, f, 1, WithTuner(tuner))
	if f.tasks[0] != 16 {
		t.Errorf("lone job: %d solver tasks, want all 16 cores", f.tasks[0])
	}
	f.tasks = nil
	runBatch(t, f, 30, WithTuner(tuner))
	if fed := f.fedShare(); fed < TargetBusy {
		t.Errorf("host tuner: prover fed %.1f %% (busy %.1f %%), want >= %.0f %%", 100*fed, 100*f.busyShare(), 100*TargetBusy)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, n := range f.tasks[1:] {
		if n != 1 {
			t.Errorf("job %d under load: %d solver tasks, want 1 beside the CPU's proves (%v)", i+1, n, f.tasks)
			break
		}
	}
	// At most what the tuner allowed (one more where the allowance fell
	// between the engine's look and the fake's), and 1 or 2 when the
	// times are as set: synthesis is half a prove. Under load the
	// synthesis average grows with the sleeps' overshoot while the device
	// time keeps its fastest, so the tuner rightly allows more (3 and 6
	// ran at once in 90 race runs beside two busy loops on 2 cores).
	if f.peak > max(2, f.allowed+1) {
		t.Errorf("%d syntheses at once, want 1 or 2, at most the tuner's %d", f.peak, f.allowed)
	}
	fresh := NewTuner(16, 1, 0)
	fresh.HostDevices()
	x := req("x", priority.Normal)
	if n := fresh.Workers(x, 0, 0); n != 1 {
		t.Errorf("host tuner, unmeasured: %d workers, want 1", n)
	}
	fresh.ObserveSynthesis(x, synth)
	fresh.ObserveDevice(x, device)
	if n := fresh.Workers(x, 0, 0); n != 1 {
		t.Errorf("host tuner, synthesis half a prove: %d workers, want 1", n)
	}
}
