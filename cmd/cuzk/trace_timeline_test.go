package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Three jobs of a daemon, each its own trace and line, overlapping:
// `cuzk trace FILE --timeline` draws them on one axis and counts the
// overlap; --html writes the same as a page; bad combinations are refused.
func TestTraceTimeline(t *testing.T) {
	var lines []string
	for i := range 3 {
		off := float64(i) * 500 // a job every 500 ms, each 1500 ms long
		lines = append(lines, otlpLine(fmt.Sprintf("%032x", i+1), []otlpSpan{
			{"0000000000000001", "", "engine.job", off, off + 1500, map[string]string{"cuzk.job.id": fmt.Sprintf("job-%d", i+1)}},
			{"0000000000000002", "0000000000000001", "engine.queue", off, off + 100, nil},
			{"0000000000000003", "0000000000000001", "pipeline.synthesize", off + 100, off + 1000, nil},
			{"0000000000000004", "0000000000000001", "pipeline.prove", off + 1000, off + 1500, nil},
		}))
	}
	file := writeLines(t, "jobs.jsonl", lines...)
	page := filepath.Join(t.TempDir(), "timeline.html")
	out, err := runTraceCmd(t, "trace", file, "--timeline", "--html", page, "--width", "25", "--ascii")
	if err != nil {
		t.Fatalf("--timeline: %v\n%s", err, out)
	}
	for _, want := range []string{
		"timeline  3 jobs  2500.000 ms",
		"job-1         0.000   1500.000  |qsssssssssppppp          |",
		"job-3      1000.000   1500.000  |          qsssssssssppppp|",
		"s pipeline.synthesize         3     2700.000     1900.000   76.0% 2",
		"p pipeline.prove              3     1500.000     1500.000   60.0% 1",
		"HTML timeline: " + page,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), `"label":"job-3"`) {
		t.Errorf("HTML: %v", err)
	}
	for _, args := range [][]string{
		{"trace", file, "--timeline", "--trace-id", "1"},
		{"trace", "0af7651916cd43dd8448eb211c80319c", "--timeline", "--jaeger", "http://127.0.0.1:1"},
	} {
		if _, err := runTraceCmd(t, args...); err == nil || !strings.Contains(err.Error(), "--timeline draws every job of a FILE") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// --last N and --since DURATION pick the jobs drawn (an idle hour before
// them no longer squeezes them into one cell); each needs --timeline and a
// positive value.
func TestTraceTimelineLastAndSince(t *testing.T) {
	var lines []string
	for i, off := range []float64{0, 3_600_000, 3_601_000, 3_602_000} { // one job, an idle hour, three
		lines = append(lines, otlpLine(fmt.Sprintf("%032x", i+1), []otlpSpan{
			{"0000000000000001", "", "engine.job", off, off + 800, map[string]string{"cuzk.request.id": fmt.Sprintf("req-%d", i+1)}},
			{"0000000000000002", "0000000000000001", "pipeline.prove", off, off + 800, nil},
		}))
	}
	file := writeLines(t, "jobs.jsonl", lines...)
	for _, args := range [][]string{{"--last", "3"}, {"--since", "1m"}} {
		out, err := runTraceCmd(t, append([]string{"trace", file, "--timeline", "--width", "28", "--ascii"}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		for _, want := range []string{"timeline  3 jobs  2800.000 ms", "req-2         0.000    800.000  |pppppppp", "the timeline shows 3 of its 4 jobs"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, out)
			}
		}
		if strings.Contains(out, "req-1 ") {
			t.Errorf("%v: the job an hour before is drawn:\n%s", args, out)
		}
	}
	for args, want := range map[string]string{
		"--last 0":             "--last 0: want a positive count of jobs",
		"--since -1s":          "--since -1s: want a positive duration",
		"--last 2 --no-tl":     "--last and --since pick the jobs of --timeline",
		"--since 1ms --no-tl2": "--last and --since pick the jobs of --timeline",
	} {
		a := []string{"trace", file}
		f := strings.Fields(args)
		if !strings.HasPrefix(f[len(f)-1], "--no-tl") {
			a = append(a, "--timeline")
		}
		a = append(a, f[:2]...)
		if _, err := runTraceCmd(t, a...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}
