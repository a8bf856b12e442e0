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

	shot := filepath.Join(dir, "trace.png")
	chromium(t, browser, []string{"--screenshot=" + shot, "--window-size=1400,600", "--hide-scrollbars"}, page)
	st, err := os.Stat(shot)
	if err != nil || st.Size() < 5000 {
		t.Fatalf("screenshot %s: %v (size %d)", shot, err, st.Size())
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
