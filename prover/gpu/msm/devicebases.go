package msm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// DeviceBases keeps proving-key base sets (BaseSet) in device
// memory across proofs, uploaded once per circuit: cuzk's hot tier of the
// SRS. Sets are found by BaseSet.ID, evicted explicitly (Evict) or, when
// the device or the budget is full, least recently used first. Beside its
// base sets, a proving key keeps the device buffers its proofs need
// (ProofBuffer: the compute_h vectors, the MSM workspace), in the same
// budget and evicted with it, so a warm proof allocates nothing. Device
// memory goes back through the Releaser, as buffer.release spans.
//
// All methods are safe for concurrent use. A set in use by an MSM is freed
// when that MSM ends.
type DeviceBases struct {
	c        *cudaspans.Context
	releaser *buffer.Releaser
	tracer   trace.Tracer
	budget   int64

	mu   sync.Mutex
	sets map[string]*ResidentBases
	bufs map[string]*proofBuffer // by keyID + ":" + name (proofbuffers.go)
	// bufEpoch counts explicit evictions of proof buffers, so an
	// allocation that overlaps one does not keep its buffer.
	bufEpoch uint64
	bytes    int64 // device bytes of sets loaded or loading and of proof buffers, until freed
	clock    uint64
}

// ResidentBases is one base set in device memory, gnark's G1Affine layout
// (96 bytes a point) or G2Affine layout (192 bytes a point), Montgomery
// form, infinity as (0, 0).
type ResidentBases struct {
	owner *DeviceBases
	id    string
	n     int
	g2    bool // G2Affine points

	ready chan struct{} // closed when the upload ended
	err   error         // the upload's error, set before ready closes

	loaned   // buf, users, evicted, lastUse guarded by owner.mu
	evictCtx context.Context
}

// loaned is a device buffer of bytes that DeviceBases lends (a resident
// set's bases, a proof buffer): lent to users at once, evicted when it is
// to be freed with its last loan, lastUse the owner's clock at the last
// lending. Guarded by the owner's mutex.
type loaned struct {
	buf     *cudaspans.DeviceBuffer
	bytes   int64
	users   int
	evicted bool
	lastUse uint64
}

// loan returns l, for code generic over the lenders (oldestIdle).
func (l *loaned) loan() *loaned { return l }

// endLoanLocked ends one loan. After the last loan of an evicted buffer it
// detaches the buffer, takes its bytes off *total and returns it to be
// freed (outside the lock); otherwise nil.
func (l *loaned) endLoanLocked(total *int64) *cudaspans.DeviceBuffer {
	l.users--
	if l.users != 0 || !l.evicted || l.buf == nil {
		return nil
	}
	buf := l.buf
	l.buf = nil
	*total -= l.bytes
	return buf
}

// DeviceBasesOption configures DeviceBases.
type DeviceBasesOption interface{ applyDeviceBases(*deviceBasesConfig) }

type deviceBasesConfig struct {
	sharedConfig
	budget int64
}

type baseBudgetOption int64

func (b baseBudgetOption) applyDeviceBases(c *deviceBasesConfig) { c.budget = int64(b) }

// WithBaseBudget caps the device bytes of resident sets (default 0: no cap
// but the device's memory).
func WithBaseBudget(bytes int64) DeviceBasesOption { return baseBudgetOption(bytes) }

// NewDeviceBases returns an empty store of resident base sets on c's device
// (options: WithTracerProvider, WithReleaser, WithBaseBudget). It allocates
// nothing; ctx is for the constructors' common shape. Errors: a negative
// budget.
func NewDeviceBases(ctx context.Context, c *cudaspans.Context, opts ...DeviceBasesOption) (*DeviceBases, error) {
	var cfg deviceBasesConfig
	for _, o := range opts {
		o.applyDeviceBases(&cfg)
	}
	if cfg.budget < 0 {
		return nil, fmt.Errorf("msm: negative budget %d", cfg.budget)
	}
	cfg.fillShared()
	return &DeviceBases{c: c, releaser: cfg.releaser, tracer: semconv.Tracer(cfg.tp),
		budget: cfg.budget, sets: map[string]*ResidentBases{}, bufs: map[string]*proofBuffer{}}, nil
}

// PreloadG1 makes set resident and returns it: the first call for an ID
// uploads the points on stream s (span keys.preload with
// cuzk.key.base_set, cuzk.buffer.bytes and cuzk.key.cache_hit), later
// calls return the resident copy without a copy. Concurrent calls for one
// ID upload once.
//
// Errors: an empty ID or point set, a resident set of the same ID with a
// different length or of the other group (G1/G2), ErrBaseBudget, and cudaspans.ErrOutOfMemory (wrapped)
// when the device has no room even after evicting every idle set.
func (k *DeviceBases) PreloadG1(ctx context.Context, s *cudaspans.Stream, set backend.BaseSet[curve.G1Affine]) (*ResidentBases, error) {
	return preloadSet(ctx, k, s, set, false)
}

// PreloadG2 is PreloadG1 for a set of G2 points (192 bytes each on the
// device). A G1 set and a G2 set may not share an ID.
func (k *DeviceBases) PreloadG2(ctx context.Context, s *cudaspans.Stream, set backend.BaseSet[curve.G2Affine]) (*ResidentBases, error) {
	return preloadSet(ctx, k, s, set, true)
}

func preloadSet[P any](ctx context.Context, k *DeviceBases, s *cudaspans.Stream, set backend.BaseSet[P], g2 bool) (rb *ResidentBases, err error) {
	if set.ID == "" {
		return nil, errors.New("msm: base set without an ID")
	}
	if len(set.Points) == 0 {
		return nil, fmt.Errorf("msm: base set %s has no points", set.ID)
	}
	ctx, span := k.tracer.Start(ctx, semconv.SpanKeysPreload, trace.WithAttributes(
		semconv.KeyBaseSetID.String(set.ID), semconv.KeyMSMSize.Int(len(set.Points))))
	defer func() {
		semconv.SetError(span, err)
		span.SetAttributes(semconv.KeyResidentBytes.Int64(k.Bytes()))
		span.End()
	}()

	bytes := int64(len(set.Points)) * int64(unsafe.Sizeof(set.Points[0]))
	k.mu.Lock()
	if rb, ok := k.sets[set.ID]; ok {
		k.clock++
		rb.lastUse = k.clock
		k.mu.Unlock()
		<-rb.ready
		span.SetAttributes(semconv.KeyKeyCacheHit.Bool(true))
		if rb.err != nil {
			return nil, rb.err
		}
		if rb.g2 != g2 {
			return nil, fmt.Errorf("msm: base set %s is resident as %s points, preload has %s points", set.ID, groupName(rb.g2), groupName(g2))
		}
		if rb.n != len(set.Points) {
			return nil, fmt.Errorf("msm: base set %s is resident with %d points, preload has %d", set.ID, rb.n, len(set.Points))
		}
		return rb, nil
	}
	span.SetAttributes(semconv.KeyKeyCacheHit.Bool(false), semconv.KeyBufferBytes.Int64(bytes))
	if k.budget > 0 {
		if bytes > k.budget {
			k.mu.Unlock()
			return nil, fmt.Errorf("msm: base set %s needs %d bytes, budget %d: %w", set.ID, bytes, k.budget, ErrBaseBudget)
		}
		for k.bytes+bytes > k.budget {
			if !k.evictOldestLocked(ctx, "") {
				k.mu.Unlock()
				return nil, fmt.Errorf("msm: base set %s needs %d bytes, %d of budget %d in use: %w",
					set.ID, bytes, k.bytes, k.budget, ErrBaseBudget)
			}
		}
	}
	rb = &ResidentBases{owner: k, id: set.ID, n: len(set.Points), g2: g2, loaned: loaned{bytes: bytes}, ready: make(chan struct{})}
	k.clock++
	rb.lastUse = k.clock
	rb.users = 1 // the upload
	k.sets[set.ID] = rb
	k.bytes += bytes
	k.mu.Unlock()

	buf, err := upload(ctx, k, s, set)
	k.mu.Lock()
	rb.users--
	var orphan *cudaspans.DeviceBuffer
	switch {
	case err != nil:
		if k.sets[set.ID] == rb {
			delete(k.sets, set.ID)
		}
		k.bytes -= bytes
	case rb.evicted: // Evict ran during the upload
		orphan = buf
		k.bytes -= bytes
		err = fmt.Errorf("msm: base set %s: %w during its upload", set.ID, ErrBaseSetEvicted)
	default:
		rb.buf = buf
	}
	rb.err = err
	k.mu.Unlock()
	close(rb.ready)
	if orphan != nil {
		if rerr := k.releaser.Release(ctx, "keys."+set.ID, orphan); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if err != nil {
		return nil, err
	}
	return rb, nil
}

// upload allocates the set's device memory, evicting idle sets while the
// device is out of memory, and copies the points.
func upload[P any](ctx context.Context, k *DeviceBases, s *cudaspans.Stream, set backend.BaseSet[P]) (*cudaspans.DeviceBuffer, error) {
	bytes := len(set.Points) * int(unsafe.Sizeof(set.Points[0]))
	var buf *cudaspans.DeviceBuffer
	for {
		var err error
		buf, err = k.c.Alloc(ctx, bytes)
		if err == nil {
			break
		}
		if !errors.Is(err, cudaspans.ErrOutOfMemory) {
			return nil, fmt.Errorf("msm: base set %s: %w", set.ID, err)
		}
		k.mu.Lock()
		evicted := k.evictOldestLocked(ctx, "")
		k.mu.Unlock()
		if !evicted {
			return nil, fmt.Errorf("msm: base set %s (%d points, %d bytes) does not fit in device memory: %w",
				set.ID, len(set.Points), bytes, err)
		}
	}
	if err := cudaspans.HtoD(ctx, s, buf.Ptr(), set.Points); err != nil {
		_ = k.releaser.Release(ctx, "keys."+set.ID, buf)
		return nil, fmt.Errorf("msm: upload base set %s: %w", set.ID, err)
	}
	if err := s.Synchronize(ctx); err != nil {
		_ = k.releaser.Release(ctx, "keys."+set.ID, buf)
		return nil, fmt.Errorf("msm: upload base set %s: %w", set.ID, err)
	}
	return buf, nil
}

// evictOldestLocked evicts the least recently used set or proof buffer
// that is loaded and idle and whose ID does not start with spare (""
// spares none); false when there is none. k.mu is held.
func (k *DeviceBases) evictOldestLocked(ctx context.Context, spare string) bool {
	spared := func(id string) bool { return spare != "" && strings.HasPrefix(id, spare) }
	oldest, haveSet := oldestIdle(k.sets, spared)
	oldestBuf, haveBuf := oldestIdle(k.bufs, spared)
	if haveBuf && (!haveSet || oldestBuf.lastUse < oldest.lastUse) {
		// As below: freed under k.mu, the caller needs the memory back.
		_ = k.releaser.Release(ctx, oldestBuf.id, k.evictBufferLocked(oldestBuf))
		return true
	}
	if !haveSet {
		return false
	}
	delete(k.sets, oldest.id)
	oldest.evicted = true
	buf := oldest.buf
	oldest.buf = nil
	k.bytes -= oldest.bytes
	// Free without k.mu would be nicer, but the caller needs the memory
	// back before it retries; an idle set has no user to wait for.
	_ = k.releaser.Release(ctx, "keys."+oldest.id, buf)
	return true
}

// oldestIdle returns the least recently used entry of m (resident sets or
// proof buffers) whose buffer is loaded and idle (no users) and whose ID
// is not spared; false when there is none. The owner's mutex is held.
func oldestIdle[V interface {
	comparable
	ID() string
	loan() *loaned
}](m map[string]V, spared func(id string) bool) (oldest V, ok bool) {
	var best *loaned
	for _, v := range m {
		l := v.loan()
		if l.buf == nil || l.users > 0 || spared(v.ID()) {
			continue
		}
		if best == nil || l.lastUse < best.lastUse {
			oldest, best = v, l
		}
	}
	return oldest, best != nil
}

// Get returns the resident set id, if loaded, and marks it used.
func (k *DeviceBases) Get(id string) (*ResidentBases, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	rb, ok := k.sets[id]
	if !ok || rb.buf == nil {
		return nil, false
	}
	k.clock++
	rb.lastUse = k.clock
	return rb, true
}

// Evict removes set id from the device: its memory is released now
// (buffer.release span, a child of the span in ctx), or when the MSMs
// using it end. It reports whether the set was resident.
func (k *DeviceBases) Evict(ctx context.Context, id string) (bool, error) {
	k.mu.Lock()
	rb, ok := k.sets[id]
	if !ok {
		k.mu.Unlock()
		return false, nil
	}
	delete(k.sets, id)
	rb.evicted = true
	if rb.users > 0 || rb.buf == nil {
		// In use (or still uploading): the last user frees it.
		rb.evictCtx = context.WithoutCancel(ctx)
		k.mu.Unlock()
		return true, nil
	}
	buf := rb.buf
	rb.buf = nil
	k.bytes -= rb.bytes
	k.mu.Unlock()
	return true, k.releaser.Release(ctx, "keys."+id, buf)
}

// EvictKeySets evicts the base sets of one proving key: those whose ID is
// keyID + ":" + part (BaseSet's naming, e.g. "3f2a…:g1.a"), and
// its proof buffers (ProofBuffer; freed now, or when their loan ends). It
// returns how many sets were resident and the joined errors of Evict.
func (k *DeviceBases) EvictKeySets(ctx context.Context, keyID string) (int, error) {
	errs := []error{k.evictBuffers(ctx, keyID+":")}
	n := 0
	for _, id := range k.IDs() {
		if !strings.HasPrefix(id, keyID+":") {
			continue
		}
		ok, err := k.Evict(ctx, id)
		if ok {
			n++
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}

// EvictAll evicts every set (Evict for each) and every proof buffer, and
// returns the joined errors.
func (k *DeviceBases) EvictAll(ctx context.Context) error {
	errs := []error{k.evictBuffers(ctx, "")}
	for _, id := range k.IDs() {
		if _, err := k.Evict(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Bytes returns the device memory held by resident sets (loaded, loading,
// or evicted but still in use) and by proof buffers, in bytes.
func (k *DeviceBases) Bytes() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.bytes
}

// IDs returns the IDs of the resident sets, sorted.
func (k *DeviceBases) IDs() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Sorted(maps.Keys(k.sets))
}

// ID returns the set's BaseSet.ID.
func (b *ResidentBases) ID() string { return b.id }

// Len returns the number of points.
func (b *ResidentBases) Len() int { return b.n }

// Bytes returns the device bytes the points take (96 a G1 point, 192 a G2
// point).
func (b *ResidentBases) Bytes() int64 { return b.bytes }

// G2 reports whether the set holds G2 points (PreloadG2).
func (b *ResidentBases) G2() bool { return b.g2 }

func groupName(g2 bool) string {
	if g2 {
		return "G2"
	}
	return "G1"
}

// acquire pins the set for one MSM and returns its device address and the
// function that unpins it (and frees the set if it was evicted meanwhile).
func (b *ResidentBases) acquire() (cudaspans.DevicePtr, func(), error) {
	<-b.ready
	if b.err != nil {
		return 0, nil, b.err
	}
	k := b.owner
	k.mu.Lock()
	defer k.mu.Unlock()
	if b.evicted || b.buf == nil {
		return 0, nil, fmt.Errorf("msm: base set %s: %w", b.id, ErrBaseSetEvicted)
	}
	b.users++
	k.clock++
	b.lastUse = k.clock
	ptr := b.buf.Ptr()
	return ptr, func() {
		k.mu.Lock()
		buf := b.endLoanLocked(&k.bytes)
		ctx := b.evictCtx
		k.mu.Unlock()
		if buf != nil {
			if ctx == nil {
				ctx = context.Background()
			}
			_ = k.releaser.Release(ctx, "keys."+b.id, buf)
		}
	}, nil
}
