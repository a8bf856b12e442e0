package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readmeSample returns the README's "A default run" block: the command of
// its first line (after "$ ", before the comment) and the lines it shows
// printed.
func readmeSample(t *testing.T) (command string, lines []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## A default run\n")
	if !ok {
		t.Fatal(`README has no "## A default run" section`)
	}
	_, block, ok := strings.Cut(section, "```\n")
	if !ok {
		t.Fatal(`README's "A default run" has no code block`)
	}
	block, _, _ = strings.Cut(block, "```")
	lines = strings.Split(strings.TrimRight(block, "\n"), "\n")
	first, ok := strings.CutPrefix(lines[0], "$ ")
	if !ok {
		t.Fatalf("the sample's first line %q is not a command ($ ...)", lines[0])
	}
	command, _, _ = strings.Cut(first, "#")
	return strings.TrimSpace(command), lines[1:]
}

// readmeFirstCommand is the first command of the README's first code block
// (the quickstart's), without its comment.
func readmeFirstCommand(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(b), "```sh\n")
	if !ok {
		t.Fatal("README has no sh block")
	}
	first, _, _ := strings.Cut(block, "\n")
	first, _, _ = strings.Cut(first, "#")
	return strings.TrimSpace(first)
}

var (
	sampleBar     = regexp.MustCompile(`\|[^|]*\|`)
	sampleNumber  = regexp.MustCompile(`\b\d+(\.\d+)?\b`)
	sampleTraceID = regexp.MustCompile(`\b[0-9a-f]{32}\b`)
	sampleFigures = regexp.MustCompile(`\s{2,}\d.*$`)
	sampleTimes   = regexp.MustCompile(`×\d+`)
)

// sampleShape is what a line of cuzk prove's output keeps from one run to
// the next: a waterfall row its span's name and depth, a "where the time
// went" row its name and depth, the summary lines their text with the
// run's folder as dir; times, bars and trace ids are dropped. "" for a
// line whose presence depends on the host, its load or the build (the
// backend fallback notice, the circuit cache's note, a gap's untraced
// row).
func sampleShape(line, dir string) string {
	line = strings.TrimRight(line, " ")
	switch {
	case strings.HasPrefix(line, "circuit cache: "), strings.HasPrefix(line, "backend auto: "):
		return ""
	case sampleBar.MatchString(line):
		name := line[sampleBar.FindStringIndex(line)[1]:]
		if strings.TrimSpace(name) == "untraced" {
			return "" // a gap's row: there when the gap is long, which the host's load decides
		}
		return "row " + name
	case strings.HasPrefix(line, "trace ") && strings.Contains(line, " spans "):
		return sampleNumber.ReplaceAllString(sampleTraceID.ReplaceAllString(line, "ID"), "N")
	case strings.HasPrefix(line, "proof "), strings.HasPrefix(line, "trace "):
		return strings.ReplaceAll(sampleTraceID.ReplaceAllString(line, "ID"), dir, "DIR")
	case strings.HasPrefix(line, "  "):
		return "time " + sampleTimes.ReplaceAllString(sampleFigures.ReplaceAllString(line, ""), "×N")
	}
	return line
}

// TestREADMESampleIsTheShapeOfADefaultRun runs the README's first command
// (go run ./cmd/cuzk prove is this run's cuzk binary, in a fresh folder,
// no OTEL_* variables) twice, as the sample says (circuit and key already
// cached), and checks that the second run prints the README's sample line
// for line: the same spans at the same depths in the waterfall and in
// "where the time went", the same circuit, backend, verifier, proof and
// trace lines (with the run's folder for the sample's clone), and the
// fallback notice's form when it prints one. Times, bars and ids differ
// from run to run and are not compared.
func TestREADMESampleIsTheShapeOfADefaultRun(t *testing.T) {
	command, sample := readmeSample(t)
	if first := readmeFirstCommand(t); command != first {
		t.Fatalf("the sample runs %q, the README's first command is %q", command, first)
	}
	args, ok := strings.CutPrefix(command, "go run ./cmd/cuzk")
	if !ok {
		t.Fatalf("the sample's command %q is not go run ./cmd/cuzk ...", command)
	}
	sampleDir := ""
	for _, l := range sample {
		if p, ok := strings.CutPrefix(l, "proof     "); ok {
			sampleDir = filepath.Dir(strings.Fields(p)[0])
		}
	}
	if sampleDir == "" {
		t.Fatal("the sample has no proof line")
	}
	dir := t.TempDir()
	var out []byte
	for run := 0; run < 2; run++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, cuzkBin(t), strings.Fields(args)...)
		cmd.Dir = dir
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "OTEL_") && !strings.HasPrefix(e, "JAEGER_UI=") {
				cmd.Env = append(cmd.Env, e)
			}
		}
		var err error
		out, err = cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("cuzk%s (run %d): %v\n%s", args, run+1, err, out)
		}
	}
	got := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if strings.Contains(string(out), "circuit cache: off") {
		t.Skipf("this binary's circuit cache is off (a modified tree?): its trace has no circuit.cache spans\n%s", out)
	}
	fallback := regexp.MustCompile(`^backend auto: cuda unavailable \(.+\); using cpu$`)
	for _, l := range got {
		if strings.HasPrefix(l, "backend auto: ") && !fallback.MatchString(l) {
			t.Errorf("fallback line %q is not of the form %s", l, fallback)
		}
	}
	for _, l := range sample {
		if strings.HasPrefix(l, "backend auto: ") && !fallback.MatchString(l) {
			t.Errorf("the sample's fallback line %q is not of the form %s", l, fallback)
		}
	}
	if !strings.Contains(string(out), "backend   cpu") {
		t.Skipf("this host proves on a GPU; the README's sample is a CPU run\n%s", out)
	}
	count := map[string]int{}
	for _, l := range sample {
		if s := sampleShape(l, sampleDir); s != "" {
			count[s]++
		}
	}
	for _, l := range got {
		if s := sampleShape(l, dir); s != "" {
			count[s]--
		}
	}
	var diffs []string
	for s, n := range count {
		switch {
		case n > 0:
			diffs = append(diffs, "only in the README ×"+strconv.Itoa(n)+": "+s)
		case n < 0:
			diffs = append(diffs, "only in the run ×"+strconv.Itoa(-n)+":    "+s)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("the README's sample is not the shape of a default run:\n%s\nthe run printed:\n%s", strings.Join(diffs, "\n"), out)
	}
}

// TestREADMEOpensWithTheTwoCommands: the README's first lines, under its
// title, are the project's main job and its tests, so a newcomer runs them
// before reading further (a rewrite had moved them below the prose).
func TestREADMEOpensWithTheTwoCommands(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(b), "\n", 7)
	if len(lines) < 7 || !strings.HasPrefix(lines[0], "# ") || lines[1] != "" || lines[2] != "```sh" ||
		!strings.HasPrefix(lines[3], "go run ./cmd/cuzk prove ") || !strings.HasPrefix(lines[4], "make test ") || lines[5] != "```" {
		t.Errorf("README does not open with its title, then a sh block of go run ./cmd/cuzk prove and make test:\n%s", strings.Join(lines[:min(len(lines), 6)], "\n"))
	}
	if got := readmeFirstCommand(t); got != "go run ./cmd/cuzk prove" {
		t.Errorf("README's first command %q", got)
	}
}
