package tracefile

import (
	"container/heap"
	"encoding/hex"
	"slices"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Defaults of CollectOptions.
const (
	// DefaultMaxSpansPerTrace caps the spans kept of one trace: a proof's
	// trace with every CUDA kernel span is a few thousand.
	DefaultMaxSpansPerTrace = 100_000
	// DefaultMaxKeptBytes caps the estimated memory of the spans kept over
	// all traces (see Collector).
	DefaultMaxKeptBytes = 48 << 20
	// DefaultMaxSummaries caps the traces a Collector lists (about 300
	// bytes each: 20 MB).
	DefaultMaxSummaries = 1 << 16
)

// CollectOptions bounds what a Collector holds. The zero value keeps the
// latest traces within the defaults.
type CollectOptions struct {
	// MaxTraces keeps at most this many traces with their spans, the
	// latest to start; 0 means no limit but MaxKeptBytes.
	MaxTraces int
	// MaxSpansPerTrace: spans of one trace past it, or past MaxKeptBytes
	// of its own, are dropped and counted (TraceSummary.Dropped); 0 means
	// DefaultMaxSpansPerTrace.
	MaxSpansPerTrace int
	// MaxKeptBytes caps the estimated bytes of kept spans (about 250 bytes
	// a span plus its names and attributes); past it the trace that starts
	// first loses its spans (TraceSummary.Kept false). 0 means
	// DefaultMaxKeptBytes.
	MaxKeptBytes int64
	// MaxSummaries caps the traces listed: past it the trace that starts
	// first is let go (its spans to OnEvict if kept) and counted
	// (Collection.Unlisted), so the list holds the latest traces of a file
	// of any length. A span of an unknown trace that starts no later than
	// the latest trace let go is counted (Collection.UnlistedSpans), not
	// listed: it is most likely a late span of one let go. 0 means
	// DefaultMaxSummaries.
	MaxSummaries int
	// OnEvict, when set, receives the spans of each trace as it is let go,
	// so a caller can reduce it (to a Profile, say) instead of losing it.
	// Spans of the trace that arrive afterwards are only counted
	// (TraceSummary.Late). It must not keep spans it is not meant to.
	OnEvict func(spans []Span)
}

// TraceSummary is what a Collector knows of a trace it lists, kept or
// not.
type TraceSummary struct {
	ID      string    // 32 lowercase hex digits
	Start   time.Time // earliest span start seen
	End     time.Time // latest span end seen
	Spans   int       // spans seen (a repeated span counts once while the trace is kept)
	Root    string    // name of the first span without a parent, else of the span that starts first
	Kept    bool      // the trace's spans are in Collection.Spans
	Dropped int       // spans past MaxSpansPerTrace, not kept
	Late    int       // spans that arrived after the trace was let go (evicted)
	Jobs    int       // engine.job spans seen: a proof's trace has one, a status poll's none
}

// Duration is End − Start.
func (s TraceSummary) Duration() time.Duration { return s.End.Sub(s.Start) }

// Collection is what a Collector gathered.
type Collection struct {
	// Summaries lists every trace seen (the latest MaxSummaries to
	// start), by start.
	Summaries []TraceSummary
	// Spans holds the spans of each kept trace, by trace id, in input order.
	Spans map[string][]Span
	// Evicted counts traces whose spans were let go for MaxTraces or
	// MaxKeptBytes; Unlisted counts traces let go from the list for
	// MaxSummaries (the earliest), UnlistedSpans the spans that came
	// afterwards for traces not listed.
	Evicted, Unlisted, UnlistedSpans int
}

// Kept returns the summaries of the kept traces, by start.
func (c *Collection) Kept() []TraceSummary {
	var out []TraceSummary
	for _, s := range c.Summaries {
		if s.Kept {
			out = append(out, s)
		}
	}
	return out
}

// Latest returns the kept trace that starts last among those with an
// engine.job span (a file's most recent proof: a daemon's file also holds
// the traces of status polls and waits), else among all; false when none
// is kept.
func (c *Collection) Latest() (TraceSummary, bool) {
	k := c.Kept()
	for i := len(k) - 1; i >= 0; i-- {
		if k[i].Jobs > 0 {
			return k[i], true
		}
	}
	if len(k) == 0 {
		return TraceSummary{}, false
	}
	return k[len(k)-1], true
}

// Collector groups a stream of spans (as ScanOTLPJSONLines delivers them)
// by trace in bounded memory: it lists the latest traces to start (up to
// MaxSummaries) with a summary, and keeps the spans of the latest of them,
// within CollectOptions.
// A trace loses its spans when the kept spans pass MaxKeptBytes or the kept
// traces pass MaxTraces, the earliest to start first (a heap by start, so
// each span costs O(log traces)); its later spans are only counted. A
// Collector is not safe for concurrent use.
type Collector struct {
	opts     CollectOptions
	byID     map[[16]byte]*collected
	heap     collectedHeap // kept traces, earliest start first
	listed   collectedHeap // every listed trace, earliest start first
	bytes    int64
	evicted  int
	unlisted int
	// unlistedSpans counts spans of traces not listed
	unlistedSpans int
	letGo         time.Time         // latest start of a trace let go from the list
	names         map[string]string // interned root names
}

type collected struct {
	sum   TraceSummary
	spans []Span
	ids   map[string]struct{}
	bytes int64
	// index is the place in Collector.heap (-1 when not kept) and in
	// Collector.listed.
	index [2]int
	// rootless: sum.Root names a span with a parent (no parentless span
	// seen yet); rootStart is that span's start.
	rootless  bool
	rootStart time.Time
}

// NewCollector returns an empty Collector.
func NewCollector(opts CollectOptions) *Collector {
	if opts.MaxSpansPerTrace <= 0 {
		opts.MaxSpansPerTrace = DefaultMaxSpansPerTrace
	}
	if opts.MaxKeptBytes <= 0 {
		opts.MaxKeptBytes = DefaultMaxKeptBytes
	}
	if opts.MaxSummaries <= 0 {
		opts.MaxSummaries = DefaultMaxSummaries
	}
	return &Collector{opts: opts, byID: map[[16]byte]*collected{}, names: map[string]string{},
		heap: collectedHeap{which: keptIndex}, listed: collectedHeap{which: listedIndex}}
}

// Add takes one span. Spans whose trace id is not 32 hex digits are
// ignored (the readers never produce them).
func (c *Collector) Add(s Span) {
	var key [16]byte
	if len(s.TraceID) != 32 {
		return
	}
	if _, err := hex.Decode(key[:], []byte(s.TraceID)); err != nil {
		return
	}
	t := c.byID[key]
	if t == nil {
		if len(c.byID) >= c.opts.MaxSummaries {
			if !s.Start.After(c.letGo) || !s.Start.After(c.listed.ts[0].sum.Start) {
				c.unlistedSpans++
				return
			}
			c.letGoOf(heap.Pop(&c.listed).(*collected))
		}
		t = &collected{sum: TraceSummary{ID: s.TraceID, Start: s.Start, End: s.End, Kept: true}, ids: map[string]struct{}{}}
		c.byID[key] = t
		heap.Push(&c.heap, t)
		heap.Push(&c.listed, t)
	}
	if t.sum.Kept {
		if _, dup := t.ids[s.SpanID]; dup {
			return
		}
	}
	t.sum.Spans++
	if s.Name == semconv.SpanEngineJob {
		t.sum.Jobs++
	}
	if s.Start.Before(t.sum.Start) {
		t.sum.Start = s.Start
		if t.index[keptIndex] >= 0 {
			heap.Fix(&c.heap, t.index[keptIndex])
		}
		heap.Fix(&c.listed, t.index[listedIndex])
	}
	// The root: the earliest span without a parent, else the earliest.
	isRoot := s.ParentID == ""
	switch {
	case t.sum.Root == "", isRoot && t.rootless, isRoot == !t.rootless && s.Start.Before(t.rootStart):
		t.sum.Root, t.rootStart, t.rootless = c.intern(s.Name), s.Start, !isRoot
	}
	if s.End.After(t.sum.End) {
		t.sum.End = s.End
	}
	if !t.sum.Kept {
		t.sum.Late++
		return
	}
	n := spanBytes(s)
	if len(t.spans) >= c.opts.MaxSpansPerTrace || t.bytes+n > c.opts.MaxKeptBytes {
		t.sum.Dropped++
		return
	}
	t.spans = append(t.spans, s)
	t.ids[s.SpanID] = struct{}{}
	t.bytes += n
	c.bytes += n
	for c.heap.Len() > 1 && (c.bytes > c.opts.MaxKeptBytes || (c.opts.MaxTraces > 0 && c.heap.Len() > c.opts.MaxTraces)) {
		c.evict(heap.Pop(&c.heap).(*collected))
		c.evicted++
	}
}

// evict lets t's spans go (to OnEvict); t is out of c.heap already.
func (c *Collector) evict(t *collected) {
	if c.opts.OnEvict != nil {
		c.opts.OnEvict(t.spans)
	}
	c.bytes -= t.bytes
	t.spans, t.ids, t.bytes, t.index[keptIndex] = nil, nil, 0, -1
	t.sum.Kept = false
}

// letGoOf takes t, popped from c.listed, off the list: its spans, if kept,
// go to OnEvict; it is counted in Unlisted.
func (c *Collector) letGoOf(t *collected) {
	if t.sum.Kept {
		heap.Remove(&c.heap, t.index[keptIndex])
		c.evict(t)
	}
	var key [16]byte
	_, _ = hex.Decode(key[:], []byte(t.sum.ID))
	delete(c.byID, key)
	if t.sum.Start.After(c.letGo) {
		c.letGo = t.sum.Start
	}
	c.unlisted++
}

func (c *Collector) intern(s string) string {
	if v, ok := c.names[s]; ok {
		return v
	}
	if len(c.names) < 4096 {
		c.names[s] = s
	}
	return s
}

// Collection returns what was gathered so far. The Collector must not be
// used afterwards.
func (c *Collector) Collection() *Collection {
	out := &Collection{Spans: map[string][]Span{}, Evicted: c.evicted, Unlisted: c.unlisted, UnlistedSpans: c.unlistedSpans}
	for _, t := range c.byID {
		out.Summaries = append(out.Summaries, t.sum)
		if t.sum.Kept {
			out.Spans[t.sum.ID] = t.spans
		}
	}
	slices.SortFunc(out.Summaries, func(a, b TraceSummary) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	return out
}

// spanBytes estimates the heap a Span holds: the struct, its strings and
// its attribute map.
func spanBytes(s Span) int64 {
	n := 250 + len(s.Name) + len(s.TraceID) + len(s.SpanID) + len(s.ParentID) + len(s.Status.Message)
	if len(s.Attrs) > 0 {
		n += 320 // the map's first group
	}
	for k, v := range s.Attrs {
		n += 64 + len(k) + valueBytes(v)
	}
	return int64(n)
}

func valueBytes(v any) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case []byte:
		return len(x)
	case []any:
		n := 24
		for _, e := range x {
			n += 16 + valueBytes(e)
		}
		return n
	case map[string]any:
		n := 48
		for k, e := range x {
			n += 64 + len(k) + valueBytes(e)
		}
		return n
	}
	return 16
}

// The two heaps of a Collector, each a place in collected.index.
const (
	keptIndex   = 0
	listedIndex = 1
)

// collectedHeap orders traces by start, earliest first; which is the
// place in collected.index it keeps up to date.
type collectedHeap struct {
	ts    []*collected
	which int
}

func (h collectedHeap) Len() int { return len(h.ts) }
func (h collectedHeap) Less(i, j int) bool {
	if c := h.ts[i].sum.Start.Compare(h.ts[j].sum.Start); c != 0 {
		return c < 0
	}
	return h.ts[i].sum.ID < h.ts[j].sum.ID
}
func (h collectedHeap) Swap(i, j int) {
	h.ts[i], h.ts[j] = h.ts[j], h.ts[i]
	h.ts[i].index[h.which], h.ts[j].index[h.which] = i, j
}
func (h *collectedHeap) Push(x any) {
	t := x.(*collected)
	t.index[h.which] = len(h.ts)
	h.ts = append(h.ts, t)
}
func (h *collectedHeap) Pop() any {
	t := h.ts[len(h.ts)-1]
	h.ts[len(h.ts)-1] = nil
	h.ts = h.ts[:len(h.ts)-1]
	t.index[h.which] = -1
	return t
}
