package gpu

import (
	"context"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/parallel"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// StageChunk is the size of each of the two pinned staging buffers of
// HostCopyStaged, in bytes.
const StageChunk = 32 << 20

// frBytes is the size of an fr.Element on the host and of fr_t on the device.
const frBytes = 32

// minPinnedCopy is the smallest vector (bytes) worth staging or pinning;
// smaller ones go pageable, and small Go heap slices may share pages with
// other objects, which cuMemHostRegister refuses.
const minPinnedCopy = 1 << 20

// pin registers v with the driver (HostCopyRegister) and returns the
// function that releases the registration through the Releaser. When the
// driver refuses, v stays pageable: the copy is slower, not wrong.
func (b *Backend) pin(ctx context.Context, name string, v []fr.Element) func() {
	if len(v)*frBytes < minPinnedCopy {
		return func() {}
	}
	r, err := b.c.Register(ctx, cudaspans.AsBytes(v))
	if err != nil {
		return func() {}
	}
	return func() {
		// Unpinned now in every mode: an async or pooled registration
		// would outlive the mmap it pins (the prover unmaps b and c right
		// after ComputeH) and block pinning a again for the H MSM.
		if b.releaser.Mode() == buffer.ReleaseSync {
			_ = b.releaser.Release(ctx, name, r)
			return
		}
		_ = b.c.Free(ctx, r)
	}
}

// stageBuffers returns the two pinned staging buffers, allocating them on
// first use. Called with b.mu.
func (b *Backend) stageBuffers(ctx context.Context) ([2]*cudaspans.PinnedBuffer, error) {
	for i := range b.stage {
		if b.stage[i] == nil {
			p, err := b.c.AllocPinned(ctx, StageChunk)
			if err != nil {
				return b.stage, fmt.Errorf("staging buffer: %w", err)
			}
			b.stage[i] = p
		}
	}
	return b.stage, nil
}

// The directions of a vector copy, as the cuda.direction attribute of its
// cuda.host_stage span.
const (
	dirHtoD = "htod"
	dirDtoH = "dtoh"
)

// copyVector copies v to the device at dev (dir dirHtoD) or from dev into
// v (dirDtoH). Unstaged it is one cudaspans copy (in HostCopyRegistered,
// from the registered buffer v lies in, its span marked as such:
// registeredCopies); staged
// (HostCopyStaged) it runs through the two pinned staging buffers
// (stagedUpload, stagedDownload) as one cuda.host_stage span with the
// chunks' copies as children.
func (b *Backend) copyVector(ctx context.Context, mode backend.HostCopy, name, dir string, dev cudaspans.DevicePtr, v []fr.Element) (err error) {
	if mode == backend.HostCopyRegistered {
		ctx = registeredCopies(ctx, name)
	}
	if mode != backend.HostCopyStaged {
		if dir == dirHtoD {
			return cudaspans.HtoD(ctx, b.s, dev, v)
		}
		return cudaspans.DtoH(ctx, b.s, v, dev)
	}
	st, err := b.stageBuffers(ctx)
	if err != nil {
		return err
	}
	host := cudaspans.AsBytes(v)
	ctx, span := b.stageSpan(ctx, name, dir, len(host))
	defer func() { b.endSpan(ctx, span, err) }()
	if dir == dirHtoD {
		return b.stagedUpload(ctx, st, dev, host)
	}
	return b.stagedDownload(ctx, st, host, dev)
}

// stagedUpload copies src to dst: chunk i is copied by the CPU into
// staging buffer i%2 while the DMA of chunk i−1 runs; the stream is
// synchronized before a buffer is reused, so a chunk is never overwritten
// in flight.
func (b *Backend) stagedUpload(ctx context.Context, st [2]*cudaspans.PinnedBuffer, dst cudaspans.DevicePtr, src []byte) error {
	for i, off := 0, 0; off < len(src); i, off = i+1, off+StageChunk {
		k := min(StageChunk, len(src)-off)
		buf := st[i%2]
		parallelCopy(buf.Bytes()[:k], src[off:off+k])
		if i > 0 {
			// The DMA of chunk i−1 must end before its buffer is refilled
			// at step i+1.
			if err := b.s.Synchronize(ctx); err != nil {
				return err
			}
		}
		if err := b.s.CopyHtoD(ctx, dst+cudaspans.DevicePtr(off), buf.Ptr(), k); err != nil {
			return err
		}
	}
	return b.s.Synchronize(ctx)
}

// stagedDownload copies from src into dst: the DMA of chunk i+1 runs
// while the CPU copies chunk i out of its staging buffer.
func (b *Backend) stagedDownload(ctx context.Context, st [2]*cudaspans.PinnedBuffer, dst []byte, src cudaspans.DevicePtr) error {
	chunks := (len(dst) + StageChunk - 1) / StageChunk
	issue := func(i int) error {
		off := i * StageChunk
		return b.s.CopyDtoH(ctx, st[i%2].Ptr(), src+cudaspans.DevicePtr(off), min(StageChunk, len(dst)-off))
	}
	if err := issue(0); err != nil {
		return err
	}
	for i := 0; i < chunks; i++ {
		if err := b.s.Synchronize(ctx); err != nil {
			return err
		}
		if i+1 < chunks {
			if err := issue(i + 1); err != nil {
				return err
			}
		}
		off := i * StageChunk
		k := min(StageChunk, len(dst)-off)
		parallelCopy(dst[off:off+k], st[i%2].Bytes()[:k])
	}
	return nil
}

func (b *Backend) stageSpan(ctx context.Context, name, dir string, bytes int) (context.Context, trace.Span) {
	return b.tracer.Start(ctx, semconv.SpanHostStage, trace.WithAttributes(
		semconv.KeyBufferName.String(name), semconv.KeyCUDABytes.Int(bytes),
		semconv.KeyHostCopyMode.String(string(backend.HostCopyStaged)), attribute.String("cuda.direction", dir)))
}

// endSpan ends a staging span; after an error it first waits for the
// stream, so no copy still reads or writes a staging buffer that the next
// transfer refills.
func (b *Backend) endSpan(ctx context.Context, span trace.Span, err error) {
	if err != nil {
		_ = b.s.Synchronize(ctx)
	}
	semconv.SetError(span, err)
	span.End()
}

// parallelCopy copies src into dst (equal lengths) in up to 8 pieces of
// at least 2 MiB, side by side (parallel.For): one core copies about
// 10 GB/s, below the link's DMA rate.
func parallelCopy(dst, src []byte) {
	const minPiece = 2 << 20
	p := min(runtime.GOMAXPROCS(0), 8, max(1, len(src)/minPiece))
	piece := ((len(src)+p-1)/p + 63) &^ 63
	parallel.For(p, func(i int) {
		off := min(i*piece, len(src))
		end := min(off+piece, len(src))
		copy(dst[off:end], src[off:end])
	})
}

// minStaged is the smallest vector (bytes) copied through pinned memory:
// minPinnedCopy, or stagedFrom when a test lowers it to reach the staged
// copies with small circuits.
func (b *Backend) minStaged() int {
	if b.stagedFrom > 0 {
		return b.stagedFrom
	}
	return minPinnedCopy
}

// stagedScalars copies scalars into the pinned scratch buffer of the
// proof's key (keyID: grown to the key's largest MSM, kept
// for its next proof, freed with the key) and returns the pinned copy,
// which the MSM uploads by DMA. On a failed allocation the buffer kept
// stays. Called with b.mu.
func (b *Backend) stagedScalars(ctx context.Context, keyID string, scalars []fr.Element) (out []fr.Element, err error) {
	size := len(scalars) * frBytes
	sc, err := b.scratchFor(ctx, keyID, size)
	if err != nil {
		return nil, err
	}
	_, span := b.stageSpan(ctx, "msm.scalars", "host", size)
	parallelCopy(sc.Bytes()[:size], cudaspans.AsBytes(scalars))
	span.End()
	return unsafe.Slice((*fr.Element)(sc.Ptr()), len(scalars)), nil
}

// scratchFor returns key's pinned scalar buffer (b.scratch), grown to at
// least size bytes: a smaller one is released once its replacement is
// had. On a failed allocation the buffer kept stays. Called with b.mu.
func (b *Backend) scratchFor(ctx context.Context, key string, size int) (*cudaspans.PinnedBuffer, error) {
	sc := b.scratch[key]
	if sc != nil && sc.Size() >= size {
		return sc, nil
	}
	p, err := b.c.AllocPinned(ctx, size)
	if err != nil {
		return nil, fmt.Errorf("pinned scalars: %w", err)
	}
	if sc != nil {
		b.release(ctx, "msm.scalars", sc)
	}
	if b.scratch == nil {
		b.scratch = map[string]*cudaspans.PinnedBuffer{}
	}
	b.scratch[key] = p
	return p, nil
}

// vector returns ComputeH's device vector name of bytes and the function
// that gives it back: for a proof with a key ID (keyID not "") the
// key's proof buffer "compute_h."+name, kept for the next proof of the key
// and counted with its resident bases (msm.DeviceBases.ProofBuffer), so a
// warm proof allocates nothing; else a fresh allocation released (a
// buffer.release span) when given back.
func (b *Backend) vector(ctx context.Context, keyID, name string, bytes int) (*cudaspans.DeviceBuffer, func(), error) {
	if keyID != "" {
		return b.bases.ProofBuffer(ctx, keyID, "compute_h."+name, bytes)
	}
	buf, err := b.c.Alloc(ctx, bytes)
	if err != nil {
		return nil, nil, err
	}
	return buf, func() { b.release(ctx, name, buf) }, nil
}

func (b *Backend) release(ctx context.Context, name string, buf buffer.Buffer) {
	_ = b.releaser.Release(ctx, name, buf)
}
