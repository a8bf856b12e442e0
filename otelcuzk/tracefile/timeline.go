package tracefile

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// TimelineJob is one job on the timeline: an engine.job span (or, in a
// trace without one, a root span) and its direct children as stages.
type TimelineJob struct {
	TraceID string
	Label   string // the job's cuzk.request.id, else cuzk.job.id, else the first 8 digits of the trace id
	Name    string // the job span's name
	Start   time.Time
	End     time.Time
	Error   bool // the job span failed: cancelled (Cancelled) or any other failure
	// Outcome is why a job did not succeed: the error.type of its failed
	// span ("canceled", "device_fault", ...), "error" without one; "" for
	// a job that succeeded.
	Outcome string
	Stages  []TimelineStage // by start
}

// Cancelled says the job was cancelled (error.type canceled), not failed.
func (j TimelineJob) Cancelled() bool { return j.Outcome == semconv.ErrorTypeCanceled }

// status is the job's mark on its row: "", "CANCELLED", or "FAILED (type)".
func (j TimelineJob) status() string {
	if !j.Error {
		return ""
	}
	return OutcomeText(j.Outcome)
}

// OutcomeText says in a job's own words how it ended, from the error.type
// of its failed span: "CANCELLED" for canceled (the job state cuzk status
// and submit print: the attribute's spelling beside it read as two words
// for one), "FAILED" without a type ("error"), else "FAILED (type)".
func OutcomeText(errorType string) string {
	switch errorType {
	case semconv.ErrorTypeCanceled:
		return "CANCELLED"
	case "error", "":
		return "FAILED"
	}
	return "FAILED (" + errorType + ")"
}

// outcomesText is OutcomeText of each of outcomes, joined by ", ".
func outcomesText(outcomes []string) string {
	t := make([]string, len(outcomes))
	for i, o := range outcomes {
		t[i] = OutcomeText(o)
	}
	return strings.Join(t, ", ")
}

// TimelineStage is one direct child of a job's span: engine.queue, a
// budget wait, pipeline.synthesize, gpu.queue, pipeline.prove,
// buffer.release, whatever the engine emits; repeated names stay separate
// segments.
type TimelineStage struct {
	Name  string
	Start time.Time
	End   time.Time
}

// TimelineJobs finds the jobs of traces: in each trace the engine.job
// spans (the shallowest, wherever they are: the root of a cuzk prove
// trace, under the server span in a daemon's). When no trace has one, each
// trace's roots are its jobs; when some do, the traces without one (a
// daemon's status polls and waits) are left out. The stages of a job are
// its span's direct children, the processor's `untraced` spans left out;
// a job of several partitions (engine.partition children) is a row per
// partition, labelled LABEL/pN, its stages the partition's children.
// Jobs come back by start.
func TimelineJobs(traces []Trace) []TimelineJob {
	anyJob := false
	for _, t := range traces {
		t.Walk(func(n *Node) bool {
			anyJob = anyJob || n.Name == semconv.SpanEngineJob
			return !anyJob
		})
	}
	var jobs []TimelineJob
	for _, t := range traces {
		found := jobSpans(t)
		if len(found) == 0 && !anyJob {
			found = t.Roots
		}
		for _, n := range found {
			j := TimelineJob{TraceID: t.ID, Name: n.Name, Start: n.Start, End: n.End, Error: n.Status.Code == StatusError, Label: jobLabel(t.ID, n)}
			if j.Error {
				j.Outcome = "error"
				if et, ok := n.Attrs[string(semconv.KeyErrorType)].(string); ok && et != "" {
					j.Outcome = et
				}
			}
			if parts := partitionSpans(n); len(parts) > 0 {
				// A multi-partition request: a row per partition, so that
				// one partition's synthesis under another's prove shows.
				for i, p := range parts {
					pj := j
					idx := fmt.Sprint(i)
					if v, ok := p.Attrs[string(semconv.KeyPartitionIndex)]; ok {
						idx = fmt.Sprint(v)
					}
					pj.Label, pj.Start, pj.End, pj.Stages = j.Label+"/p"+idx, p.Start, p.End, stagesOf(p)
					jobs = append(jobs, pj)
				}
				continue
			}
			j.Stages = stagesOf(n)
			jobs = append(jobs, j)
		}
	}
	slices.SortStableFunc(jobs, func(a, b TimelineJob) int { return a.Start.Compare(b.Start) })
	return jobs
}

// stagesOf is n's direct children as stages, the untraced spans left out.
func stagesOf(n *Node) []TimelineStage {
	var st []TimelineStage
	for _, c := range n.Children {
		if c.Name != semconv.SpanUntraced {
			st = append(st, TimelineStage{Name: c.Name, Start: c.Start, End: c.End})
		}
	}
	return st
}

// partitionSpans is the engine.partition children of job span n, by start.
func partitionSpans(n *Node) []*Node {
	var parts []*Node
	for _, c := range n.Children {
		if c.Name == semconv.SpanEnginePartition {
			parts = append(parts, c)
		}
	}
	slices.SortStableFunc(parts, func(a, b *Node) int { return a.Start.Compare(b.Start) })
	return parts
}

func jobLabel(traceID string, n *Node) string {
	for _, k := range []string{string(semconv.KeyRequestID), string(semconv.KeyJobID)} {
		if v, ok := n.Attrs[k].(string); ok && v != "" {
			return v
		}
	}
	return traceID[:min(8, len(traceID))]
}

// StageStats sums one stage name over the jobs of a timeline.
type StageStats struct {
	Name          string
	Spans         int           // segments of this name
	Total         time.Duration // summed
	Busy          time.Duration // the union of the segments: time at least one job was in the stage
	MaxConcurrent int           // most jobs in the stage at one instant
}

// TimelineStats returns the stats of every stage name, in order of first
// start. Busy over the timeline's extent is how much of the time the
// stage's resource (the device, for pipeline.prove) was in use.
func TimelineStats(jobs []TimelineJob) []StageStats {
	type ev struct {
		at    time.Time
		delta int
	}
	idx := map[string]int{}
	var out []StageStats
	var segs [][]TimelineStage
	for _, j := range jobs {
		for _, s := range j.Stages {
			i, ok := idx[s.Name]
			if !ok {
				i = len(out)
				idx[s.Name] = i
				out = append(out, StageStats{Name: s.Name})
				segs = append(segs, nil)
			}
			out[i].Spans++
			out[i].Total += s.End.Sub(s.Start)
			segs[i] = append(segs[i], s)
		}
	}
	for i, ss := range segs {
		var evs []ev
		var ivs []otelcuzk.Interval
		for _, s := range ss {
			evs = append(evs, ev{s.Start, 1}, ev{s.End, -1})
			ivs = append(ivs, otelcuzk.Interval{Start: s.Start, End: s.End})
		}
		// Ends before starts at the same instant: back-to-back jobs are
		// not concurrent.
		slices.SortFunc(evs, func(a, b ev) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return a.delta - b.delta
		})
		cur := 0
		for _, e := range evs {
			cur += e.delta
			out[i].MaxConcurrent = max(out[i].MaxConcurrent, cur)
		}
		out[i].Busy = coveredBy(ivs)
	}
	return out
}

// coveredBy is the length of the union of ivs.
func coveredBy(ivs []otelcuzk.Interval) time.Duration {
	if len(ivs) == 0 {
		return 0
	}
	lo, hi := ivs[0].Start, ivs[0].End
	for _, iv := range ivs {
		if iv.Start.Before(lo) {
			lo = iv.Start
		}
		if iv.End.After(hi) {
			hi = iv.End
		}
	}
	gap, _ := otelcuzk.Uncovered(otelcuzk.Interval{Start: lo, End: hi}, ivs)
	return hi.Sub(lo) - gap
}

// TimelineOptions controls WriteTimeline. The zero value draws 60 cells.
type TimelineOptions struct {
	Width int  // cells of the time axis; 0 means 60
	ASCII bool // '-' for a job's time outside its stages instead of '·'
}

// stageLetters gives each stage name a letter for the text timeline: the
// first free one of its last dotted part (queue → q, synthesize → s,
// prove → p, release → r), then of the whole name, then any free one.
func stageLetters(stats []StageStats) map[string]byte {
	used := map[byte]bool{}
	out := map[string]byte{}
	for _, s := range stats {
		last := s.Name[strings.LastIndex(s.Name, ".")+1:]
		cands := strings.ToLower(last+s.Name+"abcdefghijklmnopqrstuvwxyz") + strings.ToUpper(last+s.Name+"abcdefghijklmnopqrstuvwxyz") + "0123456789"
		for i := 0; i < len(cands); i++ {
			c := cands[i]
			if (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') && !used[c] {
				used[c], out[s.Name] = true, c
				break
			}
		}
		if _, ok := out[s.Name]; !ok {
			out[s.Name] = '#'
		}
	}
	return out
}

// WriteTimeline draws jobs on one time axis, one row per job: its start
// and duration in ms from the first job's start, then a bar of
// opts.Width cells where each cell shows the letter of the stage that
// covers most of it (a legend names them; '·' is the job's own time between
// stages; a stage shorter than half a cell may not show). Below, per stage:
// segments, summed ms, busy ms and % of the timeline (the union over jobs)
// and the most jobs in it at once, which is where N concurrent jobs show
// their overlap (pipeline.synthesize at 3 at once while pipeline.prove
// stays at 1 is a pipelined engine). It returns the first write error, or
// an error for no jobs.
func WriteTimeline(w io.Writer, jobs []TimelineJob, opts TimelineOptions) error {
	if len(jobs) == 0 {
		return fmt.Errorf("timeline: no jobs")
	}
	if opts.Width <= 0 {
		opts.Width = 60
	}
	gapMark := "·"
	if opts.ASCII {
		gapMark = "-"
	}
	t0, t1 := jobs[0].Start, jobs[0].End
	for _, j := range jobs {
		t1 = later(t1, j.End)
		for _, s := range j.Stages {
			t1 = later(t1, s.End)
		}
	}
	span := t1.Sub(t0)
	stats := TimelineStats(jobs)
	letters := stageLetters(stats)
	ew := &errWriter{w: w}
	ew.printf("timeline  %d job%s  %.3f ms  (%d cells of %.3f ms)\n", len(jobs), human.Plural(len(jobs)), human.Milliseconds(span), opts.Width, human.Milliseconds(span)/float64(opts.Width))
	var legend []string
	for _, s := range stats {
		legend = append(legend, fmt.Sprintf("%c %s", letters[s.Name], s.Name))
	}
	ew.printf("stages: %s  %s between stages\n", strings.Join(legend, "  "), gapMark)
	cancelled, failed := 0, 0
	for _, j := range jobs {
		switch {
		case j.Cancelled():
			cancelled++
		case j.Error:
			failed++
		}
	}
	if cancelled+failed > 0 {
		ew.printf("jobs: %d cancelled (CANCELLED), %d failed (FAILED, with its error.type)\n", cancelled, failed)
	}
	labelW := 8
	for _, j := range jobs {
		labelW = max(labelW, min(len(j.Label), 24))
	}
	ew.printf("%-*s %10s %10s  %s\n", labelW, "request", "start ms", "dur ms", "timeline")
	cellLen := span / time.Duration(opts.Width)
	for _, j := range jobs {
		cells := make([]string, opts.Width)
		blank, most, mostCov := true, 0, time.Duration(-1)
		for i := range cells {
			c0 := t0.Add(time.Duration(i) * cellLen)
			c1 := c0.Add(cellLen)
			if i == opts.Width-1 {
				c1 = t1
			}
			cells[i] = cellMark(j, c0, c1, letters, gapMark)
			blank = blank && cells[i] == " "
			if cov := overlapOf(j.Start, j.End, c0, c1); cov > mostCov {
				most, mostCov = i, cov
			}
		}
		if blank {
			// A job narrower than half a cell that straddles two (795 ms
			// in cells of 1 s) covers half of neither: it is drawn in the
			// cell it covers most, as if it were all inside it.
			c0 := t0.Add(time.Duration(most) * cellLen)
			cells[most] = cellMark(TimelineJob{Start: c0, End: c0, Stages: squeeze(j.Stages, c0)}, c0, c0.Add(cellLen), letters, gapMark)
		}
		label := j.Label
		if len(label) > labelW {
			// Both ends: request ids differ at their end ("submit-<ns>"),
			// and a partition's row ends in /pN.
			label = label[:labelW-8] + ".." + label[len(label)-6:]
		}
		suffix := ""
		if st := j.status(); st != "" {
			suffix = "  " + st
		}
		ew.printf("%-*s %10.3f %10.3f  |%s|%s\n", labelW, label, human.Milliseconds(j.Start.Sub(t0)), human.Milliseconds(j.End.Sub(j.Start)), strings.Join(cells, ""), suffix)
	}
	ew.printf("%-24s %6s %12s %12s %7s %s\n", "stage", "spans", "total ms", "busy ms", "busy %", "max at once")
	for _, s := range stats {
		share := 0.0
		if span > 0 {
			share = 100 * float64(s.Busy) / float64(span)
		}
		ew.printf("%-24s %6d %12.3f %12.3f %6.1f%% %d\n", fmt.Sprintf("%c %s", letters[s.Name], s.Name), s.Spans, human.Milliseconds(s.Total), human.Milliseconds(s.Busy), share, s.MaxConcurrent)
	}
	if ew.err != nil {
		return fmt.Errorf("write timeline: %w", ew.err)
	}
	return nil
}

// overlapOf is the length of [a, b) within [c0, c1).
func overlapOf(a, b, c0, c1 time.Time) time.Duration {
	lo, hi := later(a, c0), earlier(b, c1)
	if hi.Before(lo) {
		return 0
	}
	return hi.Sub(lo)
}

// squeeze keeps the stage that lasts longest, as a zero-length stage at
// at, so cellMark draws its letter in a cell the job is placed in whole.
func squeeze(stages []TimelineStage, at time.Time) []TimelineStage {
	var best *TimelineStage
	for i := range stages {
		if best == nil || stages[i].End.Sub(stages[i].Start) > best.End.Sub(best.Start) {
			best = &stages[i]
		}
	}
	if best == nil {
		return nil
	}
	return []TimelineStage{{Name: best.Name, Start: at, End: at}}
}

// cellMark is what one cell [c0, c1) of job j's row shows: nothing when
// the job covers less than half of it (unless the whole job is inside it),
// else the letter of the stage that covers most of the job's part of the
// cell when that is at least half of it, else gapMark (the job's own time
// between stages).
func cellMark(j TimelineJob, c0, c1 time.Time, letters map[string]byte, gapMark string) string {
	overlap := func(a, b time.Time) time.Duration {
		lo, hi := later(a, c0), earlier(b, c1)
		if hi.Before(lo) {
			return 0
		}
		return hi.Sub(lo)
	}
	jobCov := overlap(j.Start, j.End)
	inside := !j.Start.Before(c0) && !j.End.After(c1)
	if jobCov <= 0 && !(inside && !j.Start.Equal(c1)) || (2*jobCov < c1.Sub(c0) && !inside) {
		return " "
	}
	best, bestCov := "", time.Duration(-1)
	for _, s := range j.Stages {
		if cov := overlap(s.Start, s.End); cov > bestCov && (cov > 0 || s.Start.Equal(s.End) && inside) {
			best, bestCov = string(letters[s.Name]), cov
		}
	}
	if best != "" && 2*bestCov >= jobCov {
		return best
	}
	return gapMark
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

//go:embed timeline.html
var timelineHTML string

type timelineDoc struct {
	DurationMS float64            `json:"duration_ms"`
	Jobs       []timelineJobJSON  `json:"jobs"`
	Stages     []timelineStatJSON `json:"stages"`
}

type timelineJobJSON struct {
	TraceID    string              `json:"trace_id"`
	Label      string              `json:"label"`
	Name       string              `json:"name"`
	StartMS    float64             `json:"start_ms"`
	DurationMS float64             `json:"duration_ms"`
	Error      bool                `json:"error,omitempty"`
	Cancelled  bool                `json:"cancelled,omitempty"` // an error that is a cancel
	Outcome    string              `json:"outcome,omitempty"`   // error.type of a job that did not succeed
	Stages     []timelineStageJSON `json:"stages"`
}

type timelineStageJSON struct {
	Name       string  `json:"name"`
	StartMS    float64 `json:"start_ms"` // from the first job's start
	DurationMS float64 `json:"duration_ms"`
}

type timelineStatJSON struct {
	Name          string  `json:"name"`
	Spans         int     `json:"spans"`
	TotalMS       float64 `json:"total_ms"`
	BusyMS        float64 `json:"busy_ms"`
	MaxConcurrent int     `json:"max_concurrent"`
}

// WriteTimelineHTML writes jobs as one self-contained HTML page: the time
// axis of WriteTimeline with one row per job and its stages as coloured
// segments (one colour per stage name, a legend, the name and times on
// hover), and the per-stage table. The data travels as JSON in the page;
// it needs no network. It returns an error for no jobs or when w fails.
func WriteTimelineHTML(w io.Writer, jobs []TimelineJob) error {
	if len(jobs) == 0 {
		return fmt.Errorf("timeline HTML: no jobs")
	}
	t0, t1 := jobs[0].Start, jobs[0].End
	for _, j := range jobs {
		t1 = later(t1, j.End)
		for _, s := range j.Stages {
			t1 = later(t1, s.End)
		}
	}
	doc := timelineDoc{DurationMS: human.Milliseconds(t1.Sub(t0))}
	for _, j := range jobs {
		jj := timelineJobJSON{TraceID: j.TraceID, Label: j.Label, Name: j.Name, StartMS: human.Milliseconds(j.Start.Sub(t0)), DurationMS: human.Milliseconds(j.End.Sub(j.Start)), Error: j.Error, Cancelled: j.Cancelled(), Outcome: j.Outcome, Stages: []timelineStageJSON{}}
		for _, s := range j.Stages {
			jj.Stages = append(jj.Stages, timelineStageJSON{Name: s.Name, StartMS: human.Milliseconds(s.Start.Sub(t0)), DurationMS: human.Milliseconds(s.End.Sub(s.Start))})
		}
		doc.Jobs = append(doc.Jobs, jj)
	}
	for _, s := range TimelineStats(jobs) {
		doc.Stages = append(doc.Stages, timelineStatJSON{Name: s.Name, Spans: s.Spans, TotalMS: human.Milliseconds(s.Total), BusyMS: human.Milliseconds(s.Busy), MaxConcurrent: s.MaxConcurrent})
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("timeline HTML: %w", err)
	}
	page := htmlPage{timelineHTML, "timeline-data", "the timeline"}.render(fmt.Sprintf("timeline of %d job%s", len(jobs), human.Plural(len(jobs))), data)
	if _, err := io.WriteString(w, page); err != nil {
		return fmt.Errorf("write timeline HTML: %w", err)
	}
	return nil
}
