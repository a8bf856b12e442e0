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
//	{"job":"<pid>-<n>","device":0,"at_ns":<unix ns>}
//	{"job":"<pid>-<n>","end_ns":<unix ns>}
//
// device is the CUDA ordinal the job runs on, or -1 for any; a line with
// a device and at_ns says that from at_ns on the job holds that device
// (-1: none any more). The publisher learns it from the other process
// (cuzk's GetStatus names the job each GPU holds) while the job is open.
// Times are the host's wall clock, which is also the clock gpu-trace puts
// GPU records on (its calibration), so no conversion is needed on one
// host.
//
// A record goes to the job whose window holds its start, on its device:
// a job holding the record's device at that time before one holding no
// known device (a job queued behind a running one holds none yet), the
// one that took the device first among several holding it (a GPU changes
// hands between two looks at its holder), and the one that started first
// among several holding none (a queue serves the oldest first). A job
// that sets the NVTX traceparent itself (docs/curio.md) is exact.
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
	AtNS        int64  `json:"at_ns,omitempty"`
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

// OnDevice publishes that from at on the job holds device (a CUDA
// ordinal; AnyDevice: it holds none any more): gpu-trace then gives it
// that device's records from at on, before those of jobs holding no known
// device. Publishing the device it already has writes nothing. Safe for
// concurrent use.
func (j *Job) OnDevice(device int, at time.Time) {
	if j == nil || device < AnyDevice {
		return
	}
	j.mu.Lock()
	same := j.dev == device
	j.dev = device
	j.mu.Unlock()
	if !same {
		d := device
		j.p.write(line{Job: j.id, Device: &d, AtNS: at.UnixNano()})
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
	segs       []devSeg // the devices it held, by at; the first at its start
	start, end int64    // unix ns; end 0 while open
}

// devSeg: from at (unix ns) on, the job holds device.
type devSeg struct {
	at     int64
	device int
}

// deviceAt is the device j holds at t and since when.
func (j *job) deviceAt(t int64) devSeg {
	k := sort.Search(len(j.segs), func(i int) bool { return j.segs[i].at > t })
	if k == 0 {
		return devSeg{j.start, AnyDevice}
	}
	return j.segs[k-1]
}

// holds is how long (ns) j holds device within [s, e]: the overlap of
// its segments on device, each up to the next segment or j's end.
func (j *job) holds(device int, s, e int64) int64 {
	var n int64
	for i, sg := range j.segs {
		if sg.device != device {
			continue
		}
		to := e
		if i+1 < len(j.segs) {
			to = min(to, j.segs[i+1].at)
		}
		if j.end != 0 {
			to = min(to, j.end)
		}
		if from := max(s, sg.at); to > from {
			n += to - from
		}
	}
	return n
}

func (j *job) addSeg(sg devSeg) {
	k := sort.Search(len(j.segs), func(i int) bool { return j.segs[i].at > sg.at })
	j.segs = append(j.segs, devSeg{})
	copy(j.segs[k+1:], j.segs[k:])
	j.segs[k] = sg
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
		j := &job{id: l.Job, sc: sc, start: l.StartNS}
		d := AnyDevice
		if l.Device != nil {
			d = *l.Device
		}
		j.segs = []devSeg{{l.StartNS, d}}
		if old := ix.byID[l.Job]; old != nil && old.start == 0 {
			j.end = old.end // its end line came first
		}
		ix.byID[l.Job] = j
		k := sort.Search(len(ix.jobs), func(i int) bool { return ix.jobs[i].start > j.start })
		ix.jobs = append(ix.jobs, nil)
		copy(ix.jobs[k+1:], ix.jobs[k:])
		ix.jobs[k] = j
	}
	if l.StartNS == 0 && l.EndNS == 0 && l.Device != nil {
		// The device a job published before holds from at_ns on.
		if j := ix.byID[l.Job]; j != nil && j.start != 0 && l.AtNS != 0 {
			j.addSeg(devSeg{max(l.AtNS, j.start), *l.Device})
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
// window contains start, on device: one holding device at start before
// one holding no known device (the first started). Among jobs holding
// device at start, the one that holds it for most of [start, end] wins,
// the first to take it on a tie: a GPU passes from one job to the next,
// and the end line of the job that let it go is written when its reply
// arrives, a little after the next job's first kernels. A job still open
// contains everything after its start. A nil Index finds nothing.
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
	var holder, anyDev *job
	var since, most int64
	e := max(end.UnixNano(), t)
	for _, j := range ix.jobs {
		if j.start > t {
			break // by start: the rest started later
		}
		if j.end != 0 && t >= j.end {
			continue
		}
		sg := j.deviceAt(t)
		switch {
		case sg.device == AnyDevice || device < 0:
			if anyDev == nil {
				anyDev = j
			}
		case sg.device == device:
			held := j.holds(device, t, e)
			if holder == nil || held > most || held == most && sg.at < since {
				holder, since, most = j, sg.at, held
			}
		}
	}
	if holder == nil {
		holder = anyDev
	}
	if holder == nil {
		return nil, false
	}
	return trace.ContextWithRemoteSpanContext(context.Background(), holder.sc), true
}
