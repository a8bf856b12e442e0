package engine

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/prover"
)

// TargetBusy is the share of time the tuner aims to keep the devices
// proving under load; it sizes the synthesis stage with a margin above it
// (tunerMargin), since synthesis times vary from job to job.
const TargetBusy = 0.9

// tunerMargin is how much more synthesis throughput than the devices'
// the tuner provides: 1/TargetBusy, and a quarter more for the spread of
// synthesis times under load.
const tunerMargin = 1.25 / TargetBusy

// tunerAlpha is the weight of a new observation in the moving averages of
// synthesis and device times (an exponentially weighted mean).
const tunerAlpha = 0.3

// Tuner chooses, for each circuit and size, how many jobs are synthesized
// at once, and for each synthesis its solver tasks (gnark's
// solver.WithNbTasks), from the cores, the memory budget and the ratio of
// synthesis to device time that the engine measures itself:
//
//	workers = ceil(tunerMargin * devices * synthesis / device)
//
// clamped to 1..MaxWorkers and to the jobs that fit the memory budget, so
// that the syntheses under way finish jobs at least as fast as the
// devices prove them (the devices busy >= TargetBusy). Under load the
// syntheses split the cores less one per device (the synthesis cores):
// each device worker keeps a core for its prove's own host work, which
// syntheses on every core slowed (on the H200 host at 2^20, 16 syntheses
// at once stretched each proof's device time 8 % over 8 at once, and lost
// 10 % of the proofs per second); a lone job, with nothing else under
// way, gets every core. Before a circuit and size has been measured it
// gets max(1, cores/2) workers (the best hand-set value there, 8 of 16
// cores; cores/4 lost the first seconds of a batch to the ramp). An
// override (WithSynthesisWorkers's n with WithTuner, or Override) fixes
// the number of workers; the solver tasks are still split. Safe for
// concurrent use.
type Tuner struct {
	cores, devices, maxWorkers int

	mu       sync.Mutex
	host     bool // HostDevices: the devices prove on these cores
	override int  // > 0: fixed workers
	shapes   map[string]*shapeStats
}

// shapeStats are the moving averages of one circuit and size.
type shapeStats struct {
	synthesisMs, deviceMs float64 // 0: not measured yet
	// firstMs is the latest synthesis that carried the circuit's one-time
	// work (ObserveFirstSynthesis), shown while synthesisMs is 0.
	firstMs             float64
	synthesized, proved int
	memory              uint64 // one job's estimate
	budget              uint64 // the engine's budget (0: none)
	tasks               int    // the solver tasks of the last synthesis
}

// Tuning is the tuner's choice for one circuit and size, with its inputs:
// Workers syntheses at once, SolverTasks the tasks the last synthesis was
// given, SynthesisMs and DeviceMs the moving averages of the measured
// stage times (0: none yet; SynthesisMs is a first synthesis's, one-time
// work included, until another is measured: the Reason says so, and the
// choice does not use it), Synthesized and Proved the samples taken,
// Reason a line saying why.
type Tuning struct {
	Circuit               string
	Constraints           int
	Workers, SolverTasks  int
	SynthesisMs, DeviceMs float64
	Synthesized, Proved   int
	Reason                string
}

// NewTuner returns a tuner for cores CPU cores (< 1: 1) feeding devices
// devices (< 1: 1, the CPU workers of a daemon without a GPU) with at
// most maxWorkers syntheses at once (< 1: DefaultMaxWorkers).
func NewTuner(cores, devices, maxWorkers int) *Tuner {
	cores, devices = max(cores, 1), max(devices, 1)
	if maxWorkers < 1 {
		maxWorkers = DefaultMaxWorkers(cores, devices)
	}
	return &Tuner{cores: cores, devices: devices, maxWorkers: maxWorkers, shapes: map[string]*shapeStats{}}
}

// DefaultMaxWorkers is the tuner's most syntheses at once on cores cores
// feeding devices devices: half the cores (at least 1), and never more
// than the synthesis cores. On the H200 host (16 cores, one GPU, merkle
// 2^20, 32 jobs) a tuner allowed 15 chose more than 8 and proved 6.145
// proofs/s with 141 ms of device time per proof, against 7.207 proofs/s
// and 116 ms with 8 fixed (bench/daemon.md): syntheses past the point
// where they keep up only slow the proves' host side.
func DefaultMaxWorkers(cores, devices int) int {
	return max(1, min(cores/2, synthesisCores(cores, devices)))
}

// synthesisCores is the cores the syntheses split under load: one per
// device is left to the device workers' host work.
func synthesisCores(cores, devices int) int { return max(1, cores-devices) }

// HostDevices says the devices are the CPU itself (a daemon without a
// GPU: its CPU workers' proves use every core): under load each synthesis
// then gets one solver task, beside the proves, and a circuit not yet
// measured one worker, as many as a CPU prove, seconds long against a
// synthesis of a fraction of a second, usually needs; a lone job still gets
// every core. The workers follow the measured times as with GPUs.
func (t *Tuner) HostDevices() {
	t.mu.Lock()
	t.host = true
	t.mu.Unlock()
}

// Override fixes the number of synthesis workers to n (--synthesis-workers);
// n < 1 goes back to tuning.
func (t *Tuner) Override(n int) {
	t.mu.Lock()
	t.override = max(n, 0)
	t.mu.Unlock()
}

// MaxWorkers is the most syntheses the tuner ever allows at once: the
// number of synthesis goroutines an engine starts.
func (t *Tuner) MaxWorkers() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.override > 0 {
		return t.override
	}
	return t.maxWorkers
}

// Cores is the number of cores the tuner splits.
func (t *Tuner) Cores() int { return t.cores }

func shapeKey(r *prover.Request) string { return r.Circuit + "/" + strconv.Itoa(r.Constraints) }

func (t *Tuner) shapeLocked(key string) *shapeStats {
	s := t.shapes[key]
	if s == nil {
		s = &shapeStats{}
		t.shapes[key] = s
	}
	return s
}

// Workers returns how many jobs of req's circuit and size may be in
// synthesis at once, memory (one job's estimate, bytes) and budget (the
// engine's memory budget, 0: none) bounding it.
func (t *Tuner) Workers(req *prover.Request, memory, budget uint64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.shapeLocked(shapeKey(req))
	s.memory, s.budget = memory, budget
	n, _ := t.chooseLocked(s)
	return n
}

// chooseLocked is the number of workers for s and why.
func (t *Tuner) chooseLocked(s *shapeStats) (int, string) {
	if t.override > 0 {
		return t.override, fmt.Sprintf("fixed by --synthesis-workers %d", t.override)
	}
	n := max(1, t.cores/2)
	why := fmt.Sprintf("not measured yet: cores/2 of %d", t.cores)
	if t.host {
		n, why = 1, "not measured yet: one beside the CPU's proves"
	}
	if s.synthesisMs == 0 && s.firstMs > 0 {
		why += fmt.Sprintf(" (the first synthesis, %.0f ms, carried the circuit's one-time work)", s.firstMs)
	}
	if s.synthesisMs > 0 && s.deviceMs > 0 {
		need := tunerMargin * float64(t.devices) * s.synthesisMs / s.deviceMs
		n = int(math.Ceil(need))
		why = fmt.Sprintf("synthesis %.0f ms / device %.0f ms on %d device(s): %.1f syntheses at once keep the devices %.0f%% busy",
			s.synthesisMs, s.deviceMs, t.devices, need, 100*TargetBusy)
	}
	if n > t.maxWorkers {
		n = t.maxWorkers
		why += fmt.Sprintf("; capped at %d", t.maxWorkers)
	}
	if s.budget > 0 && s.memory > 0 {
		if fit := int(s.budget / s.memory); fit < n {
			n = max(fit, 1)
			why += fmt.Sprintf("; %d fit the memory budget of %s", n, human.Bytes(s.budget))
		}
	}
	return max(n, 1), why
}

// SolverTasks returns the solver tasks of a synthesis of req starting now
// with busy syntheses under way (itself included) and queued jobs waiting
// for one: all cores for a lone job (busy <= 1, nothing queued), else the
// synthesis cores split over the syntheses that will run at once.
func (t *Tuner) SolverTasks(req *prover.Request, busy, queued int) int {
	return t.SolverTasksBeside(req, busy, queued, 0)
}

// SolverTasksBeside is SolverTasks with proving jobs on the devices: with
// HostDevices a job is lone only when no prove runs either (the proves use
// the cores); GPU proves leave them to the syntheses.
func (t *Tuner) SolverTasksBeside(req *prover.Request, busy, queued, proving int) int {
	return t.SolverTasksStarting(req, busy, queued, proving, false)
}

// SolverTasksStarting is SolverTasksBeside for a synthesis that starts
// while the devices starve (starved: no synthesized job waits for them, a
// device idles, and no other synthesis is under way): its end is when a
// device starts again, so it gets half the synthesis cores and the
// syntheses starting after it split the rest (a batch's first synthesis;
// at merkle 2^22 on the H200 the device waited for it about a sixth of a
// 16-job batch). The level solver uses as many of them as pay.
func (t *Tuner) SolverTasksStarting(req *prover.Request, busy, queued, proving int, starved bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.shapeLocked(shapeKey(req))
	if busy <= 1 && queued == 0 && (!t.host || proving == 0) {
		s.tasks = t.cores
		return s.tasks
	}
	if t.host {
		s.tasks = 1
		return s.tasks
	}
	n, _ := t.chooseLocked(s)
	share := max(1, min(n, max(busy, 1)+queued))
	s.tasks = max(1, synthesisCores(t.cores, t.devices)/share)
	if starved && busy <= 1 {
		s.tasks = max(s.tasks, synthesisCores(t.cores, t.devices)/2)
	}
	return s.tasks
}

// ObserveSynthesis records that a synthesis of req took d: its own work
// (pipeline.synthesize), not the circuit's compile or its keys' load
// (prover.SynthesisTimer).
func (t *Tuner) ObserveSynthesis(req *prover.Request, d time.Duration) {
	t.observe(req, d, false, func(s *shapeStats) *float64 { s.synthesized++; return &s.synthesisMs })
}

// ObserveFirstSynthesis records that a synthesis of req that may have
// carried the circuit's one-time solver work (its first solve:
// synthesize.plan; prover.SynthesisTiming.FirstSolve) took d. It is
// counted and shown (Tuning.SynthesisMs) until a synthesis without it is
// measured, but never averaged in nor used to choose: a first sample
// several times the others' held the choice above what the devices need
// for the jobs after it (the moving average keeps 0.7^n of it after n
// more).
func (t *Tuner) ObserveFirstSynthesis(req *prover.Request, d time.Duration) {
	if d <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.shapeLocked(shapeKey(req))
	s.synthesized++
	s.firstMs = float64(d) / 1e6
}

// ObserveDevice records that a device proved a job of req in d. A time
// below the average replaces it: a slower prove carries a one-time cost
// (the first prove's key upload and kernel load), which must not hold the
// synthesis stage back for the jobs after it.
func (t *Tuner) ObserveDevice(req *prover.Request, d time.Duration) {
	t.observe(req, d, true, func(s *shapeStats) *float64 { s.proved++; return &s.deviceMs })
}

func (t *Tuner) observe(req *prover.Request, d time.Duration, down bool, field func(*shapeStats) *float64) {
	if d <= 0 {
		return
	}
	ms := float64(d) / 1e6
	t.mu.Lock()
	defer t.mu.Unlock()
	f := field(t.shapeLocked(shapeKey(req)))
	if *f == 0 || down && ms < *f {
		*f = ms
	} else {
		*f += tunerAlpha * (ms - *f)
	}
}

// Snapshot returns the tuner's choice for every circuit and size seen, by
// circuit then size.
func (t *Tuner) Snapshot() []Tuning {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Tuning, 0, len(t.shapes))
	for key, s := range t.shapes {
		n, why := t.chooseLocked(s)
		tasks := s.tasks
		if tasks == 0 {
			tasks = max(1, synthesisCores(t.cores, t.devices)/n)
		}
		synthMs := s.synthesisMs
		if synthMs == 0 {
			synthMs = s.firstMs
		}
		tu := Tuning{Workers: n, SolverTasks: tasks, SynthesisMs: synthMs, DeviceMs: s.deviceMs,
			Synthesized: s.synthesized, Proved: s.proved, Reason: why}
		tu.Circuit, tu.Constraints = splitShapeKey(key)
		out = append(out, tu)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Circuit != out[j].Circuit {
			return out[i].Circuit < out[j].Circuit
		}
		return out[i].Constraints < out[j].Constraints
	})
	return out
}

func splitShapeKey(key string) (string, int) {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			n, _ := strconv.Atoi(key[i+1:])
			return key[:i], n
		}
	}
	return key, 0
}
