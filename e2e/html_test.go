package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromiumBinary finds headless-capable Chromium. It skips the test when
// there is none, except in CI (CI set), where .ci/run installs it and its
// absence is a failure.
func chromiumBinary(t testing.TB) string {
	t.Helper()
	for _, name := range []string{os.Getenv("OTELCUZK_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium not found (apt-get install -y chromium)")
	}
	t.Skip("chromium not found and not in CI")
	return ""
}

// chromium runs headless Chromium on a local file with the given mode
// flags (--dump-dom or --screenshot=...), offline and without a profile,
// and returns its stdout.
func chromium(t testing.TB, bin string, mode []string, page string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(),
	}, mode...)
	args = append(args, "file://"+page)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", mode, err, tail([]byte(stderr.String()), 2048))
	}
	return string(out)
}

// TestTraceHTMLRendersEverySpanInChromium: `cuzk trace ID --jaeger URL
// --html FILE` on a real trace in Jaeger writes a page that headless
// Chromium renders (its script ran: every span is a row, the untraced span
// is marked) with no network.
func TestTraceHTMLRendersEverySpanInChromium(t *testing.T) {
	browser := chromiumBinary(t)
	j := startJaeger(t)
	service := fmt.Sprintf("e2e-html-%d", time.Now().UnixNano())
	out, _ := runProgram(t, time.Minute, j.otlpEnv("http/protobuf", service), gapspanBin(t))
	id := strings.TrimSpace(out)
	spans := traceOf(t, j, id, "e2e.gap", "e2e.before", "e2e.after", "untraced")

	dir := t.TempDir()
	page := filepath.Join(dir, "trace.html")
	stdout, _ := runProgram(t, time.Minute, nil, cuzkBin(t), "trace", id, "--jaeger", j.QueryURL(), "--html", page)
	for _, s := range spans {
		if !strings.Contains(stdout, s.Name) {
			t.Errorf("waterfall lacks %s:\n%s", s.Name, stdout)
		}
	}
	// The page needs nothing from the network: Jaeger is gone when
	// Chromium opens it.
	j.Stop()

	dom := chromium(t, browser, []string{"--dump-dom"}, page)
	rows := regexp.MustCompile(`<tr class="span-row[^"]*" data-span-id="([0-9a-f]{16})" data-name="([^"]+)"`).FindAllStringSubmatch(dom, -1)
	if len(rows) != len(spans) {
		t.Fatalf("rendered %d span rows, want %d (the script did not run?)\n%s", len(rows), len(spans), tail([]byte(dom), 3000))
	}
	rendered := map[string]string{}
	for _, r := range rows {
		rendered[r[1]] = r[2]
	}
	for _, s := range spans {
		if rendered[s.SpanID] != s.Name {
			t.Errorf("span %s (%s) rendered as %q", s.SpanID, s.Name, rendered[s.SpanID])
		}
	}
	if !strings.Contains(dom, `class="span-row untraced"`) {
		t.Error("the untraced span is not marked")
	}
	if !strings.Contains(dom, fmt.Sprintf(`data-rendered-spans="%d"`, len(spans))) {
		t.Error("the script did not finish")
	}
	if !strings.Contains(dom, `data-layer="e2e.gap"`) {
		t.Error("no summary row for e2e.gap")
	}

	screenshot(t, browser, page, filepath.Join(dir, "trace.png"), "1400,600")
}

// screenshot renders page in headless Chromium in a window of size ("W,H")
// into the PNG shot, which must hold more than a blank page (5 kB), and
// copies both into $OTELCUZK_E2E_KEEP when it is set.
func screenshot(t *testing.T, browser, page, shot, size string) {
	t.Helper()
	chromium(t, browser, []string{"--screenshot=" + shot, "--window-size=" + size, "--hide-scrollbars"}, page)
	if st, err := os.Stat(shot); err != nil || st.Size() < 5000 {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	if keep := os.Getenv("OTELCUZK_E2E_KEEP"); keep != "" {
		os.MkdirAll(keep, 0o755)
		for _, f := range []string{page, shot} {
			if b, err := os.ReadFile(f); err == nil {
				os.WriteFile(filepath.Join(keep, filepath.Base(f)), b, 0o644)
			}
		}
	}
}

// otlpLine writes spans (name, id, parent id, start and end in ms, string
// attributes) of one trace as one OTLP JSON line, as otelcuzk's file
// exporter writes it.
func otlpLine(trace string, spans ...[]string) string {
	const t0 = 1764400000000000000
	var parts []string
	for _, s := range spans {
		var start, end float64
		fmt.Sscan(s[3], &start)
		fmt.Sscan(s[4], &end)
		p := fmt.Sprintf(`{"traceId":"%s","spanId":"%s","name":"%s","kind":1,"startTimeUnixNano":"%d","endTimeUnixNano":"%d"`, trace, s[1], s[0], t0+int64(start*1e6), t0+int64(end*1e6))
		if s[2] != "" {
			p += fmt.Sprintf(`,"parentSpanId":"%s"`, s[2])
		}
		var attrs []string
		for i := 5; i+1 < len(s); i += 2 {
			attrs = append(attrs, fmt.Sprintf(`{"key":"%s","value":{"stringValue":"%s"}}`, s[i], s[i+1]))
		}
		if len(attrs) > 0 {
			p += `,"attributes":[` + strings.Join(attrs, ",") + `]`
		}
		parts = append(parts, p+"}")
	}
	return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"cuzk"}}]},"scopeSpans":[{"spans":[` + strings.Join(parts, ",") + `]}]}]}`
}

// TestTraceDiffHTMLMarksMovedSpansInChromium: `cuzk trace diff A B --html
// FILE` on the seed's story (synthesis 3.5 s faster; the release inside
// the prove on B only, 2 s) writes a page that headless Chromium renders
// with no network: both waterfalls drawn, on one axis (B's shorter root
// ends before A's), B's prove and its release marked slower, the release
// marked one-side-only, the verdicts listed.
func TestTraceDiffHTMLMarksMovedSpansInChromium(t *testing.T) {
	browser := chromiumBinary(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	os.WriteFile(a, []byte(otlpLine("0af7651916cd43dd8448eb211c80319c",
		[]string{"engine.job", "0000000000000001", "", "0", "19300", "cuzk.circuit.id", "merkle"},
		[]string{"pipeline.synthesize", "0000000000000002", "0000000000000001", "100", "10100"},
		[]string{"pipeline.prove", "0000000000000003", "0000000000000001", "10100", "15100"},
		[]string{"groth16.prove", "0000000000000004", "0000000000000003", "10150", "15050"},
		[]string{"buffer.release", "0000000000000005", "0000000000000001", "15200", "19200", "cuzk.release.mode", "async"},
	)+"\n"), 0o644)
	os.WriteFile(b, []byte(otlpLine("4bf92f3577b34da6a3ce929d0e0e4736",
		[]string{"engine.job", "0000000000000001", "", "0", "13650", "cuzk.circuit.id", "merkle"},
		[]string{"pipeline.synthesize", "0000000000000002", "0000000000000001", "100", "6600"},
		[]string{"pipeline.prove", "0000000000000003", "0000000000000001", "6600", "13600"},
		[]string{"groth16.prove", "0000000000000004", "0000000000000003", "6650", "11550"},
		[]string{"buffer.release", "0000000000000005", "0000000000000003", "11600", "13600", "cuzk.release.mode", "sync"},
	)+"\n"), 0o644)
	page := filepath.Join(dir, "diff.html")
	stdout, _ := runProgram(t, time.Minute, nil, cuzkBin(t), "trace", "diff", a, b, "--threshold-ms", "100", "--html", page)
	if !strings.Contains(stdout, "pipeline.prove +2.0 s: buffer.release +2.0 s (only on B, cuzk.release.mode: sync)") {
		t.Errorf("no verdict naming the release:\n%s", stdout)
	}

	dom := chromium(t, browser, []string{"--dump-dom"}, page)
	if !strings.Contains(dom, `data-rendered="a:5 b:5"`) {
		t.Fatalf("the script did not draw 5 rows a side:\n%s", tail([]byte(dom), 3000))
	}
	row := func(side, path string) string {
		m := regexp.MustCompile(`<tr class="([^"]*)" data-side="` + side + `" data-path="` + regexp.QuoteMeta(path) + `" data-bar-end="([0-9.]+)"`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("no row for %s %s", side, path)
		}
		return m[1] + " end=" + m[2]
	}
	for _, c := range []struct{ side, path, want string }{
		{"a", "engine.job", "span-row moved faster end=100.0"},
		{"b", "engine.job", "span-row moved faster end=70.7"}, // one axis: 13650 of 19300 ms
		{"b", "engine.job/pipeline.prove", "span-row moved slower end=70.5"},
		{"b", "engine.job/pipeline.prove/buffer.release", "span-row moved slower only end=70.5"},
		{"a", "engine.job/buffer.release", "span-row moved faster only end=99.5"},
		{"b", "engine.job/pipeline.prove/groth16.prove", "span-row end=59.8"},
	} {
		if got := row(c.side, c.path); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.side, c.path, got, c.want)
		}
	}
	if !strings.Contains(dom, "<li>pipeline.prove +2.0 s: buffer.release +2.0 s (only on B, cuzk.release.mode: sync), untraced +0.0 ms</li>") {
		t.Error("the verdict is not listed")
	}
	screenshot(t, browser, page, filepath.Join(dir, "diff.png"), "1600,500")
}

// TestTraceTimelineHTMLDrawsEveryJobInChromium: `cuzk trace FILE
// --timeline --html FILE` on three overlapping jobs writes a page that
// headless Chromium renders offline: a row per job, each stage a segment
// at its place on the one axis, the stage table with the overlap.
func TestTraceTimelineHTMLDrawsEveryJobInChromium(t *testing.T) {
	browser := chromiumBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "jobs.jsonl")
	var lines []string
	for i := range 3 {
		off := float64(i) * 500
		at := func(ms float64) string { return fmt.Sprint(off + ms) }
		lines = append(lines, otlpLine(fmt.Sprintf("%032x", i+1),
			[]string{"engine.job", "0000000000000001", "", at(0), at(1500), "cuzk.job.id", fmt.Sprintf("job-%d", i+1)},
			[]string{"engine.queue", "0000000000000002", "0000000000000001", at(0), at(100)},
			[]string{"pipeline.synthesize", "0000000000000003", "0000000000000001", at(100), at(1000)},
			[]string{"pipeline.prove", "0000000000000004", "0000000000000001", at(1000), at(1500)},
		))
	}
	os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	page := filepath.Join(dir, "timeline.html")
	runProgram(t, time.Minute, nil, cuzkBin(t), "trace", file, "--timeline", "--html", page)

	dom := chromium(t, browser, []string{"--dump-dom"}, page)
	if !strings.Contains(dom, `data-rendered="jobs:3 segments:9"`) {
		t.Fatalf("the script did not draw 3 jobs of 3 stages:\n%s", tail([]byte(dom), 3000))
	}
	starts := regexp.MustCompile(`data-stage="pipeline.prove" data-start="([0-9.]+)"`).FindAllStringSubmatch(dom, -1)
	var got []string
	for _, m := range starts {
		got = append(got, m[1])
	}
	// 1000, 1500 and 2000 ms of a 2500 ms axis.
	if strings.Join(got, " ") != "40.0 60.0 80.0" {
		t.Errorf("prove segments start at %v %% of the axis, want 40.0 60.0 80.0", got)
	}
	if !regexp.MustCompile(`<tr data-stage="pipeline.synthesize">.*?<td class="num max">2</td>`).MatchString(dom) {
		t.Error("the stage table does not show two syntheses at once")
	}
	screenshot(t, browser, page, filepath.Join(dir, "timeline.png"), "1400,400")
}
