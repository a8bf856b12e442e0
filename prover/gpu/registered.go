package gpu

import (
	"context"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// hostRegs are the host buffers (buffer.Mmap) registered with the driver
// in the HostCopyRegistered mode: each is registered whole the first time
// a vector in it is copied, and stays registered until the buffer is
// unmapped (its OnUnmap function) or the backend closes, so a buffer that
// a pool-mode Releaser hands to the next proof is copied again by direct
// DMA with no registration.
type hostRegs struct {
	mu     sync.Mutex
	m      map[*buffer.Mmap]*hostReg
	closed bool
}

// hostReg is one buffer's registration. Copies that use it hold use for
// reading until the stream has finished them; the unregistration holds it
// for writing, so it never runs while a DMA may still read the buffer.
type hostReg struct {
	use sync.RWMutex
	// r is the registration; nil when the driver refused it (the buffer's
	// vectors are staged for its whole life, without asking again).
	r *cudaspans.Registered
}

// registered returns a function that releases the hold, and true, when v
// lies in a buffer.Mmap registered with the driver (registering it whole,
// as a cuda.host_register span, when the backend first sees it): v may
// then be copied by DMA from where it is until the release, which the
// caller makes after the stream has finished the copies. It returns false
// when v is not in an Mmap or the driver refused the buffer (the caller
// stages v). Called with b.mu.
func (b *Backend) registered(ctx context.Context, v []fr.Element) (func(), bool) {
	m := buffer.MmapHolding(cudaspans.AsBytes(v))
	if m == nil {
		return nil, false
	}
	b.regs.mu.Lock()
	if b.regs.closed {
		b.regs.mu.Unlock()
		return nil, false
	}
	reg := b.regs.m[m]
	if reg == nil {
		reg = &hostReg{}
		// Refused: reg.r stays nil and the buffer is staged from now on.
		reg.r, _ = b.c.Register(ctx, m.Bytes())
		if !m.OnUnmap(func(ctx context.Context) { b.unregister(ctx, m) }) {
			// Unmapped meanwhile (its owner freed it while we looked it up):
			// nothing may read it now.
			b.regs.mu.Unlock()
			if reg.r != nil {
				_ = b.c.Free(ctx, reg.r)
			}
			return nil, false
		}
		if b.regs.m == nil {
			b.regs.m = map[*buffer.Mmap]*hostReg{}
		}
		b.regs.m[m] = reg
	}
	reg.use.RLock()
	b.regs.mu.Unlock()
	if reg.r == nil {
		reg.use.RUnlock()
		return nil, false
	}
	return reg.use.RUnlock, true
}

// unregister drops m's registration (a cuda.host_unregister span) once no
// copy holds it: m's OnUnmap function, run by its Free before the munmap.
func (b *Backend) unregister(ctx context.Context, m *buffer.Mmap) {
	b.regs.mu.Lock()
	reg := b.regs.m[m]
	delete(b.regs.m, m)
	b.regs.mu.Unlock()
	if reg == nil {
		return // the backend closed first and unregistered it
	}
	reg.use.Lock()
	defer reg.use.Unlock()
	if reg.r != nil {
		_ = b.c.Free(ctx, reg.r)
	}
}

// closeRegs unregisters every buffer still registered (after the copies
// that hold one), before the device context goes; the buffers' OnUnmap
// functions then find nothing to do.
func (b *Backend) closeRegs(ctx context.Context) error {
	b.regs.mu.Lock()
	regs := b.regs.m
	b.regs.m, b.regs.closed = nil, true
	b.regs.mu.Unlock()
	var first error
	for _, reg := range regs {
		reg.use.Lock()
		if reg.r != nil {
			if err := b.c.Free(ctx, reg.r); err != nil && first == nil {
				first = err
			}
		}
		reg.use.Unlock()
	}
	return first
}

// registeredBytes returns the bytes of host memory the backend holds
// registered (not counting refused buffers) and the number of buffers.
func (b *Backend) registeredBytes() (bytes, buffers int) {
	b.regs.mu.Lock()
	defer b.regs.mu.Unlock()
	for _, reg := range b.regs.m {
		if reg.r != nil {
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
