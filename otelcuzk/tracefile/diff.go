package tracefile

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// ErrMismatch is wrapped by DiffProfiles' errors for inputs that cannot be
// compared: traces of different circuits or with no root span in common.
var ErrMismatch = semconv.NewError(semconv.ErrorTypeInvalidRequest, "traces cannot be compared")

// PathSep joins span names into a DiffNode.Path for display.
const PathSep = "/"

// keySep joins names in path keys: span names may hold PathSep (a gRPC
// server span is "cuzk.v1.ProvingEngine/Prove"), never a unit separator.
const keySep = "\x1f"

// PathStat is the time of every span on one path of one trace. Spans that
// repeat a name under the same parent (the MSM's kernel launches, the
// release of each buffer) are summed, not numbered: their count may differ
// from run to run (one more window, one more buffer) and numbering would
// then pair unrelated spans.
type PathStat struct {
	Duration time.Duration // summed; overlapping spans each count in full
	Untraced time.Duration // summed Node.Untraced
	Count    int           // spans on the path
	// Concurrent says a span of the path ran beside a sibling of another
	// name (they overlapped by a tenth of the shorter or more): the CPU's
	// MSMs, which share its cores, so time one loses another may gain.
	Concurrent bool
	// Attrs holds the string and bool attributes with one value over all
	// the spans of the path (values as text), to name what changed.
	Attrs map[string]string
}

// Profile is one trace reduced to its paths: what DiffProfiles compares.
// It is small (one PathStat per distinct path), so many traces can be
// profiled while only one trace's spans are held.
type Profile struct {
	TraceID string
	Root    string        // engine.job, or the first root's name in a trace without one
	Jobs    int           // engine.job spans the paths start from (0: from the roots)
	Circuit string        // "<cuzk.circuit.id> <cuzk.circuit.constraints>" of the first span that has them, "" if none
	Start   time.Time     // the trace's first span start
	Total   time.Duration // the trace's duration
	Run     Run           // what ran: circuit, size, backend, release mode, host, build, outcome
	paths   map[string]*PathStat
}

// Run is what a trace says of the run it records, for a diff's header:
// the first value found walking its job spans and their descendants
// (parents first), "" or 0 where no span carries it.
type Run struct {
	CircuitID   string   // cuzk.circuit.id
	Constraints int64    // cuzk.circuit.constraints
	Backend     string   // cuzk.backend (cpu, cuda)
	Releases    []string // the cuzk.release.mode values of its buffer.release spans, sorted (sync, async, pool)
	Host        string   // host.name of the job span's resource
	Build       string   // service.version of the job span's resource (cuzk: its VCS revision)
	// Outcome is "" for a job that succeeded, else why it did not: the
	// error.type of its failed job span (canceled, device_fault, ...), or
	// "error" without one; Message is the span's status message.
	Outcome, Message string
}

// Failed says the job did not succeed (cancelled or failed).
func (r Run) Failed() bool { return r.Outcome != "" }

// Path returns the stats of the path of names from the root, or nil.
func (p Profile) Path(names ...string) *PathStat { return p.paths[strings.Join(names, keySep)] }

// Scale multiplies every time of p by f (p's paths are copied): a run of
// one size made comparable per constraint with another (cuzk trace diff
// --normalize). f must be positive.
func (p Profile) Scale(f float64) Profile {
	sc := func(d time.Duration) time.Duration { return time.Duration(math.Round(float64(d) * f)) }
	out := p
	out.Total = sc(p.Total)
	out.paths = make(map[string]*PathStat, len(p.paths))
	for k, st := range p.paths {
		c := *st
		c.Duration, c.Untraced = sc(st.Duration), sc(st.Untraced)
		out.paths[k] = &c
	}
	return out
}

// ProfileOf reduces t to its paths: each span's path is the names from
// its job's engine.job span down to it joined by PathSep (`engine.job/
// pipeline.prove/groth16.prove/msm.g1.a`), kernel spans included, so a
// daemon's job (under its server span and the caller's) and a cuzk prove
// run compare path for path; the spans outside engine.job are left out. A
// trace without engine.job is taken from its roots. The processor's own
// `untraced` spans are left out (their time is the parent's Untraced).
func ProfileOf(t Trace) Profile {
	p := Profile{TraceID: t.ID, Start: t.Start, Total: t.Duration(), paths: map[string]*PathStat{}}
	roots := jobRoots(t)
	if len(roots) > 0 {
		p.Root = roots[0].Name
		p.Run.Host, p.Run.Build = roots[0].Host, roots[0].Version
	}
	if len(roots) > 0 && roots[0].Name == semconv.SpanEngineJob {
		p.Jobs = len(roots)
		p.Total = 0
		for _, r := range roots {
			p.Total += r.Duration()
		}
	}
	for _, r := range roots {
		if r.Status.Code == StatusError && p.Run.Outcome == "" {
			p.Run.Outcome, p.Run.Message = "error", r.Status.Message
			if et, ok := r.Attrs[string(semconv.KeyErrorType)].(string); ok && et != "" {
				p.Run.Outcome = et
			}
		}
	}
	var walk func(n *Node, prefix string, concurrent bool)
	walk = func(n *Node, prefix string, concurrent bool) {
		if n.Name == semconv.SpanUntraced {
			return
		}
		path := n.Name
		if prefix != "" {
			path = prefix + keySep + n.Name
		}
		st := p.paths[path]
		if st == nil {
			st = &PathStat{Attrs: map[string]string{}}
			for k, v := range n.Attrs {
				if s, ok := attrText(v); ok {
					st.Attrs[k] = s
				}
			}
			p.paths[path] = st
		} else {
			for k, v := range st.Attrs {
				if s, ok := attrText(n.Attrs[k]); !ok || s != v {
					delete(st.Attrs, k)
				}
			}
		}
		st.Duration += n.Duration()
		st.Untraced += n.Untraced
		st.Count++
		st.Concurrent = st.Concurrent || concurrent
		p.Run.note(n)
		if p.Circuit == "" {
			if id, ok := n.Attrs[string(semconv.KeyCircuitID)].(string); ok {
				p.Circuit = strings.TrimSpace(fmt.Sprintf("%s %v", id, n.Attrs[string(semconv.KeyCircuitConstraints)]))
				p.Circuit = strings.TrimSuffix(p.Circuit, " <nil>")
			}
		}
		beside := concurrentChildren(n.Children)
		for i, c := range n.Children {
			walk(c, path, beside[i])
		}
	}
	for _, r := range roots {
		walk(r, "", false)
	}
	slices.Sort(p.Run.Releases)
	return p
}

// concurrentChildren says of each child whether it overlapped a sibling
// of another name by a tenth of the shorter's time or more (children are
// in start order; each is compared with the next 64 that start before it
// ends, enough for the stages and MSMs, bounded for a parent of many
// kernel spans). Repeats of one name (a kernel's launches) and the
// processor's untraced spans do not count.
func concurrentChildren(children []*Node) []bool {
	out := make([]bool, len(children))
	for i, a := range children {
		if a.Name == semconv.SpanUntraced {
			continue
		}
		for j := i + 1; j < len(children) && j <= i+64 && children[j].Start.Before(a.End); j++ {
			b := children[j]
			if b.Name == a.Name || b.Name == semconv.SpanUntraced {
				continue
			}
			end := a.End
			if b.End.Before(end) {
				end = b.End
			}
			if overlap := end.Sub(b.Start); overlap > 0 && overlap*10 >= min(a.Duration(), b.Duration()) {
				out[i], out[j] = true, true
			}
		}
	}
	return out
}

// note takes what n says of the run where nothing has yet.
func (r *Run) note(n *Node) {
	if v, ok := n.Attrs[string(semconv.KeyCircuitID)].(string); ok && r.CircuitID == "" {
		r.CircuitID = v
	}
	if v, ok := n.Attrs[string(semconv.KeyCircuitConstraints)].(int64); ok && r.Constraints == 0 {
		r.Constraints = v
	}
	if v, ok := n.Attrs[string(semconv.KeyBackend)].(string); ok && r.Backend == "" {
		r.Backend = v
	}
	if v, ok := n.Attrs[string(semconv.KeyReleaseMode)].(string); ok && v != "" && !slices.Contains(r.Releases, v) {
		r.Releases = append(r.Releases, v)
	}
	if r.Host == "" {
		r.Host = n.Host
	}
	if r.Build == "" {
		r.Build = n.Version
	}
}

// jobRoots returns the shallowest engine.job spans of t, else its roots.
func jobRoots(t Trace) []*Node {
	if jobs := jobSpans(t); len(jobs) > 0 {
		return jobs
	}
	return t.Roots
}

// jobSpans returns the shallowest engine.job spans of t (none below
// another), in walk order.
func jobSpans(t Trace) []*Node {
	var jobs []*Node
	t.Walk(func(n *Node) bool {
		if n.Name == semconv.SpanEngineJob {
			jobs = append(jobs, n)
			return false
		}
		return true
	})
	return jobs
}

func attrText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return fmt.Sprint(x), true
	}
	return "", false
}

// DiffOptions sets what counts as a move. Zero values mean the defaults,
// unless Exact.
type DiffOptions struct {
	ThresholdMS  float64 // a layer moved when |B − A| ≥ ThresholdMS ms (default 1) ...
	ThresholdPct float64 // ... and |B − A| ≥ ThresholdPct % of A (default 5)
	// Exact takes ThresholdMS and ThresholdPct as given, 0 included (for a
	// caller whose flags carry their own defaults, as cuzk trace diff's:
	// --threshold-pct 0 is no relative threshold, not 5 %); negative
	// values are 0.
	Exact bool
	// NoiseFloorPct: with one trace on each side there is no run-to-run
	// spread to measure, so a path did not move unless |B − A| is over
	// NoiseFloorPct % of A as well (default DefaultNoiseFloorPct; with
	// Exact as given, 0 none). With more traces on a side the spread is
	// measured instead (Diff.WithinSpread).
	NoiseFloorPct float64
	// Normalize lets the sides be of different sizes of one circuit: the
	// caller has scaled their times to one size (Profile.Scale).
	Normalize bool
}

// DefaultNoiseFloorPct is the noise floor of a diff of one trace a side:
// the run-to-run spread of identical CPU proofs (bench/trace-noise.md):
// the 75th percentile of |B − A| / A over the spans of 10 ms or more of 9
// consecutive pairs of merkle 2^16 proofs on a shared 2-core VM was 24.5 %
// (median 9.7 %, 90th 38.7 %).
const DefaultNoiseFloorPct = 25

// DiffNode is one path in both sides: the medians over each side's traces
// of the path's PathStat (a trace without the path counts as 0, so a span
// present in half the runs shows half its time).
type DiffNode struct {
	Path                 string
	Name                 string
	Depth                int // 0 for a root
	A, B                 time.Duration
	UntracedA, UntracedB time.Duration
	// MinA … MaxB: the range of the path's time over each side's traces
	// (a trace without the path counts 0), its run-to-run spread.
	MinA, MaxA, MinB, MaxB time.Duration
	CountA, CountB         float64 // median span counts
	TracesA, TracesB       int     // traces of each side that have the path
	// AttrsA and AttrsB: attributes with one value over every span of the
	// path on that side (see PathStat.Attrs).
	AttrsA, AttrsB map[string]string
	// Concurrent: the path ran beside a sibling on either side
	// (PathStat.Concurrent).
	Concurrent bool
	Children   []*DiffNode // largest |B − A| first
	parent     *DiffNode
}

// Delta is B − A.
func (n *DiffNode) Delta() time.Duration { return n.B - n.A }

// Pct is (B − A) / A in percent; +Inf for a path that is new on B, 0 when
// both are 0.
func (n *DiffNode) Pct() float64 {
	if n.A == 0 {
		if n.B == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return 100 * float64(n.B-n.A) / float64(n.A)
}

// OnlyA and OnlyB say the path is on one side only.
func (n *DiffNode) OnlyA() bool { return n.TracesB == 0 }
func (n *DiffNode) OnlyB() bool { return n.TracesA == 0 }

// Diff compares two sets of traces path by path.
type Diff struct {
	TracesA, TracesB     int
	TotalA, TotalB       time.Duration // median trace durations
	UntracedA, UntracedB time.Duration // median untraced time over all spans of a trace
	Roots                []*DiffNode   // largest |B − A| first
	// Verdicts: one line per layer (a path with children) that moved
	// beyond the thresholds or has a child that did, and per root that
	// moved, in tree order, naming the children that moved and the layer's
	// own untraced change, e.g.
	// "pipeline.prove +2.0 s: buffer.release +2.0 s (sync on B), untraced −0.1 s".
	// Every path Moved is named by one (its own or its parent's), so no
	// verdict means nothing moved: a child can move by the thresholds while
	// its layer, much longer, does not move by ThresholdPct of its own time.
	Verdicts []string
	// RunsA and RunsB: what each side's traces say of their runs
	// (circuit, size, backend, release mode, host, build, failures).
	RunsA, RunsB SideRuns
	// Failures: a line per side some of whose jobs did not succeed
	// (cancelled or failed), printed with the verdicts: "B: its job did
	// not succeed (canceled: …); its times are of a run cut short, not
	// comparable".
	Failures []string
	opts     DiffOptions
	byKey    map[string]*DiffNode // by the path key (names joined by keySep)
}

// Walk calls f on every node, depth first in the order of Children.
func (d *Diff) Walk(f func(n *DiffNode)) {
	var walk func(ns []*DiffNode)
	walk = func(ns []*DiffNode) {
		for _, n := range ns {
			f(n)
			walk(n.Children)
		}
	}
	walk(d.Roots)
}

// Find returns the node whose path is name, else the shallowest node
// named name (first in walk order), or nil.
func (d *Diff) Find(name string) *DiffNode {
	var byPath, byName *DiffNode
	d.Walk(func(n *DiffNode) {
		if n.Path == name && byPath == nil {
			byPath = n
		}
		if n.Name == name && (byName == nil || n.Depth < byName.Depth) {
			byName = n
		}
	})
	if byPath != nil {
		return byPath
	}
	return byName
}

// Moved says whether n moved: beyond the thresholds (a path on one side
// only moved when its time passes ThresholdMS) and not WithinSpread; a
// change of 0 never moved, whatever the thresholds.
func (d *Diff) Moved(n *DiffNode) bool {
	return d.beyondThresholds(n) && !d.WithinSpread(n)
}

func (d *Diff) beyondThresholds(n *DiffNode) bool {
	delta := math.Abs(human.Milliseconds(n.Delta()))
	if delta == 0 || delta < d.opts.ThresholdMS {
		return false
	}
	return n.A == 0 || math.Abs(n.Pct()) >= d.opts.ThresholdPct
}

// OneTraceEach says each side is one trace: there is no run-to-run spread
// to measure, and the noise floor (DiffOptions.NoiseFloorPct) stands in.
func (d *Diff) OneTraceEach() bool { return d.TracesA == 1 && d.TracesB == 1 }

// NoiseFloorPct is the noise floor in use (see DiffOptions).
func (d *Diff) NoiseFloorPct() float64 { return d.opts.NoiseFloorPct }

// WithinSpread says n's change is within the run-to-run spread: with more
// than one trace on a side, the ranges of its time over A's and over B's
// traces overlap; with one trace a side, |B − A| is at most NoiseFloorPct
// % of A. A path on one side only is never within it.
func (d *Diff) WithinSpread(n *DiffNode) bool {
	if n.OnlyA() || n.OnlyB() {
		return false
	}
	if d.OneTraceEach() {
		return math.Abs(float64(n.Delta())) <= d.opts.NoiseFloorPct/100*float64(n.A) || d.SharedTime(n)
	}
	return n.MinA <= n.MaxB && n.MinB <= n.MaxA
}

// SharedTime says n is within the spread because, with one trace a side,
// it ran beside a sibling (DiffNode.Concurrent) and its parent did not
// move: concurrent spans share the cores, and one trace cannot tell a
// trade of time between them (one MSM started first this time) from a
// change; the parent's time is the measure. On the CPU backend the MSMs
// of a sync/async pair moved by ±66 to ±140 % each while groth16.prove
// moved by 2.4 % (the 2-core VM, merkle 2^12).
func (d *Diff) SharedTime(n *DiffNode) bool {
	return d.OneTraceEach() && n.Concurrent && n.parent != nil && !n.OnlyA() && !n.OnlyB() && !d.Moved(n.parent)
}

// Noisy says n changed by the thresholds but within the spread: a change
// the diff does not call a move.
func (d *Diff) Noisy(n *DiffNode) bool { return d.beyondThresholds(n) && d.WithinSpread(n) }

// SmallBase is the baseline under which a change is shown in ms, not %:
// a percentage of a sub-millisecond time says nothing.
const SmallBase = time.Millisecond

// PctShown says whether n's Pct is worth showing: A is at least SmallBase.
func (n *DiffNode) PctShown() bool { return n.A >= SmallBase }

// ProfileSet gathers the profiles of one side of a diff as they are read:
// per path, the values of the traces that have it (24 bytes a path a
// trace), so a set of many traces costs far less than their profiles. The
// zero value is an empty set; it is not safe for concurrent use.
type ProfileSet struct {
	n                int
	roots            []string
	circuit          string // the first profile's cuzk.circuit.id
	size             int64  // ... and its cuzk.circuit.constraints
	mixed, mixedSize error
	runs             SideRuns
	totals, untraced []time.Duration
	paths            map[string]*pathValues
	values           int
}

// SideRuns sums the Runs of one side's traces for a diff's header: each
// field's distinct values in the order first seen.
type SideRuns struct {
	Circuits    []string
	Constraints []int64
	Backends    []string
	Releases    []string
	Hosts       []string
	Builds      []string
	// Failed counts the traces whose job did not succeed; Outcomes lists
	// their distinct Run.Outcome values, Message the first one's message.
	Failed   int
	Outcomes []string
	Message  string
}

func (r *SideRuns) add(run Run) {
	addTo := func(list *[]string, v string) {
		if v != "" && !slices.Contains(*list, v) {
			*list = append(*list, v)
		}
	}
	addTo(&r.Circuits, run.CircuitID)
	if run.Constraints != 0 && !slices.Contains(r.Constraints, run.Constraints) {
		r.Constraints = append(r.Constraints, run.Constraints)
	}
	addTo(&r.Backends, run.Backend)
	for _, m := range run.Releases {
		addTo(&r.Releases, m)
	}
	addTo(&r.Hosts, run.Host)
	addTo(&r.Builds, run.Build)
	if run.Failed() {
		if r.Failed == 0 {
			r.Message = run.Message
		}
		r.Failed++
		addTo(&r.Outcomes, run.Outcome)
	}
}

// Runs returns what the set's traces say of their runs.
func (s *ProfileSet) Runs() SideRuns { return s.runs }

type pathValues struct {
	durs, unts []time.Duration
	counts     []int32
	attrs      map[string]string // one value over every span of the path, all traces so far
	concurrent bool              // PathStat.Concurrent in any trace
}

// concurrent says the path ran beside a sibling in one of s's traces.
func (s *ProfileSet) concurrent(path string) bool {
	v := s.paths[path]
	return v != nil && v.concurrent
}

// Add puts one trace's profile into the set.
func (s *ProfileSet) Add(p Profile) {
	if s.paths == nil {
		s.paths = map[string]*pathValues{}
	}
	s.n++
	if !slices.Contains(s.roots, p.Root) {
		s.roots = append(s.roots, p.Root)
	}
	s.runs.add(p.Run)
	if id := p.Run.CircuitID; id != "" {
		switch {
		case s.circuit == "":
			s.circuit, s.size = id, p.Run.Constraints
		case id != s.circuit && s.mixed == nil:
			s.mixed = fmt.Errorf("mixes circuits %s and %s", s.circuit, id)
		case p.Run.Constraints != s.size && s.mixedSize == nil:
			s.mixedSize = fmt.Errorf("mixes sizes of %s: %d and %d constraints", id, s.size, p.Run.Constraints)
		}
	}
	s.totals = append(s.totals, p.Total)
	var unt time.Duration
	for path, st := range p.paths {
		unt += st.Untraced
		v := s.paths[path]
		if v == nil {
			v = &pathValues{attrs: maps.Clone(st.Attrs)}
			s.paths[path] = v
		} else {
			for k, val := range v.attrs {
				if st.Attrs[k] != val {
					delete(v.attrs, k)
				}
			}
		}
		v.concurrent = v.concurrent || st.Concurrent
		v.durs = append(v.durs, st.Duration)
		v.unts = append(v.unts, st.Untraced)
		v.counts = append(v.counts, int32(st.Count))
		s.values++
	}
	s.untraced = append(s.untraced, unt)
}

// Len is the number of traces in the set; Values the number of (trace,
// path) values it holds, the measure of its memory.
func (s *ProfileSet) Len() int    { return s.n }
func (s *ProfileSet) Values() int { return s.values }

// DiffProfiles compares side A's traces with side B's (one or more each):
// paths matched by name, medians per path on each side, the tree sorted by
// the size of each move, verdict lines for the layers that moved. It
// returns an error wrapping ErrMismatch when the sides (or the traces of
// one side) are of different circuits, or when the sides share no root
// span name; and an error when a side is empty.
func DiffProfiles(a, b []Profile, opts DiffOptions) (*Diff, error) {
	var sa, sb ProfileSet
	for _, p := range a {
		sa.Add(p)
	}
	for _, p := range b {
		sb.Add(p)
	}
	return DiffSets(&sa, &sb, opts)
}

// DiffSets is DiffProfiles over two ProfileSets.
func DiffSets(a, b *ProfileSet, opts DiffOptions) (*Diff, error) {
	switch {
	case opts.Exact:
		opts.ThresholdMS, opts.ThresholdPct = max(opts.ThresholdMS, 0), max(opts.ThresholdPct, 0)
		opts.NoiseFloorPct = max(opts.NoiseFloorPct, 0)
	default:
		if opts.NoiseFloorPct <= 0 {
			opts.NoiseFloorPct = DefaultNoiseFloorPct
		}
		if opts.ThresholdMS <= 0 {
			opts.ThresholdMS = 1
		}
		if opts.ThresholdPct <= 0 {
			opts.ThresholdPct = 5
		}
	}
	if a.n == 0 || b.n == 0 {
		return nil, errors.New("a side has no trace")
	}
	for _, side := range []struct {
		name string
		s    *ProfileSet
	}{{"A", a}, {"B", b}} {
		if side.s.mixed != nil {
			return nil, fmt.Errorf("%w: side %s %v (--circuit picks one)", ErrMismatch, side.name, side.s.mixed)
		}
		if side.s.mixedSize != nil && !opts.Normalize {
			return nil, fmt.Errorf("%w: side %s %v (--constraints picks one, --normalize compares per constraint)", ErrMismatch, side.name, side.s.mixedSize)
		}
	}
	if a.circuit != b.circuit && a.circuit != "" && b.circuit != "" {
		return nil, fmt.Errorf("%w: A is of circuit %s, B of %s", ErrMismatch, a.circuit, b.circuit)
	}
	if a.circuit != "" && b.circuit != "" && a.size != b.size && !opts.Normalize {
		return nil, fmt.Errorf("%w: A is of %d constraints, B of %d (--normalize compares per constraint)", ErrMismatch, a.size, b.size)
	}
	if !slices.ContainsFunc(a.roots, func(r string) bool { return slices.Contains(b.roots, r) }) {
		return nil, fmt.Errorf("%w: no root span in common (A: %s; B: %s)", ErrMismatch, strings.Join(a.roots, ", "), strings.Join(b.roots, ", "))
	}

	d := &Diff{TracesA: a.n, TracesB: b.n, RunsA: a.runs, RunsB: b.runs, opts: opts}
	d.TotalA, d.TotalB = median(slices.Clone(a.totals)), median(slices.Clone(b.totals))
	d.UntracedA, d.UntracedB = median(slices.Clone(a.untraced)), median(slices.Clone(b.untraced))

	paths := map[string]bool{}
	for _, side := range []*ProfileSet{a, b} {
		for path := range side.paths {
			paths[path] = true
		}
	}
	nodes := make(map[string]*DiffNode, len(paths))
	d.byKey = nodes
	sorted := make([]string, 0, len(paths))
	for path := range paths {
		sorted = append(sorted, path)
	}
	sort.Strings(sorted) // parents before children
	for _, path := range sorted {
		n := &DiffNode{Path: strings.ReplaceAll(path, keySep, PathSep), Name: path[strings.LastIndex(path, keySep)+1:], Depth: strings.Count(path, keySep)}
		n.A, n.UntracedA, n.CountA, n.TracesA, n.AttrsA = sideStats(a, path)
		n.B, n.UntracedB, n.CountB, n.TracesB, n.AttrsB = sideStats(b, path)
		n.MinA, n.MaxA = sideRange(a, path)
		n.MinB, n.MaxB = sideRange(b, path)
		n.Concurrent = a.concurrent(path) || b.concurrent(path)
		nodes[path] = n
		if i := strings.LastIndex(path, keySep); i >= 0 {
			if parent := nodes[path[:i]]; parent != nil {
				n.parent = parent
				parent.Children = append(parent.Children, n)
				continue
			}
		}
		d.Roots = append(d.Roots, n)
	}
	bySize := func(x, y *DiffNode) int {
		dx, dy := absDur(x.Delta()), absDur(y.Delta())
		if dx != dy {
			if dx > dy {
				return -1
			}
			return 1
		}
		return strings.Compare(x.Name, y.Name)
	}
	slices.SortFunc(d.Roots, bySize)
	for _, n := range nodes {
		slices.SortFunc(n.Children, bySize)
	}
	for _, side := range []struct {
		name string
		r    SideRuns
		n    int
	}{{"A", a.runs, a.n}, {"B", b.runs, b.n}} {
		if side.r.Failed > 0 {
			d.Failures = append(d.Failures, failedVerdict(side.name, side.r, side.n))
		}
	}
	d.Walk(func(n *DiffNode) {
		if d.Moved(n) && (len(n.Children) > 0 || n.Depth == 0) || slices.ContainsFunc(n.Children, d.Moved) {
			d.Verdicts = append(d.Verdicts, d.verdict(n))
		}
	})
	return d, nil
}

// failedVerdict is the verdict line of a side some of whose jobs did not
// succeed: their times are of runs cut short.
func failedVerdict(side string, r SideRuns, n int) string {
	what := "its job"
	if n > 1 {
		what = fmt.Sprintf("%d of its %d jobs", r.Failed, n)
	}
	msg := ""
	if r.Message != "" {
		msg = ": " + r.Message
	}
	return fmt.Sprintf("%s: %s did not succeed (%s%s); its times are of a run cut short, not comparable", side, what, outcomesText(r.Outcomes), msg)
}

func (d *Diff) verdict(n *DiffNode) string {
	var parts []string
	for _, c := range n.Children {
		if len(parts) == 4 {
			break
		}
		if d.Moved(c) {
			parts = append(parts, c.Name+" "+FormatDelta(c.Delta())+changeNote(c))
		}
	}
	parts = append(parts, "untraced "+FormatDelta(n.UntracedB-n.UntracedA))
	return n.Name + " " + FormatDelta(n.Delta()) + changeNote(n) + ": " + strings.Join(parts, ", ")
}

// changeNote says what else tells the sides apart at n: present on one side
// only, and each attribute whose one value differs between the sides,
// named (for a span on one side only, its *.mode attributes):
// " (cuzk.key.cache_hit: false → true)", " (only on B, cuzk.release.mode:
// sync)", " (only on A)". Ids (keys ending in .id) are left out.
func changeNote(n *DiffNode) string {
	var notes []string
	keys := func(m map[string]string) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	switch {
	case n.OnlyB() || n.OnlyA():
		side, attrs := "B", n.AttrsB
		if n.OnlyA() {
			side, attrs = "A", n.AttrsA
		}
		notes = append(notes, "only on "+side)
		for _, k := range keys(attrs) {
			if strings.HasSuffix(k, ".mode") {
				notes = append(notes, k+": "+attrs[k])
			}
		}
	default:
		for _, k := range keys(n.AttrsB) {
			va, ok := n.AttrsA[k]
			if !ok || va == n.AttrsB[k] || strings.HasSuffix(k, ".id") {
				continue
			}
			notes = append(notes, fmt.Sprintf("%s: %s → %s", k, va, n.AttrsB[k]))
		}
	}
	if len(notes) == 0 {
		return ""
	}
	if len(notes) > 3 {
		notes = notes[:3]
	}
	return " (" + strings.Join(notes, ", ") + ")"
}

// FormatDelta writes a signed duration for people: "+2.0 s", "−350.0 ms",
// "+0.0 ms" (U+2212 for minus).
func FormatDelta(d time.Duration) string {
	sign := "+"
	if d > -50*time.Microsecond && d < 0 {
		d = 0 // prints as 0.0: no "−0.0"
	}
	if d < 0 {
		sign, d = "−", -d
	}
	if d >= time.Second {
		return fmt.Sprintf("%s%.1f s", sign, d.Seconds())
	}
	return fmt.Sprintf("%s%.1f ms", sign, human.Milliseconds(d))
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func sideStats(s *ProfileSet, path string) (dur, untraced time.Duration, count float64, traces int, attrs map[string]string) {
	v := s.paths[path]
	if v == nil {
		return 0, 0, 0, 0, nil
	}
	// The traces without the path count 0.
	pad := func(x []time.Duration) []time.Duration {
		out := make([]time.Duration, s.n)
		copy(out, x)
		return out
	}
	counts := make([]time.Duration, s.n)
	for i, c := range v.counts {
		counts[i] = time.Duration(c)
	}
	return median(pad(v.durs)), median(pad(v.unts)), float64(medianHalf(counts)) / 2, len(v.durs), maps.Clone(v.attrs)
}

// sideRange is the least and the most time of path over s's traces (a
// trace without it counts 0).
func sideRange(s *ProfileSet, path string) (lo, hi time.Duration) {
	v := s.paths[path]
	if v == nil {
		return 0, 0
	}
	lo, hi = slices.Min(v.durs), slices.Max(v.durs)
	if len(v.durs) < s.n {
		lo = 0
	}
	return lo, hi
}

// median of v (v is reordered); the mean of the middle two for an even
// count.
func median(v []time.Duration) time.Duration {
	return medianHalf(v) / 2
}

// medianHalf returns twice the median, exact for integers.
func medianHalf(v []time.Duration) time.Duration {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return 2 * v[len(v)/2]
	}
	return v[len(v)/2-1] + v[len(v)/2]
}
