package cudaspans

import (
	"sync"
	"time"
)

// maxHeld bounds the kernel spans held for their durations: past it the
// oldest ends without one (a daemon whose records stopped coming must not
// hold spans without bound).
const maxHeld = 1 << 16

// held is the state of SetLaunchDurationWait: the kernel spans waiting
// for the hook's durations, and the counts of LaunchDurationCounts.
var held struct {
	sync.Mutex
	on                 bool
	max                time.Duration
	spans              []heldSpan
	matched, unmatched int
}

// heldSpan is a kernel span, placed and clamped at its Synchronize, that
// waits for the hook's duration before it is emitted.
type heldSpan struct {
	c     *Context
	d     deviceSpan
	since time.Time // the Context's clock at the Synchronize
}

// SetLaunchDurationWait is for package cupti, when CUPTI's records are not
// flushed at each Synchronize: with on, a kernel span whose duration the
// hook of SetLaunchCorrelation does not have at its Synchronize is held
// instead of ended without one. EndWaitingLaunches, called by the hook's
// owner whenever more records came (cupti: after each drain), ends the
// held spans whose durations the hook then has, with them, and those held
// for max or longer, without (cuda.gpu_ms only; counted by
// LaunchDurationCounts). A held span reaches the exporter after its
// Synchronize, often after its parent ended. Off by default, and after
// each SetLaunchCorrelation; turning it off ends the held spans. Safe
// for concurrent use.
func SetLaunchDurationWait(on bool, max time.Duration) {
	if max < 0 {
		max = 0
	}
	held.Lock()
	held.on, held.max = on, max
	held.Unlock()
	if !on {
		EndWaitingLaunches(true)
	}
}

// LaunchDurationCounts returns how many kernel spans (each launch that is
// not folded into an aggregate) ended with the hook's duration
// (cuda.cupti_ms) and how many without it since the hook was last set,
// and how many are held now (SetLaunchDurationWait). Safe for concurrent
// use.
func LaunchDurationCounts() (matched, unmatched, waiting int) {
	held.Lock()
	defer held.Unlock()
	return held.matched, held.unmatched, len(held.spans)
}

// EndWaitingLaunches ends the kernel spans held for their durations
// (SetLaunchDurationWait): those whose durations the hook has now with
// them, those held for the wait's max or longer (all of them when final)
// without, and keeps the rest held. It returns how many ended each way.
// Safe for concurrent use; the hook is called without cudaspans' locks
// held.
func EndWaitingLaunches(final bool) (matched, unmatched int) {
	held.Lock()
	spans, max := held.spans, held.max
	held.spans = nil
	held.Unlock()
	if len(spans) == 0 {
		return 0, 0
	}
	var got map[uint64]float64
	if f := launchDurations.Load(); f != nil {
		ids := make([]uint64, len(spans))
		for i, h := range spans {
			ids[i] = h.d.op.launch
		}
		got = (*f)(ids)
	}
	var keep []heldSpan
	for _, h := range spans {
		if ms, ok := got[h.d.op.launch]; ok {
			h.d.cuptiMS = ms
			h.c.emitOne(h.d)
			matched++
		} else if final || h.c.cfg.now().Sub(h.since) >= max {
			h.c.emitOne(h.d)
			unmatched++
		} else {
			keep = append(keep, h)
		}
	}
	held.Lock()
	held.spans = append(keep, held.spans...)
	held.matched += matched
	held.unmatched += unmatched
	held.Unlock()
	return matched, unmatched
}

// endOrHold ends kernel span d of a Synchronize: with the hook's duration
// when it had one (ok), else held for it when SetLaunchDurationWait is on,
// else without. hooked: a durations hook is installed (else nothing is
// counted).
func (c *Context) endOrHold(d deviceSpan, ok, hooked bool) {
	var evict []heldSpan
	held.Lock()
	switch {
	case !hooked:
	case ok:
		held.matched++
	case held.on:
		held.spans = append(held.spans, heldSpan{c: c, d: d, since: c.cfg.now()})
		if n := len(held.spans) - maxHeld; n > 0 {
			evict = append(evict, held.spans[:n]...)
			held.spans = append([]heldSpan(nil), held.spans[n:]...)
			held.unmatched += n
		}
		held.Unlock()
		for _, h := range evict {
			h.c.emitOne(h.d)
		}
		return
	default:
		held.unmatched++
	}
	held.Unlock()
	c.emitOne(d)
}
