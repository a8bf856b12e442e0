package cupti

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Errors Start returns, for callers to branch on; each is wrapped with the
// reason.
var (
	// ErrNoCUPTI: no libcupti could be loaded (none installed, or not a
	// CUPTI library).
	ErrNoCUPTI = semconv.NewError(semconv.ErrorTypeUnsupported, "cupti: no CUPTI library")
	// ErrVersion: the library is older than the record layouts this
	// package reads (MinVersion).
	ErrVersion = semconv.NewError(semconv.ErrorTypeUnsupported, "cupti: unsupported CUPTI version")
	// ErrInUse: another CUPTI client (Nsight Systems, a profiler, an
	// earlier Capture) holds CUPTI's one subscription.
	ErrInUse = semconv.NewError(semconv.ErrorTypeUnavailable, "cupti: CUPTI is in use by another tool")
	// ErrStart: CUPTI refused to start for another reason.
	ErrStart = semconv.NewError(semconv.ErrorTypeCUDA, "cupti: CUPTI did not start")
)

// MinVersion is the oldest cuptiGetVersion accepted: CUDA 11.8's CUPTI
// (API version 18), the oldest whose record layouts were checked
// (records.go).
const MinVersion = 18

// Capture is CUPTI activity capture in this process: every kernel, copy,
// memset and synchronization CUDA runs, and the NVTX ranges of any code,
// become spans. Start one per process. Its methods are safe for
// concurrent use.
type Capture struct {
	cfg     config
	be      backend
	path    string
	version uint32

	mu      sync.Mutex // serializes drains
	b       *builder
	closed  bool
	stopc   chan struct{}
	done    chan struct{}
	lastCal time.Time
	// csInC: the backend matches cudaspans' durations (cz_cudaspans_take).
	csInC bool
	// deferred: cuda.cupti_ms without the forced flush (the default;
	// WithoutForcedFlush): no flush at cudaspans' Synchronize, its held
	// spans ended after each drain.
	deferred bool
	// csCounts: cudaspans.LaunchDurationCounts when the hook was removed
	// (csFinal), for Stats after Close. Under mu.
	csCounts [3]int
	csFinal  bool
}

var (
	activeMu sync.Mutex
	active   *Capture
)

// Start loads libcupti (Option WithLibraryPaths; default
// DefaultLibraryPaths, $CUZK_CUPTI first when set), checks its version,
// subscribes and starts capturing. Before the first NVTX call of the
// process it sets NVTX_INJECTION64_PATH to the loaded library (unless set)
// so NVTX ranges reach CUPTI. It hooks into cudaspans so that kernels
// cudaspans launches are not traced twice: their spans get KeyCUPTIMS.
// Errors wrap ErrNoCUPTI, ErrVersion, ErrInUse or ErrStart; nothing is
// left subscribed on failure.
func Start(ctx context.Context, opts ...Option) (*Capture, error) {
	cfg := newConfig(opts)
	activeMu.Lock()
	defer activeMu.Unlock()
	if active != nil {
		return nil, fmt.Errorf("%w: this process already has a Capture (close it first)", ErrInUse)
	}
	be := cfg.backend
	if be == nil {
		be = cBackend{}
	}
	paths := cfg.paths
	if len(paths) == 0 {
		paths = DefaultLibraryPaths()
	}
	path, version, err := be.open(paths)
	if err != nil {
		return nil, err
	}
	if version < MinVersion {
		return nil, fmt.Errorf("%w: %s reports CUPTI API version %d, this package reads the record layouts of version %d (CUDA 11.8) and later", ErrVersion, path, version, MinVersion)
	}
	if cfg.nvtx && os.Getenv("NVTX_INJECTION64_PATH") == "" {
		os.Setenv("NVTX_INJECTION64_PATH", path)
	}
	flags := uint32(startMemcpy | startMemset | startSync)
	if cfg.nvtx {
		flags |= startNVTX
	}
	if code, err := be.start(flags); err != nil {
		if code == cuptiMultipleSubscribers {
			return nil, fmt.Errorf("%w: %v", ErrInUse, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	c := &Capture{cfg: cfg, be: be, path: path, version: version, stopc: make(chan struct{}), done: make(chan struct{})}
	_, c.csInC = be.cudaspansDurations(nil)
	c.b = newBuilder(builderConfig{
		tracer:        semconv.Tracer(cfg.tp),
		maxPerParent:  cfg.maxPerParent,
		window:        cfg.window,
		goParent:      lookupParent,
		log:           cfg.log,
		keepCudaspans: !c.csInC,
		holdBatches:   holdBatches(cfg),
		now:           cfg.now,
		job:           cfg.job,
	})
	c.lastCal = cfg.now()
	if cfg.envNote != "" {
		cfg.log(cfg.envNote)
	}
	durations := c.cudaspansDurations
	if !cfg.csDurations {
		durations = nil
	}
	c.deferred = cfg.csDurations && cfg.noForcedFlush
	push, pop := be.cudaspansHooks()
	cudaspans.SetLaunchCorrelation(push, pop, durations)
	if c.deferred {
		cudaspans.SetLaunchDurationWait(true, cfg.durationWait)
	}
	active = c
	go c.loop()
	return c, nil
}

// holdBatches is builderConfig.holdBatches: 1 with WithForcedFlush or
// WithoutCudaspansDurations, else (the default) as many drains as the
// wait spans (records come apart as the spans wait for them).
func holdBatches(cfg config) int {
	if !cfg.noForcedFlush || !cfg.csDurations {
		return 1
	}
	return max(1, int((cfg.durationWait+cfg.flushEvery-1)/cfg.flushEvery))
}

// DefaultLibraryPaths are the libraries Start tries, in order:
// $CUZK_CUPTI when set, then libcupti.so.13, .so.12 and .so by the
// dynamic loader's search, then the same under /usr/local/cuda's CUPTI
// folders.
func DefaultLibraryPaths() []string {
	var p []string
	if v := os.Getenv("CUZK_CUPTI"); v != "" {
		p = append(p, v)
	}
	names := []string{"libcupti.so.13", "libcupti.so.12", "libcupti.so"}
	p = append(p, names...)
	for _, dir := range []string{"/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"} {
		for _, n := range names {
			p = append(p, dir+"/"+n)
		}
	}
	return p
}

// Path returns the file of the loaded library; Version its cuptiGetVersion.
func (c *Capture) Path() string    { return c.path }
func (c *Capture) Version() uint32 { return c.version }

// Stats returns what the capture has seen so far.
func (c *Capture) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.b.stats
	if c.cfg.csDurations {
		n := c.csCounts
		if !c.csFinal {
			n[0], n[1], n[2] = cudaspans.LaunchDurationCounts()
		}
		s.CudaspansWithCUPTI, s.CudaspansWithoutCUPTI, s.CudaspansWaiting = n[0], n[1], n[2]
	}
	return s
}

// unhookCudaspans removes the cudaspans hooks, keeping the counts of
// their spans for Stats. Called with activeMu held.
func (c *Capture) unhookCudaspans() {
	cudaspans.EndWaitingLaunches(true) // those held since the last drain
	m, u, w := cudaspans.LaunchDurationCounts()
	cudaspans.SetLaunchCorrelation(nil, nil, nil)
	c.mu.Lock()
	// Spans held still (a Synchronize racing this Close) were ended, as
	// without, by SetLaunchCorrelation.
	c.csCounts, c.csFinal = [3]int{m, u + w, 0}, true
	c.mu.Unlock()
	if c.deferred && u+w > 0 {
		c.cfg.log(fmt.Sprintf("cupti: %d of %d cudaspans kernel spans ended without cuda.cupti_ms: no CUPTI record within %v of their Synchronize (%s=2s waits longer, %s=0 forces a CUPTI flush at each Synchronize)", u+w, m+u+w, c.cfg.durationWait, NoForcedFlushEnv, NoForcedFlushEnv))
	}
}

func (c *Capture) loop() {
	defer close(c.done)
	t := time.NewTicker(c.cfg.flushEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stopc:
			return
		case <-t.C:
			c.drain(false, false)
		}
	}
}

// drain flushes CUPTI, decodes what came and emits spans; without the
// forced flush (the default) it then ends cudaspans' held kernel spans
// whose records came, or whose wait is over (all when final).
func (c *Capture) drain(forced, final bool) {
	if c.drainRecords(forced, final) && c.deferred {
		// Without c.mu: the hook (cudaspansDurations) takes it.
		cudaspans.EndWaitingLaunches(final)
	}
}

// drainRecords is drain's flush, decoding and spans; false when the
// capture is closed (and this is not the final drain).
func (c *Capture) drainRecords(forced, final bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed && !final {
		return false
	}
	if now := c.cfg.now(); now.Sub(c.lastCal) >= c.cfg.calibrateEvery || final {
		c.be.calibrate(16)
		c.lastCal = now
	}
	c.be.flush(forced)
	evs, _, err := parseFrames(c.be.take())
	if err != nil {
		c.b.logOnce(err.Error())
	}
	c.b.batch(evs, final)
	return true
}

// Flush delivers the records of all work completed so far as spans (a
// forced CUPTI flush). Call it before ending a span whose GPU work should
// be inside it when exported. A record that has no external correlation
// record yet (work nothing marked, bound for a device window) may wait
// further drains for one: one with WithForcedFlush, by default as many as
// the wait spans (five at DefaultDurationWait and DefaultFlushInterval).
func (c *Capture) Flush(ctx context.Context) error {
	c.drain(true, false)
	return ctx.Err()
}

// Close stops the capture: it flushes, unsubscribes, ends the device
// windows and the NVTX ranges still open (marked nvtx.unclosed) and
// unhooks cudaspans (without the forced flush, the default, after the
// last drain has ended cudaspans' held spans, so the process has no other
// Capture until then). A second Close is a no-op.
func (c *Capture) Close(ctx context.Context) error {
	activeMu.Lock()
	mine := active == c
	if mine && !c.deferred {
		active = nil
		c.unhookCudaspans()
	}
	activeMu.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	close(c.stopc)
	<-c.done
	c.be.flush(true)
	c.be.stop()
	c.drain(true, true)
	if mine && c.deferred {
		activeMu.Lock()
		active = nil
		c.unhookCudaspans()
		activeMu.Unlock()
	}
	c.mu.Lock()
	c.b.finish()
	c.mu.Unlock()
	return ctx.Err()
}

// cudaspansDurations is cudaspans' hook: CUPTI's durations (ms) of the
// launches with the given ids, with WithForcedFlush after a forced flush.
// The C side matches them as the records pass (cz_cudaspans_take), so
// this thread, the launching one, does not decode the frames: the
// capture's own drain does that later. A backend that does not match them (the tests' fake) has
// the builder do it, in a drain here.
//
// By default (no forced flush) nothing is flushed or drained here: the
// durations are what the capture's drains (and CUPTI's own buffer
// deliveries) have brought so far.
func (c *Capture) cudaspansDurations(ids []uint64) map[uint64]float64 {
	if len(ids) == 0 {
		return nil
	}
	if c.deferred {
		if c.csInC {
			ms, _ := c.be.cudaspansDurations(ids)
			return ms
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.b.takeCudaspans(ids)
	}
	if c.csInC {
		c.mu.Lock()
		c.be.flush(true)
		c.mu.Unlock()
		ms, _ := c.be.cudaspansDurations(ids)
		return ms
	}
	c.drain(true, false)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.takeCudaspans(ids)
}

// Parents: Go spans registered for C code, by id.

var parents = struct {
	sync.Mutex
	m    map[uint64]context.Context
	next uint64
}{m: map[uint64]context.Context{}}

// Parent registers ctx (and the span in it) as the parent of the GPU work
// and NVTX ranges that foreign code launches on a thread that entered the
// returned id (cuzk_cupti_enter in cuzk_cupti.h, or Call), and returns the
// id and a func that unregisters it. Records of work launched before
// release that arrive after it still find the parent: release only lets
// the id be forgotten later. Safe for concurrent use.
func Parent(ctx context.Context) (id uint64, release func()) {
	sc := trace.SpanContextFromContext(ctx)
	parents.Lock()
	parents.next++
	id = parents.next
	parents.m[id] = trace.ContextWithSpanContext(context.Background(), sc)
	parents.Unlock()
	return id, func() { forgetLater(id) }
}

var forgetQ = struct {
	sync.Mutex
	ids []uint64
}{}

// forgetLater keeps the last 4096 released parents, for late records.
func forgetLater(id uint64) {
	forgetQ.Lock()
	forgetQ.ids = append(forgetQ.ids, id)
	var drop []uint64
	if len(forgetQ.ids) > 4096 {
		drop = forgetQ.ids[:len(forgetQ.ids)-4096]
		forgetQ.ids = append([]uint64(nil), forgetQ.ids[len(forgetQ.ids)-4096:]...)
	}
	forgetQ.Unlock()
	parents.Lock()
	for _, d := range drop {
		delete(parents.m, d)
	}
	parents.Unlock()
}

func lookupParent(id uint64) (context.Context, bool) {
	parents.Lock()
	defer parents.Unlock()
	ctx, ok := parents.m[id]
	return ctx, ok
}

// Call runs the C function fn (void fn(void *)) with arg, so that the GPU
// work it launches and the NVTX ranges it opens on this thread become
// children of the span in ctx. The id is pushed, fn is called and the id
// popped in one cgo call, so all three happen on one OS thread (a
// goroutine may move between threads between two cgo calls). Work fn hands
// to other threads is not covered: those threads call cuzk_cupti_enter
// themselves. Without an active Capture, fn still runs.
func Call(ctx context.Context, fn, arg unsafe.Pointer) {
	id, release := Parent(ctx)
	defer release()
	callC(id, fn, arg)
}

// Locate finds the first CUPTI library of paths that loads (default
// DefaultLibraryPaths), and returns the file it came from and its API
// version: what `cuzk gpu-trace` hands the traced program. The library is
// unloaded again. Errors wrap ErrNoCUPTI or ErrVersion.
func Locate(paths ...string) (path string, version uint32, err error) {
	if len(paths) == 0 {
		paths = DefaultLibraryPaths()
	}
	path, version, err = probe(paths)
	if err != nil {
		return "", 0, err
	}
	if version < MinVersion {
		return path, version, fmt.Errorf("%w: %s reports CUPTI API version %d, older than %d (CUDA 11.8)", ErrVersion, path, version, MinVersion)
	}
	return path, version, nil
}
