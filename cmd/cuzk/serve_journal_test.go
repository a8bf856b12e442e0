package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/prover/journal"
)

// A state dir another daemon holds, or a corrupt journal, is refused at
// start in one line naming the file; --result-ttl and --max-results
// refuse nonsense.
func TestServeRefusesALockedOrCorruptStateDir(t *testing.T) {
	clearOTLPEnv(t)
	dir := t.TempDir()
	base := []string{"serve", "--backend", "cpu", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--trace-file", filepath.Join(dir, "t.jsonl")}

	held := filepath.Join(dir, "held")
	j, _, err := journal.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	_, _, err = runCuzk(t, append(base, "--state-dir", held)...)
	if err == nil || !strings.Contains(err.Error(), "another daemon uses this --state-dir") || !strings.Contains(err.Error(), filepath.Join(held, journal.FileName)) || strings.Contains(err.Error(), "\n") {
		t.Errorf("locked state dir: %v, want one line naming the file and the other daemon", err)
	}

	bad := filepath.Join(dir, "bad")
	if err := os.MkdirAll(bad, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, journal.FileName), []byte(strings.Repeat("garbage ", 2000)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = runCuzk(t, append(base, "--state-dir", bad)...)
	if err == nil || !strings.Contains(err.Error(), "corrupt") || strings.Contains(err.Error(), "\n") ||
		!strings.HasSuffix(err.Error(), "; move it aside (the daemon makes a new one) or run with --state-dir none") {
		t.Errorf("corrupt journal: %v, want one line saying it is corrupt and what to do", err)
	}
	wantRefused(t, base, []badArgs{
		{[]string{"--result-ttl", "-1s"}, "--result-ttl"},
		{[]string{"--max-results", "-1"}, "--max-results"},
	})
}

func TestServeHelpNamesTheStateDirAndItsDefault(t *testing.T) {
	t.Setenv("CUZK_STATE_DIR", "")
	out, _, err := runCuzk(t, "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"--state-dir", "$XDG_STATE_HOME/otelcuzk", "interrupted by a restart", "--result-ttl", "10m0s", "--max-results"} {
		if !strings.Contains(flat, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
}

// The README's cuzk serve section says where the daemon keeps its jobs
// across a restart, in the words and defaults of --state-dir's help: it
// did not name --state-dir at all (a new user's trial).
func TestREADMEServeSectionNamesTheStateDir(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n### cuzk serve\n")
	if !ok {
		t.Fatal("README has no '### cuzk serve' section")
	}
	section, _, _ = strings.Cut(section, "\n#")
	section = strings.Join(strings.Fields(section), " ")
	help, _, err := runCuzk(t, "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	help = strings.Join(strings.Fields(help), " ")
	for _, want := range []string{"--state-dir", journal.FileName, "CUZK_STATE_DIR", "$XDG_STATE_HOME/otelcuzk", "~/.local/state/otelcuzk", "interrupted by a restart", "none"} {
		if !strings.Contains(help, want) {
			t.Errorf("serve --help no longer says %q: the README's sentence may be stale", want)
		}
		if !strings.Contains(section, want) {
			t.Errorf("README's cuzk serve section lacks %q", want)
		}
	}
	if !strings.Contains(section, "`--state-dir none` keeps jobs in memory only") {
		t.Error("README's cuzk serve section does not say what --state-dir none does")
	}
}

// Each flag of serve --help states its default once: --cpu-workers,
// --synthesis-workers and --state-dir said theirs in the usage and again
// as urfave/cli's "(default: -1)" or the expanded path (a new user's
// trial). --result-ttl and --max-results say that 0 means the default, as
// the daemon reads it (daemon.openJournal), here and in docs/commands.md.
func TestServeHelpStatesEachDefaultOnce(t *testing.T) {
	out, _, err := runCuzk(t, "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Count(line, "(default") > 1 {
			t.Errorf("a default stated twice: %s", strings.TrimSpace(line))
		}
		if strings.Contains(line, "(default: -1)") {
			t.Errorf("the sentinel -1 shown as a default: %s", strings.TrimSpace(line))
		}
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"CPU workers (default: 1 without a GPU, 0 beside GPUs)",
		"(default: $XDG_STATE_HOME/otelcuzk, else ~/.local/state/otelcuzk) [$CUZK_STATE_DIR]",
		"in memory and in the journal; 0: the default (default: 10m0s)",
		"at most 64 MiB of them); 0: the default (default: 1024)",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
	doc, err := os.ReadFile("../../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(doc)), " "), "`--max-results` of them (default 1024), in memory and in the job journal of `--state-dir`; 0 for either means its default") {
		t.Error("docs/commands.md does not say that --result-ttl 0 and --max-results 0 mean the default")
	}
}
