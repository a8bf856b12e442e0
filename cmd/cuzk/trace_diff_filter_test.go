package main

import (
	"fmt"
	"strings"
	"testing"
)

// daemonJob is one job of a daemon's trace file: engine.job of circuit
// and size, an MSM of msm ms; outcome "" succeeded, else its error.type
// (the job span failed); the resource names host h1 and build b1.
func daemonJob(trace, circuit string, size int, start, msm float64, outcome string) string {
	const t0 = 1764400000000000000
	ns := func(ms float64) string { return fmt.Sprint(t0 + int64(ms*1e6)) }
	status, errType := "", ""
	if outcome != "" {
		status = `,"status":{"code":2,"message":"job ` + outcome + `"}`
		errType = `,{"key":"error.type","value":{"stringValue":"` + outcome + `"}}`
	}
	job := fmt.Sprintf(`{"traceId":%q,"spanId":"0000000000000001","name":"engine.job","startTimeUnixNano":%q,"endTimeUnixNano":%q,"attributes":[{"key":"cuzk.circuit.id","value":{"stringValue":%q}},{"key":"cuzk.circuit.constraints","value":{"intValue":"%d"}},{"key":"cuzk.backend","value":{"stringValue":"cpu"}}%s]%s}`,
		trace, ns(start), ns(start+msm+10), circuit, size, errType, status)
	kid := fmt.Sprintf(`{"traceId":%q,"spanId":"0000000000000002","parentSpanId":"0000000000000001","name":"msm.g1.k","startTimeUnixNano":%q,"endTimeUnixNano":%q}`,
		trace, ns(start+5), ns(start+5+msm))
	return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"cuzk"}},{"key":"host.name","value":{"stringValue":"h1"}},{"key":"service.version","value":{"stringValue":"b1"}}]},"scopeSpans":[{"spans":[` + job + "," + kid + `]}]}]}`
}

// A daemon's file holding two sizes: --all is refused naming the filters;
// --constraints picks one size's jobs (a cancelled one left out, and said
// so); a filter that picks nothing says what the file holds; two sizes
// compare with --normalize, per constraint; the header names the run.
func TestTraceDiffFiltersPickTheJobsOfADaemonFile(t *testing.T) {
	id := func(i int) string { return fmt.Sprintf("%032x", i) }
	a := writeLines(t, "a.jsonl",
		daemonJob(id(1), "merkle", 65536, 0, 1000, ""),
		daemonJob(id(2), "merkle", 262144, 2000, 4000, ""),
		daemonJob(id(3), "merkle", 65536, 7000, 1010, ""),
		daemonJob(id(4), "merkle", 65536, 9000, 30, "canceled"))
	b := writeLines(t, "b.jsonl",
		daemonJob(id(11), "merkle", 65536, 0, 1500, ""),
		daemonJob(id(12), "merkle", 262144, 2000, 6000, ""),
		daemonJob(id(13), "merkle", 65536, 9000, 1490, ""))

	if _, err := runTraceCmd(t, "trace", "diff", a, b, "--all"); err == nil || !strings.Contains(err.Error(), "mixes sizes of merkle: 65536 and 262144 constraints (--constraints picks one, --normalize compares per constraint)") {
		t.Errorf("--all over two sizes: %v", err)
	}
	out, err := runTraceCmd(t, "trace", "diff", a, b, "--all", "--constraints", "65536")
	if err != nil {
		t.Fatalf("--constraints 65536: %v\n%s", err, out)
	}
	for _, want := range []string{
		"A: merkle 2^16 (65536 constraints), backend cpu, host h1, build b1\n   2 traces",
		"B: merkle 2^16 (65536 constraints), backend cpu, host h1, build b1\n   2 traces",
		"1 job that did not succeed (CANCELLED ×1) left out of the set",
		"msm.g1.k  *",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--constraints 65536 lacks %q:\n%s", want, out)
		}
	}
	// The last job of the size, not the file's last job.
	out, err = runTraceCmd(t, "trace", "diff", a, b, "--circuit", "merkle", "--constraints", "262144")
	if err != nil || !strings.Contains(out, "trace "+id(2)) || !strings.Contains(out, "trace "+id(12)) {
		t.Errorf("--constraints 262144: %v\n%s", err, out)
	}
	if _, err := runTraceCmd(t, "trace", "diff", a, b, "--circuit", "porep"); err == nil || !strings.Contains(err.Error(), "holds no job of --circuit porep (it holds merkle 262144 ×1, merkle 65536 ×3)") || strings.Contains(err.Error(), "\n") {
		t.Errorf("--circuit porep: %v", err)
	}
	if _, err := runTraceCmd(t, "trace", "diff", a, b, "--constraints", "0"); err == nil || !strings.Contains(err.Error(), "--constraints 0: want a positive constraint count") {
		t.Errorf("--constraints 0: %v", err)
	}
	// 2^16 against 2^18 of B: refused, then per constraint (6000 ms at 4×
	// the size is 1500 ms at A's: as B's 2^16 jobs).
	if _, err := runTraceCmd(t, "trace", "diff", a, b, "--constraints", "65536", "--trace-id-b", id(12)); err == nil || !strings.Contains(err.Error(), "A is of 65536 constraints, B of 262144 (--normalize compares per constraint)") {
		t.Errorf("two sizes: %v", err)
	}
	out, err = runTraceCmd(t, "trace", "diff", a, b, "--constraints", "65536", "--trace-id-b", id(12), "--normalize", "--json")
	if err != nil || !strings.Contains(out, `"normalized_to": 65536`) || !strings.Contains(out, `"b_ms": 1500,`) {
		t.Errorf("--normalize: %v\n%s", err, out)
	}
}

// A single cancelled job on one side is compared, and flagged.
func TestTraceDiffFlagsACancelledSide(t *testing.T) {
	a := writeLines(t, "a.jsonl", daemonJob(fmt.Sprintf("%032x", 1), "merkle", 65536, 0, 1000, ""))
	b := writeLines(t, "b.jsonl", daemonJob(fmt.Sprintf("%032x", 2), "merkle", 65536, 0, 3, "canceled"))
	out, err := runTraceCmd(t, "trace", "diff", a, b)
	if err != nil || !strings.Contains(out, "warning: B: its job did not succeed (CANCELLED: job canceled); its times are of a run cut short, not comparable") {
		t.Errorf("%v\n%s", err, out)
	}
}
