package msm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// mallocs counts the cuda.malloc spans recorded so far.
func (f *basesFixture) mallocs() int {
	n := 0
	for _, s := range f.rec.Ended() {
		if s.Name() == semconv.SpanCUDAMalloc {
			n++
		}
	}
	return n
}

func (f *basesFixture) proofBuffer(t *testing.T, key, name string, bytes int) (*cudaspans.DeviceBuffer, func()) {
	t.Helper()
	buf, done, err := f.bases.ProofBuffer(context.Background(), key, name, bytes)
	if err != nil {
		t.Fatalf("ProofBuffer(%s, %s, %d): %v", key, name, bytes, err)
	}
	if buf.Size() < bytes {
		t.Fatalf("ProofBuffer(%s, %s, %d) lent %d bytes", key, name, bytes, buf.Size())
	}
	return buf, done
}

// The second proof of a key gets the first proof's buffer without an
// allocation, and a larger need replaces it (the old one freed).
func TestProofBufferIsKeptForTheNextProofOfTheKey(t *testing.T) {
	f := newBasesFixture(t, 1<<20)
	a, done := f.proofBuffer(t, "k", "compute_h.a", 4096)
	done()
	before := f.mallocs()
	again, done := f.proofBuffer(t, "k", "compute_h.a", 4096)
	done()
	smaller, done := f.proofBuffer(t, "k", "compute_h.a", 100)
	done()
	if again != a || smaller != a || f.mallocs() != before {
		t.Errorf("second loan: %p, %p (first %p), %d cuda.malloc spans; want the same buffer and none",
			again, smaller, a, f.mallocs()-before)
	}
	if got := f.bases.Bytes(); got != 4096 {
		t.Errorf("Bytes() = %d, want the kept buffer's 4096", got)
	}
	bigger, done := f.proofBuffer(t, "k", "compute_h.a", 8192)
	done()
	if bigger == a || a.Ptr() != 0 || f.mallocs() != before+1 {
		t.Errorf("a larger need: same buffer %v, old one freed %v, %d new allocations; want a new one, the old freed",
			bigger == a, a.Ptr() == 0, f.mallocs()-before)
	}
	if used, _, _ := f.drv.Stats(); used != 8192 || f.bases.Bytes() != 8192 {
		t.Errorf("device bytes %d, Bytes() %d, want only the 8192 kept", used, f.bases.Bytes())
	}
}

// Evicting a key frees its proof buffers with its base sets; other keys'
// buffers, of other sizes, stay.
func TestEvictKeySetsFreesTheKeysProofBuffers(t *testing.T) {
	f := newBasesFixture(t, 1<<20)
	ctx := context.Background()
	if _, err := f.bases.PreloadG1(ctx, f.s, testSet("k1:g1.a", 10)); err != nil {
		t.Fatal(err)
	}
	for key, size := range map[string]int{"k1": 4096, "k2": 16384} {
		for _, name := range []string{"compute_h.a", "msm.workspace"} {
			_, done := f.proofBuffer(t, key, name, size)
			done()
		}
	}
	if ids := strings.Join(f.bases.ProofBufferIDs(), " "); ids != "k1:compute_h.a k1:msm.workspace k2:compute_h.a k2:msm.workspace" {
		t.Fatalf("ProofBufferIDs = %s", ids)
	}
	n, err := f.bases.EvictKeySets(ctx, "k1")
	if err != nil || n != 1 {
		t.Fatalf("EvictKeySets(k1) = %d, %v", n, err)
	}
	if ids := strings.Join(f.bases.ProofBufferIDs(), " "); ids != "k2:compute_h.a k2:msm.workspace" {
		t.Errorf("after evicting k1: ProofBufferIDs = %s, want k2's only", ids)
	}
	if used, _, _ := f.drv.Stats(); used != 2*16384 || f.bases.Bytes() != 2*16384 {
		t.Errorf("after evicting k1: device bytes %d, Bytes() %d, want k2's 2×16384", used, f.bases.Bytes())
	}
	released := 0
	for _, s := range f.rec.Ended() {
		if s.Name() == semconv.SpanBufferRelease {
			released++
		}
	}
	if released != 3 { // k1's set and its two buffers
		t.Errorf("%d buffer.release spans, want 3", released)
	}
	if err := f.bases.EvictAll(ctx); err != nil {
		t.Fatal(err)
	}
	if used, _, _ := f.drv.Stats(); used != 0 || len(f.bases.ProofBufferIDs()) != 0 {
		t.Errorf("after EvictAll: %d device bytes, buffers %v", used, f.bases.ProofBufferIDs())
	}
}

// A buffer evicted while on loan is freed when given back, not before.
func TestAProofBufferEvictedOnLoanIsFreedWhenGivenBack(t *testing.T) {
	f := newBasesFixture(t, 1<<20)
	buf, done := f.proofBuffer(t, "k", "msm.workspace", 4096)
	if _, err := f.bases.EvictKeySets(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	if buf.Ptr() == 0 {
		t.Fatal("a buffer on loan was freed by the eviction")
	}
	done()
	if buf.Ptr() != 0 || f.bases.Bytes() != 0 {
		t.Errorf("given back after its eviction: freed %v, Bytes() %d", buf.Ptr() == 0, f.bases.Bytes())
	}
}

// A second loan of a buffer on loan gets a buffer of its own, not kept.
func TestAProofBufferOnLoanIsNotShared(t *testing.T) {
	f := newBasesFixture(t, 1<<20)
	first, done1 := f.proofBuffer(t, "k", "msm.workspace", 4096)
	second, done2 := f.proofBuffer(t, "k", "msm.workspace", 4096)
	if first == second {
		t.Fatal("one buffer lent twice at once")
	}
	done2()
	done1()
	if second.Ptr() != 0 || first.Ptr() == 0 || f.bases.Bytes() != 4096 {
		t.Errorf("the one-off freed %v, the kept one alive %v, Bytes() %d", second.Ptr() == 0, first.Ptr() != 0, f.bases.Bytes())
	}
}

// A proof buffer counts in the budget with the base sets: another key's
// idle set is evicted for room, the proof's own key's sets are not, and
// what can never fit is ErrBaseBudget.
func TestProofBuffersShareTheBudgetWithTheBaseSets(t *testing.T) {
	setBytes := 100 * msmAffineBytes
	f := newBasesFixture(t, 1<<20, WithBaseBudget(int64(2*setBytes)))
	ctx := context.Background()
	for _, id := range []string{"old:g1.a", "k:g1.a"} {
		if _, err := f.bases.PreloadG1(ctx, f.s, testSet(id, 100)); err != nil {
			t.Fatal(err)
		}
	}
	_, done := f.proofBuffer(t, "k", "msm.workspace", setBytes)
	done()
	if ids := strings.Join(f.bases.IDs(), " "); ids != "k:g1.a" {
		t.Errorf("resident sets %s, want the other key's evicted for room and k's own kept", ids)
	}
	if _, _, err := f.bases.ProofBuffer(ctx, "k", "compute_h.a", setBytes); !errors.Is(err, ErrBaseBudget) {
		t.Errorf("a buffer past the budget with only k's own left: %v, want ErrBaseBudget", err)
	}
	if _, _, err := f.bases.ProofBuffer(ctx, "k", "compute_h.b", 3*setBytes); !errors.Is(err, ErrBaseBudget) {
		t.Errorf("a buffer larger than the budget: %v, want ErrBaseBudget", err)
	}
}

// A failed allocation is a clear error and loses nothing: the buffer kept
// for the key, the sets and the device memory stay as they were.
func TestAFailedProofBufferAllocationLosesNothing(t *testing.T) {
	f := newBasesFixture(t, 64<<10)
	ctx := context.Background()
	if _, err := f.bases.PreloadG1(ctx, f.s, testSet("k:g1.a", 100)); err != nil {
		t.Fatal(err)
	}
	kept, done := f.proofBuffer(t, "k", "msm.workspace", 4096)
	done()
	usedBefore, _, _ := f.drv.Stats()
	bytesBefore := f.bases.Bytes()
	_, _, err := f.bases.ProofBuffer(ctx, "k", "msm.workspace", 1<<20)
	if !errors.Is(err, cudaspans.ErrOutOfMemory) || !strings.Contains(err.Error(), "k:msm.workspace") || !strings.Contains(err.Error(), "1048576") {
		t.Fatalf("allocation past the device: %v, want ErrOutOfMemory naming the buffer and its bytes", err)
	}
	used, _, _ := f.drv.Stats()
	if used != usedBefore || f.bases.Bytes() != bytesBefore || kept.Ptr() == 0 {
		t.Errorf("after the failure: device bytes %d (were %d), Bytes() %d (were %d), kept buffer freed %v",
			used, usedBefore, f.bases.Bytes(), bytesBefore, kept.Ptr() == 0)
	}
	if ids := strings.Join(f.bases.IDs(), " ") + " " + strings.Join(f.bases.ProofBufferIDs(), " "); ids != "k:g1.a k:msm.workspace" {
		t.Errorf("after the failure: %s, want the set and the buffer kept", ids)
	}
	if again, done := f.proofBuffer(t, "k", "msm.workspace", 4096); again != kept {
		t.Error("the kept buffer is no longer lent after the failure")
	} else {
		done()
	}
	for _, bad := range []struct {
		key, name string
		bytes     int
	}{{"", "a", 1}, {"k", "", 1}, {"k", "a", 0}} {
		if _, _, err := f.bases.ProofBuffer(ctx, bad.key, bad.name, bad.bytes); err == nil {
			t.Errorf("ProofBuffer(%q, %q, %d) accepted", bad.key, bad.name, bad.bytes)
		}
	}
}
