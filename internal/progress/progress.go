// Package progress says of a step that may run long (a key setup, a
// circuit compile, a kernel compile, a large key load) that it runs, once
// it has run a while: one line, with the time it should take when one was
// measured, then, on a terminal, a bar (schollz/progressbar) of the time
// left against the estimate, of the bytes done when the step counts them,
// or a spinner with the time elapsed. Off a terminal (a log) the line is
// all: no bar, no control characters.
package progress

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/otelcuzk/otelcuzk/internal/atomicfile"
)

// Step describes one long step.
type Step struct {
	// W receives the line and the bar; nil is silent.
	W io.Writer
	// Force draws the bar when W is not a terminal.
	Force bool
	// After is how long the step runs before anything is said (default 2 s).
	After time.Duration
	// Line is the one line said once After has passed.
	Line string
	// Bar describes the step beside its bar ("circuit compile, merkle/32768").
	Bar string
	// Estimate is the step's expected time in all; 0 when none is known.
	Estimate time.Duration
	// Total and Done, when Total > 0, count the step's bytes: the bar
	// shows Done() of Total (with its rate and time left) instead of time.
	Total int64
	Done  func() int64
}

// Start watches the step until the returned stop is called (or done
// closes, when not nil); stop waits until the line and bar are finished,
// so nothing is written after it returns. Safe to call stop more than once.
func Start(s Step, done <-chan struct{}) (stop func()) {
	if s.W == nil {
		return func() {}
	}
	if s.After <= 0 {
		s.After = 2 * time.Second
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		select {
		case <-quit:
			return
		case <-done:
			return
		case <-time.After(s.After):
		}
		fmt.Fprintln(s.W, s.Line)
		if !s.Force && !IsTerminal(s.W) {
			return
		}
		bar := s.newBar()
		drawing(s.W, 1)
		defer drawing(s.W, -1)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				_ = bar.Finish()
				return
			case <-done:
				_ = bar.Finish()
				return
			case <-tick.C:
				switch {
				case s.Total > 0 && s.Done != nil:
					_ = bar.Set64(min(s.Done(), s.Total))
				case s.Estimate > 0:
					// Never full before the end: an estimate that was
					// short holds at 99% and its time left at about 0.
					_ = bar.Set64(min(time.Since(start).Milliseconds(), s.Estimate.Milliseconds()*99/100))
				}
			}
		}
	}()
	var once bool
	return func() {
		if !once {
			once = true
			close(quit)
		}
		<-finished
	}
}

// bars counts the bars being drawn on each writer, for Println.
var bars struct {
	sync.Mutex
	on map[io.Writer]int
}

func drawing(w io.Writer, d int) {
	if !reflect.TypeOf(w).Comparable() {
		return // no map key; Println then adds no line break
	}
	bars.Lock()
	defer bars.Unlock()
	if bars.on == nil {
		bars.on = map[io.Writer]int{}
	}
	if bars.on[w] += d; bars.on[w] <= 0 {
		delete(bars.on, w)
	}
}

// Println writes line to w on a line of its own: when a bar is being
// drawn on w (a step of another goroutine), the line starts on a new line
// rather than after the bar's last frame, and the bar goes on below it.
// For what a command says while a step runs (an interrupt).
func Println(w io.Writer, line string) {
	n := 0
	if w != nil && reflect.TypeOf(w).Comparable() {
		bars.Lock()
		n = bars.on[w]
		bars.Unlock()
	}
	if n > 0 {
		line = "\n" + line
	}
	fmt.Fprintln(w, line)
}

func (s Step) newBar() *progressbar.ProgressBar {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(s.W),
		progressbar.OptionSetDescription(s.Bar),
		progressbar.OptionClearOnFinish(),
		// Rendered once here, the bar counts as started before its own
		// spinner goroutine reads that state without a lock
		// (progressbar v3.19.1); the goroutine then animates it.
		progressbar.OptionSetRenderBlankState(true),
	}
	switch {
	case s.Total > 0 && s.Done != nil:
		return progressbar.NewOptions64(s.Total, append(opts, progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(200*time.Millisecond))...)
	case s.Estimate > 0:
		return progressbar.NewOptions64(s.Estimate.Milliseconds()+1, append(opts,
			progressbar.OptionSetPredictTime(true), progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetWidth(30), progressbar.OptionThrottle(200*time.Millisecond))...)
	}
	return progressbar.NewOptions(-1, append(opts, progressbar.OptionSpinnerType(14), progressbar.OptionSetElapsedTime(true))...)
}

// IsTerminal reports whether w is a terminal (an *os.File on a tty).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Last reads the measurement recorded in the file at path by Record:
// the size (constraints, bytes) and the time it took; ok is false without
// one (or when the file is not one of ours).
func Last(path string) (size int64, took time.Duration, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, false
	}
	n, err1 := strconv.ParseInt(f[0], 10, 64)
	ns, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || n <= 0 || ns <= 0 {
		return 0, 0, false
	}
	return n, time.Duration(ns), true
}

// Estimate predicts a step of size from the one recorded at path, in
// proportion to the size; ok is false without one.
func Estimate(path string, size int64) (time.Duration, bool) {
	last, took, ok := Last(path)
	if !ok || size <= 0 {
		return 0, false
	}
	return time.Duration(float64(took) * float64(size) / float64(last)), true
}

// Record stores a step of size that took d at path ("SIZE NANOSECONDS\n",
// written atomically) for the next Estimate. A failure only loses the
// estimate.
func Record(path string, size int64, d time.Duration) {
	_ = os.MkdirAll(filepath.Dir(path), 0o755)
	_ = atomicfile.WriteBytes(path, 0o644, []byte(fmt.Sprintf("%d %d\n", size, d.Nanoseconds())))
}
