package msm

import (
	"context"
	"errors"
	"fmt"
	"sync"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/gpu/kernels"
)

// batchAddThreads is the most threads one level of the batch addition
// launches: about what an H200's 132 SMs hold of a kernel of Fp
// arithmetic, so a larger level gives each thread more pairs (one
// inversion each) instead of more threads.
const batchAddThreads = 1 << 16

// batchAddHostPoints is the point count at which the levels stop: the
// last points are added on the host, where a few hundred mixed additions
// take less than a level's launch and inversion.
const batchAddHostPoints = 256

// batchAddBlock is batchadd.cu's __launch_bounds__.
const batchAddBlock = 128

// BatchAdd sums subsets of resident base sets on the GPU with
// kernels/batchadd.cu: the sum of the bases of the wires whose value is 1,
// by a tree of pairwise affine additions that share one inversion per
// thread and level (Montgomery's trick). Its methods serialise on a mutex;
// it is safe for concurrent use.
type BatchAdd struct {
	c        *cudaspans.Context
	releaser *buffer.Releaser
	tracer   trace.Tracer

	mu     sync.Mutex
	closed bool
	mods   [2]*cudaspans.Module
	level  [2]*cudaspans.Function // G1, G2
}

// BatchAddModule returns the compile of batchadd.cu for G1 (kernel
// batch_add_level) or G2 (batch_add_level_g2, with BATCH_G2), with extra's
// NVRTC options added.
func BatchAddModule(g2 bool, extra cudaspans.CompileOptions) kernels.Module {
	o := msmCompileOptions(false, extra)
	o.Headers["batchadd.cuh"] = kernels.BatchAddHeader
	m := kernels.Module{Name: "batch_add", Source: kernels.BatchAdd, Opts: o, Kernels: []string{"batch_add_level"}}
	if g2 {
		o.Defines["BATCH_G2"] = ""
		m.Name, m.Kernels = "batch_add_g2", []string{"batch_add_level_g2"}
	}
	return m
}

// NewBatchAdd compiles batchadd.cu for G1 and G2 on c (NVRTC, cached on
// disk by cudaspans; the two in parallel). Options read: WithTracerProvider,
// WithReleaser, WithCompileOptions. Errors: compile errors, a bad option.
func NewBatchAdd(ctx context.Context, c *cudaspans.Context, opts ...Option) (*BatchAdd, error) {
	cfg, err := newMSMConfig(opts)
	if err != nil {
		return nil, err
	}
	b := &BatchAdd{c: c, releaser: cfg.releaser, tracer: semconv.Tracer(cfg.tp)}
	jobs := make([]func() error, 2)
	for g := range 2 {
		jobs[g] = func() error {
			mod, fs, err := BatchAddModule(g == 1, cfg.compile).Compile(ctx, c)
			if err != nil {
				return fmt.Errorf("msm: batch add: %w", err)
			}
			b.mods[g], b.level[g] = mod, fs[0]
			return nil
		}
	}
	if err := kernels.Parallel(jobs...); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Close unloads the kernels; the BatchAdd must not be used afterwards.
func (b *BatchAdd) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	var errs []error
	for g, m := range b.mods {
		if m != nil {
			errs = append(errs, m.Close())
		}
		b.mods[g], b.level[g] = nil, nil
	}
	return errors.Join(errs...)
}

// G1Resident returns Σ set.Points[idx[i]] over i on stream s, the bases
// read from resident (uploaded there first when needed, as
// MSM.G1Resident does); a set without an ID is gathered on the host and
// uploaded for this call. call.Span, when not empty, is the span to record
// (msm.g1.a.batch_add, ...) with cuzk.msm.size = len(idx),
// call.Attributes and the copies and kernels as children. With a
// call.KeyID the device workspace (4 bytes an index and 3/4 of a point per
// index) is the key's proof buffer batch_add.workspace, kept for the next
// proof; else it is allocated and released here.
//
// Errors: an index out of range, an evicted set, out of device memory
// (wrapping cudaspans.ErrOutOfMemory), driver errors naming the operation.
func (b *BatchAdd) G1Resident(ctx context.Context, call backend.Call, s *cudaspans.Stream, resident *DeviceBases,
	set backend.BaseSet[curve.G1Affine], idx []uint32) (curve.G1Jac, error) {
	return batchAdd[curve.G1Affine, curve.G1Jac](b, ctx, call, s, false, resident, set, idx)
}

// G2Resident is G1Resident on G2 (msm.g2.b.batch_add).
func (b *BatchAdd) G2Resident(ctx context.Context, call backend.Call, s *cudaspans.Stream, resident *DeviceBases,
	set backend.BaseSet[curve.G2Affine], idx []uint32) (curve.G2Jac, error) {
	return batchAdd[curve.G2Affine, curve.G2Jac](b, ctx, call, s, true, resident, set, idx)
}

// affineJac is what batchAdd needs of gnark's Jacobian types.
type affineJac[A, J any] interface {
	*J
	AddMixed(*A) *J
	FromAffine(*A) *J
}

func batchAdd[A any, J any, PJ affineJac[A, J]](b *BatchAdd, ctx context.Context, call backend.Call, s *cudaspans.Stream, g2 bool,
	resident *DeviceBases, set backend.BaseSet[A], idx []uint32) (res J, err error) {
	var zero A
	PJ(&res).FromAffine(&zero) // infinity
	ctx, end := startCall(ctx, b.tracer, call, len(idx), semconv.KeyBaseSetID.String(set.ID))
	defer func() { end(err) }()
	for _, i := range idx {
		if int(i) >= len(set.Points) {
			return res, fmt.Errorf("msm: batch add: wire index %d of %d bases", i, len(set.Points))
		}
	}
	if len(idx) <= batchAddHostPoints {
		for _, i := range idx {
			PJ(&res).AddMixed(&set.Points[i])
		}
		return res, nil
	}
	if s == nil {
		return res, errors.New("msm: batch add: nil stream")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	g := 0
	if g2 {
		g = 1
	}
	if b.closed || b.level[g] == nil {
		return res, errors.New("msm: batch add: closed")
	}
	var basesPtr cudaspans.DevicePtr
	gather := set.ID == "" || resident == nil
	if !gather {
		for attempt := 0; ; attempt++ {
			rb, err := preloadSet(ctx, resident, s, set, g2)
			if err != nil {
				return res, err
			}
			ptr, release, err := rb.acquire()
			if errors.Is(err, ErrBaseSetEvicted) && attempt == 0 {
				continue
			}
			if err != nil {
				return res, err
			}
			defer release()
			basesPtr = ptr
			break
		}
	}
	aff := msmAffineBytes
	if g2 {
		aff = msmAffine2Bytes
	}
	k := len(idx)
	offA := msmAlign256(k * 4)
	offB := offA + msmAlign256((k+1)/2*aff)
	bytes := offB + msmAlign256((k+3)/4*aff)
	offG := bytes
	if gather {
		bytes += k * aff
	}
	var ws *cudaspans.DeviceBuffer
	if call.KeyID != "" && resident != nil {
		buf, done, err := resident.ProofBuffer(ctx, call.KeyID, "batch_add.workspace", bytes)
		if err != nil {
			return res, fmt.Errorf("msm: batch add of %d points: workspace of %d bytes: %w", k, bytes, err)
		}
		defer done()
		ws = buf
	} else {
		buf, err := b.c.Alloc(ctx, bytes)
		if err != nil {
			return res, fmt.Errorf("msm: batch add of %d points: workspace of %d bytes: %w", k, bytes, err)
		}
		defer func() {
			if rerr := b.releaser.Release(ctx, "batch_add.workspace", buf); rerr != nil && err == nil {
				err = rerr
			}
		}()
		ws = buf
	}
	at := func(off int) cudaspans.DevicePtr { return ws.Ptr() + cudaspans.DevicePtr(off) }
	in, ix := basesPtr, at(0)
	if gather {
		pts := make([]A, k)
		for j, i := range idx {
			pts[j] = set.Points[i]
		}
		if err := cudaspans.HtoD(ctx, s, at(offG), pts); err != nil {
			return res, fmt.Errorf("msm: batch add: copy bases: %w", err)
		}
		in, ix = at(offG), 0
	} else if err := cudaspans.HtoD(ctx, s, ix, idx); err != nil {
		return res, fmt.Errorf("msm: batch add: copy indexes: %w", err)
	}
	m, dst, other := k, at(offA), at(offB)
	for m > batchAddHostPoints {
		nout := (m + 1) / 2
		per := (nout + batchAddThreads - 1) / batchAddThreads
		threads := (nout + per - 1) / per
		blocks := (threads + batchAddBlock - 1) / batchAddBlock
		if err := s.Launch(ctx, b.level[g], cudaspans.D1(blocks), cudaspans.D1(batchAddBlock), 0,
			in, ix, int64(m), dst); err != nil {
			return res, fmt.Errorf("msm: batch add: %w", err)
		}
		in, ix, m = dst, 0, nout
		dst, other = other, dst
	}
	last := make([]A, m)
	if err := cudaspans.DtoH(ctx, s, last, in); err != nil {
		return res, fmt.Errorf("msm: batch add: copy sums: %w", err)
	}
	if err := s.Synchronize(ctx); err != nil {
		return res, fmt.Errorf("msm: batch add: %w", err)
	}
	for i := range last {
		PJ(&res).AddMixed(&last[i])
	}
	return res, nil
}
