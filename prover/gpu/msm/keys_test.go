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
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/fakedevice"
)

// newKeysFakeDriver is a fake device with room for capacity bytes.
func newKeysFakeDriver(capacity int) *fakedevice.Driver { return fakedevice.New(capacity) }

type keysFixture struct {
	drv  *fakedevice.Driver
	keys *ResidentKeys
	s    *cudaspans.Stream
	rec  *tracetest.SpanRecorder
}

// newKeysFixture opens the fake device with room for capacity bytes.
func newKeysFixture(t *testing.T, capacity int, opts ...KeysOption) *keysFixture {
	t.Helper()
	f := &keysFixture{drv: newKeysFakeDriver(capacity), rec: tracetest.NewSpanRecorder()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.rec))
	c, err := cudaspans.Open(0, cudaspans.WithDriver(f.drv), cudaspans.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := cudaspans.NewReleaser(cudaspans.ReleaseSync, cudaspans.WithReleaseTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]KeysOption{WithTracerProvider(tp), WithReleaser(rel)}, opts...)
	if f.keys, err = NewResidentKeys(context.Background(), c, opts...); err != nil {
		t.Fatal(err)
	}
	if f.s, err = c.NewStream(); err != nil {
		t.Fatal(err)
	}
	return f
}

// keysSet is a base set of n distinct-looking points (the fake device
// never does arithmetic, so any bytes do; these are small multiples of
// the generator).
func keysSet(id string, n int) prover.BaseSet[curve.G1Affine] {
	_, _, g, _ := curve.Generators()
	pts := make([]curve.G1Affine, n)
	var acc curve.G1Affine
	for i := range pts {
		acc.Add(&acc, &g)
		pts[i] = acc
	}
	return prover.BaseSet[curve.G1Affine]{ID: id, Points: pts}
}

func (f *keysFixture) preload(t *testing.T, set prover.BaseSet[curve.G1Affine]) *ResidentBases {
	t.Helper()
	rb, err := f.keys.PreloadG1(context.Background(), f.s, set)
	if err != nil {
		t.Fatalf("preload %s: %v", set.ID, err)
	}
	return rb
}

func (f *keysFixture) releasedSets() []string {
	var names []string
	for _, sp := range f.rec.Ended() {
		if sp.Name() != otelcuzk.SpanBufferRelease {
			continue
		}
		for _, a := range sp.Attributes() {
			if a.Key == otelcuzk.KeyBufferName {
				names = append(names, a.Value.AsString())
			}
		}
	}
	return names
}

func TestResidentKeysUploadEachSetOnceAndKeepIt(t *testing.T) {
	f := newKeysFixture(t, 1<<20)
	set := keysSet("cs:g1.a", 100)
	rb := f.preload(t, set)
	again := f.preload(t, set)
	if rb != again {
		t.Error("second preload returned a different resident set")
	}
	used, allocs, copies := f.drv.Stats()
	if copies != 1 || allocs != 1 || used != 100*96 {
		t.Fatalf("after two preloads: %d copies, %d allocations, %d bytes; want 1, 1, 9600", copies, allocs, used)
	}
	if f.keys.Bytes() != 9600 || rb.Bytes() != 9600 || rb.Len() != 100 || rb.ID() != "cs:g1.a" {
		t.Errorf("accounting: keys %d bytes, set %d bytes, %d points, id %q", f.keys.Bytes(), rb.Bytes(), rb.Len(), rb.ID())
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
	if got, ok := f.keys.Get("cs:g1.a"); !ok || got != rb {
		t.Error("Get does not find the resident set")
	}
	if _, ok := f.keys.Get("other"); ok {
		t.Error("Get finds a set never loaded")
	}
	if ids := f.keys.IDs(); len(ids) != 1 || ids[0] != "cs:g1.a" {
		t.Errorf("IDs = %v", ids)
	}
}

func TestResidentKeysRejectBadSets(t *testing.T) {
	f := newKeysFixture(t, 1<<20)
	ctx := context.Background()
	if _, err := f.keys.PreloadG1(ctx, f.s, prover.BaseSet[curve.G1Affine]{Points: keysSet("x", 1).Points}); err == nil {
		t.Error("set without ID accepted")
	}
	if _, err := f.keys.PreloadG1(ctx, f.s, prover.BaseSet[curve.G1Affine]{ID: "empty"}); err == nil {
		t.Error("set without points accepted")
	}
	f.preload(t, keysSet("a", 10))
	if _, err := f.keys.PreloadG1(ctx, f.s, keysSet("a", 11)); err == nil {
		t.Error("same ID with another length accepted")
	}
	if _, err := NewResidentKeys(context.Background(), nil, WithKeyBudget(-1)); err == nil {
		t.Error("negative budget accepted")
	}
}

func TestResidentKeysEvictLeastRecentlyUsedWhenDeviceIsFull(t *testing.T) {
	f := newKeysFixture(t, 3*96*100+50) // room for three sets of 100 points
	for _, id := range []string{"a", "b", "c"} {
		f.preload(t, keysSet(id, 100))
	}
	if _, ok := f.keys.Get("a"); !ok { // a is now more recent than b
		t.Fatal("a not resident")
	}
	f.preload(t, keysSet("d", 100))
	if ids := fmt.Sprint(f.keys.IDs()); ids != "[a c d]" {
		t.Errorf("resident after loading d: %s, want [a c d]", ids)
	}
	if rel := fmt.Sprint(f.releasedSets()); rel != "[keys.b]" {
		t.Errorf("released %s, want [keys.b]", rel)
	}
	if used, allocs, _ := f.drv.Stats(); used != 3*9600 || allocs != 3 || f.keys.Bytes() != 3*9600 {
		t.Errorf("device holds %d bytes in %d allocations, keys count %d", used, allocs, f.keys.Bytes())
	}
}

func TestResidentKeysOutOfMemoryIsAClearError(t *testing.T) {
	f := newKeysFixture(t, 96*100)
	rb := f.preload(t, keysSet("a", 100))
	_, release, err := rb.acquire() // in use: cannot be evicted
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.keys.PreloadG1(context.Background(), f.s, keysSet("b", 10))
	release()
	if !errors.Is(err, cudaspans.ErrOutOfMemory) {
		t.Fatalf("preload with no room: %v, want ErrOutOfMemory", err)
	}
	if ids := fmt.Sprint(f.keys.IDs()); ids != "[a]" || f.keys.Bytes() != 9600 {
		t.Errorf("after the failed preload: %s resident, %d bytes", ids, f.keys.Bytes())
	}
}

func TestResidentKeysBudgetEvictsOldestAndRejectsOversizedSets(t *testing.T) {
	f := newKeysFixture(t, 1<<20, WithKeyBudget(2*9600))
	f.preload(t, keysSet("a", 100))
	f.preload(t, keysSet("b", 100))
	f.preload(t, keysSet("c", 100))
	if ids := fmt.Sprint(f.keys.IDs()); ids != "[b c]" {
		t.Errorf("resident: %s, want [b c]", ids)
	}
	_, err := f.keys.PreloadG1(context.Background(), f.s, keysSet("big", 201))
	if !errors.Is(err, ErrKeyBudget) {
		t.Errorf("oversized set: %v, want ErrKeyBudget", err)
	}
}

func TestResidentKeysEvictInUseFreesWhenTheMSMEnds(t *testing.T) {
	f := newKeysFixture(t, 1<<20)
	ctx := context.Background()
	rb := f.preload(t, keysSet("a", 100))
	_, release, err := rb.acquire()
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := f.keys.Evict(ctx, "a"); !ok || err != nil {
		t.Fatalf("Evict = %v, %v", ok, err)
	}
	if used, _, _ := f.drv.Stats(); used != 9600 || f.keys.Bytes() != 9600 {
		t.Fatalf("set in use freed early: device %d bytes, keys %d", used, f.keys.Bytes())
	}
	if _, _, err := rb.acquire(); !errors.Is(err, ErrBaseSetEvicted) {
		t.Errorf("acquire after evict: %v, want ErrBaseSetEvicted", err)
	}
	release()
	if used, allocs, _ := f.drv.Stats(); used != 0 || allocs != 0 || f.keys.Bytes() != 0 {
		t.Errorf("after the MSM ended: device %d bytes in %d allocations, keys %d", used, allocs, f.keys.Bytes())
	}
	if rel := fmt.Sprint(f.releasedSets()); rel != "[keys.a]" {
		t.Errorf("released %s, want [keys.a]", rel)
	}
	if ok, err := f.keys.Evict(ctx, "a"); ok || err != nil {
		t.Errorf("second Evict = %v, %v; want false, nil", ok, err)
	}
}

func TestResidentKeysConcurrentPreloadsUploadOnce(t *testing.T) {
	f := newKeysFixture(t, 1<<20)
	set := keysSet("shared", 200)
	var wg sync.WaitGroup
	got := make([]*ResidentBases, 8)
	errs := make([]error, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = f.keys.PreloadG1(context.Background(), f.s, set)
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

func TestResidentKeysEvictDuringUploadFreesTheUpload(t *testing.T) {
	f := newKeysFixture(t, 1<<20)
	started, proceed := make(chan struct{}), make(chan struct{})
	f.drv.OnCopy = func() {
		close(started)
		<-proceed
	}
	done := make(chan error)
	go func() {
		_, err := f.keys.PreloadG1(context.Background(), f.s, keysSet("a", 100))
		done <- err
	}()
	<-started
	if ok, err := f.keys.Evict(context.Background(), "a"); !ok || err != nil {
		t.Fatalf("Evict during upload = %v, %v", ok, err)
	}
	close(proceed)
	if err := <-done; !errors.Is(err, ErrBaseSetEvicted) {
		t.Errorf("preload evicted during upload: %v, want ErrBaseSetEvicted", err)
	}
	if used, allocs, _ := f.drv.Stats(); used != 0 || allocs != 0 || f.keys.Bytes() != 0 {
		t.Errorf("after: device %d bytes in %d allocations, keys %d", used, allocs, f.keys.Bytes())
	}
}

func TestResidentKeysEvictAllFreesEverything(t *testing.T) {
	f := newKeysFixture(t, 1<<20)
	for _, id := range []string{"a", "b", "c"} {
		f.preload(t, keysSet(id, 50))
	}
	if err := f.keys.EvictAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if used, allocs, _ := f.drv.Stats(); used != 0 || allocs != 0 || f.keys.Bytes() != 0 || len(f.keys.IDs()) != 0 {
		t.Errorf("after EvictAll: device %d bytes in %d allocations, keys %d, ids %v", used, allocs, f.keys.Bytes(), f.keys.IDs())
	}
	if n := len(f.releasedSets()); n != 3 {
		t.Errorf("%d buffer.release spans, want 3", n)
	}
}

func TestResidentKeysEvictKeyDropsOnlyThatKeysSets(t *testing.T) {
	f := newKeysFixture(t, 1<<20)
	for _, id := range []string{"k1:g1.a", "k1:g1.b", "k1:g1.z", "k10:g1.a", "k2:g1.a"} {
		f.preload(t, keysSet(id, 10))
	}
	n, err := f.keys.EvictKey(context.Background(), "k1")
	if err != nil || n != 3 {
		t.Fatalf("EvictKey(k1) = %d, %v; want 3 sets", n, err)
	}
	if ids := f.keys.IDs(); strings.Join(ids, " ") != "k10:g1.a k2:g1.a" {
		t.Errorf("resident after EvictKey(k1): %v, want k10 and k2 kept", ids)
	}
	if f.keys.Bytes() != 2*10*96 {
		t.Errorf("accounting after eviction: %d bytes, want %d", f.keys.Bytes(), 2*10*96)
	}
	if got := len(f.releasedSets()); got != 3 {
		t.Errorf("%d buffer.release spans, want one per evicted set", got)
	}
	if n, err := f.keys.EvictKey(context.Background(), "k1"); n != 0 || err != nil {
		t.Errorf("second EvictKey(k1) = %d, %v; want 0, nil", n, err)
	}
}

// TestResidentKeysEvictOnlyWhatTheUploadNeedsInEveryReleaseMode: two sets
// fill the device and a third needs one evicted. Device frees are
// immediate in every release mode, so the retry finds the memory and the
// other set stays.
func TestResidentKeysEvictOnlyWhatTheUploadNeedsInEveryReleaseMode(t *testing.T) {
	for _, mode := range []cudaspans.ReleaseMode{cudaspans.ReleaseSync, cudaspans.ReleaseAsync, cudaspans.ReleasePool} {
		t.Run(string(mode), func(t *testing.T) {
			drv := newKeysFakeDriver(2 * 100 * msmAffineBytes)
			c, err := cudaspans.Open(0, cudaspans.WithDriver(drv))
			if err != nil {
				t.Fatal(err)
			}
			rel, err := cudaspans.NewReleaser(mode)
			if err != nil {
				t.Fatal(err)
			}
			defer rel.Close(context.Background())
			k, err := NewResidentKeys(context.Background(), c, WithReleaser(rel))
			if err != nil {
				t.Fatal(err)
			}
			s, err := c.NewStream()
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, id := range []string{"a", "b", "c"} {
				if _, err := k.PreloadG1(ctx, s, keysSet(id, 100)); err != nil {
					t.Fatalf("preload %s: %v", id, err)
				}
			}
			if ids := strings.Join(k.IDs(), " "); ids != "b c" {
				t.Errorf("resident %q, want the least recently used set (a) evicted and b kept", ids)
			}
		})
	}
}
