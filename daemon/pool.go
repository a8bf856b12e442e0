package daemon

import (
	"github.com/otelcuzk/otelcuzk/buffer"
)

// UnbudgetedPoolShare is the share of physical memory the buffer pools of
// serve --release pool keep in all when there is no memory budget
// (--memory-budget 0). Without a budget the proofs in flight are bounded
// by nothing but the workers and the queue, so they are left three
// quarters of the host; the pool is for reuse by the next proofs, not a
// cache to grow.
const UnbudgetedPoolShare = 0.25

// poolLimit returns the bytes each of n pool-mode Releasers of one daemon
// may keep (buffer.WithPoolLimit), so that the memory budget and every
// pooled buffer fit the host together: the pooled buffers are outside the
// budget (in pool mode Releaser.AfterQueued frees a job's reservation as
// soon as its buffers are pooled), and with the registered host copy they
// are page-locked too. All n together keep at most mem - budget bytes
// (mem: physical memory, budget: the resolved --memory-budget, both in
// bytes; nothing when the budget is all of mem or more), or
// UnbudgetedPoolShare of mem when budget is 0, and never more than
// buffer.DefaultPoolLimit (what one Releaser keeps by default); the total
// is split evenly. Where physical memory is unknown (mem 0) the total is
// buffer.DefaultPoolLimit. n below 1 counts as 1.
func poolLimit(mem, budget uint64, n int) int {
	total := uint64(buffer.DefaultPoolLimit)
	switch {
	case mem == 0:
	case budget == 0:
		total = min(total, uint64(float64(mem)*UnbudgetedPoolShare))
	case budget >= mem:
		total = 0
	default:
		total = min(total, mem-budget)
	}
	return int(total / uint64(max(n, 1)))
}
