package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTraceHTMLNeverReplacesTheTraceFileItReads: --html naming the file
// being read (itself, through ./, through a link, with --timeline) is
// refused before anything is read, and the trace file keeps every byte.
func TestTraceHTMLNeverReplacesTheTraceFileItReads(t *testing.T) {
	dir := t.TempDir()
	data := traceFileLine + "\n" + secondTraceLine + "\n"
	file := writeTestFile(t, dir, "cuzk-trace.jsonl", data)
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, args := range [][]string{
		{"trace", "--html", file, file},
		{"trace", file, "--html", "./cuzk-trace.jsonl"},
		{"trace", "--html", link, file},
		{"trace", "--timeline", "--html", file, file},
		{"trace", "cuzk-trace.jsonl", "--timeline", "--html", link},
	} {
		out, err := runTraceCmd(t, args...)
		if err == nil || !strings.Contains(err.Error(), "is the trace file read") {
			t.Errorf("%q: err %v, want the trace file named as the one read", args, err)
		}
		if strings.Contains(out, "engine.job") {
			t.Errorf("%q printed a waterfall before refusing:\n%s", args, out)
		}
		if got, _ := os.ReadFile(file); string(got) != data {
			t.Fatalf("%q replaced the trace file by %d bytes", args, len(got))
		}
	}
}

// TestOutputPathErrorsNameTheGivenPath: an --html or --proof that cannot be
// written is one line naming the path given (never the temporary file
// beside it), said before any trace is read or proof made, leaving nothing.
func TestOutputPathErrorsNameTheGivenPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	file := writeTestFile(t, dir, "t.jsonl", traceFileLine+"\n")
	other := writeTestFile(t, dir, "b.jsonl", secondTraceLine+"\n")
	missing := filepath.Join(dir, "no", "page.html")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"trace", file, "--html", missing}, "--html " + missing + ": cannot create a file in " + filepath.Dir(missing) + ": no such file or directory"},
		{[]string{"trace", file, "--html", dir}, "--html " + dir + ": is a directory"},
		{[]string{"trace", "--timeline", file, "--html", missing}, "--html " + missing + ": cannot create a file in"},
		{[]string{"trace", "--timeline", file, "--html", dir}, "--html " + dir + ": is a directory"},
		{[]string{"trace", "diff", file, other, "--html", missing}, "--html " + missing + ": cannot create a file in"},
		{[]string{"trace", "diff", file, other, "--html", dir}, "--html " + dir + ": is a directory"},
		{[]string{"prove", "--circuit", "mulchain", "--constraints", "64", "--backend", "cpu", "--trace-file", file,
			"--proof", filepath.Join(dir, "no", "p.bin")}, "proof file " + filepath.Join(dir, "no", "p.bin") + ": cannot create a file in"},
	} {
		out, errOut, err := runCuzk(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), ".tmp-") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: err %v, want one line containing %q", c.args, err, c.want)
		}
		if strings.Contains(out+errOut, "engine.job") {
			t.Errorf("%q worked before refusing:\n%s%s", c.args, out, errOut)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("the directory holds %d entries, want the 2 trace files", len(ents))
	}
}

// TestProveRefusesAProofPathThatIsTheTraceFile: the proof is renamed over
// its path, so a --proof naming the --trace-file (the same path spelt
// otherwise, or a link to it) would replace every trace it holds.
func TestProveRefusesAProofPathThatIsTheTraceFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	file := writeTestFile(t, dir, "t.jsonl", traceFileLine+"\n")
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, c := range [][2]string{{file, file}, {"t.jsonl", "./t.jsonl"}, {link, file}, {"new.jsonl", filepath.Join(dir, "new.jsonl")}} {
		_, _, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "64", "--backend", "cpu",
			"--proof", c[0], "--trace-file", c[1])
		if err == nil || !strings.Contains(err.Error(), "is also the --trace-file") {
			t.Errorf("--proof %s --trace-file %s: err %v, want the two named as one file", c[0], c[1], err)
		}
		if got, _ := os.ReadFile(file); string(got) != traceFileLine+"\n" {
			t.Fatalf("--proof %s --trace-file %s: the trace file became %d bytes", c[0], c[1], len(got))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new.jsonl")); !os.IsNotExist(err) {
		t.Errorf("a refused run created its file: %v", err)
	}
}

// TestTraceRemoteRefusesAFileNameAsTheID: `cuzk trace FILE --jaeger URL`
// says the argument is no trace id, naming the flag, before any fetch.
func TestTraceRemoteRefusesAFileNameAsTheID(t *testing.T) {
	file := writeTestFile(t, t.TempDir(), "cuzk-trace.jsonl", traceFileLine+"\n")
	for _, flag := range []string{"--jaeger", "--tempo"} {
		_, err := runTraceCmd(t, "trace", file, flag, "http://127.0.0.1:1")
		want := file + " is not a trace id (up to 32 hex digits) to fetch from " + flag + " http://127.0.0.1:1; a FILE is read without " + flag
		if err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", flag, err, want)
		}
	}
}

// writeTestFile writes data to dir/name and returns its path, failing the
// test on an error.
func writeTestFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
