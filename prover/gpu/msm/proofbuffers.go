package msm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/otelcuzk/otelcuzk/cudaspans"
)

// proofBuffer is one device buffer kept for the proofs of one proving key
// (DeviceBases.ProofBuffer), counted in the budget with the base sets.
type proofBuffer struct {
	id string // keyID + ":" + name
	loaned
}

// ID returns the buffer's keyID + ":" + name.
func (b *proofBuffer) ID() string { return b.id }

// ProofBuffer lends the device buffer called name (for example
// "compute_h.a", "msm.workspace") of the proving key keyID, of at least
// bytes bytes: the one kept from an earlier proof of the key when it is
// large enough, else one allocated now (a cuda.malloc span under ctx) and
// kept for the next proof, in place of a smaller one. So a warm daemon's
// proofs allocate no device memory: the buffers are sized by the first
// proof of each circuit and live until the key's base sets go
// (EvictKeySets, EvictAll, or eviction of the least recently used for
// room), counted in the budget (WithBaseBudget) and in Bytes with them.
//
// The caller uses the buffer until it calls the returned function. A
// buffer evicted meanwhile is freed by that call; a buffer already lent
// (a concurrent call for the same name and key) is not shared: the second
// caller gets a buffer of its own, freed by its call.
//
// Errors: an empty keyID or name or bytes ≤ 0; ErrBaseBudget when bytes
// do not fit in the budget even after evicting every idle set and buffer
// of other keys (those of keyID stay: the proof needs them next);
// cudaspans.ErrOutOfMemory (wrapped) when the device has no room even then.
// A failed allocation leaves what was kept as it was.
func (k *DeviceBases) ProofBuffer(ctx context.Context, keyID, name string, bytes int) (*cudaspans.DeviceBuffer, func(), error) {
	if keyID == "" || name == "" || bytes <= 0 {
		return nil, nil, fmt.Errorf("msm: proof buffer %q of key %q: %d bytes", name, keyID, bytes)
	}
	id := keyID + ":" + name
	k.mu.Lock()
	old := k.bufs[id]
	if old != nil && old.users == 0 && old.bytes >= int64(bytes) {
		old.users++
		k.clock++
		old.lastUse = k.clock
		k.mu.Unlock()
		return old.buf, func() { k.giveBack(ctx, old) }, nil
	}
	// A buffer on loan is not shared: this caller gets a one-off. An
	// idle one too small is replaced, held (users) so that making room for
	// its replacement does not evict it: it stays if the replacement
	// cannot be had.
	oneOff := old != nil && old.users > 0
	if old != nil {
		old.users++
	}
	pb := &proofBuffer{id: id, loaned: loaned{bytes: int64(bytes), users: 1}}
	epoch := k.bufEpoch
	err := k.reserveLocked(ctx, keyID, id, pb.bytes)
	k.mu.Unlock()
	var buf *cudaspans.DeviceBuffer
	if err == nil {
		if buf, err = k.alloc(ctx, keyID, id, bytes); err != nil {
			k.mu.Lock()
			k.bytes -= pb.bytes
			k.mu.Unlock()
		}
	}
	if old != nil {
		defer k.giveBack(ctx, old) // frees it when it was evicted meanwhile
	}
	if err != nil {
		return nil, nil, err
	}
	k.mu.Lock()
	pb.buf = buf
	k.clock++
	pb.lastUse = k.clock
	if oneOff || k.bufEpoch != epoch {
		// A one-off, or buffers were evicted during the allocation
		// (perhaps this key's): not kept, freed when given back.
		pb.evicted = true
	} else {
		if old != nil {
			// Replaced: freed by the deferred giveBack, the last loan.
			delete(k.bufs, id)
			old.evicted = true
		}
		k.bufs[id] = pb
	}
	k.mu.Unlock()
	return buf, func() { k.giveBack(ctx, pb) }, nil
}

// reserveLocked counts bytes for a new buffer id of keyID in the budget,
// evicting the least recently used idle sets and buffers of other keys
// while it does not fit (the proof's own bases are what it needs next).
// k.mu is held.
func (k *DeviceBases) reserveLocked(ctx context.Context, keyID, id string, bytes int64) error {
	if k.budget > 0 {
		if bytes > k.budget {
			return fmt.Errorf("msm: %s needs %d bytes, budget %d: %w", id, bytes, k.budget, ErrBaseBudget)
		}
		for k.bytes+bytes > k.budget {
			if !k.evictOldestLocked(ctx, keyID+":") {
				return fmt.Errorf("msm: %s needs %d bytes, %d of budget %d in use: %w", id, bytes, k.bytes, k.budget, ErrBaseBudget)
			}
		}
	}
	k.bytes += bytes
	return nil
}

// alloc allocates bytes of device memory for id of keyID, evicting idle
// sets and buffers of other keys while the device is out of memory.
func (k *DeviceBases) alloc(ctx context.Context, keyID, id string, bytes int) (*cudaspans.DeviceBuffer, error) {
	for {
		buf, err := k.c.Alloc(ctx, bytes)
		if err == nil {
			return buf, nil
		}
		if !errors.Is(err, cudaspans.ErrOutOfMemory) {
			return nil, fmt.Errorf("msm: %s: %w", id, err)
		}
		k.mu.Lock()
		evicted := k.evictOldestLocked(ctx, keyID+":")
		k.mu.Unlock()
		if !evicted {
			return nil, fmt.Errorf("msm: %s (%d bytes) does not fit in device memory: %w", id, bytes, err)
		}
	}
}

// giveBack ends a loan of pb; an evicted buffer is freed with the last one.
func (k *DeviceBases) giveBack(ctx context.Context, pb *proofBuffer) {
	k.mu.Lock()
	buf := pb.endLoanLocked(&k.bytes)
	k.mu.Unlock()
	if buf != nil {
		_ = k.releaser.Release(context.WithoutCancel(ctx), pb.id, buf)
	}
}

// evictBufferLocked removes pb from the store: its memory is returned to
// be freed now, or nil when a loan is out (giveBack frees it). k.mu is held.
func (k *DeviceBases) evictBufferLocked(pb *proofBuffer) *cudaspans.DeviceBuffer {
	delete(k.bufs, pb.id)
	pb.evicted = true
	if pb.users > 0 || pb.buf == nil {
		return nil
	}
	buf := pb.buf
	pb.buf = nil
	k.bytes -= pb.bytes
	return buf
}

// evictBuffers evicts the proof buffers whose ID starts with prefix ("":
// all) and returns the joined errors of their releases.
func (k *DeviceBases) evictBuffers(ctx context.Context, prefix string) error {
	k.mu.Lock()
	k.bufEpoch++
	type drop struct {
		id  string
		buf *cudaspans.DeviceBuffer
	}
	var drops []drop
	for id, pb := range k.bufs {
		if strings.HasPrefix(id, prefix) {
			if buf := k.evictBufferLocked(pb); buf != nil {
				drops = append(drops, drop{id, buf})
			}
		}
	}
	k.mu.Unlock()
	var errs []error
	for _, d := range drops {
		errs = append(errs, k.releaser.Release(ctx, d.id, d.buf))
	}
	return errors.Join(errs...)
}

// ProofBufferIDs returns the IDs (keyID + ":" + name) of the proof buffers
// kept, sorted.
func (k *DeviceBases) ProofBufferIDs() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Sorted(maps.Keys(k.bufs))
}
