// Package jobs carries, between two processes on one host, which job
// each stretch of GPU time belongs to: a daemon that forwards jobs to
// another process (cuzk serve --upstream ADDR) publishes each forwarded
// job's span (W3C traceparent), time window and device to a file, and
// `cuzk gpu-trace --jobs FILE`, running that other process, parents the
// kernels, copies and memsets that carry no NVTX traceparent of their own
// under the job whose window contains them.
//
// The file is JSON lines, appended (O_APPEND, one write per line, so
// several publishers may share it):
//
//	{"job":"<pid>-<n>","traceparent":"00-<trace>-<span>-01","device":-1,"start_ns":<unix ns>}
//	{"job":"<pid>-<n>","device":0}
//	{"job":"<pid>-<n>","end_ns":<unix ns>}
//
// device is the CUDA ordinal the job runs on, or -1 for any; a line with
// only a device says where a job published earlier turned out to run (the
// publisher learns it from the other process, e.g. cuzk's GetStatus, once
// the job holds a GPU). Times are the host's wall clock, which is also the
// clock gpu-trace puts GPU records on (its calibration), so no conversion
// is needed on one host.
//
// A record goes to the job whose window holds its start, on its device:
// a job known to run on the record's device before one whose device is
// not known (a job queued behind a running one has no device yet), and
// among several of one kind the one that started first (a queue serves
// the oldest first). Two jobs known on one device whose windows overlap
// cannot be told apart by time; a job that sets the NVTX traceparent
// itself (docs/curio.md) is exact.
//
// No cgo, no CUDA: the daemon imports it without the GPU packages.
package jobs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// EnvFile names the jobs file when no path is given: the daemon's
// Open("") and gpu-trace's --jobs default both read it.
const EnvFile = "CUZK_GPUTRACE_JOBS"

// AnyDevice is the device of a job whose GPU the publisher does not know.
const AnyDevice = -1

type line struct {
	Job         string `json:"job"`
	Traceparent string `json:"traceparent,omitempty"`
	Device      *int   `json:"device,omitempty"`
	StartNS     int64  `json:"start_ns,omitempty"`
	EndNS       int64  `json:"end_ns,omitempty"`
}

// Publisher appends job windows to a jobs file. Safe for concurrent use.
type Publisher struct {
	mu   sync.Mutex
	f    *os.File
	pid  int
	next uint64
	now  func() time.Time
}

// Open opens (creating it, mode 0644) the jobs file at path for
// appending; path "" means $CUZK_GPUTRACE_JOBS, and when that is unset
// too Open returns a nil Publisher and nil: every method of a nil
// Publisher does nothing, so a daemon calls Begin unconditionally. The
// error names the file.
func Open(path string) (*Publisher, error) {
	if path == "" {
		path = os.Getenv(EnvFile)
	}
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("jobs: opening the jobs file: %w", err)
	}
	return &Publisher{f: f, pid: os.Getpid(), now: time.Now}, nil
}

// Begin publishes the start of a job whose span is in ctx, on device (a
// CUDA ordinal, or AnyDevice), and returns the func that publishes its
// end (Start(ctx, device).End).
func (p *Publisher) Begin(ctx context.Context, device int) (end func()) {
	return p.Start(ctx, device).End
}

// Job is one published job window. A nil Job's methods do nothing.
type Job struct {
	p    *Publisher
	id   string
	mu   sync.Mutex
	dev  int
	once sync.Once
}

// Start publishes the start of a job whose span is in ctx, on device (a
// CUDA ordinal, or AnyDevice); call End when the job's reply has come.
// Without a valid span in ctx, or on a nil Publisher, nothing is written
// and the Job is nil. A write that fails is not the job's failure: it is
// dropped (the kernels then land in gpu-trace's device windows).
func (p *Publisher) Start(ctx context.Context, device int) *Job {
	sc := trace.SpanContextFromContext(ctx)
	if p == nil || !sc.IsValid() {
		return nil
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier)
	p.mu.Lock()
	p.next++
	id := fmt.Sprintf("%d-%d", p.pid, p.next)
	p.mu.Unlock()
	d := device
	p.write(line{Job: id, Traceparent: carrier["traceparent"], Device: &d, StartNS: p.now().UnixNano()})
	return &Job{p: p, id: id, dev: device}
}

// OnDevice publishes that the job runs on device (a CUDA ordinal): from
// then on gpu-trace gives it only that device's records, before those of
// jobs whose device is not known. Publishing the device it already has
// writes nothing. Safe for concurrent use.
func (j *Job) OnDevice(device int) {
	if j == nil || device < 0 {
		return
	}
	j.mu.Lock()
	same := j.dev == device
	j.dev = device
	j.mu.Unlock()
	if !same {
		d := device
		j.p.write(line{Job: j.id, Device: &d})
	}
}

// Device is the device last published for the job (AnyDevice for none).
func (j *Job) Device() int {
	if j == nil {
		return AnyDevice
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.dev
}

// End publishes the job's end; later calls write nothing.
func (j *Job) End() {
	if j == nil {
		return
	}
	j.once.Do(func() { j.p.write(line{Job: j.id, EndNS: j.p.now().UnixNano()}) })
}

func (p *Publisher) write(l line) {
	b, err := json.Marshal(l)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f != nil {
		p.f.Write(append(b, '\n'))
	}
}

// Close closes the file; a nil Publisher's Close is nil.
func (p *Publisher) Close() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f == nil {
		return nil
	}
	err := p.f.Close()
	p.f = nil
	return err
}

type job struct {
	id         string
	sc         trace.SpanContext
	device     int
	start, end int64 // unix ns; end 0 while open
}

// Index is the jobs of a jobs file, read as it grows. Safe for
// concurrent use.
type Index struct {
	path  string
	every time.Duration

	mu      sync.Mutex
	off     int64
	partial []byte
	jobs    []*job // by start
	byID    map[string]*job
	last    time.Time
	bad     int
	latest  int64 // newest record start asked about, unix ns
	finds   int
}

// Keep is how long a job is kept after its end: records reach gpu-trace
// up to a flush interval and a drain after they ran.
const Keep = 5 * time.Minute

// NewIndex reads the jobs file at path ("": $CUZK_GPUTRACE_JOBS; nil
// when that is unset too) again at most every `every` as Find is called.
// A file that does not exist yet is read once it does.
func NewIndex(path string, every time.Duration) *Index {
	if path == "" {
		path = os.Getenv(EnvFile)
	}
	if path == "" {
		return nil
	}
	return &Index{path: path, every: every, byID: map[string]*job{}}
}

// Malformed counts the lines of the file that could not be read (each
// skipped).
func (ix *Index) Malformed() int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.bad
}

// refresh reads what was appended since the last read. Called with mu held.
func (ix *Index) refresh(now time.Time) {
	if !ix.last.IsZero() && now.Sub(ix.last) < ix.every {
		return
	}
	ix.last = now
	f, err := os.Open(ix.path)
	if err != nil {
		return
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() < ix.off {
		ix.off, ix.partial = 0, nil // truncated: read it anew
	}
	if _, err := f.Seek(ix.off, io.SeekStart); err != nil {
		return
	}
	b, err := io.ReadAll(bufio.NewReader(f))
	if err != nil {
		return
	}
	ix.off += int64(len(b))
	b = append(ix.partial, b...)
	i := bytes.LastIndexByte(b, '\n')
	if i < 0 {
		ix.partial = b
		return
	}
	ix.partial = append([]byte(nil), b[i+1:]...)
	for _, raw := range bytes.Split(b[:i], []byte{'\n'}) {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var l line
		if json.Unmarshal(raw, &l) != nil || l.Job == "" {
			ix.bad++
			continue
		}
		ix.add(l)
	}
}

func (ix *Index) add(l line) {
	if l.StartNS != 0 {
		ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": l.Traceparent})
		sc := trace.SpanContextFromContext(ctx)
		if !sc.IsValid() {
			ix.bad++
			return
		}
		j := &job{id: l.Job, sc: sc, device: AnyDevice, start: l.StartNS}
		if l.Device != nil {
			j.device = *l.Device
		}
		if old := ix.byID[l.Job]; old != nil && old.end != 0 {
			j.end = old.end // its end line came first
		}
		ix.byID[l.Job] = j
		k := sort.Search(len(ix.jobs), func(i int) bool { return ix.jobs[i].start > j.start })
		ix.jobs = append(ix.jobs, nil)
		copy(ix.jobs[k+1:], ix.jobs[k:])
		ix.jobs[k] = j
	}
	if l.StartNS == 0 && l.EndNS == 0 && l.Device != nil {
		// Where a job turned out to run (one published before it).
		if j := ix.byID[l.Job]; j != nil && j.start != 0 {
			j.device = *l.Device
		} else {
			ix.bad++
		}
		return
	}
	if l.EndNS != 0 {
		if j := ix.byID[l.Job]; j != nil {
			j.end = l.EndNS
		} else {
			ix.byID[l.Job] = &job{id: l.Job, end: l.EndNS}
		}
	}
}

// prune forgets the jobs that ended Keep before latest, the newest record
// time asked about (records, not this host's clock now: a trace read
// late still finds its jobs).
func (ix *Index) prune(latest int64) {
	cut := latest - int64(Keep)
	kept := ix.jobs[:0]
	for _, j := range ix.jobs {
		if j.end != 0 && j.end < cut {
			delete(ix.byID, j.id)
			continue
		}
		kept = append(kept, j)
	}
	clear(ix.jobs[len(kept):])
	ix.jobs = kept
	for id, j := range ix.byID {
		if j.start == 0 && j.end < cut {
			delete(ix.byID, id)
		}
	}
}

// Find returns the span context (as a remote parent) of the job whose
// window contains start, on device: a job published on device before one
// on AnyDevice, and among several of one kind the one that started first.
// A job still open contains everything after its start. A nil Index finds
// nothing.
func (ix *Index) Find(device int, start, end time.Time) (context.Context, bool) {
	if ix == nil {
		return nil, false
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.refresh(time.Now())
	t := start.UnixNano()
	if t > ix.latest {
		ix.latest = t
		if ix.finds++; ix.finds%1024 == 0 {
			ix.prune(t)
		}
	}
	var anyDev *job
	for _, j := range ix.jobs {
		if j.start > t {
			break // by start: the rest started later
		}
		if j.end != 0 && t >= j.end {
			continue
		}
		switch {
		case j.device == AnyDevice || device < 0:
			if anyDev == nil {
				anyDev = j
			}
		case j.device == device:
			return trace.ContextWithRemoteSpanContext(context.Background(), j.sc), true
		}
	}
	if anyDev != nil {
		return trace.ContextWithRemoteSpanContext(context.Background(), anyDev.sc), true
	}
	return nil, false
}
