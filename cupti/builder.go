package cupti

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Attributes of CUPTI spans beside those cudaspans uses (semconv.KeyCUDA*).
const (
	KeyCUPTIMS          = attribute.Key("cuda.cupti_ms")             // float, duration by CUPTI's activity record, ms
	KeyCorrelationID    = attribute.Key("cuda.correlation_id")       // int, CUPTI correlation id of the launching API call
	KeyClockOffsetNS    = attribute.Key("cuda.clock.offset_ns")      // int, wall − CUPTI clock, ns, by calibration
	KeyClockUncertainNS = attribute.Key("cuda.clock.uncertainty_ns") // int, ± ns of that offset
	KeyStaticShared     = attribute.Key("cuda.static_shared_bytes")  // int, static shared memory per block
	KeyRegisters        = attribute.Key("cuda.registers_per_thread") // int
	KeyCopyKind         = attribute.Key("cuda.memcpy.kind")          // string: htod, dtoh, dtod, htoh, ptop, ...
	KeySyncType         = attribute.Key("cuda.sync.type")            // string: event, stream_wait_event, stream, context
	KeyWindowRecords    = attribute.Key("cupti.window.records")      // int, records under a device window span
	KeyNVTXDomain       = attribute.Key("nvtx.domain")               // string, "" for the default domain
	KeyNVTXCategory     = attribute.Key("nvtx.category")             // int
	KeyNVTXColor        = attribute.Key("nvtx.color")                // int, ARGB
	KeyNVTXPayload      = attribute.Key("nvtx.payload")              // int or float, by the payload's type
	KeyNVTXKind         = attribute.Key("nvtx.kind")                 // string: push (push/pop) or start (start/end)
	KeyNVTXUnclosed     = attribute.Key("nvtx.unclosed")             // bool, still open when the capture ended
	KeyThreadID         = attribute.Key("thread.id")                 // int, OS thread (semantic conventions)
	KeyIdleGaps         = attribute.Key("cuda.idle.gaps")            // int, gaps between GPU work in a device window
)

// Span names.
const (
	SpanWindow  = "cuda.device.window" // records of one device with no parent, one bounded window
	SpanSync    = "cuda.synchronize"
	SpanNVTX    = "nvtx.range"  // an NVTX range with an empty message
	SpanMemcpy  = "cuda.memcpy" // copies of kinds other than htod/dtoh/dtod
	SpanUnknown = "cuda.kernel" // a kernel record without a name
	SpanIdle    = "cuda.idle"   // a gap in a device window where no record of the device ran
)

// builderConfig is what a builder needs from its owner.
type builderConfig struct {
	tracer        trace.Tracer
	maxPerParent  int           // aggregation threshold per parent span
	window        time.Duration // length of a device window
	root          context.Context
	goParent      func(id uint64) (context.Context, bool) // nil outside a Go process
	log           func(string)                            // one line; each distinct line once
	keepCudaspans bool                                    // keep CUPTI durations for cudaspans' hook
	// holdBatches is how many batches a record with no external
	// correlation record yet waits for one before it is emitted as
	// unmarked work (0 means 1); correlation records wait one more. More
	// than 1 without the forced flush (the default), whose buffers come
	// apart: else a cudaspans kernel whose correlation record came later
	// would be traced twice.
	holdBatches int
	now         func() time.Time
	// job, when set, finds the span of a job (another process's, by
	// its published time window and device) that a record with no
	// parent of its own ran inside: wall-clock start and end, device.
	job func(device int, start, end time.Time) (context.Context, bool)
}

// builder turns decoded frames into spans. Not safe for concurrent use:
// its owner serializes batches.
type builder struct {
	cfg   builderConfig
	clock clockMap

	ext     map[uint32]*extIDs // CUPTI correlation id -> external ids
	held    []any              // records waiting for their external ids
	heldGen []int              // the batch each of held arrived in
	ranges  map[rangeKey]*openRange
	closed  map[uint64]trace.SpanContext // ended push ranges, for late kernels
	closedQ []uint64
	windows map[int]*window
	counts  map[trace.SpanID]int
	cs      map[uint64]csDur // cudaspans launch id -> CUPTI duration
	logged  map[string]bool
	lastTS  uint64
	gen     int

	stats Stats
}

// Stats counts what a capture saw.
type Stats struct {
	Kernels, Memcpys, Memsets, Syncs int    // records turned into spans (or folded)
	Deduplicated                     int    // kernels, copies and memsets cudaspans already traced
	Aggregated                       int    // records folded into aggregate spans
	Ranges                           int    // NVTX ranges
	UnbalancedPops                   int    // nvtxRangePop/End with nothing open
	UnclosedRanges                   int    // ranges still open at the end
	Dropped                          uint64 // records lost, both reasons
	DroppedByReader                  uint64 // of them, frames our queue had no room for (the reader fell behind); the rest CUPTI's buffers
	Windows                          int
	Idle                             int // cuda.idle spans (gaps in device windows)
	Jobs                             int // records parented by a published job's window
	Spans                            int // spans made, of every kind
	// cudaspans' kernel spans (not folded) ended with cuda.cupti_ms, and
	// without it (no record by the end of their wait, by default; by
	// their Synchronize with WithForcedFlush), and held for it now: zero
	// with WithoutCudaspansDurations.
	CudaspansWithCUPTI, CudaspansWithoutCUPTI, CudaspansWaiting int
}

type extIDs struct {
	parent, rng, cs uint64
	gen             int // batch it arrived in
}

type rangeKey struct {
	id       uint64
	startEnd bool
}

type openRange struct {
	ctx  context.Context
	span trace.Span
}

type window struct {
	device  int
	ctx     context.Context
	span    trace.Span
	first   uint64 // CUPTI ns of the first record
	lastEnd uint64
	records int
	busy    []busySpan // [start, end) of every record, CUPTI ns
}

type busySpan struct{ start, end uint64 }

type csDur struct {
	ms   float64
	corr uint32
}

func newBuilder(cfg builderConfig) *builder {
	if cfg.root == nil {
		cfg.root = context.Background()
	}
	if cfg.window <= 0 {
		cfg.window = DefaultWindow
	}
	if cfg.log == nil {
		cfg.log = func(string) {}
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	return &builder{
		cfg:     cfg,
		ext:     map[uint32]*extIDs{},
		ranges:  map[rangeKey]*openRange{},
		closed:  map[uint64]trace.SpanContext{},
		windows: map[int]*window{},
		counts:  map[trace.SpanID]int{},
		cs:      map[uint64]csDur{},
		logged:  map[string]bool{},
	}
}

func (b *builder) logOnce(msg string) {
	if !b.logged[msg] {
		b.logged[msg] = true
		b.cfg.log(msg)
	}
}

// batch processes the events of one drain. Records whose external ids
// have not been seen wait for the next batch (CUPTI may deliver the
// correlation record in a later buffer); final emits everything.
func (b *builder) batch(events []any, final bool) {
	b.gen++
	var recs []any
	for _, ev := range events {
		switch e := ev.(type) {
		case []calibSample:
			if c, ok := calibrate(e); ok {
				b.clock.add(c)
			}
		case extCorrRecord:
			x := b.ext[e.corr]
			if x == nil {
				x = &extIDs{gen: b.gen}
				b.ext[e.corr] = x
			}
			switch e.kind {
			case extParent:
				x.parent = e.id
			case extRange:
				x.rng = e.id
			case extCudaspans:
				x.cs = e.id
			}
		case nvtxPush:
			b.push(e)
		case nvtxPop:
			b.pop(e)
		case dropped:
			b.stats.Dropped += e.count
			why := "CUPTI's activity buffers were full"
			if e.reason == 1 {
				why = "the reader fell behind"
				b.stats.DroppedByReader += e.count
			}
			b.logOnce(fmt.Sprintf("cupti: records dropped (%s); the trace misses some GPU work", why))
		case note:
			b.logOnce("cupti: " + string(e))
		case kernelRecord, memcpyRecord, memsetRecord, syncRecord:
			recs = append(recs, e)
		}
	}
	if !b.clock.ready() && !final {
		// No calibration yet: keep everything for the next batch.
		b.held = append(b.held, recs...)
		for range recs {
			b.heldGen = append(b.heldGen, b.gen)
		}
		return
	}
	all := append(b.held, recs...)
	gens := b.heldGen
	for range recs {
		gens = append(gens, b.gen)
	}
	b.held, b.heldGen = nil, nil
	hold := max(b.cfg.holdBatches, 1)
	aggs := map[aggKey]*aggregate{}
	var order []aggKey
	for i, r := range all {
		corr := recordCorr(r)
		x := b.ext[corr]
		if x == nil && !final && b.gen-gens[i] < hold {
			b.held = append(b.held, r)
			b.heldGen = append(b.heldGen, gens[i])
			continue
		}
		if x != nil {
			delete(b.ext, corr)
		} else {
			x = &extIDs{}
		}
		b.emitRecord(r, x, aggs, &order)
	}
	for _, k := range order {
		b.emitAggregate(aggs[k])
	}
	b.closeWindows(final)
	b.prune()
}

func recordCorr(r any) uint32 {
	switch v := r.(type) {
	case kernelRecord:
		return v.corr
	case memcpyRecord:
		return v.corr
	case memsetRecord:
		return v.corr
	case syncRecord:
		return v.corr
	}
	return 0
}

// parentOf picks the parent context of a record: the NVTX range it was
// launched in, else the Go span registered for the thread, else the
// window of its device.
func (b *builder) parentOf(x *extIDs, device int, start, end uint64) context.Context {
	if x.rng != 0 {
		if r := b.ranges[rangeKey{id: x.rng}]; r != nil {
			return r.ctx
		}
		if sc, ok := b.closed[x.rng]; ok {
			return trace.ContextWithSpanContext(b.cfg.root, sc)
		}
	}
	if x.parent != 0 && b.cfg.goParent != nil {
		if ctx, ok := b.cfg.goParent(x.parent); ok {
			return ctx
		}
	}
	if b.cfg.job != nil && b.clock.ready() {
		if ctx, ok := b.cfg.job(device, b.clock.wall(start), b.clock.wall(end)); ok {
			b.stats.Jobs++
			return ctx
		}
	}
	return b.windowFor(device, start, end)
}

func (b *builder) clockAttrs(ts uint64) []attribute.KeyValue {
	off, u := b.clock.offset(ts)
	return []attribute.KeyValue{
		semconv.KeyCUDAClock.String("cupti"),
		KeyClockOffsetNS.Int64(off),
		KeyClockUncertainNS.Int64(u),
	}
}

func dim(d [3]uint32) string { return fmt.Sprintf("%d,%d,%d", d[0], d[1], d[2]) }

var copyKinds = map[uint8]string{1: "htod", 2: "dtoh", 3: "htoa", 4: "atoh", 5: "atoa", 6: "atod", 7: "dtoa", 8: "dtod", 9: "htoh", 10: "ptop"}

var syncTypes = map[uint32]string{1: "event", 2: "stream_wait_event", 3: "stream", 4: "context"}

func msOf(start, end uint64) float64 { return float64(end-start) / 1e6 }

func (b *builder) emitRecord(r any, x *extIDs, aggs map[aggKey]*aggregate, order *[]aggKey) {
	var (
		name       string
		attrs      []attribute.KeyValue
		start, end uint64
		device     = -1
		kernel     bool
		corr       uint32
	)
	switch v := r.(type) {
	case kernelRecord:
		if x.cs != 0 {
			// cudaspans times this launch with CUDA events and emits its
			// span; CUPTI's duration goes onto that span (cudaspansDurations).
			b.stats.Deduplicated++
			if b.cfg.keepCudaspans {
				if old, ok := b.cs[x.cs]; !ok || v.corr > old.corr {
					b.cs[x.cs] = csDur{ms: msOf(v.start, v.end), corr: v.corr}
				}
			}
			return
		}
		b.stats.Kernels++
		name, start, end, device, kernel, corr = v.name, v.start, v.end, int(v.device), true, v.corr
		if name == "" {
			name = SpanUnknown
		}
		attrs = []attribute.KeyValue{
			semconv.KeyCUDAKernelName.String(v.name),
			semconv.KeyCUDAGrid.String(dim(v.grid)),
			semconv.KeyCUDABlock.String(dim(v.block)),
			semconv.KeyCUDASharedBytes.Int64(int64(v.dynShm)),
			KeyStaticShared.Int64(int64(v.staticShm)),
			KeyRegisters.Int(int(v.regs)),
			semconv.KeyCUDAStream.Int64(int64(v.stream)),
		}
	case memcpyRecord:
		if x.cs != 0 {
			b.stats.Deduplicated++ // cudaspans' own copy
			return
		}
		b.stats.Memcpys++
		start, end, device, corr = v.start, v.end, int(v.device), v.corr
		kind := copyKinds[v.copyKind]
		switch kind {
		case "htod":
			name = semconv.SpanMemcpyHtoD
		case "dtoh":
			name = semconv.SpanMemcpyDtoH
		case "dtod":
			name = semconv.SpanMemcpyDtoD
		default:
			name = SpanMemcpy
		}
		if kind == "" {
			kind = "unknown"
		}
		attrs = []attribute.KeyValue{
			semconv.KeyCUDABytes.Int64(int64(v.bytes)),
			KeyCopyKind.String(kind),
			semconv.KeyCUDAStream.Int64(int64(v.stream)),
		}
		if ms := msOf(v.start, v.end); ms > 0 {
			attrs = append(attrs, semconv.KeyCUDAGBPerSecond.Float64(float64(v.bytes)/(ms*1e6)))
		}
	case memsetRecord:
		if x.cs != 0 {
			b.stats.Deduplicated++
			return
		}
		b.stats.Memsets++
		name, start, end, device, corr = semconv.SpanCUDAMemset, v.start, v.end, int(v.device), v.corr
		attrs = []attribute.KeyValue{
			semconv.KeyCUDABytes.Int64(int64(v.bytes)),
			semconv.KeyCUDAStream.Int64(int64(v.stream)),
		}
	case syncRecord:
		b.stats.Syncs++
		name, start, end, corr = SpanSync, v.start, v.end, v.corr
		t := syncTypes[v.typ]
		if t == "" {
			t = "unknown"
		}
		attrs = []attribute.KeyValue{KeySyncType.String(t)}
		if v.stream != 0 && v.stream != ^uint32(0) {
			attrs = append(attrs, semconv.KeyCUDAStream.Int64(int64(v.stream)))
		}
	default:
		return
	}
	if device >= 0 {
		attrs = append(attrs, semconv.KeyCUDADeviceOrdinal.Int(device))
	}
	attrs = append(attrs, KeyCUPTIMS.Float64(msOf(start, end)), KeyCorrelationID.Int64(int64(corr)))
	attrs = append(attrs, b.clockAttrs(start)...)
	if end > b.lastTS {
		b.lastTS = end
	}
	parent := b.parentOf(x, device, start, end)
	pid := trace.SpanContextFromContext(parent).SpanID()
	if kernel {
		n := b.counts[pid]
		if n >= b.cfg.maxPerParent {
			k := aggKey{pid, name}
			a := aggs[k]
			if a == nil {
				a = &aggregate{parent: parent, name: name, attrs: attrs}
				aggs[k] = a
				*order = append(*order, k)
			}
			a.add(start, end)
			b.stats.Aggregated++
			return
		}
		b.counts[pid] = n + 1
	}
	b.stats.Spans++
	_, span := b.cfg.tracer.Start(parent, name, trace.WithTimestamp(b.clock.wall(start)), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(b.clock.wall(end)))
}

type aggKey struct {
	parent trace.SpanID
	name   string
}

// aggregate folds the kernels of one name under one parent beyond the
// volume limit into one span, as cudaspans does.
type aggregate struct {
	parent     context.Context
	name       string
	attrs      []attribute.KeyValue
	stats      semconv.AggregateStats
	start, end uint64
}

func (a *aggregate) add(start, end uint64) {
	if a.stats.Count == 0 || start < a.start {
		a.start = start
	}
	if end > a.end {
		a.end = end
	}
	a.stats.Add(msOf(start, end))
}

func (b *builder) emitAggregate(a *aggregate) {
	attrs := make([]attribute.KeyValue, 0, len(a.attrs)+5)
	for _, kv := range a.attrs {
		switch kv.Key {
		case semconv.KeyCUDAGrid, semconv.KeyCUDABlock, semconv.KeyCUDASharedBytes, KeyStaticShared, KeyRegisters, KeyCUPTIMS, KeyCorrelationID:
			continue // differ between the folded launches
		}
		attrs = append(attrs, kv)
	}
	attrs = append(append(attrs, a.stats.Attributes()...), KeyCUPTIMS.Float64(a.stats.TotalMS))
	b.stats.Spans++
	_, span := b.cfg.tracer.Start(a.parent, a.name, trace.WithTimestamp(b.clock.wall(a.start)), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(b.clock.wall(a.end)))
}

// windowFor returns the context of the device window a record starting
// at start belongs to, closing the previous window of the device when the
// record starts past its end.
func (b *builder) windowFor(device int, start, end uint64) context.Context {
	w := b.windows[device]
	if w != nil && start >= w.first+uint64(b.cfg.window) {
		b.endWindow(w)
		w = nil
	}
	if w == nil {
		attrs := []attribute.KeyValue{semconv.KeyCUDAClock.String("cupti")}
		if device >= 0 {
			attrs = append(attrs, semconv.KeyCUDADeviceOrdinal.Int(device))
		}
		ctx, span := b.cfg.tracer.Start(b.cfg.root, SpanWindow, trace.WithTimestamp(b.clock.wall(start)), trace.WithAttributes(attrs...))
		w = &window{device: device, ctx: ctx, span: span, first: start}
		b.windows[device] = w
		b.stats.Windows++
		b.stats.Spans++
	}
	w.records++
	if end > w.lastEnd {
		w.lastEnd = end
	}
	w.busy = append(w.busy, busySpan{start, end})
	return w.ctx
}

// endWindow ends a device window with its idle accounting: the gaps
// between the union of its records' intervals are the device's idle time
// (nothing of this process ran on it), shown as cuda.idle children, so
// the untraced-time processor finds nothing of the window unexplained.
// Past maxPerParent gaps the largest get spans and the rest are folded
// into one cuda.idle aggregate, as kernels are. The window carries
// cuda.gpu_busy_ms, cuda.gpu_idle_ms and cuda.idle.gaps.
func (b *builder) endWindow(w *window) {
	gaps, busy := idleGaps(w.busy)
	var idle uint64
	for _, g := range gaps {
		idle += g.end - g.start
	}
	w.span.SetAttributes(KeyWindowRecords.Int(w.records), semconv.KeyCUDABusyMS.Float64(float64(busy)/1e6),
		semconv.KeyCUDAIdleMS.Float64(float64(idle)/1e6), KeyIdleGaps.Int(len(gaps)))
	limit := b.cfg.maxPerParent
	if limit < 1 {
		limit = 1
	}
	if len(gaps) > limit {
		// The largest as spans, the rest folded (a gap's time order is
		// kept in the spans' timestamps, not in this slice).
		slices.SortFunc(gaps, func(a, c busySpan) int { return cmp.Compare(c.end-c.start, a.end-a.start) })
		rest := &aggregate{parent: w.ctx, name: SpanIdle, attrs: []attribute.KeyValue{semconv.KeyCUDAClock.String("cupti")}}
		for _, g := range gaps[limit:] {
			rest.add(g.start, g.end)
		}
		gaps = gaps[:limit]
		b.emitAggregate(rest)
		b.stats.Idle++
	}
	for _, g := range gaps {
		b.stats.Idle++
		b.stats.Spans++
		_, span := b.cfg.tracer.Start(w.ctx, SpanIdle, trace.WithTimestamp(b.clock.wall(g.start)),
			trace.WithAttributes(semconv.KeyCUDAClock.String("cupti"), KeyCUPTIMS.Float64(msOf(g.start, g.end))))
		span.End(trace.WithTimestamp(b.clock.wall(g.end)))
	}
	w.span.End(trace.WithTimestamp(b.clock.wall(w.lastEnd)))
	delete(b.windows, w.device)
}

// idleGaps returns the gaps between the union of intervals (records of
// several streams overlap) and the union's total length, ns. It sorts
// spans in place.
func idleGaps(spans []busySpan) (gaps []busySpan, busy uint64) {
	slices.SortFunc(spans, func(a, c busySpan) int { return cmp.Compare(a.start, c.start) })
	var cur busySpan
	for i, s := range spans {
		if s.end < s.start {
			s.end = s.start
		}
		switch {
		case i == 0:
			cur = s
		case s.start > cur.end:
			busy += cur.end - cur.start
			gaps = append(gaps, busySpan{cur.end, s.start})
			cur = s
		case s.end > cur.end:
			cur.end = s.end
		}
	}
	if len(spans) > 0 {
		busy += cur.end - cur.start
	}
	return gaps, busy
}

// closeWindows ends the windows whose time is over: those whose length
// has passed on the wall clock since they began (no later record of the
// device can still fall into them), or all of them when final.
func (b *builder) closeWindows(final bool) {
	now := b.cfg.now()
	for _, w := range b.windows {
		if final || now.Sub(b.clock.wall(w.first)) > 2*b.cfg.window {
			b.endWindow(w)
		}
	}
}

// traceparentIn finds "traceparent=00-<trace>-<span>-<flags>" in an NVTX
// message; it returns the message without it and the remote span context.
func traceparentIn(msg string) (string, trace.SpanContext, bool) {
	i := strings.Index(msg, "traceparent=")
	if i < 0 {
		return msg, trace.SpanContext{}, false
	}
	v := msg[i+len("traceparent="):]
	if j := strings.IndexAny(v, " \t;,"); j >= 0 {
		v = v[:j]
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": v})
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return msg, trace.SpanContext{}, false
	}
	rest := strings.TrimSpace(msg[:i] + msg[i+len("traceparent=")+len(v):])
	return rest, sc, true
}

func (b *builder) push(e nvtxPush) {
	b.stats.Ranges++
	if e.ts > b.lastTS {
		b.lastTS = e.ts
	}
	name, remote, hasRemote := traceparentIn(e.message)
	var parent context.Context
	switch {
	case hasRemote:
		parent = trace.ContextWithRemoteSpanContext(context.Background(), remote)
	case e.parentRange != 0 && b.ranges[rangeKey{id: e.parentRange}] != nil:
		parent = b.ranges[rangeKey{id: e.parentRange}].ctx
	case e.goParent != 0 && b.cfg.goParent != nil:
		if ctx, ok := b.cfg.goParent(e.goParent); ok {
			parent = ctx
		}
	}
	if parent == nil {
		parent = b.cfg.root
	}
	if name == "" {
		name = SpanNVTX
	}
	kind := "push"
	if e.flags&pushStartEnd != 0 {
		kind = "start"
	}
	attrs := []attribute.KeyValue{
		KeyNVTXKind.String(kind),
		KeyNVTXDomain.String(e.domain),
		KeyThreadID.Int64(int64(e.thread)),
		semconv.KeyCUDAClock.String("cupti"),
	}
	if e.category != 0 {
		attrs = append(attrs, KeyNVTXCategory.Int64(int64(e.category)))
	}
	if e.color != 0 {
		attrs = append(attrs, KeyNVTXColor.Int64(int64(e.color)))
	}
	if kv, ok := payloadAttr(e.payloadType, e.payload); ok {
		attrs = append(attrs, kv)
	}
	b.stats.Spans++
	ctx, span := b.cfg.tracer.Start(parent, name, trace.WithTimestamp(b.clock.wall(e.ts)), trace.WithAttributes(attrs...))
	b.ranges[rangeKey{e.id, e.flags&pushStartEnd != 0}] = &openRange{ctx: ctx, span: span}
}

// payloadAttr decodes an NVTX payload by its nvtxPayloadType_t.
func payloadAttr(typ uint32, v uint64) (attribute.KeyValue, bool) {
	switch typ {
	case 1: // NVTX_PAYLOAD_TYPE_UNSIGNED_INT64
		return KeyNVTXPayload.Int64(int64(v)), true
	case 2: // INT64
		return KeyNVTXPayload.Int64(int64(v)), true
	case 3: // DOUBLE
		return KeyNVTXPayload.Float64(float64frombits(v)), true
	case 4: // UNSIGNED_INT32
		return KeyNVTXPayload.Int64(int64(uint32(v))), true
	case 5: // INT32
		return KeyNVTXPayload.Int64(int64(int32(uint32(v)))), true
	case 6: // FLOAT
		return KeyNVTXPayload.Float64(float64(float32frombits(uint32(v)))), true
	}
	return attribute.KeyValue{}, false
}

func (b *builder) pop(e nvtxPop) {
	if e.ts > b.lastTS {
		b.lastTS = e.ts
	}
	k := rangeKey{e.id, e.startEnd}
	r := b.ranges[k]
	if e.id == 0 || r == nil {
		b.stats.UnbalancedPops++
		what := "nvtxRangePop"
		if e.startEnd {
			what = "nvtxRangeEnd"
		}
		b.logOnce(fmt.Sprintf("cupti: %s with no open range (thread %d); ignored", what, e.thread))
		return
	}
	r.span.End(trace.WithTimestamp(b.clock.wall(e.ts)))
	delete(b.ranges, k)
	if !e.startEnd {
		b.closed[e.id] = trace.SpanContextFromContext(r.ctx)
		b.closedQ = append(b.closedQ, e.id)
	}
}

// finish ends what is still open at the end of a capture: ranges (marked
// nvtx.unclosed, ended at the last time seen) and windows.
func (b *builder) finish() {
	for k, r := range b.ranges {
		b.stats.UnclosedRanges++
		r.span.SetAttributes(KeyNVTXUnclosed.Bool(true))
		r.span.End(trace.WithTimestamp(b.clock.wall(b.lastTS)))
		delete(b.ranges, k)
	}
	if b.stats.UnclosedRanges > 0 {
		b.logOnce(fmt.Sprintf("cupti: %d NVTX ranges still open at the end; ended there (nvtx.unclosed)", b.stats.UnclosedRanges))
	}
	for _, w := range b.windows {
		b.endWindow(w)
	}
}

// prune bounds the maps of a long-running process.
func (b *builder) prune() {
	const keep = 1 << 12
	if len(b.closedQ) > 2*keep {
		for _, id := range b.closedQ[:len(b.closedQ)-keep] {
			delete(b.closed, id)
		}
		b.closedQ = append([]uint64(nil), b.closedQ[len(b.closedQ)-keep:]...)
	}
	// Correlation records of API calls that made no activity (every
	// driver call inside a Call region gets one) are kept two batches.
	for corr, x := range b.ext {
		if x.gen < b.gen-1-max(b.cfg.holdBatches, 1) {
			delete(b.ext, corr)
		}
	}
	if len(b.counts) > 1<<14 {
		b.counts = map[trace.SpanID]int{}
	}
	if len(b.cs) > 1<<14 {
		b.cs = map[uint64]csDur{}
	}
}

// takeCudaspans returns and forgets CUPTI's durations of the given
// cudaspans launch ids.
func (b *builder) takeCudaspans(ids []uint64) map[uint64]float64 {
	out := map[uint64]float64{}
	for _, id := range ids {
		if d, ok := b.cs[id]; ok {
			out[id] = d.ms
			delete(b.cs, id)
		}
	}
	return out
}

func float64frombits(v uint64) float64 { return math.Float64frombits(v) }
func float32frombits(v uint32) float32 { return math.Float32frombits(v) }
