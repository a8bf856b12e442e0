package progress

import (
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/logtest"
)

// A step shorter than After says nothing; a longer one says its line
// once, and with Force draws a bar of its bytes (half of them done: 50%); off
// a terminal the line is all.
func TestALongStepSaysItsLineThenABarOnlyOnATerminal(t *testing.T) {
	var quiet logtest.Buffer
	stop := Start(Step{W: &quiet, After: time.Hour, Line: "never"}, nil)
	stop()
	stop() // twice is fine
	if quiet.String() != "" {
		t.Errorf("a short step wrote %q", quiet.String())
	}

	var done atomic.Int64
	var bar logtest.Buffer
	stop = Start(Step{W: &bar, Force: true, After: time.Millisecond, Line: "keys: reading the 4.0 KiB proving key",
		Bar: "keys.decode", Total: 4096, Done: done.Load}, nil)
	time.Sleep(100 * time.Millisecond)
	done.Store(2048)
	time.Sleep(500 * time.Millisecond)
	stop()
	out := bar.String()
	if !strings.HasPrefix(out, "keys: reading the 4.0 KiB proving key\n") || !strings.Contains(out, "keys.decode  50%") {
		t.Errorf("forced bar: %q, want the line then a bar of the bytes read", out)
	}

	var log logtest.Buffer
	ch := make(chan struct{})
	stop = Start(Step{W: &log, After: time.Millisecond, Line: "circuit compile: merkle, 32768 constraints", Estimate: time.Second}, ch)
	time.Sleep(300 * time.Millisecond)
	close(ch)
	stop()
	if got := log.String(); got != "circuit compile: merkle, 32768 constraints\n" {
		t.Errorf("not a terminal: %q, want the one line and nothing else", got)
	}
}

// Estimate scales the recorded step by size; no record, or one not ours,
// gives none.
func TestEstimateScalesTheLastRecordedStep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "rate")
	if _, ok := Estimate(path, 10); ok {
		t.Error("an estimate without a record")
	}
	Record(path, 1<<15, 3*time.Second)
	if d, ok := Estimate(path, 1<<16); !ok || d != 6*time.Second {
		t.Errorf("estimate %v %v, want 6s", d, ok)
	}
}

// A line said while a bar is drawn on the same writer starts on a line of
// its own, not after the bar's last frame; with no bar it is the line
// alone.
func TestPrintlnDuringABarStartsOnItsOwnLine(t *testing.T) {
	var alone logtest.Buffer
	Println(&alone, "interrupted")
	if alone.String() != "interrupted\n" {
		t.Errorf("with no bar: %q", alone.String())
	}
	var w logtest.Buffer
	stop := Start(Step{W: &w, Force: true, After: time.Nanosecond, Line: "step", Bar: "step"}, nil)
	for !strings.Contains(w.String(), "step\n") {
		time.Sleep(10 * time.Millisecond)
	}
	for { // the bar's goroutine counts itself just after its first frame
		bars.Lock()
		n := bars.on[&w]
		bars.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	Println(&w, "interrupted")
	stop()
	if !strings.Contains(w.String(), "\ninterrupted\n") {
		t.Errorf("the line was not on its own line: %q", w.String())
	}
	bars.Lock()
	defer bars.Unlock()
	if bars.on[&w] != 0 {
		t.Errorf("a finished bar still counts as drawn: %d", bars.on[&w])
	}
}
