package cupti

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Program is what ReadFrames learned about the traced process.
type Program struct {
	PID     int
	Path    string // its executable
	Version uint32 // its CUPTI's API version
	Stats   Stats
	Exited  bool // it said goodbye (frames ended with its exit, not a broken connection)
	// Signal is the fatal signal whose handler flushed its records last
	// (0: none); ContextFlushes counts the CUDA contexts it destroyed,
	// each a flush. A program that did not say goodbye lost nothing when
	// either is set and it launched nothing after.
	Signal         int
	ContextFlushes int
}

// ReadFrames turns the frames a traced process sends (cz_core.c's wire
// format, from the gpu-trace injection library) into spans until r ends
// or ctx is done. Spans with no parent of their own (device windows,
// top-level NVTX ranges) are children of the span context in ctx when it
// has one (a TRACEPARENT), else roots of their own traces. Options:
// WithTracerProvider, WithMaxKernelSpans, WithWindow, WithLogger. The
// error is a read error or a malformed frame (what was read is still
// turned into spans); a traced process that exits cleanly gives nil.
func ReadFrames(ctx context.Context, r io.Reader, opts ...Option) (Program, error) {
	cfg := newConfig(opts)
	b := newBuilder(builderConfig{
		tracer:       semconv.Tracer(cfg.tp),
		maxPerParent: cfg.maxPerParent,
		window:       cfg.window,
		root:         ctx,
		log:          cfg.log,
		now:          cfg.now,
		job:          cfg.job,
	})
	var (
		mu   sync.Mutex
		prog Program
	)
	// Windows end by time even while the program is quiet.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(cfg.window)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				mu.Lock()
				b.batch(nil, false)
				mu.Unlock()
			}
		}
	}()
	var (
		pending []byte
		buf     = make([]byte, 1<<20)
		rerr    error
	)
	for ctx.Err() == nil {
		n, err := r.Read(buf)
		if n > 0 {
			pending = append(pending, buf[:n]...)
			evs, rest, perr := parseFrames(pending)
			pending = append(pending[:0], rest...)
			mu.Lock()
			for _, ev := range evs {
				switch e := ev.(type) {
				case hello:
					prog.PID, prog.Path, prog.Version = int(e.pid), e.name, e.version
				case bye:
					prog.Exited = true
				case flushed:
					switch e.reason {
					case flushedSignal:
						prog.Signal = int(e.signal)
					case flushedContextDestroy:
						prog.ContextFlushes++
					}
				}
			}
			b.batch(evs, false)
			mu.Unlock()
			if perr != nil {
				rerr = perr
				break
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				rerr = fmt.Errorf("cupti: reading the traced program's records: %w", err)
			}
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	b.batch(nil, true)
	b.finish()
	prog.Stats = b.stats
	return prog, rerr
}
