package tracefile_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

// pipelinedJobs are three jobs of a pipelined engine with two synthesis
// slots and one device: jobs 1 and 2 synthesize together, job 3 waits for
// a slot; job 2 waits for the device (gpu.queue) while job 1 proves; the
// proves run back to back. Job 2's engine.job is under a server span.
func pipelinedJobs() []tracefile.Trace {
	job := func(trace string, server bool, stages [][3]any, end float64) []tracefile.Span {
		specs := []spanSpec{{-1, "engine.job", stages[0][1].(float64), end, map[string]any{"cuzk.job.id": "job-" + trace[31:]}}}
		if server {
			specs = []spanSpec{{-1, "cuzk.v1.ProvingEngine/Prove", 0, end + 1, nil}, {0, "engine.job", stages[0][1].(float64), end, map[string]any{"cuzk.job.id": "job-" + trace[31:]}}}
		}
		root := len(specs) - 1
		for _, s := range stages {
			specs = append(specs, spanSpec{root, s[0].(string), s[1].(float64), s[2].(float64), nil})
		}
		specs = append(specs, spanSpec{root, "untraced", 0, 1, nil})
		return buildSpans(trace, specs)
	}
	var spans []tracefile.Span
	spans = append(spans, job(tid32(0), false, [][3]any{{"engine.queue", 0.0, 10.0}, {"pipeline.synthesize", 10.0, 1010.0}, {"gpu.queue", 1010.0, 1010.0}, {"pipeline.prove", 1010.0, 1510.0}, {"buffer.release", 1510.0, 1600.0}}, 1600)...)
	spans = append(spans, job(tid32(1), true, [][3]any{{"engine.queue", 5.0, 15.0}, {"pipeline.synthesize", 15.0, 1015.0}, {"gpu.queue", 1015.0, 1510.0}, {"pipeline.prove", 1510.0, 2010.0}}, 2010)...)
	spans = append(spans, job(tid32(2), false, [][3]any{{"engine.queue", 8.0, 1010.0}, {"pipeline.synthesize", 1010.0, 2010.0}, {"pipeline.prove", 2010.0, 2510.0}, {"buffer.release", 2510.0, 2600.0}}, 2600)...)
	return tracefile.BuildTraces(spans)
}

// Each job is a row with its direct children as stages, wherever its
// engine.job is; the stats show the overlap: two synthesizing at once, the
// device never shared, busy 1.5 s of 2.6.
func TestTimelineJobsAndStageOverlap(t *testing.T) {
	jobs := tracefile.TimelineJobs(pipelinedJobs())
	if len(jobs) != 3 || jobs[1].Label != "job-2" || jobs[1].Name != "engine.job" || len(jobs[1].Stages) != 4 {
		t.Fatalf("jobs %+v", jobs)
	}
	for _, j := range jobs {
		for _, s := range j.Stages {
			if s.Name == "untraced" {
				t.Error("an untraced span became a stage")
			}
		}
	}
	stats := map[string]tracefile.StageStats{}
	for _, s := range tracefile.TimelineStats(jobs) {
		stats[s.Name] = s
	}
	if s := stats["pipeline.synthesize"]; s.MaxConcurrent != 2 || s.Spans != 3 || s.Total != 3000*time.Millisecond || s.Busy != 2000*time.Millisecond {
		t.Errorf("synthesize %+v, want 3 spans, 3 s, busy 2 s, 2 at once", s)
	}
	if s := stats["pipeline.prove"]; s.MaxConcurrent != 1 || s.Busy != 1500*time.Millisecond {
		t.Errorf("prove %+v, want 1 at once (back to back), busy 1.5 s", s)
	}
	if s := stats["engine.queue"]; s.MaxConcurrent != 3 {
		t.Errorf("queue %+v, want 3 at once", s)
	}

	var out bytes.Buffer
	if err := tracefile.WriteTimeline(&out, jobs, tracefile.TimelineOptions{Width: 26, ASCII: true}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"timeline  3 jobs  2600.000 ms  (26 cells of 100.000 ms)",
		"stages: q engine.queue  s pipeline.synthesize  u gpu.queue  p pipeline.prove  r buffer.release  - between stages",
		// 100 ms a cell: synthesis over the queue's first cell, the
		// zero-length gpu.queue under the prove that starts with it.
		"job-1         0.000   1600.000  |sssssssssspppppr          |",
		"job-2         5.000   2005.000  |ssssssssssuuuuuppppp      |",
		"job-3         8.000   2592.000  |qqqqqqqqqqsssssssssspppppr|",
		"p pipeline.prove              3     1500.000     1500.000   57.7% 1",
		"s pipeline.synthesize         3     3000.000     2000.000   76.9% 2",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("timeline lacks %q:\n%s", want, text)
		}
	}
	if err := tracefile.WriteTimeline(&out, nil, tracefile.TimelineOptions{}); err == nil {
		t.Error("no jobs gave no error")
	}

	var page bytes.Buffer
	if err := tracefile.WriteTimelineHTML(&page, jobs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"label":"job-2"`, `"name":"gpu.queue","start_ms":1015,"duration_ms":495`, `"max_concurrent":2`, "<!DOCTYPE html>"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("HTML lacks %s", want)
		}
	}
}

// A trace without engine.job is drawn by its roots' children.
func TestTimelineWithoutEngineJobUsesRoots(t *testing.T) {
	traces := tracefile.BuildTraces(buildSpans(traceA, []spanSpec{{-1, "e2e.gap", 0, 100, nil}, {0, "e2e.before", 0, 10, nil}, {0, "e2e.after", 90, 100, nil}}))
	jobs := tracefile.TimelineJobs(traces)
	if len(jobs) != 1 || jobs[0].Name != "e2e.gap" || len(jobs[0].Stages) != 2 || jobs[0].Label != traceA[:8] {
		t.Errorf("jobs %+v", jobs)
	}
}

// Beside jobs, a daemon's file holds its status polls: they are no rows.
func TestTimelineLeavesOutTracesWithoutAJob(t *testing.T) {
	traces := pipelinedJobs()
	traces = append(traces, tracefile.BuildTraces(buildSpans(traceB, []spanSpec{{-1, "cuzk.v1.ProvingEngine/GetStatus", 5, 6, nil}}))...)
	if jobs := tracefile.TimelineJobs(traces); len(jobs) != 3 {
		t.Errorf("%d jobs, want the 3 with engine.job", len(jobs))
	}
}

// Rows are labelled by request id; a cancel is marked apart from a
// failure (text, and HTML with a legend); a job narrower than half a cell
// that straddles two cells (795 ms in cells of 1 s) is still drawn.
func TestTimelineLabelsCancelsAndNarrowJobs(t *testing.T) {
	job := func(trace, req string, start, end float64, status tracefile.Status, errType string) []tracefile.Span {
		attrs := map[string]any{"cuzk.request.id": req, "cuzk.job.id": "job-" + req}
		if errType != "" {
			attrs["error.type"] = errType
		}
		spans := buildSpans(trace, []spanSpec{{-1, "engine.job", start, end, attrs}, {0, "pipeline.prove", start, end, nil}})
		spans[0].Status = status
		return spans
	}
	var spans []tracefile.Span
	spans = append(spans, job(tid32(0), "req-long", 0, 20000, tracefile.Status{}, "")...)
	spans = append(spans, job(tid32(1), "req-narrow", 5600, 6395, tracefile.Status{}, "")...) // 795 ms over the 5–6 s and 6–7 s cells
	spans = append(spans, job(tid32(2), "req-cancel", 8000, 9000, tracefile.Status{Code: tracefile.StatusError, Message: "cancelled"}, "canceled")...)
	spans = append(spans, job(tid32(3), "req-fault", 10000, 12000, tracefile.Status{Code: tracefile.StatusError, Message: "sticky"}, "device_fault")...)
	jobs := tracefile.TimelineJobs(tracefile.BuildTraces(spans))
	if jobs[1].Label != "req-narrow" || !jobs[2].Cancelled() || jobs[3].Cancelled() || jobs[3].Outcome != "device_fault" {
		t.Fatalf("jobs %+v", jobs)
	}
	var out bytes.Buffer
	if err := tracefile.WriteTimeline(&out, jobs, tracefile.TimelineOptions{Width: 20, ASCII: true}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"request      start ms     dur ms  timeline",
		"req-narrow   5600.000    795.000  |     p              |",
		"req-cancel   8000.000   1000.000  |        p           |  CANCELLED",
		"req-fault   10000.000   2000.000  |          pp        |  FAILED (device_fault)",
		"jobs: 1 cancelled (CANCELLED), 1 failed (FAILED, with its error.type)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("timeline lacks %q:\n%s", want, text)
		}
	}
	var page bytes.Buffer
	if err := tracefile.WriteTimelineHTML(&page, jobs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"label":"req-cancel"`, `"cancelled":true,"outcome":"canceled"`, `"outcome":"device_fault"`, `id="status-legend"`, `tr.cancelled td.label`} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("HTML lacks %s", want)
		}
	}
}

// A two-partition request is one engine.job with two engine.partition
// children: each partition is a row of its own (LABEL/p0, LABEL/p1, by the
// partition index), its stages the partition's children, so partition 1's
// synthesis under partition 0's prove shows on the timeline and in the
// stats (synthesis and prove busy at once).
func TestTimelineDrawsAPartitionARow(t *testing.T) {
	spans := buildSpans(tid32(7), []spanSpec{
		{-1, "engine.job", 0, 2100, map[string]any{"cuzk.request.id": "submit-1796192362908322947"}},
		{0, "engine.partition", 0, 1500, map[string]any{"cuzk.partition.index": int64(0)}},
		{0, "engine.partition", 0, 2100, map[string]any{"cuzk.partition.index": int64(1)}},
		{1, "pipeline.synthesize", 0, 1000, nil},
		{1, "pipeline.prove", 1000, 1500, nil},
		{2, "engine.queue", 0, 1000, nil},
		{2, "pipeline.synthesize", 1000, 1600, nil},
		{2, "pipeline.prove", 1600, 2100, nil},
		{2, "untraced", 0, 1, nil},
	})
	jobs := tracefile.TimelineJobs(tracefile.BuildTraces(spans))
	if len(jobs) != 2 || jobs[0].Label != "submit-1796192362908322947/p0" || jobs[1].Label != "submit-1796192362908322947/p1" {
		t.Fatalf("jobs %+v, want rows LABEL/p0 and LABEL/p1", jobs)
	}
	if len(jobs[0].Stages) != 2 || len(jobs[1].Stages) != 3 || jobs[1].Stages[1].Name != "pipeline.synthesize" {
		t.Fatalf("stages %+v / %+v", jobs[0].Stages, jobs[1].Stages)
	}
	var out bytes.Buffer
	if err := tracefile.WriteTimeline(&out, jobs, tracefile.TimelineOptions{Width: 21, ASCII: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		// a label over 24 characters keeps both ends
		"submit-179619236..947/p0      0.000   1500.000  |ssssssssssppppp      |",
		"submit-179619236..947/p1      0.000   2100.000  |qqqqqqqqqqssssssppppp|",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("timeline lacks %q:\n%s", want, out.String())
		}
	}
}
