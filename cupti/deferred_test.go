package cupti

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
)

// launchDriver is a cudaspans.Driver of one device, enough for a stream
// of kernel launches: events hold the host time they were recorded at,
// and its one-call launches (LaunchTimed, which cudaspans prefers) keep
// each launch's id, the one cudaspans' hook pushes as CUPTI's
// CUSTOM2 external correlation id, so the test can make up its records.
// Calls cudaspans makes that it does not implement panic (the nil
// embedded interface).
type launchDriver struct {
	cudaspans.Driver
	mu     sync.Mutex
	next   uintptr
	events map[cudaspans.EventHandle]time.Time
	funcs  map[cudaspans.FunctionHandle]string
	ids    []uint64 // launch ids, in launch order
	names  []string
}

func newLaunchDriver() *launchDriver {
	return &launchDriver{next: 0x100, events: map[cudaspans.EventHandle]time.Time{}, funcs: map[cudaspans.FunctionHandle]string{}}
}

func (d *launchDriver) handle() uintptr {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next += 0x10
	return d.next
}

func (d *launchDriver) Version() (int, error)     { return 13000, nil }
func (d *launchDriver) DeviceCount() (int, error) { return 1, nil }
func (d *launchDriver) Device(o int) (cudaspans.DeviceInfo, error) {
	return cudaspans.DeviceInfo{Ordinal: o, Name: "Fake H200", Major: 9, Multiprocessors: 132, TotalMemory: 141 << 30, DriverVersion: 13000}, nil
}
func (d *launchDriver) PrimaryContext(int) (cudaspans.ContextHandle, error) {
	return cudaspans.ContextHandle(d.handle()), nil
}
func (d *launchDriver) ReleasePrimaryContext(int) error           { return nil }
func (d *launchDriver) Synchronize(cudaspans.ContextHandle) error { return nil }
func (d *launchDriver) StreamCreate(cudaspans.ContextHandle) (cudaspans.StreamHandle, error) {
	return cudaspans.StreamHandle(d.handle()), nil
}
func (d *launchDriver) StreamDestroy(cudaspans.ContextHandle, cudaspans.StreamHandle) error {
	return nil
}
func (d *launchDriver) StreamSynchronize(cudaspans.ContextHandle, cudaspans.StreamHandle) error {
	return nil
}
func (d *launchDriver) EventCreate(cudaspans.ContextHandle) (cudaspans.EventHandle, error) {
	return cudaspans.EventHandle(d.handle()), nil
}
func (d *launchDriver) EventDestroy(cudaspans.ContextHandle, cudaspans.EventHandle) error {
	return nil
}
func (d *launchDriver) EventRecord(_ cudaspans.ContextHandle, e cudaspans.EventHandle, _ cudaspans.StreamHandle) error {
	d.mu.Lock()
	d.events[e] = time.Now()
	d.mu.Unlock()
	return nil
}
func (d *launchDriver) EventSynchronize(cudaspans.ContextHandle, cudaspans.EventHandle) error {
	return nil
}
func (d *launchDriver) EventElapsed(_ cudaspans.ContextHandle, a, b cudaspans.EventHandle) (float32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return float32(d.events[b].Sub(d.events[a]).Seconds() * 1e3), nil
}
func (d *launchDriver) ModuleLoad(cudaspans.ContextHandle, []byte) (cudaspans.ModuleHandle, error) {
	return cudaspans.ModuleHandle(d.handle()), nil
}
func (d *launchDriver) ModuleUnload(cudaspans.ContextHandle, cudaspans.ModuleHandle) error {
	return nil
}
func (d *launchDriver) ModuleFunction(_ cudaspans.ContextHandle, _ cudaspans.ModuleHandle, name string) (cudaspans.FunctionHandle, error) {
	f := cudaspans.FunctionHandle(d.handle())
	d.mu.Lock()
	d.funcs[f] = name
	d.mu.Unlock()
	return f, nil
}
func (d *launchDriver) FuncParams(cudaspans.ContextHandle, cudaspans.FunctionHandle) ([]cudaspans.ParamInfo, bool, error) {
	return nil, false, nil
}
func (d *launchDriver) Launch(cudaspans.ContextHandle, cudaspans.FunctionHandle, cudaspans.Dim3, cudaspans.Dim3, int, cudaspans.StreamHandle, []byte, []int) error {
	return nil
}
func (d *launchDriver) LaunchTimed(c cudaspans.ContextHandle, f cudaspans.FunctionHandle, _, _ cudaspans.Dim3, _ int, s cudaspans.StreamHandle, _ []byte, _ []int, start, end cudaspans.EventHandle, launch uint64) error {
	d.EventRecord(c, start, s)
	d.mu.Lock()
	d.ids = append(d.ids, launch)
	d.names = append(d.names, d.funcs[f])
	d.mu.Unlock()
	return d.EventRecord(c, end, s)
}

// launches opens a cudaspans context on a launchDriver, spans to tp, with
// one stream, and returns the driver and a func that launches kernel i
// (named k00, k01, ...) on the stream.
func launches(t *testing.T, tp trace.TracerProvider) (*launchDriver, *cudaspans.Stream, func(ctx context.Context, i int)) {
	t.Helper()
	drv := newLaunchDriver()
	cc, err := cudaspans.Open(0, cudaspans.WithDriver(drv), cudaspans.WithTracerProvider(tp), cudaspans.WithKernelCacheDir("-"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	s, err := cc.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	return drv, s, func(ctx context.Context, i int) {
		t.Helper()
		name := fmt.Sprintf("k%02d", i)
		m, err := cc.LoadModuleData(ctx, name, append([]byte("\x7fELF "), name...))
		if err != nil {
			t.Fatal(err)
		}
		k, err := m.Function(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Launch(ctx, k, cudaspans.D1(1), cudaspans.D1(1), 0); err != nil {
			t.Fatal(err)
		}
	}
}

// cuptiMS is the duration (ms) of kernel i's made-up CUPTI record.
func cuptiMS(i int) float64 { return float64((i+1)*100_000) / 1e6 }

// records are the frames CUPTI would deliver for launch i (in launch
// order of drv): the external correlation record of its id and its
// kernel record, under correlation id 1000+i.
func (f *fakeCUPTI) launchRecords(drv *launchDriver, i int) (extFrame, kernelFrame []byte) {
	drv.mu.Lock()
	id, name := drv.ids[i], drv.names[i]
	drv.mu.Unlock()
	corr := uint32(1000 + i)
	return ext(extCudaspans, id, corr), kernel(name, corr, f.gpuNow+uint64(i)*1_000_000, uint64((i+1)*100_000))
}

// ownDurations fails for a kernel span carrying another kernel's CUPTI
// duration and returns how many carry one.
func ownDurations(t *testing.T, spans map[string]float64, got func(name string) (float64, bool)) int {
	t.Helper()
	with := 0
	for name, own := range spans {
		ms, ok := got(name)
		if !ok {
			continue
		}
		with++
		if ms != own {
			t.Errorf("%s carries cuda.cupti_ms %v, another kernel's (its own record lasts %v)", name, ms, own)
		}
	}
	return with
}

// With WithoutForcedFlush, cudaspans' Synchronize forces no CUPTI flush;
// a kernel span whose record has not come is held until a drain brings
// it (late, its two records in different drains, in reverse order) and
// gets its own duration, never another launch's, though cudaspans reuses
// its events; one whose record never comes ends at Close without
// cuda.cupti_ms, counted in Stats and said in one line.
func TestWithoutForcedFlushHeldSpansGetTheirOwnLateRecordsOrNone(t *testing.T) {
	f := newFake()
	c, exp, tp, logs := startFake(t, f, WithoutForcedFlush(time.Hour))
	drv, s, launch := launches(t, tp)
	ctx, parent := tp.Tracer("t").Start(context.Background(), "prove")
	const n = 5
	want := map[string]float64{}
	for i := 0; i < n; i++ {
		want[fmt.Sprintf("k%02d", i)] = cuptiMS(i)
		launch(ctx, i)
		switch i {
		case 0: // delivered (a drain) before its Synchronize
			e, k := f.launchRecords(drv, 0)
			f.queue(append(e, k...))
			c.Flush(ctx)
		case 1: // its kernel record now, its correlation record later
			_, k := f.launchRecords(drv, 1)
			f.queue(k)
			c.Flush(ctx)
		}
		forced := f.forced
		if err := s.Synchronize(ctx); err != nil {
			t.Fatal(err)
		}
		if f.forced != forced {
			t.Fatalf("Synchronize forced %d CUPTI flushes, want none", f.forced-forced)
		}
	}
	got := func(name string) (float64, bool) {
		sp := spantest.NamedStubs(exp.GetSpans(), name)
		if len(sp) == 0 {
			return 0, false
		}
		v, ok := attr(sp[0], KeyCUPTIMS)
		return v.AsFloat64(), ok
	}
	ended := func() int {
		k := 0
		for name := range want {
			k += len(spantest.NamedStubs(exp.GetSpans(), name))
		}
		return k
	}
	if k := ended(); k != 1 {
		t.Fatalf("%d kernel spans ended at their Synchronize, want 1 (k00; the others wait for their records)", k)
	}
	if st := c.Stats(); st.CudaspansWithCUPTI != 1 || st.CudaspansWaiting != n-1 {
		t.Fatalf("stats %+v, want 1 with cuda.cupti_ms and %d waiting", st, n-1)
	}
	e1, _ := f.launchRecords(drv, 1)
	e2, k2 := f.launchRecords(drv, 2)
	e3, k3 := f.launchRecords(drv, 3)
	f.queue(append(append(append(append(append([]byte(nil), k3...), e3...), k2...), e2...), e1...))
	c.Flush(ctx)
	if k := ended(); k != 4 {
		t.Fatalf("%d kernel spans after the late records' drain, want 4 (k04's never comes)", k)
	}
	parent.End()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if k := ended(); k != n {
		t.Fatalf("%d kernel spans after Close, want %d", k, n)
	}
	if with := ownDurations(t, want, got); with != 4 {
		t.Errorf("%d kernel spans carry cuda.cupti_ms, want the 4 whose records came", with)
	}
	if _, ok := got("k04"); ok {
		t.Error("k04, whose record never came, carries cuda.cupti_ms")
	}
	if st := c.Stats(); st.CudaspansWithCUPTI != 4 || st.CudaspansWithoutCUPTI != 1 || st.CudaspansWaiting != 0 || st.Deduplicated != 4 {
		t.Errorf("stats %+v, want 4 with cuda.cupti_ms, 1 without, none waiting, 4 deduplicated", st)
	}
	if !strings.Contains(strings.Join(*logs, "\n"), "1 of 5 cudaspans kernel spans ended without cuda.cupti_ms") {
		t.Errorf("no line about the span without its record: %q", *logs)
	}
}

// unsetEnv unsets k for the test (restored after it).
func unsetEnv(t *testing.T, k string) {
	t.Helper()
	t.Setenv(k, "")
	os.Unsetenv(k)
}

// By default (NoForcedFlushEnv unset, empty or 1; no option) cudaspans'
// Synchronize forces no CUPTI flush: a kernel span whose record has not
// come is held, DefaultDurationWait at most, and ends with its own
// duration at the drain that brings it. Fails if the forced flush is the
// default again.
func TestNoForcedFlushIsTheDefault(t *testing.T) {
	if n := holdBatches(newConfig(nil)); n != 5 {
		t.Errorf("by default a record waits %d drains for its correlation record, want 5 (DefaultDurationWait at DefaultFlushInterval)", n)
	}
	for _, env := range []string{"unset", "", "1"} {
		t.Run("env="+env, func(t *testing.T) {
			if env == "unset" {
				unsetEnv(t, NoForcedFlushEnv)
			} else {
				t.Setenv(NoForcedFlushEnv, env)
			}
			f := newFake()
			c, exp, tp, logs := startFake(t, f)
			if !c.deferred || c.cfg.durationWait != DefaultDurationWait {
				t.Fatalf("forced flush %v, wait %v; want no forced flush, %v", !c.deferred, c.cfg.durationWait, DefaultDurationWait)
			}
			drv, s, launch := launches(t, tp)
			ctx, parent := tp.Tracer("t").Start(context.Background(), "prove")
			launch(ctx, 0)
			forced := f.forced
			if err := s.Synchronize(ctx); err != nil {
				t.Fatal(err)
			}
			if f.forced != forced {
				t.Fatalf("Synchronize forced %d CUPTI flushes, want none", f.forced-forced)
			}
			if n := len(spantest.NamedStubs(exp.GetSpans(), "k00")); n != 0 {
				t.Fatalf("k00 ended at its Synchronize (%d spans), want it held for its record", n)
			}
			if st := c.Stats(); st.CudaspansWaiting != 1 {
				t.Fatalf("stats %+v, want 1 span waiting", st)
			}
			e, k := f.launchRecords(drv, 0)
			f.queue(append(e, k...))
			c.Flush(ctx)
			parent.End()
			if v, ok := attr(one(t, exp, "k00"), KeyCUPTIMS); !ok || v.AsFloat64() != cuptiMS(0) {
				t.Errorf("k00: cuda.cupti_ms %v (%v), want its own %v", v.AsFloat64(), ok, cuptiMS(0))
			}
			if st := c.Stats(); st.CudaspansWithCUPTI != 1 || st.CudaspansWaiting != 0 {
				t.Errorf("stats %+v, want 1 with cuda.cupti_ms, none waiting", st)
			}
			if len(*logs) != 0 {
				t.Errorf("lines said: %q", *logs)
			}
		})
	}
}

// WithForcedFlush or NoForcedFlushEnv=0 forces a CUPTI flush at each
// cudaspans Synchronize: every kernel span ends there, with the duration
// of its own record when it came, and none is held.
func TestForcedFlushWhereAskedFor(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		opts      []Option
	}{
		{"env=0", "0", nil},
		{"WithForcedFlush", "1", []Option{WithForcedFlush()}}, // the option wins over the environment
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(NoForcedFlushEnv, tc.env)
			f := newFake()
			c, exp, tp, _ := startFake(t, f, tc.opts...)
			if c.deferred {
				t.Fatal("no forced flush")
			}
			drv, s, launch := launches(t, tp)
			ctx, parent := tp.Tracer("t").Start(context.Background(), "prove")
			for i := 0; i < 3; i++ {
				launch(ctx, i)
				if i != 1 { // k01's record never comes
					e, k := f.launchRecords(drv, i)
					f.queue(append(e, k...))
				}
				forced := f.forced
				if err := s.Synchronize(ctx); err != nil {
					t.Fatal(err)
				}
				if f.forced == forced {
					t.Fatal("Synchronize forced no CUPTI flush")
				}
				if n := len(spantest.NamedStubs(exp.GetSpans(), fmt.Sprintf("k%02d", i))); n != 1 {
					t.Fatalf("k%02d: %d spans after its Synchronize, want 1", i, n)
				}
			}
			parent.End()
			for i, want := range []bool{true, false, true} {
				v, ok := attr(one(t, exp, fmt.Sprintf("k%02d", i)), KeyCUPTIMS)
				if ok != want || (ok && v.AsFloat64() != cuptiMS(i)) {
					t.Errorf("k%02d: cuda.cupti_ms %v (%v), want %v of its own record: %v", i, v.AsFloat64(), ok, want, cuptiMS(i))
				}
			}
			if st := c.Stats(); st.CudaspansWithCUPTI != 2 || st.CudaspansWithoutCUPTI != 1 || st.CudaspansWaiting != 0 {
				t.Errorf("stats %+v, want 2 with, 1 without, none waiting", st)
			}
			if n := holdBatches(c.cfg); n != 1 {
				t.Errorf("records wait %d drains for their correlation records, want 1", n)
			}
		})
	}
}

// A wait of 0 holds a span only until the next drain: what has not come
// by then ends it without cuda.cupti_ms.
func TestWithoutForcedFlushZeroWaitEndsAtTheNextDrain(t *testing.T) {
	f := newFake()
	c, exp, tp, _ := startFake(t, f, WithoutForcedFlush(0))
	drv, s, launch := launches(t, tp)
	ctx, parent := tp.Tracer("t").Start(context.Background(), "prove")
	launch(ctx, 0)
	launch(ctx, 1)
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(spantest.NamedStubs(exp.GetSpans(), "k00")) + len(spantest.NamedStubs(exp.GetSpans(), "k01")); n != 0 {
		t.Fatalf("%d kernel spans before any drain, want none (both held)", n)
	}
	e, k := f.launchRecords(drv, 1)
	f.queue(append(e, k...))
	c.Flush(ctx)
	parent.End()
	if _, ok := attr(one(t, exp, "k00"), KeyCUPTIMS); ok {
		t.Error("k00 got a duration, but its record never came")
	}
	if v, ok := attr(one(t, exp, "k01"), KeyCUPTIMS); !ok || v.AsFloat64() != cuptiMS(1) {
		t.Errorf("k01: cuda.cupti_ms %v (%v), want its own %v", v.AsFloat64(), ok, cuptiMS(1))
	}
	if st := c.Stats(); st.CudaspansWithCUPTI != 1 || st.CudaspansWithoutCUPTI != 1 || st.CudaspansWaiting != 0 {
		t.Errorf("stats %+v, want 1 with, 1 without, none waiting", st)
	}
}

// NoForcedFlushEnv: 0 forces the flush, 1, empty or a duration leave it
// off with that wait; a bad value keeps the default (no forced flush, a
// wait of DefaultDurationWait), said in one line that names the variable
// and the value, and loses nothing: the span still gets its duration.
// Options win over it.
func TestNoForcedFlushEnvironment(t *testing.T) {
	for _, tc := range []struct {
		v    string
		on   bool
		wait time.Duration
		note bool
	}{
		{"", true, DefaultDurationWait, false}, {"0", false, 0, false}, {"1", true, DefaultDurationWait, false},
		{"250ms", true, 250 * time.Millisecond, false}, {"0s", true, 0, false},
		{"yes", true, DefaultDurationWait, true}, {"-1s", true, DefaultDurationWait, true}, {"off", true, DefaultDurationWait, true},
	} {
		t.Setenv(NoForcedFlushEnv, tc.v)
		f := newFake()
		c, exp, tp, logs := startFake(t, f)
		if c.deferred != tc.on || c.cfg.durationWait != tc.wait {
			t.Errorf("%s=%q: no forced flush %v, wait %v; want %v, %v", NoForcedFlushEnv, tc.v, c.deferred, c.cfg.durationWait, tc.on, tc.wait)
		}
		said := strings.Join(*logs, "\n")
		if strings.Contains(said, NoForcedFlushEnv) != tc.note {
			t.Errorf("%s=%q: a line said %v, want %v (%q)", NoForcedFlushEnv, tc.v, !tc.note, tc.note, *logs)
		}
		if tc.note {
			if len(*logs) != 1 || !strings.Contains(said, fmt.Sprintf("%s=%q is not 0, 1 or a duration", NoForcedFlushEnv, tc.v)) || !strings.Contains(said, "kept the default") {
				t.Errorf("%s=%q: said %q, want one line naming the variable and its value and what holds", NoForcedFlushEnv, tc.v, *logs)
			}
			// The bad value loses nothing: the span is held and gets
			// its duration from the next drain.
			drv, s, launch := launches(t, tp)
			ctx, parent := tp.Tracer("t").Start(context.Background(), "prove")
			launch(ctx, 0)
			forced := f.forced
			s.Synchronize(ctx)
			if f.forced != forced {
				t.Errorf("%s=%q: Synchronize forced a CUPTI flush", NoForcedFlushEnv, tc.v)
			}
			e, k := f.launchRecords(drv, 0)
			f.queue(append(e, k...))
			c.Flush(ctx)
			parent.End()
			if v, ok := attr(one(t, exp, "k00"), KeyCUPTIMS); !ok || v.AsFloat64() != cuptiMS(0) {
				t.Errorf("%s=%q: k00 cuda.cupti_ms %v (%v), want its own %v", NoForcedFlushEnv, tc.v, v.AsFloat64(), ok, cuptiMS(0))
			}
		}
		c.Close(context.Background())
	}
	t.Setenv(NoForcedFlushEnv, "0")
	c, _, _, _ := startFake(t, newFake(), WithoutForcedFlush(2*time.Second))
	if !c.deferred || c.cfg.durationWait != 2*time.Second {
		t.Error("WithoutForcedFlush did not win over the environment")
	}
	c.Close(context.Background())
	t.Setenv(NoForcedFlushEnv, "yes")
	c, _, _, logs := startFake(t, newFake(), WithForcedFlush())
	if c.deferred || len(*logs) != 0 {
		t.Errorf("WithForcedFlush did not win over the environment (no forced flush %v, said %q)", c.deferred, *logs)
	}
}

// With WithoutForcedFlush a kernel record waits as many drains as the
// wait spans for its external correlation record, so a cudaspans launch
// whose two records come drains apart is traced once, with its duration;
// a kernel nothing marked still becomes a span of its own after them.
func TestWithoutForcedFlushRecordsComingDrainsApartAreTracedOnce(t *testing.T) {
	f := newFake()
	c, exp, tp, _ := startFake(t, f, WithoutForcedFlush(5*time.Hour)) // 5 drains of an hour
	drv, s, launch := launches(t, tp)
	ctx, parent := tp.Tracer("t").Start(context.Background(), "prove")
	launch(ctx, 0)
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	e, k := f.launchRecords(drv, 0)
	f.queue(k)
	f.queue(kernel("foreign", 9, f.gpuNow+5_000, 1_000)) // no correlation record ever
	for i := 0; i < 3; i++ {
		c.Flush(ctx)
	}
	f.queue(e)
	c.Flush(ctx)
	if n := c.Stats().Kernels; n != 0 {
		t.Fatalf("%d CUPTI kernel spans after 4 drains, want none (k00 is cudaspans', the unmarked one waits 5 more)", n)
	}
	c.Flush(ctx)
	if n := c.Stats().Kernels; n != 0 {
		t.Fatalf("%d CUPTI kernel spans 4 drains after the unmarked one came, want none", n)
	}
	c.Flush(ctx)
	if n := c.Stats().Kernels; n != 1 {
		t.Fatalf("%d CUPTI kernel spans 5 drains after the unmarked one came, want it", n)
	}
	parent.End()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(spantest.NamedStubs(exp.GetSpans(), "k00")); n != 1 {
		t.Fatalf("%d k00 spans, want 1 (cudaspans', not a second from CUPTI)", n)
	}
	if v, ok := attr(one(t, exp, "k00"), KeyCUPTIMS); !ok || v.AsFloat64() != cuptiMS(0) {
		t.Errorf("k00: cuda.cupti_ms %v (%v), want its own %v", v.AsFloat64(), ok, cuptiMS(0))
	}
	one(t, exp, "foreign")
	if st := c.Stats(); st.Deduplicated != 1 || st.Kernels != 1 || st.CudaspansWithCUPTI != 1 {
		t.Errorf("stats %+v, want 1 deduplicated, 1 CUPTI kernel span (foreign), 1 with cuda.cupti_ms", st)
	}
}
