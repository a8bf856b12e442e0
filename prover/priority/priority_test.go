package priority

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/internal/depstest"
)

func TestZeroValueIsNormal(t *testing.T) {
	var p Priority
	if p != Normal || p.String() != "NORMAL" {
		t.Fatalf("zero Priority is %v, want NORMAL", p)
	}
}

func TestValuesCompareAsTheyRank(t *testing.T) {
	if !(Low < Normal && Normal < High && High < Critical) {
		t.Fatalf("Low %d, Normal %d, High %d, Critical %d do not rank in order", Low, Normal, High, Critical)
	}
	for i := 1; i < len(All); i++ {
		if All[i-1] <= All[i] {
			t.Errorf("All is not highest first: %v before %v", All[i-1], All[i])
		}
	}
	for _, p := range All {
		if !p.Valid() {
			t.Errorf("%v not valid", p)
		}
	}
	for _, p := range []Priority{Low - 1, Critical + 1, 9} {
		if p.Valid() {
			t.Errorf("%d valid", int(p))
		}
	}
}

func TestUnknownValuesAreErrors(t *testing.T) {
	if s := Priority(7).String(); s != "Priority(7)" {
		t.Errorf("Priority(7).String() = %q", s)
	}
}

func TestParseAnyCase(t *testing.T) {
	for _, p := range All {
		for _, s := range []string{p.String(), strings.ToLower(p.String()), strings.ToUpper(p.String()[:1]) + strings.ToLower(p.String()[1:])} {
			got, err := Parse(s)
			if err != nil || got != p {
				t.Errorf("Parse(%q) = %v, %v; want %v", s, got, err, p)
			}
		}
	}
	if _, err := Parse("urgent"); err == nil || !strings.Contains(err.Error(), `"urgent"`) || !strings.Contains(err.Error(), "CRITICAL") {
		t.Errorf("Parse(urgent) error %v does not name the input and the choices", err)
	}
}

func TestJSONUsesTheNames(t *testing.T) {
	in := struct {
		P      Priority
		Queued map[Priority]int
	}{High, map[Priority]int{Low: 1, Critical: 2}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"P":"HIGH","Queued":{"CRITICAL":2,"LOW":1}}`; string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
	var out struct {
		P      Priority
		Queued map[Priority]int
	}
	if err := json.Unmarshal([]byte(`{"P":"critical","Queued":{"CRITICAL":2,"low":1}}`), &out); err != nil {
		t.Fatal(err)
	}
	if out.P != Critical || out.Queued[Critical] != 2 || out.Queued[Low] != 1 {
		t.Errorf("read back %+v", out)
	}
	if err := json.Unmarshal([]byte(`{"P":"urgent"}`), &out); err == nil || !strings.Contains(err.Error(), "urgent") {
		t.Errorf("urgent: %v, want an error naming it", err)
	}
	if _, err := json.Marshal(Priority(9)); err == nil {
		t.Error("Priority(9) marshalled")
	}
}

// TestStandardLibraryOnly: the client, the server and the engine import
// this package, and Curio the client: it links nothing but the standard
// library (no generated API, so no gRPC; no gnark, no cgo).
func TestStandardLibraryOnly(t *testing.T) {
	for _, p := range depstest.List(t, []string{"CGO_ENABLED=0"}, ".") {
		if strings.HasPrefix(p.ImportPath, "github.com/consensys") || p.ImportPath == "runtime/cgo" {
			t.Errorf("priority depends on %s", p.ImportPath)
		}
		if !p.Standard && p.ImportPath != "github.com/otelcuzk/otelcuzk/prover/priority" {
			t.Errorf("priority depends on %s", p.ImportPath)
		}
	}
}
