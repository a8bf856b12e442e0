package engine

import (
	"context"
	"testing"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/prover"
)

// Status reports the Releasers of WithReleasers: their mode, and in pool
// mode what their pools may keep and keep now, summed over the pools (a
// Releaser given twice counted once, a nil one skipped); outside pool
// mode, and without the option, no pool.
func TestStatusReportsTheReleasersPools(t *testing.T) {
	const page = 4096
	a, err := buffer.NewReleaser(buffer.ReleasePool, buffer.WithPoolLimit(4*page))
	if err != nil {
		t.Fatal(err)
	}
	b, err := buffer.NewReleaser(buffer.ReleasePool, buffer.WithPoolLimit(4*page))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	defer b.Close(context.Background())
	e := newEngine(t, []prover.Runner{&fakeRunner{}}, WithReleasers(a, nil, b, a))
	st := e.Status()
	if st.ReleaseMode != buffer.ReleasePool || st.PoolLimit != 8*page || st.PoolHeld != 0 {
		t.Errorf("before any release: mode %q, pool limit %d, held %d; want pool, %d, 0", st.ReleaseMode, st.PoolLimit, st.PoolHeld, 8*page)
	}
	for _, r := range []struct {
		rel   *buffer.Releaser
		pages int
	}{{a, 1}, {b, 2}} {
		m, err := buffer.NewMmap(r.pages * page)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.rel.Release(context.Background(), "wires", m); err != nil {
			t.Fatal(err)
		}
	}
	if st := e.Status(); st.PoolHeld != 3*page || st.PoolLimit != 8*page {
		t.Errorf("3 pages pooled over two Releasers: held %d, limit %d; want %d of %d", st.PoolHeld, st.PoolLimit, 3*page, 8*page)
	}
	if m := b.Reuse(page); m == nil {
		t.Fatal("Reuse found nothing in b's pool")
	} else if err := m.Free(); err != nil {
		t.Fatal(err)
	}
	if st := e.Status(); st.PoolHeld != page {
		t.Errorf("after b's buffer was reused: held %d, want %d", st.PoolHeld, page)
	}

	async, err := buffer.NewReleaser(buffer.ReleaseAsync, buffer.WithPoolLimit(4*page))
	if err != nil {
		t.Fatal(err)
	}
	defer async.Close(context.Background())
	st = newEngine(t, []prover.Runner{&fakeRunner{}}, WithReleasers(async)).Status()
	if st.ReleaseMode != buffer.ReleaseAsync || st.PoolLimit != 0 || st.PoolHeld != 0 {
		t.Errorf("async: mode %q, pool limit %d, held %d; want async and no pool", st.ReleaseMode, st.PoolLimit, st.PoolHeld)
	}
	st = newEngine(t, []prover.Runner{&fakeRunner{}}).Status()
	if st.ReleaseMode != "" || st.PoolLimit != 0 || st.PoolHeld != 0 {
		t.Errorf("without WithReleasers: mode %q, pool limit %d, held %d; want none", st.ReleaseMode, st.PoolLimit, st.PoolHeld)
	}
}
