package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// sizedFake is a StagedRunner whose synthesis and prove take times set per
// constraint count, recording the order of the proves.
type sizedFake struct {
	synth, device map[int]time.Duration

	mu                sync.Mutex
	proved            []string
	first, last, busy time.Duration
	start             time.Time
}

type sizedSyn struct {
	req   prover.Request
	freed chan struct{}
}

func (s *sizedSyn) Release(context.Context) error { return nil }
func (s *sizedSyn) Freed() <-chan struct{}        { return s.freed }
func (s *sizedSyn) Prove(ctx context.Context, dev prover.Device) (*prover.Result, error) {
	return proveOnFake(ctx, s, dev)
}

func (f *sizedFake) Synthesize(_ context.Context, r *prover.Request) (prover.Synthesized, error) {
	time.Sleep(f.synth[r.Constraints])
	s := &sizedSyn{req: *r, freed: make(chan struct{})}
	close(s.freed)
	return s, nil
}

func (f *sizedFake) Proving() prover.Proving { return prover.Proving{} }

func (f *sizedFake) proveOn(_ context.Context, syn prover.Synthesized) (*prover.Result, error) {
	r := syn.(*sizedSyn).req
	t0 := time.Since(f.start)
	time.Sleep(f.device[r.Constraints])
	t1 := time.Since(f.start)
	f.mu.Lock()
	if f.busy == 0 {
		f.first = t0
	}
	f.busy += t1 - t0
	f.last = t1
	f.proved = append(f.proved, r.RequestID)
	f.mu.Unlock()
	return &prover.Result{Proof: []byte("p"), Backend: "fake"}, nil
}

func (f *sizedFake) Run(ctx context.Context, r *prover.Request) (*prover.Result, error) {
	s, _ := f.Synthesize(ctx, r)
	return s.Prove(ctx, f)
}

// Issue 26 item 4 with fake stages: two sizes interleaved (the large one's
// synthesis and prove four times the small one's), tuned; CRITICAL jobs
// sent behind a queue of NORMAL ones are proved before every NORMAL job
// still queued when they came (ahead at both stages), the tuner keeps one
// choice per size, and the device stays >= 90 % busy.
func TestMixedSizesTunedCriticalAheadAtBothStages(t *testing.T) {
	f := &sizedFake{
		synth:  map[int]time.Duration{256: 40 * time.Millisecond, 1024: 160 * time.Millisecond},
		device: map[int]time.Duration{256: 5 * time.Millisecond, 1024: 20 * time.Millisecond},
		start:  time.Now(),
	}
	tuner := NewTuner(16, 1, 16)
	e := newEngine(t, []prover.Runner{f}, WithSynthesisWorkers(1), WithQueueSize(200), WithTuner(tuner))
	submit := func(id string, size int, p priority.Priority) string {
		r := req(id, p)
		r.Constraints = size
		return mustSubmit(t, e, r).ID
	}
	var ids []string
	for i := range 120 {
		size := 256
		if i%2 == 1 {
			size = 1024
		}
		ids = append(ids, submit(fmt.Sprintf("n%d", i), size, priority.Normal))
	}
	time.Sleep(300 * time.Millisecond) // the tuner has measured both sizes
	queued := map[string]bool{}
	for _, w := range e.Status().Waiting {
		queued[w.RequestID] = true
	}
	var crit []string
	for i := range 4 {
		size := 256 << (2 * (i % 2))
		crit = append(crit, submit(fmt.Sprintf("crit%d", i), size, priority.Critical))
	}
	for _, id := range append(ids, crit...) {
		if info, err := e.Await(context.Background(), id); err != nil || info.State != StateSucceeded {
			t.Fatalf("job %s: %v %v", id, info.State, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	pos := map[string]int{}
	for i, id := range f.proved {
		pos[id] = i
	}
	lastCrit := 0
	for _, id := range []string{"crit0", "crit1", "crit2", "crit3"} {
		lastCrit = max(lastCrit, pos[id])
	}
	if len(queued) < 20 {
		t.Fatalf("%d NORMAL jobs still queued when the CRITICAL ones came, want a queue (the batch went too fast)", len(queued))
	}
	for id := range queued {
		if pos[id] < lastCrit {
			t.Errorf("NORMAL %s, queued when the CRITICAL jobs came, proved at %d before the last CRITICAL at %d", id, pos[id], lastCrit)
		}
	}
	if s := float64(f.busy) / float64(f.last-f.first); s < TargetBusy {
		t.Errorf("mixed sizes, tuned: device busy %.1f %%, want >= %.0f %%", 100*s, 100*TargetBusy)
	}
	if tu := e.Status().Tuning; len(tu) != 2 || tu[0].Constraints != 256 || tu[1].Constraints != 1024 || tu[0].SynthesisMs >= tu[1].SynthesisMs {
		t.Errorf("tuning %+v, want one entry per size, the large one's synthesis longer", tu)
	}
}
