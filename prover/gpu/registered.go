package gpu

import (
	"context"
	"errors"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// hostRegs are the host buffers (buffer.Mmap) registered with the driver
// in the HostCopyRegistered mode: each is registered whole the first time
// a backend copies a vector in it, and stays registered until the buffer
// is unmapped (its OnUnmap function) or the backend that registered it
// closes, so a buffer that a pool-mode Releaser hands to the next proof is
// copied again by direct DMA with no registration. One registry per
// process (hostRegistry): a registration is portable
// (CU_MEMHOSTREGISTER_PORTABLE), so the backends of the other devices
// copy from a buffer that one of them registered, where a second
// registration would be refused.
type hostRegs struct {
	mu sync.Mutex
	m  map[*buffer.Mmap]*hostReg
}

var hostRegistry hostRegs

// hostReg is one buffer's registration. Copies that use it hold use for
// reading until the stream has finished them; the unregistration holds it
// for writing, so it never runs while a DMA may still read the buffer.
type hostReg struct {
	use   sync.RWMutex
	owner *Backend // whose context registered it (or was refused)
	// r is the registration; nil when the driver refused it (the buffer's
	// vectors are staged for its whole life, without asking again).
	r *cudaspans.Registered
}

// registered returns a function that releases the hold, and true, when v
// lies in a buffer.Mmap registered with the driver (registering it whole,
// as a cuda.host_register span, when no backend has yet): v may then be
// copied by DMA from where it is until the release, which the caller
// makes after the stream has finished the copies. It returns false when
// v is not in an Mmap, the driver refused the buffer (the caller stages
// v), or b is closed. Called with b.mu.
func (b *Backend) registered(ctx context.Context, v []fr.Element) (func(), bool) {
	m := buffer.MmapHolding(cudaspans.AsBytes(v))
	if m == nil || b.regsClosed.Load() {
		return nil, false
	}
	regs := &hostRegistry
	regs.mu.Lock()
	reg := regs.m[m]
	if reg == nil {
		reg = &hostReg{owner: b}
		// Refused: reg.r stays nil and the buffer is staged from now on.
		reg.r, _ = b.c.Register(ctx, m.Bytes())
		if !m.OnUnmap(func(ctx context.Context) { regs.drop(ctx, m, nil) }) {
			// Unmapped meanwhile (its owner freed it while we looked it up):
			// nothing may read it now.
			regs.mu.Unlock()
			if reg.r != nil {
				_ = b.c.Free(ctx, reg.r)
			}
			return nil, false
		}
		if regs.m == nil {
			regs.m = map[*buffer.Mmap]*hostReg{}
		}
		regs.m[m] = reg
	}
	reg.use.RLock()
	regs.mu.Unlock()
	if reg.r == nil {
		reg.use.RUnlock()
		return nil, false
	}
	return reg.use.RUnlock, true
}

// drop removes m's registration and unregisters it (a cuda.host_unregister
// span) once no copy holds it; with owner set, only a registration that
// owner made. It is m's OnUnmap function (owner nil), run by its Free
// before the munmap, and part of closeRegs.
func (regs *hostRegs) drop(ctx context.Context, m *buffer.Mmap, owner *Backend) error {
	regs.mu.Lock()
	reg := regs.m[m]
	if reg == nil || (owner != nil && reg.owner != owner) {
		regs.mu.Unlock()
		return nil // unregistered already, by its backend's Close
	}
	delete(regs.m, m)
	regs.mu.Unlock()
	reg.use.Lock()
	defer reg.use.Unlock()
	if reg.r == nil {
		return nil
	}
	return reg.owner.c.Free(ctx, reg.r)
}

// closeRegs unregisters the buffers b registered (after the copies that
// hold one, those of other backends included), before b's device context
// goes; the buffers' OnUnmap functions then find nothing to do, and
// another backend that copies from one registers it again.
func (b *Backend) closeRegs(ctx context.Context) error {
	b.regsClosed.Store(true)
	regs := &hostRegistry
	regs.mu.Lock()
	var mine []*buffer.Mmap
	for m, reg := range regs.m {
		if reg.owner == b {
			mine = append(mine, m)
		}
	}
	regs.mu.Unlock()
	var errs []error
	for _, m := range mine {
		errs = append(errs, regs.drop(ctx, m, b))
	}
	return errors.Join(errs...)
}

// registeredBytes returns the bytes of host memory b holds registered
// (not counting refused buffers) and the number of buffers.
func (b *Backend) registeredBytes() (bytes, buffers int) {
	regs := &hostRegistry
	regs.mu.Lock()
	defer regs.mu.Unlock()
	for _, reg := range regs.m {
		if reg.owner == b && reg.r != nil {
			bytes += reg.r.Size()
			buffers++
		}
	}
	return bytes, buffers
}

// registeredCopies returns ctx whose copies' cuda.memcpy.* spans say that
// they ran by direct DMA from a registered buffer (cuzk.host_copy
// registered) and name the vector (cuzk.buffer.name).
func registeredCopies(ctx context.Context, name string) context.Context {
	return cudaspans.WithCopyAttributes(ctx, semconv.KeyHostCopyMode.String(string(backend.HostCopyRegistered)),
		semconv.KeyBufferName.String(name))
}
