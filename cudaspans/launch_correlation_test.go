package cudaspans

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestKernelSpansCarryTheDurationsOfTheLaunchHook(t *testing.T) {
	f := newFixture(t)
	k := f.kernel(t, "ntt_radix2", time.Millisecond)
	s := f.stream(t)
	var asked []uint64
	SetLaunchCorrelation(nil, nil, func(ids []uint64) map[uint64]float64 {
		asked = append(asked, ids...)
		return map[uint64]float64{ids[0]: 0.987}
	})
	defer SetLaunchCorrelation(nil, nil, nil)
	ctx, parent := f.parent(context.Background(), "p")
	for i := 0; i < 2; i++ {
		if err := s.Launch(ctx, k, D1(1), D1(1), 0); err != nil {
			t.Fatal(err)
		}
	}
	buf, err := f.c.Alloc(ctx, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Memset(ctx, buf.Ptr(), 0, 64); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	parent.End()
	if len(asked) != 2 {
		t.Fatalf("hook asked for %d ids, want the 2 kernels' (not the memset)", len(asked))
	}
	spans := f.ended("ntt_radix2")
	var with int
	for _, sp := range spans {
		for _, kv := range sp.Attributes() {
			if kv.Key == "cuda.cupti_ms" && kv.Value.AsFloat64() == 0.987 {
				with++
			}
		}
	}
	if len(spans) != 2 || with != 1 {
		t.Fatalf("%d kernel spans, %d with cuda.cupti_ms, want 2 and 1 (the id the hook knew)", len(spans), with)
	}
}

// cuptiFake stands in for package cupti's side of SetLaunchCorrelation: a
// driver whose one-call launches hand it each launch's id, as cupti's
// push hook gets it on the launching thread, and the C side's table of
// CUPTI durations by that id (cz_cudaspans_take): a launch's record enters
// it when the test delivers it (late, out of order, or never), and a
// duration is taken once. A record's duration is the kernel's own time
// plus 1 µs, so a span can tell its own from another kernel's.
type cuptiFake struct {
	*fakeDriver
	mu       sync.Mutex
	launched []cuptiRecord // in launch order
	table    map[uint64]float64
	asked    []uint64
}

type cuptiRecord struct {
	id   uint64
	name string
	ms   float64
}

func (d *cuptiFake) LaunchTimed(c ContextHandle, f FunctionHandle, grid, block Dim3, shared int, s StreamHandle, params []byte, offsets []int, start, end EventHandle, launch uint64) error {
	if err := d.EventRecord(c, start, s); err != nil {
		return err
	}
	if err := d.Launch(c, f, grid, block, shared, s, params, offsets); err != nil {
		return err
	}
	d.fakeDriver.mu.Lock()
	name := d.funcs[f]
	ms := float64(d.kernelTime[name])/1e6 + 0.001
	d.fakeDriver.mu.Unlock()
	d.mu.Lock()
	d.launched = append(d.launched, cuptiRecord{id: launch, name: name, ms: ms})
	d.mu.Unlock()
	return d.EventRecord(c, end, s)
}

// deliver puts the records of the launches numbered i (in launch order)
// into the table, in the order given.
func (d *cuptiFake) deliver(i ...int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, n := range i {
		r := d.launched[n]
		d.table[r.id] = r.ms
	}
}

func (d *cuptiFake) durations(ids []uint64) map[uint64]float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked = append(d.asked, ids...)
	out := map[uint64]float64{}
	for _, id := range ids {
		if ms, ok := d.table[id]; ok {
			out[id] = ms
			delete(d.table, id)
		}
	}
	return out
}

func newCUPTIFixture(t *testing.T) (*fixture, *cuptiFake) {
	t.Helper()
	clock := newFakeClock()
	cf := &cuptiFake{fakeDriver: newFakeDriver(clock), table: map[uint64]float64{}}
	f := &fixture{recording: newRecording(), clock: clock, drv: cf.fakeDriver}
	c, err := Open(0, WithDriver(cf), WithTracerProvider(f.tp), withClock(clock.now),
		WithKernelCacheDir(t.TempDir()), withCompiler(&fakeCompiler{}))
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	t.Cleanup(func() { _ = c.Close() })
	SetLaunchCorrelation(nil, nil, cf.durations)
	t.Cleanup(func() { SetLaunchCorrelation(nil, nil, nil) })
	return f, cf
}

// checkOwnDurations fails for a kernel span whose cuda.cupti_ms is not its
// own kernel's record, and returns how many carry one.
func checkOwnDurations(t *testing.T, f *fixture, want map[string]float64) int {
	t.Helper()
	with := 0
	for _, s := range f.rec.Ended() {
		own, ok := want[s.Name()]
		if !ok {
			continue
		}
		v, has := attr(s, "cuda.cupti_ms")
		if !has {
			continue
		}
		with++
		if v.AsFloat64() != own {
			t.Errorf("span %s carries cuda.cupti_ms %v, another kernel's (its own record says %v)", s.Name(), v.AsFloat64(), own)
		}
	}
	return with
}

// A launch's id is never reused, so a record that comes after its
// launch's Synchronize can only ever reach its own kernel's span: the
// events cudaspans reuses (the earlier key) handed it to a later launch
// on the same event. Each round launches one kernel of its own duration
// and synchronizes; records come one round late, two rounds late, out of
// order, or never.
func TestLateCUPTIRecordsNeverReachAnotherLaunchsSpan(t *testing.T) {
	f, cf := newCUPTIFixture(t)
	s := f.stream(t)
	ctx, parent := f.parent(context.Background(), "p")
	const rounds = 12
	want := map[string]float64{}
	ks := make([]*Function, rounds)
	for i := range ks {
		name := fmt.Sprintf("k%02d", i)
		d := time.Duration(i+1) * 100 * time.Microsecond
		ks[i] = f.kernel(t, name, d)
		want[name] = float64(d)/1e6 + 0.001
	}
	for i := 0; i < rounds; i++ {
		if err := s.Launch(ctx, ks[i], D1(1), D1(1), 0); err != nil {
			t.Fatal(err)
		}
		switch {
		case i%4 == 1:
			cf.deliver(i) // in time
		case i%4 == 2 && i >= 2:
			cf.deliver(i-1, i-2) // the earlier rounds', late and reversed
		case i%4 == 3:
			cf.deliver(i - 2) // two rounds late
		}
		// i%4 == 0: this round's record never comes
		if err := s.Synchronize(ctx); err != nil {
			t.Fatal(err)
		}
	}
	parent.End()
	with := checkOwnDurations(t, f, want)
	if with != 3 { // rounds 1, 5 and 9, in time
		t.Errorf("%d spans carry cuda.cupti_ms, want the 3 whose records came before their Synchronize", with)
	}
	seen := map[uint64]bool{}
	for _, id := range cf.asked {
		if id < 2 || seen[id] {
			t.Fatalf("launch id %d asked twice or reserved (ids %v)", id, cf.asked)
		}
		seen[id] = true
	}
	if len(seen) != rounds {
		t.Errorf("the hook was asked for %d launches, want %d", len(seen), rounds)
	}
}

// With SetLaunchDurationWait, a kernel span whose record has not come at
// its Synchronize is held, not ended without cuda.cupti_ms: its own record
// ends it when it comes (late, in another order, after its events went to
// later launches), and one that never comes ends it without, once the wait
// is over. No span ever carries another launch's duration.
func TestHeldKernelSpansEndWithTheirOwnLateRecordsOrNone(t *testing.T) {
	f, cf := newCUPTIFixture(t)
	SetLaunchDurationWait(true, 50*time.Millisecond)
	s := f.stream(t)
	ctx, parent := f.parent(context.Background(), "p")
	const rounds = 8
	want := map[string]float64{}
	for i := 0; i < rounds; i++ {
		name := fmt.Sprintf("k%02d", i)
		d := time.Duration(i+1) * 100 * time.Microsecond
		k := f.kernel(t, name, d)
		want[name] = float64(d)/1e6 + 0.001
		if err := s.Launch(ctx, k, D1(1), D1(1), 0); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			cf.deliver(0) // in time: ended at its Synchronize
		}
		if err := s.Synchronize(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ended := func() int {
		n := 0
		for name := range want {
			n += len(f.ended(name))
		}
		return n
	}
	if n := ended(); n != 1 {
		t.Fatalf("%d kernel spans ended at their Synchronize, want 1 (the others wait for their records)", n)
	}
	if m, u, w := LaunchDurationCounts(); m != 1 || u != 0 || w != rounds-1 {
		t.Fatalf("counts matched %d, unmatched %d, waiting %d; want 1, 0, %d", m, u, w, rounds-1)
	}
	// Late and out of order; 2 and 6 never come.
	cf.deliver(7, 3, 1)
	if m, u := EndWaitingLaunches(false); m != 3 || u != 0 {
		t.Fatalf("first end: %d matched, %d without; want 3 and 0", m, u)
	}
	cf.deliver(5, 4)
	f.clock.advance(10 * time.Millisecond) // within the wait
	if m, u := EndWaitingLaunches(false); m != 2 || u != 0 {
		t.Fatalf("second end: %d matched, %d without; want 2 and 0", m, u)
	}
	f.clock.advance(50 * time.Millisecond) // the wait is over
	if m, u := EndWaitingLaunches(false); m != 0 || u != 2 {
		t.Fatalf("after the wait: %d matched, %d without; want 0 and 2", m, u)
	}
	// 2's record after its span ended: it stays unclaimed, and no later
	// launch (on the same events) takes it.
	cf.deliver(2)
	k := f.kernel(t, "after", time.Millisecond)
	want["after"] = 1.001
	if err := s.Launch(ctx, k, D1(1), D1(1), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if m, u := EndWaitingLaunches(true); m != 0 || u != 1 {
		t.Fatalf("final end: %d matched, %d without; want 0 and 1", m, u)
	}
	parent.End()
	if with := checkOwnDurations(t, f, want); with != 6 {
		t.Errorf("%d spans carry cuda.cupti_ms, want the 6 whose records came", with)
	}
	if n := ended(); n != rounds+1 {
		t.Errorf("%d kernel spans ended, want %d (every launch, with or without)", n, rounds+1)
	}
	if m, u, w := LaunchDurationCounts(); m != 6 || u != 3 || w != 0 {
		t.Errorf("counts matched %d, unmatched %d, waiting %d; want 6, 3, 0", m, u, w)
	}
}

// Replacing the hook (cupti's Close) ends the held spans with what the
// old hook has, and turning the wait off ends them too.
func TestHeldKernelSpansEndWhenTheHookGoesOrTheWaitStops(t *testing.T) {
	f, cf := newCUPTIFixture(t)
	k := f.kernel(t, "k", time.Millisecond)
	s := f.stream(t)
	ctx, parent := f.parent(context.Background(), "p")
	launch := func() {
		t.Helper()
		if err := s.Launch(ctx, k, D1(1), D1(1), 0); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(ctx); err != nil {
			t.Fatal(err)
		}
	}
	SetLaunchDurationWait(true, time.Hour)
	launch()
	launch()
	cf.deliver(1)
	SetLaunchDurationWait(false, 0)
	if n := len(f.ended("k")); n != 2 {
		t.Fatalf("%d spans after the wait was turned off, want both", n)
	}
	SetLaunchDurationWait(true, time.Hour)
	launch()
	cf.deliver(2)
	SetLaunchCorrelation(nil, nil, nil)
	parent.End()
	spans := f.ended("k")
	if len(spans) != 3 {
		t.Fatalf("%d spans after the hook was removed, want 3", len(spans))
	}
	if with := checkOwnDurations(t, f, map[string]float64{"k": 1.001}); with != 2 {
		t.Errorf("%d spans with cuda.cupti_ms, want 2 (launches 1 and 2)", with)
	}
	if m, u, w := LaunchDurationCounts(); m != 0 || u != 0 || w != 0 {
		t.Errorf("counts %d, %d, %d after the hook was removed, want zeros", m, u, w)
	}
}
