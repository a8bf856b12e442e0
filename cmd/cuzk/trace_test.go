package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// traceFileLine is one OTLP JSON line as otelcuzk's file exporter writes
// it: engine.job (100 ms) with pipeline.prove (10..60 ms) and the untraced
// processor's span over the 40 ms no child covers (60..100).
const traceFileLine = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"cuzk"}}]},"scopeSpans":[{"scope":{"name":"github.com/otelcuzk/otelcuzk"},"spans":[` +
	`{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"00000000000000a1","name":"engine.job","kind":1,"startTimeUnixNano":"1764400000000000000","endTimeUnixNano":"1764400000100000000"},` +
	`{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"00000000000000a2","parentSpanId":"00000000000000a1","name":"pipeline.prove","kind":1,"startTimeUnixNano":"1764400000010000000","endTimeUnixNano":"1764400000060000000"},` +
	`{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"00000000000000a3","parentSpanId":"00000000000000a1","name":"untraced","kind":1,"startTimeUnixNano":"1764400000060000000","endTimeUnixNano":"1764400000100000000","attributes":[{"key":"cuzk.untraced.ms","value":{"doubleValue":50}}]}` +
	`]}]}]}`

// jaegerTraceJSON is the same trace as Jaeger's query API returns it.
const jaegerTraceJSON = `{"data":[{"traceID":"0af7651916cd43dd8448eb211c80319c","spans":[
{"traceID":"0af7651916cd43dd8448eb211c80319c","spanID":"00000000000000a1","operationName":"engine.job","references":[],"startTime":1764400000000000,"duration":100000,"tags":[],"processID":"p1"},
{"traceID":"0af7651916cd43dd8448eb211c80319c","spanID":"00000000000000a2","operationName":"pipeline.prove","references":[{"refType":"CHILD_OF","traceID":"0af7651916cd43dd8448eb211c80319c","spanID":"00000000000000a1"}],"startTime":1764400000010000,"duration":50000,"tags":[],"processID":"p1"}],
"processes":{"p1":{"serviceName":"cuzk","tags":[]}}}],"errors":null}`

func runTraceCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	app := newApp()
	var out bytes.Buffer
	app.Writer = &out
	app.ErrWriter = &out
	err := app.Run(append([]string{"cuzk"}, args...))
	return out.String(), err
}

func TestTraceFilePrintsWaterfallAndWritesHTML(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cuzk-trace.jsonl")
	if err := os.WriteFile(file, []byte(traceFileLine+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	htmlPath := filepath.Join(dir, "trace.html")
	out, err := runTraceCmd(t, "trace", "--html", htmlPath, file)
	if err != nil {
		t.Fatalf("cuzk trace: %v\n%s", err, out)
	}
	for _, want := range []string{"engine.job", "pipeline.prove", "untraced", "0af7651916cd43dd8448eb211c80319c", htmlPath} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name":"engine.job"`, `"name":"pipeline.prove"`, `"untraced_span":true`, "<!DOCTYPE html>"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("HTML lacks %s", want)
		}
	}
}

func TestTraceFromJaeger(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/traces/0af7651916cd43dd8448eb211c80319c" {
			w.Write([]byte(jaegerTraceJSON))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"data":null,"errors":[{"code":404,"msg":"trace not found"}]}`))
	}))
	defer srv.Close()
	// Flags after the argument, as the usage line writes it.
	out, err := runTraceCmd(t, "trace", "0af7651916cd43dd8448eb211c80319c", "--jaeger", srv.URL, "--ascii")
	if err != nil {
		t.Fatalf("cuzk trace --jaeger: %v\n%s", err, out)
	}
	if !strings.Contains(out, "engine.job") || !strings.Contains(out, "pipeline.prove") {
		t.Errorf("waterfall lacks spans:\n%s", out)
	}
	if !strings.Contains(out, "#") || strings.Contains(out, "█") {
		t.Errorf("--ascii after the argument ignored:\n%s", out)
	}
	_, err = runTraceCmd(t, "trace", "--jaeger", srv.URL, "4bf92f3577b34da6a3ce929d0e0e4736")
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing trace: %v", err)
	}
}

func TestTraceFromTempo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/traces/0af7651916cd43dd8448eb211c80319c" || r.Header.Get("Accept") != "application/json" {
			http.NotFound(w, r)
			return
		}
		// Tempo's shape: "batches" instead of "resourceSpans".
		w.Write([]byte(strings.Replace(traceFileLine, `"resourceSpans"`, `"batches"`, 1)))
	}))
	defer srv.Close()
	out, err := runTraceCmd(t, "trace", "--tempo", srv.URL, "0af7651916cd43dd8448eb211c80319c")
	if err != nil {
		t.Fatalf("cuzk trace --tempo: %v\n%s", err, out)
	}
	if !strings.Contains(out, "pipeline.prove") {
		t.Errorf("waterfall lacks spans:\n%s", out)
	}
}

func TestTraceBadInput(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	garbage := filepath.Join(dir, "garbage.jsonl")
	os.WriteFile(garbage, []byte("{not json\n"), 0o644)
	good := filepath.Join(dir, "good.jsonl")
	os.WriteFile(good, []byte(traceFileLine+"\n"), 0o644)
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"no argument":      {[]string{"trace"}, "want one argument"},
		"both backends":    {[]string{"trace", "--jaeger", "http://a", "--tempo", "http://b", "0af7651916cd43dd8448eb211c80319c"}, "not both"},
		"id without URL":   {[]string{"trace", "0af7651916cd43dd8448eb211c80319c"}, "--jaeger URL or --tempo URL"},
		"missing file":     {[]string{"trace", filepath.Join(dir, "nope.jsonl")}, "no such file"},
		"empty file":       {[]string{"trace", empty}, "holds no spans"},
		"malformed file":   {[]string{"trace", garbage}, "is not a trace file"},
		"bad jaeger id":    {[]string{"trace", "--jaeger", "http://127.0.0.1:1", "xyz"}, "trace id"},
		"unreachable":      {[]string{"trace", "--jaeger", "http://127.0.0.1:1", "0af7651916cd43dd8448eb211c80319c"}, "127.0.0.1:1"},
		"unknown trace-id": {[]string{"trace", "--trace-id", "4bf92f3577b34da6a3ce929d0e0e4736", good}, "not found"},
		"bad trace-id":     {[]string{"trace", "--trace-id", "xyz", good}, "not a trace id"},
		"unwritable html":  {[]string{"trace", "--html", filepath.Join(dir, "no", "dir", "t.html"), good}, "--html"},
		"bad width":        {[]string{"trace", "--width", "0", good}, "width"},
		"bad width after":  {[]string{"trace", good, "--width", "0"}, "width"},
		"huge width":       {[]string{"trace", "--width", "100000", good}, "--width 100000: want a bar width of 1 to 1000 characters"},
		"huge timeline":    {[]string{"trace", good, "--timeline", "--width", "1001"}, "--width 1001: want a bar width of 1 to 1000 characters"},
		"two arguments":    {[]string{"trace", good, good}, "want one argument"},
		"unknown flag":     {[]string{"trace", good, "--frobnicate"}, "frobnicate"},
	} {
		out, err := runTraceCmd(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q (output %q)", name, err, c.want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); !os.IsNotExist(err) {
		t.Error("a failed --html left something behind")
	}
}

// secondTraceLine is traceFileLine's trace 1 s later under another id.
var secondTraceLine = strings.NewReplacer("0af7651916cd43dd8448eb211c80319c", "4bf92f3577b34da6a3ce929d0e0e4736",
	"176440000", "176440001", "00000000000000a", "00000000000000b").Replace(traceFileLine)

// A file of several traces: without --trace-id the last to start is shown
// and the others are listed; --trace-id picks one and lists nothing; an id
// that is not hex is named as such.
func TestTraceFileShowsLastTraceAndListsOthers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cuzk-trace.jsonl")
	// The later trace first in the file: "last" is by start, not position.
	os.WriteFile(file, []byte(secondTraceLine+"\n"+traceFileLine+"\n"), 0o644)
	out, err := runTraceCmd(t, "trace", file)
	if err != nil {
		t.Fatalf("cuzk trace: %v\n%s", err, out)
	}
	head, list, ok := strings.Cut(out, "other trace in the file")
	if !ok || !strings.Contains(head, "trace 4bf92f3577b34da6a3ce929d0e0e4736") || strings.Contains(head, "0af7651916cd43dd8448eb211c80319c") {
		t.Fatalf("want the waterfall of 4bf9... then a list of the other:\n%s", out)
	}
	if !strings.Contains(list, "0af7651916cd43dd8448eb211c80319c") || !strings.Contains(list, "engine.job") {
		t.Errorf("the list lacks the other trace:\n%s", list)
	}
	out, err = runTraceCmd(t, "trace", file, "--trace-id", "0AF7651916CD43DD8448EB211C80319C")
	if err != nil || !strings.Contains(out, "trace 0af7651916cd43dd8448eb211c80319c") || strings.Contains(out, "4bf92f35") {
		t.Errorf("--trace-id: %v\n%s", err, out)
	}
	_, err = runTraceCmd(t, "trace", file, "--trace-id", "xyz")
	if err == nil || !strings.Contains(err.Error(), "not a trace id") || strings.Contains(err.Error(), "not found") {
		t.Errorf("--trace-id xyz: %v, want 'not a trace id'", err)
	}
}

// cuzk prove reads back only what it appended: a damaged line and another
// trace before the offset are neither read nor reported.
func TestPrintFileTraceReadsFromTheRunsOffset(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cuzk-trace.jsonl")
	old := "{broken\n" + secondTraceLine + "\n"
	os.WriteFile(file, []byte(old), 0o644)
	from := traceFileEnd(file)
	if from.size != int64(len(old)) {
		t.Fatalf("offset %d, want %d", from.size, len(old))
	}
	f, _ := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(traceFileLine + "\n")
	f.Close()
	var out, warn bytes.Buffer
	if err := printFileTrace(&out, &warn, file, "0af7651916cd43dd8448eb211c80319c", from); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "pipeline.prove") || warn.Len() != 0 {
		t.Errorf("out:\n%s\nwarn: %s", out.String(), warn.String())
	}
	// The trace before the offset is not read: asking for it fails.
	if err := printFileTrace(&out, &warn, file, "4bf92f3577b34da6a3ce929d0e0e4736", from); err == nil {
		t.Error("read a trace written before the offset")
	}
}

// A file that is one 100 MiB line of zero bytes (a sparse file, a disk
// hole) is refused in one line saying why, not read into memory.
func TestTraceSparseFileIsSkippedWithANote(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sparse.jsonl")
	f, _ := os.Create(file)
	f.Truncate(100 << 20)
	f.Close()
	out, err := runTraceCmd(t, "trace", file)
	if err == nil || !strings.Contains(err.Error(), "is not a trace file") || !strings.Contains(err.Error(), "longer than") || out != "" {
		t.Errorf("err %v, output %q", err, out)
	}
}

// A file of another kind (/etc/passwd, a binary, a directory) is refused
// in one line: what it is not, the first line's reason and what a trace
// file is, and nothing else is printed; it printed three "skipped an
// unreadable line" notes, a count of the others and the error (a new
// user's trial). A trace file with damaged lines still names them, those
// before its first span included.
func TestTraceOfAFileOfAnotherKindIsOneLine(t *testing.T) {
	dir := t.TempDir()
	passwd := filepath.Join(dir, "passwd")
	var b strings.Builder
	for i := range 25 {
		fmt.Fprintf(&b, "user%d:x:%d:%d::/home/user%d:/bin/sh\n", i, 1000+i, 1000+i, i)
	}
	os.WriteFile(passwd, []byte(b.String()), 0o644)
	for _, path := range []string{passwd, dir} {
		out, err := runTraceCmd(t, "trace", path)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), path+" is") ||
			!strings.Contains(err.Error(), "not a trace file") || !strings.Contains(err.Error(), "cuzk-trace.jsonl") || out != "" {
			t.Errorf("cuzk trace %s: err %v, output %q; want one line naming it, no trace file, and what one is", path, err, out)
		}
	}

	damaged := filepath.Join(dir, "damaged.jsonl")
	os.WriteFile(damaged, []byte("{broken\n"+traceFileLine+"\n{broken too\n"), 0o644)
	out, err := runTraceCmd(t, "trace", damaged)
	if err != nil || strings.Count(out, "skipped an unreadable line") != 2 || !strings.Contains(out, "pipeline.prove") {
		t.Errorf("cuzk trace of a trace file with two damaged lines: %v\n%s", err, out)
	}
}

// A trace of more spans than the cap (100,000) is shown with the first
// 100,000 and a note saying how many were left out.
func TestTraceOverTheSpanCapSaysSo(t *testing.T) {
	const n = 100_005
	var b strings.Builder
	for i := 0; i < n; i += 1000 {
		b.WriteString(`{"resourceSpans":[{"scopeSpans":[{"spans":[`)
		for k := i; k < min(i+1000, n); k++ {
			if k > i {
				b.WriteByte(',')
			}
			parent := ""
			if k > 0 {
				parent = `,"parentSpanId":"0000000000000001"`
			}
			fmt.Fprintf(&b, `{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"%016x"%s,"name":"s","startTimeUnixNano":"%d","endTimeUnixNano":"%d"}`, k+1, parent, 1000+k, 2000000+k)
		}
		b.WriteString("]}]}]}\n")
	}
	file := filepath.Join(t.TempDir(), "big.jsonl")
	os.WriteFile(file, []byte(b.String()), 0o644)
	out, err := runTraceCmd(t, "trace", file, "--depth", "1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "5 spans past the cap of 100000 spans (48 MiB) a trace left out") || !strings.Contains(out, "100000 spans") {
		t.Errorf("no note on the 5 spans over the cap:\n%s", out[:min(len(out), 2000)])
	}
}

// A daemon's file: the proof's trace is shown though status polls came
// after it, and the polls are counted by name, not listed one by one.
func TestTraceDaemonFileShowsTheLastProof(t *testing.T) {
	poll := func(id string, at int) string {
		return fmt.Sprintf(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"%s","spanId":"00000000000000c1","name":"cuzk.v1.ProvingEngine/GetStatus","startTimeUnixNano":"%d","endTimeUnixNano":"%d"}]}]}]}`, id, 1764400001000000000+at, 1764400001000000100+at)
	}
	file := filepath.Join(t.TempDir(), "daemon.jsonl")
	os.WriteFile(file, []byte(traceFileLine+"\n"+poll("1111111111111111111111111111111a", 0)+"\n"+poll("1111111111111111111111111111111b", 5)+"\n"), 0o644)
	out, err := runTraceCmd(t, "trace", file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "trace 0af7651916cd43dd8448eb211c80319c") || !strings.Contains(out, "2 traces without a proof (engine.job): cuzk.v1.ProvingEngine/GetStatus ×2") || strings.Contains(out, "1111111111111111111111111111111a") {
		t.Errorf("output:\n%s", out)
	}
	// One of them is one trace ("1 traces" before), and a trace of one
	// span says "1 span".
	os.WriteFile(file, []byte(traceFileLine+"\n"+poll("1111111111111111111111111111111a", 0)+"\n"), 0o644)
	if out, err = runTraceCmd(t, "trace", file); err != nil || !strings.Contains(out, "  and 1 trace without a proof (engine.job): cuzk.v1.ProvingEngine/GetStatus ×1\n") {
		t.Errorf("one poll: %v\n%s", err, out)
	}
	if out, err = runTraceCmd(t, "trace", file, "--trace-id", "1111111111111111111111111111111a"); err != nil || !strings.Contains(out, "  1 span\n") {
		t.Errorf("a trace of one span: %v\n%s", err, out)
	}
}

// --jaeger at the OTLP port (where traces are sent, not read) finds no
// trace; the line says which port reads them: a new user's trial got only
// "trace not found: GET http://127.0.0.1:4318/api/traces/...".
func TestTraceFromTheOTLPPortSaysWhereTracesAreRead(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:4318")
	if err != nil {
		t.Skipf("port 4318 is taken here: %v", err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler()} // an OTLP/HTTP receiver's answer to /api/...
	go srv.Serve(lis)
	defer srv.Close()
	_, err = runTraceCmd(t, "trace", "--jaeger", "http://127.0.0.1:4318", "4bf92f3577b34da6a3ce929d0e0e4736")
	if err == nil || !strings.Contains(err.Error(), "4318 is the OTLP port") || !strings.Contains(err.Error(), "16686") {
		t.Errorf("--jaeger at the OTLP port: %v, want the trace not found and where traces are read", err)
	}
	if got := otlpPort("http://127.0.0.1:16686"); got != "" {
		t.Errorf("otlpPort of the UI's port = %q", got)
	}
}
