package buffer

import (
	"context"
	"testing"
	"time"
)

func TestAfterQueuedRunsOnceTheEarlierReleasesAreFreed(t *testing.T) {
	for _, mode := range []ReleaseMode{ReleaseSync, ReleaseAsync, ReleasePool} {
		r, rec, _ := newReleaseRecorder(t, mode)
		bufs := []*slowBuffer{{kind: "mmap", size: 8, delay: 20 * time.Millisecond}, {kind: "pinned", size: 8, delay: 20 * time.Millisecond}}
		for _, b := range bufs {
			if err := r.Release(context.Background(), "x", b); err != nil {
				t.Fatal(err)
			}
		}
		called := make(chan int32, 1)
		r.AfterQueued(func() { called <- bufs[1].freed.Load() })
		select {
		case freed := <-called:
			if freed != 1 {
				t.Errorf("%s: AfterQueued ran with the last buffer freed %d times, want 1", mode, freed)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: AfterQueued never ran", mode)
		}
		if n := len(releaseSpans(rec)); n != 2 {
			t.Errorf("%s: %d buffer.release spans, want 2 (the marker makes none)", mode, n)
		}
		if err := r.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		r.AfterQueued(func() { close(done) })
		select {
		case <-done:
		case <-time.After(time.Second):
			t.Fatalf("%s: AfterQueued after Close did not run at once", mode)
		}
	}
}
