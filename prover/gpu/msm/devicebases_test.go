package msm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/fakedevice"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/gputest"
)

// newKeysFakeDriver is a fake device with room for capacity bytes.
func newKeysFakeDriver(capacity int) *fakedevice.Driver { return fakedevice.New(capacity) }

type basesFixture struct {
	drv   *fakedevice.Driver
	bases *DeviceBases
	s     *cudaspans.Stream
	rec   *tracetest.SpanRecorder
}

// newBasesFixture opens the fake device with room for capacity bytes.
func newBasesFixture(t *testing.T, capacity int, opts ...DeviceBasesOption) *basesFixture {
	t.Helper()
	rec, tp := spantest.New()
	f := &basesFixture{drv: newKeysFakeDriver(capacity), rec: rec}
	c, err := cudaspans.Open(0, cudaspans.WithDriver(f.drv), cudaspans.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := buffer.NewReleaser(buffer.ReleaseSync, buffer.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]DeviceBasesOption{WithTracerProvider(tp), WithReleaser(rel)}, opts...)
	if f.bases, err = NewDeviceBases(context.Background(), c, opts...); err != nil {
		t.Fatal(err)
	}
	if f.s, err = c.NewStream(); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *basesFixture) preload(t *testing.T, set backend.BaseSet[curve.G1Affine]) *ResidentBases {
	t.Helper()
	rb, err := f.bases.PreloadG1(context.Background(), f.s, set)
	if err != nil {
		t.Fatalf("preload %s: %v", set.ID, err)
	}
	return rb
}

func (f *basesFixture) releasedSets() []string {
	var names []string
	for _, sp := range f.rec.Ended() {
		if sp.Name() != semconv.SpanBufferRelease {
			continue
		}
		for _, a := range sp.Attributes() {
			if a.Key == semconv.KeyBufferName {
				names = append(names, a.Value.AsString())
			}
		}
	}
	return names
}

func TestDeviceBasesUploadEachSetOnceAndKeepIt(t *testing.T) {
	f := newBasesFixture(t, 1<<20)
	set := testSet("cs:g1.a", 100)
	rb := f.preload(t, set)
	again := f.preload(t, set)
	if rb != again {
		t.Error("second preload returned a different resident set")
	}
	used, allocs, copies := f.drv.Stats()
	if copies != 1 || allocs != 1 || used != 100*96 {
		t.Fatalf("after two preloads: %d copies, %d allocations, %d bytes; want 1, 1, 9600", copies, allocs, used)
	}
	if f.bases.Bytes() != 9600 || rb.Bytes() != 9600 || rb.Len() != 100 || rb.ID() != "cs:g1.a" {
		t.Errorf("accounting: keys %d bytes, set %d bytes, %d points, id %q", f.bases.Bytes(), rb.Bytes(), rb.Len(), rb.ID())
	}
	// The device holds gnark's G1Affine bytes, unconverted.
	ptr, release, err := rb.acquire()
	if err != nil {
		t.Fatal(err)
	}
	release()
	dev := f.drv.Memory(ptr)
	host := unsafe.Slice((*byte)(unsafe.Pointer(&set.Points[0])), len(set.Points)*96)
	if string(dev) != string(host) {
		t.Error("device copy differs from the G1Affine bytes")
	}
	if got, ok := f.bases.Get("cs:g1.a"); !ok || got != rb {
		t.Error("Get does not find the resident set")
	}
	if _, ok := f.bases.Get("other"); ok {
		t.Error("Get finds a set never loaded")
	}
	if ids := f.bases.IDs(); len(ids) != 1 || ids[0] != "cs:g1.a" {
		t.Errorf("IDs = %v", ids)
	}
}

func TestDeviceBasesRejectBadSets(t *testing.T) {
	f := newBasesFixture(t, 1<<20)
	ctx := context.Background()
	if _, err := f.bases.PreloadG1(ctx, f.s, backend.BaseSet[curve.G1Affine]{Points: testSet("x", 1).Points}); err == nil {
		t.Error("set without ID accepted")
	}
	if _, err := f.bases.PreloadG1(ctx, f.s, backend.BaseSet[curve.G1Affine]{ID: "empty"}); err == nil {
		t.Error("set without points accepted")
	}
	f.preload(t, testSet("a", 10))
	if _, err := f.bases.PreloadG1(ctx, f.s, testSet("a", 11)); err == nil {
		t.Error("same ID with another length accepted")
	}
	if _, err := NewDeviceBases(context.Background(), nil, WithBaseBudget(-1)); err == nil {
		t.Error("negative budget accepted")
	}
}

func TestDeviceBasesEvictLeastRecentlyUsedWhenDeviceIsFull(t *testing.T) {
	f := newBasesFixture(t, 3*96*100+50) // room for three sets of 100 points
	for _, id := range []string{"a", "b", "c"} {
		f.preload(t, testSet(id, 100))
	}
	if _, ok := f.bases.Get("a"); !ok { // a is now more recent than b
		t.Fatal("a not resident")
	}
	f.preload(t, testSet("d", 100))
	if ids := fmt.Sprint(f.bases.IDs()); ids != "[a c d]" {
		t.Errorf("resident after loading d: %s, want [a c d]", ids)
	}
	if rel := fmt.Sprint(f.releasedSets()); rel != "[keys.b]" {
		t.Errorf("released %s, want [keys.b]", rel)
	}
	if used, allocs, _ := f.drv.Stats(); used != 3*9600 || allocs != 3 || f.bases.Bytes() != 3*9600 {
		t.Errorf("device holds %d bytes in %d allocations, keys count %d", used, allocs, f.bases.Bytes())
	}
}

func TestDeviceBasesOutOfMemoryIsAClearError(t *testing.T) {
	f := newBasesFixture(t, 96*100)
	rb := f.preload(t, testSet("a", 100))
	_, release, err := rb.acquire() // in use: cannot be evicted
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.bases.PreloadG1(context.Background(), f.s, testSet("b", 10))
	release()
	if !errors.Is(err, cudaspans.ErrOutOfMemory) {
		t.Fatalf("preload with no room: %v, want ErrOutOfMemory", err)
	}
	if ids := fmt.Sprint(f.bases.IDs()); ids != "[a]" || f.bases.Bytes() != 9600 {
		t.Errorf("after the failed preload: %s resident, %d bytes", ids, f.bases.Bytes())
	}
}

func TestDeviceBasesBudgetEvictsOldestAndRejectsOversizedSets(t *testing.T) {
	f := newBasesFixture(t, 1<<20, WithBaseBudget(2*9600))
	f.preload(t, testSet("a", 100))
	f.preload(t, testSet("b", 100))
	f.preload(t, testSet("c", 100))
	if ids := fmt.Sprint(f.bases.IDs()); ids != "[b c]" {
		t.Errorf("resident: %s, want [b c]", ids)
	}
	_, err := f.bases.PreloadG1(context.Background(), f.s, testSet("big", 201))
	if !errors.Is(err, ErrBaseBudget) {
		t.Errorf("oversized set: %v, want ErrBaseBudget", err)
	}
}

func TestDeviceBasesEvictInUseFreesWhenTheMSMEnds(t *testing.T) {
	f := newBasesFixture(t, 1<<20)
	ctx := context.Background()
	rb := f.preload(t, testSet("a", 100))
	_, release, err := rb.acquire()
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := f.bases.Evict(ctx, "a"); !ok || err != nil {
		t.Fatalf("Evict = %v, %v", ok, err)
	}
	if used, _, _ := f.drv.Stats(); used != 9600 || f.bases.Bytes() != 9600 {
		t.Fatalf("set in use freed early: device %d bytes, keys %d", used, f.bases.Bytes())
	}
	if _, _, err := rb.acquire(); !errors.Is(err, ErrBaseSetEvicted) {
		t.Errorf("acquire after evict: %v, want ErrBaseSetEvicted", err)
	}
	release()
	if used, allocs, _ := f.drv.Stats(); used != 0 || allocs != 0 || f.bases.Bytes() != 0 {
		t.Errorf("after the MSM ended: device %d bytes in %d allocations, keys %d", used, allocs, f.bases.Bytes())
	}
	if rel := fmt.Sprint(f.releasedSets()); rel != "[keys.a]" {
		t.Errorf("released %s, want [keys.a]", rel)
	}
	if ok, err := f.bases.Evict(ctx, "a"); ok || err != nil {
		t.Errorf("second Evict = %v, %v; want false, nil", ok, err)
	}
}

func TestDeviceBasesConcurrentPreloadsUploadOnce(t *testing.T) {
	f := newBasesFixture(t, 1<<20)
	set := testSet("shared", 200)
	var wg sync.WaitGroup
	got := make([]*ResidentBases, 8)
	errs := make([]error, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = f.bases.PreloadG1(context.Background(), f.s, set)
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i] != got[0] {
			t.Fatalf("preload %d: %v (set %p, first %p)", i, errs[i], got[i], got[0])
		}
	}
	if _, allocs, copies := f.drv.Stats(); allocs != 1 || copies != 1 {
		t.Errorf("%d allocations and %d copies, want 1 and 1", allocs, copies)
	}
}

func TestDeviceBasesEvictDuringUploadFreesTheUpload(t *testing.T) {
	f := newBasesFixture(t, 1<<20)
	started, proceed := make(chan struct{}), make(chan struct{})
	f.drv.OnCopy = func() {
		close(started)
		<-proceed
	}
	done := make(chan error)
	go func() {
		_, err := f.bases.PreloadG1(context.Background(), f.s, testSet("a", 100))
		done <- err
	}()
	<-started
	if ok, err := f.bases.Evict(context.Background(), "a"); !ok || err != nil {
		t.Fatalf("Evict during upload = %v, %v", ok, err)
	}
	close(proceed)
	if err := <-done; !errors.Is(err, ErrBaseSetEvicted) {
		t.Errorf("preload evicted during upload: %v, want ErrBaseSetEvicted", err)
	}
	if used, allocs, _ := f.drv.Stats(); used != 0 || allocs != 0 || f.bases.Bytes() != 0 {
		t.Errorf("after: device %d bytes in %d allocations, keys %d", used, allocs, f.bases.Bytes())
	}
}

func TestDeviceBasesEvictAllFreesEverything(t *testing.T) {
	f := newBasesFixture(t, 1<<20)
	for _, id := range []string{"a", "b", "c"} {
		f.preload(t, testSet(id, 50))
	}
	if err := f.bases.EvictAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if used, allocs, _ := f.drv.Stats(); used != 0 || allocs != 0 || f.bases.Bytes() != 0 || len(f.bases.IDs()) != 0 {
		t.Errorf("after EvictAll: device %d bytes in %d allocations, keys %d, ids %v", used, allocs, f.bases.Bytes(), f.bases.IDs())
	}
	if n := len(f.releasedSets()); n != 3 {
		t.Errorf("%d buffer.release spans, want 3", n)
	}
}

func TestDeviceBasesEvictKeySetsDropsOnlyThatKeysSets(t *testing.T) {
	f := newBasesFixture(t, 1<<20)
	for _, id := range []string{"k1:g1.a", "k1:g1.b", "k1:g1.z", "k10:g1.a", "k2:g1.a"} {
		f.preload(t, testSet(id, 10))
	}
	n, err := f.bases.EvictKeySets(context.Background(), "k1")
	if err != nil || n != 3 {
		t.Fatalf("EvictKeySets(k1) = %d, %v; want 3 sets", n, err)
	}
	if ids := f.bases.IDs(); strings.Join(ids, " ") != "k10:g1.a k2:g1.a" {
		t.Errorf("resident after EvictKeySets(k1): %v, want k10 and k2 kept", ids)
	}
	if f.bases.Bytes() != 2*10*96 {
		t.Errorf("accounting after eviction: %d bytes, want %d", f.bases.Bytes(), 2*10*96)
	}
	if got := len(f.releasedSets()); got != 3 {
		t.Errorf("%d buffer.release spans, want one per evicted set", got)
	}
	if n, err := f.bases.EvictKeySets(context.Background(), "k1"); n != 0 || err != nil {
		t.Errorf("second EvictKeySets(k1) = %d, %v; want 0, nil", n, err)
	}
}

// TestDeviceBasesEvictOnlyWhatTheUploadNeedsInEveryReleaseMode: two sets
// fill the device and a third needs one evicted. Device frees are
// immediate in every release mode, so the retry finds the memory and the
// other set stays.
func TestDeviceBasesEvictOnlyWhatTheUploadNeedsInEveryReleaseMode(t *testing.T) {
	for _, mode := range []buffer.ReleaseMode{buffer.ReleaseSync, buffer.ReleaseAsync, buffer.ReleasePool} {
		t.Run(string(mode), func(t *testing.T) {
			drv := newKeysFakeDriver(2 * 100 * msmAffineBytes)
			c, err := cudaspans.Open(0, cudaspans.WithDriver(drv))
			if err != nil {
				t.Fatal(err)
			}
			rel, err := buffer.NewReleaser(mode)
			if err != nil {
				t.Fatal(err)
			}
			defer rel.Close(context.Background())
			k, err := NewDeviceBases(context.Background(), c, WithReleaser(rel))
			if err != nil {
				t.Fatal(err)
			}
			s, err := c.NewStream()
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, id := range []string{"a", "b", "c"} {
				if _, err := k.PreloadG1(ctx, s, testSet(id, 100)); err != nil {
					t.Fatalf("preload %s: %v", id, err)
				}
			}
			if ids := strings.Join(k.IDs(), " "); ids != "b c" {
				t.Errorf("resident %q, want the least recently used set (a) evicted and b kept", ids)
			}
		})
	}
}

// testSet is a G1 base set of n distinct points (gputest.Points) named id.
func testSet(id string, n int) backend.BaseSet[curve.G1Affine] {
	return backend.BaseSet[curve.G1Affine]{ID: id, Points: gputest.Points(n)}
}
