// Package upstream forwards the proofs this daemon does not prove itself
// (Filecoin's PoRep C2, SnapDeals, WindowPoSt, WinningPoSt) to a cuzk
// daemon at another address (cuzk serve --upstream ADDR), each as a traced
// job: an engine.job span (cuzk.upstream = the address) joined to the
// caller's trace, with the times the upstream reports in its
// AwaitProofResponse laid out inside it as upstream.queue_wait,
// upstream.srs_load, upstream.synthesis and upstream.gpu_compute, back to
// back and ending when the reply arrived, so the part of the job they do
// not explain is left to the untraced-time processor (an `untraced` span).
//
// Requests go to the upstream as received: the message the server parsed
// is marshalled once more for the upstream (a 50 MB vanilla proof is
// copied once on the way out, not rebuilt). The upstream's gRPC errors
// pass through with their codes; an error that is no gRPC status (a reply
// that does not parse) becomes INTERNAL naming the upstream.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/cupti/jobs"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
)

// Span names of the parts of a forwarded job, from the upstream's
// AwaitProofResponse fields queue_wait_ms, srs_load_ms, synthesis_ms and
// gpu_compute_ms.
const (
	SpanQueueWait  = "upstream.queue_wait"
	SpanSRSLoad    = "upstream.srs_load"
	SpanSynthesis  = "upstream.synthesis"
	SpanGPUCompute = "upstream.gpu_compute"
)

// Attributes of a forwarded job's engine.job span.
const (
	// KeyUpstream is the upstream's address (string).
	KeyUpstream = attribute.Key("cuzk.upstream")
	// KeyProofKind is cuzk's proof kind, as named in its proto (string).
	KeyProofKind = attribute.Key("cuzk.proof_kind")
	// KeyTotalMS is the upstream's total_ms (int, ms).
	KeyTotalMS = attribute.Key("cuzk.upstream.total_ms")
)

// DefaultConnectTimeout bounds one connection attempt to the upstream: an
// upstream that is down fails a call with UNAVAILABLE after at most about
// this long, not grpc's 20 s.
const DefaultConnectTimeout = 2 * time.Second

// DefaultMaxMessageBytes bounds a message to or from the upstream: PoRep
// C2's vanilla proofs are about 50 MB.
const DefaultMaxMessageBytes = 128 << 20

// Option configures a Client.
type Option func(*Client)

// WithTracerProvider sets the provider of the job spans (default: the
// global one).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *Client) { c.tp = tp } }

// WithConnectTimeout sets the bound on one connection attempt (default
// DefaultConnectTimeout).
func WithConnectTimeout(d time.Duration) Option { return func(c *Client) { c.connect = d } }

// WithMaxMessageBytes bounds messages sent to and received from the
// upstream (default DefaultMaxMessageBytes).
func WithMaxMessageBytes(n int) Option { return func(c *Client) { c.maxMsg = n } }

// WithJobs publishes each forwarded job's window to p (cupti/jobs), so
// that `cuzk gpu-trace --jobs` running the upstream puts its kernels
// under the job. While two or more published jobs are open (one alone is
// told apart by its window), the upstream's GetStatus is asked which GPU
// holds which (GPUStatus.current_job_id), every WithDevicePoll and at
// once when a job starts or ends (where a GPU changes hands), and each
// job's GPU is published as its device. A nil p publishes nothing.
func WithJobs(p *jobs.Publisher) Option { return func(c *Client) { c.pub = p } }

// DefaultDevicePoll is how often, while two or more published jobs are
// open, the upstream's GetStatus is asked which GPU holds which job
// (cuzk's GetStatus runs nvidia-smi: not much more often).
const DefaultDevicePoll = 100 * time.Millisecond

// WithDevicePoll sets how often the upstream's GetStatus is polled for
// the GPU of each open published job (default DefaultDevicePoll; 0 or
// less: never, every job's device stays unknown).
func WithDevicePoll(d time.Duration) Option { return func(c *Client) { c.poll = d } }

// WithDialOptions adds grpc dial options (TLS credentials, a bearer token;
// the default is a plaintext connection).
func WithDialOptions(o ...grpc.DialOption) Option {
	return func(c *Client) { c.dial = append(c.dial, o...) }
}

// Client forwards cuzk requests to one upstream. Safe for concurrent use.
type Client struct {
	addr    string
	tp      trace.TracerProvider
	tracer  trace.Tracer
	connect time.Duration
	maxMsg  int
	pub     *jobs.Publisher
	poll    time.Duration
	dial    []grpc.DialOption
	conn    *grpc.ClientConn
	rpc     cuzkv1.ProvingEngineClient
	closed  chan struct{}
	kick    chan struct{} // poll now: a job started or ended

	mu      sync.Mutex
	open    map[string]*job // by the upstream's job id and by request id
	order   []*job          // submitted jobs not yet ended, oldest first
	maxOpen int
	active  map[string]*job // published jobs not yet ended, by request id and job id
	nactive int             // published jobs not yet ended
	polling bool            // the device poller runs
	ended   []jobEnd        // published jobs ended since the last look, oldest first
}

// jobEnd is a published job's end: when its end line was written, and
// the device last published for it (jobs.AnyDevice: never seen holding
// one).
type jobEnd struct {
	at     time.Time
	device int
}

// maxEnded bounds Client.ended while looks fail.
const maxEnded = 256

// MaxOpenJobs bounds the submitted jobs whose end a Client waits for (an
// AwaitProof with the outcome, or a CancelProof): past it the oldest one's
// span ends failed, "not awaited", so jobs never awaited cannot grow
// memory without bound. Prove's jobs end with their call and do not count.
const MaxOpenJobs = 4096

type job struct {
	ctx   context.Context
	span  trace.Span
	start time.Time
	pub   *jobs.Job // its published window; nil when none
	ids   []string
	keys  []string // its keys in Client.active
}

// New returns a Client of the upstream at addr (host:port). It does not
// connect until the first call; errors: an empty or unusable address.
func New(addr string, opts ...Option) (*Client, error) {
	if strings.TrimSpace(addr) == "" {
		return nil, errors.New("upstream: empty address")
	}
	c := &Client{addr: addr, connect: DefaultConnectTimeout, maxMsg: DefaultMaxMessageBytes, open: map[string]*job{}, maxOpen: MaxOpenJobs,
		poll: DefaultDevicePoll, active: map[string]*job{}, closed: make(chan struct{}), kick: make(chan struct{}, 1)}
	for _, o := range opts {
		o(c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	c.tracer = c.tp.Tracer("github.com/otelcuzk/otelcuzk/prover/upstream")
	bo := backoff.DefaultConfig
	bo.MaxDelay = 5 * time.Second
	dopts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: c.connect}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(c.maxMsg), grpc.MaxCallSendMsgSize(c.maxMsg)),
	}, c.dial...)
	conn, err := grpc.NewClient(addr, dopts...)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", addr, err)
	}
	c.conn, c.rpc = conn, cuzkv1.NewProvingEngineClient(conn)
	return c, nil
}

// Addr is the upstream's address.
func (c *Client) Addr() string { return c.addr }

// Close closes the connection; open jobs' spans end as failed.
func (c *Client) Close() error {
	c.mu.Lock()
	js := append([]*job(nil), c.order...)
	c.mu.Unlock()
	for _, j := range js {
		c.finish(j, nil, status.Error(grpccodes.Unavailable, "upstream client closed"), time.Now())
	}
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
	return c.conn.Close()
}

// outgoing puts the job's span context in the call's metadata (W3C
// traceparent), so an upstream that reads it joins the trace.
func outgoing(ctx context.Context) context.Context {
	carrier := propagation.MapCarrier{}
	otelcuzk.TextMapPropagator().Inject(ctx, carrier)
	for k, v := range carrier {
		ctx = metadata.AppendToOutgoingContext(ctx, k, v)
	}
	return ctx
}

// begin starts the job span of r under ctx's span (the caller's trace).
func (c *Client) begin(ctx context.Context, r *cuzkv1.SubmitProofRequest) *job {
	start := time.Now()
	ctx, span := c.tracer.Start(ctx, semconv.SpanEngineJob, trace.WithTimestamp(start), trace.WithAttributes(
		KeyUpstream.String(c.addr),
		KeyProofKind.String(r.GetProofKind().String()),
		semconv.KeyRequestID.String(r.GetRequestId()),
		semconv.KeyPriority.String(priorityName(r)),
	))
	j := &job{ctx: ctx, span: span, start: start}
	if j.pub = c.pub.Start(ctx, jobs.AnyDevice); j.pub != nil {
		c.activate(j, r.GetRequestId())
	}
	return j
}

// activate makes j's device found by the poller under key (cuzk's job
// id is the request id; Submit adds the upstream's job id), starting the
// poller when it is not running.
func (c *Client) activate(j *job, key string) {
	if key == "" || j.pub == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active[key] = j
	if len(j.keys) == 0 {
		c.nactive++
	}
	j.keys = append(j.keys, key)
	if !c.polling && c.poll > 0 {
		c.polling = true
		go c.pollDevices()
	}
	c.kickPoll()
}

// kickPoll asks the poller for a look now, when two or more published
// jobs are open; c.mu held.
func (c *Client) kickPoll() {
	if c.nactive < 2 {
		return
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// pollDevices asks the upstream's GetStatus which GPU holds which job,
// every c.poll and when kicked while two or more published jobs are open,
// and publishes each open job's GPU as its device. It returns when none
// is open. A GetStatus that fails is skipped (the devices stay as they
// were).
func (c *Client) pollDevices() {
	t := time.NewTicker(c.poll)
	defer t.Stop()
	var last time.Time // when the previous look was sent
	for {
		select {
		case <-c.closed:
			c.mu.Lock()
			c.polling = false
			c.mu.Unlock()
			return
		case <-t.C:
		case <-c.kick:
		}
		c.mu.Lock()
		if c.nactive == 0 {
			c.polling = false
			c.mu.Unlock()
			return
		}
		alone := c.nactive < 2
		c.mu.Unlock()
		if alone {
			continue
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), min(c.connect, 10*c.poll))
		st, err := c.rpc.GetStatus(ctx, &cuzkv1.GetStatusRequest{})
		cancel()
		if err != nil {
			continue
		}
		c.publishDevices(st, last, sent, time.Now())
		last = sent
	}
}

// publishDevices publishes, for each open published job, the GPU st says
// it holds: taken since after the previous look (sent at prev, or the
// job's start when later), or none any more since this look's reply came
// (at recv; the upstream answered somewhere between now, when it was
// sent, and recv: dated at now, a job still finishing its last kernels
// under a slow look lost them to the next holder, whose claim reaches
// back to prev).
// A job newly seen on a GPU takes it no earlier than the end line of any
// job that ended since then and may have held that GPU (one last seen on
// it, or never seen on any): a job that held the GPU wholly between two
// looks was never seen, and the newcomer's claim, backdated over its
// hold, took every kernel of it (under load, a look that took 60 ms gave
// one job's whole GPU part to the next).
func (c *Client) publishDevices(st *cuzkv1.GetStatusResponse, prev, now, recv time.Time) {
	c.mu.Lock()
	ended := c.ended
	c.ended = nil
	for _, e := range ended {
		if e.at.After(now) { // the next look's prev is now
			c.ended = append(c.ended, e)
		}
	}
	holds := map[*job]int{}
	for _, g := range st.GetGpus() {
		if j := c.active[g.GetCurrentJobId()]; j != nil && g.GetCurrentJobId() != "" {
			holds[j] = int(g.GetOrdinal())
		}
	}
	open := map[*job]bool{}
	for _, j := range c.active {
		open[j] = true
	}
	c.mu.Unlock()
	for j := range open {
		if g, ok := holds[j]; ok {
			if j.pub.Device() != g {
				since := maxTime(prev, j.start)
				for _, e := range ended {
					if e.device == g || e.device == jobs.AnyDevice {
						since = maxTime(since, e.at)
					}
				}
				j.pub.OnDevice(g, since)
			}
		} else if j.pub.Device() != jobs.AnyDevice {
			j.pub.OnDevice(jobs.AnyDevice, recv)
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// priorityName is r's priority as cuzk applies it: an unset one is
// CRITICAL for WinningPoSt, HIGH for WindowPoSt, else NORMAL (as
// prover/server's check of Filecoin requests has it).
func priorityName(r *cuzkv1.SubmitProofRequest) string {
	if p := r.GetPriority(); p != cuzkv1.Priority_PRIORITY_UNSPECIFIED {
		return strings.TrimPrefix(p.String(), "PRIORITY_")
	}
	switch r.GetProofKind() {
	case cuzkv1.ProofKind_WINNING_POST:
		return "CRITICAL"
	case cuzkv1.ProofKind_WINDOW_POST_PARTITION:
		return "HIGH"
	}
	return "NORMAL"
}

func (c *Client) remember(j *job, ids ...string) {
	c.mu.Lock()
	for _, id := range ids {
		if id != "" {
			c.open[id] = j
			j.ids = append(j.ids, id)
		}
	}
	c.order = append(c.order, j)
	var oldest *job
	if len(c.order) > c.maxOpen {
		oldest = c.order[0]
	}
	c.mu.Unlock()
	if oldest != nil {
		c.finish(oldest, nil, status.Errorf(grpccodes.Unknown, "not awaited: more than %d forwarded jobs open", c.maxOpen), time.Now())
	}
}

func (c *Client) lookup(ids ...string) *job {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if j, ok := c.open[id]; ok && id != "" {
			return j
		}
	}
	return nil
}

// Err turns an error of a call to the upstream into the error this
// daemon answers: a gRPC status passes through with its code and message
// prefixed by the upstream's address; anything else is INTERNAL naming
// the upstream.
func (c *Client) Err(err error) error {
	if err == nil {
		return nil
	}
	if s, ok := status.FromError(err); ok {
		return status.Errorf(s.Code(), "upstream %s: %s", c.addr, s.Message())
	}
	return status.Errorf(grpccodes.Internal, "upstream %s: %v", c.addr, err)
}

// finish lays out the reported parts of res inside j's span, ending at
// arrived, and ends the span with res's outcome or err.
func (c *Client) finish(j *job, res *cuzkv1.AwaitProofResponse, err error, arrived time.Time) {
	c.mu.Lock()
	for _, id := range j.ids {
		if c.open[id] == j {
			delete(c.open, id)
		}
	}
	for i, o := range c.order {
		if o == j {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	for _, k := range j.keys {
		if c.active[k] == j {
			delete(c.active, k)
		}
	}
	if len(j.keys) > 0 {
		c.nactive--
		j.keys = nil
		// Its end line, and the end a look that sees its GPU's next
		// holder bounds that holder's claim with, before the look.
		// Read before the line is written, so as not to pass its time
		// (the writer may be preempted, ms under load, after the write).
		endAt := time.Now()
		j.pub.End()
		if c.nactive > 0 {
			c.ended = append(c.ended, jobEnd{endAt, j.pub.Device()})
			if len(c.ended) > maxEnded {
				c.ended = c.ended[len(c.ended)-maxEnded:]
			}
		}
		c.kickPoll() // its GPU goes to another job now
	}
	c.mu.Unlock()
	defer j.pub.End()
	if err != nil {
		j.span.RecordError(err)
		j.span.SetStatus(codes.Error, err.Error())
		j.span.SetAttributes(semconv.KeyErrorType.String(cuzkv1.ErrorTypeOf(status.Code(err))))
		j.span.End(trace.WithTimestamp(arrived))
		return
	}
	if id := res.GetJobId(); id != "" {
		j.span.SetAttributes(semconv.KeyJobID.String(id))
	}
	j.span.SetAttributes(KeyTotalMS.Int64(int64(res.GetTotalMs())))
	parts := []struct {
		name string
		ms   uint64
	}{
		{SpanQueueWait, res.GetQueueWaitMs()}, {SpanSRSLoad, res.GetSrsLoadMs()},
		{SpanSynthesis, res.GetSynthesisMs()}, {SpanGPUCompute, res.GetGpuComputeMs()},
	}
	t := arrived
	starts := make([]time.Time, len(parts))
	ends := make([]time.Time, len(parts))
	for i := len(parts) - 1; i >= 0; i-- {
		d := time.Duration(min(parts[i].ms, uint64(1<<62)/uint64(time.Millisecond))) * time.Millisecond
		s := t.Add(-d)
		if s.Before(j.start) {
			s = j.start
		}
		starts[i], ends[i], t = s, t, s
	}
	for i, p := range parts {
		if p.ms == 0 {
			continue
		}
		_, sp := c.tracer.Start(j.ctx, p.name, trace.WithTimestamp(starts[i]),
			trace.WithAttributes(attribute.Int64("cuzk.upstream.reported_ms", int64(p.ms))))
		sp.End(trace.WithTimestamp(ends[i]))
	}
	switch res.GetStatus() {
	case cuzkv1.AwaitProofResponse_COMPLETED:
		j.span.SetStatus(codes.Ok, "")
	case cuzkv1.AwaitProofResponse_CANCELLED:
		j.span.SetStatus(codes.Error, "cancelled by the upstream")
		j.span.SetAttributes(semconv.KeyErrorType.String(semconv.ErrorTypeCanceled))
	default:
		msg := res.GetErrorMessage()
		if msg == "" {
			msg = "upstream reported " + res.GetStatus().String()
		}
		j.span.SetStatus(codes.Error, msg)
		j.span.SetAttributes(semconv.KeyErrorType.String(semconv.ErrorTypeOther))
	}
	j.span.End(trace.WithTimestamp(arrived))
}

// Prove forwards r to the upstream's Prove as one job, from the call to
// the reply.
func (c *Client) Prove(ctx context.Context, r *cuzkv1.ProveRequest) (*cuzkv1.ProveResponse, error) {
	j := c.begin(ctx, r.GetSubmit())
	res, err := c.rpc.Prove(outgoing(j.ctx), r)
	arrived := time.Now()
	if err != nil {
		err = c.Err(err)
		c.finish(j, nil, err, arrived)
		return nil, err
	}
	c.finish(j, res.GetResult(), nil, arrived)
	return res, nil
}

// Submit forwards r to the upstream's SubmitProof; the job it starts
// ends when an Await of it has the outcome, or at a Cancel.
func (c *Client) Submit(ctx context.Context, r *cuzkv1.SubmitProofRequest) (*cuzkv1.SubmitProofResponse, error) {
	if j := c.lookup(r.GetRequestId()); j != nil {
		res, err := c.rpc.SubmitProof(outgoing(j.ctx), r)
		return res, c.Err(err)
	}
	j := c.begin(ctx, r)
	res, err := c.rpc.SubmitProof(outgoing(j.ctx), r)
	if err != nil {
		err = c.Err(err)
		c.finish(j, nil, err, time.Now())
		return nil, err
	}
	c.remember(j, res.GetJobId(), r.GetRequestId())
	if id := res.GetJobId(); id != r.GetRequestId() {
		c.activate(j, id)
	}
	return res, nil
}

// failed ends the job of ids with err, the error of a call about it that
// the upstream (or the connection to it) gave; a call whose caller went
// away (ctx done, or the call's deadline or cancel: DEADLINE_EXCEEDED,
// CANCELLED, which the upstream may answer before ctx notices) leaves the
// job open for a later AwaitProof, as the upstream's job goes on.
func (c *Client) failed(ctx context.Context, err error, ids ...string) {
	if code := status.Code(err); ctx.Err() != nil || code == grpccodes.DeadlineExceeded || code == grpccodes.Canceled {
		return
	}
	if j := c.lookup(ids...); j != nil {
		c.finish(j, nil, err, time.Now())
	}
}

// jobRequest is a request about a job the upstream has: AwaitProof's and
// CancelProof's.
type jobRequest interface {
	GetJobId() string
	GetRequestId() string
}

// callAbout forwards r to rpc, one of the upstream's calls about a job;
// its error (as Err says it) ends the job r names (failed).
func callAbout[R jobRequest, T any](c *Client, ctx context.Context, r R, rpc func(context.Context, R, ...grpc.CallOption) (*T, error)) (*T, error) {
	res, err := rpc(outgoing(ctx), r)
	if err != nil {
		err = c.Err(err)
		c.failed(ctx, err, r.GetJobId(), r.GetRequestId())
		return nil, err
	}
	return res, nil
}

// Await forwards r to the upstream's AwaitProof; a final reply
// (COMPLETED, FAILED, CANCELLED, not TIMEOUT) ends the job Submit started,
// and so does an error of the upstream's (NOT_FOUND, UNAVAILABLE, a reply
// that does not parse), with that error.
func (c *Client) Await(ctx context.Context, r *cuzkv1.AwaitProofRequest) (*cuzkv1.AwaitProofResponse, error) {
	res, err := callAbout(c, ctx, r, c.rpc.AwaitProof)
	if err != nil {
		return nil, err
	}
	if res.GetStatus() != cuzkv1.AwaitProofResponse_TIMEOUT {
		if j := c.lookup(r.GetJobId(), r.GetRequestId(), res.GetJobId()); j != nil {
			c.finish(j, res, nil, time.Now())
		}
	}
	return res, nil
}

// Cancel forwards r to the upstream's CancelProof; once the upstream
// accepts it, the job's span ends as cancelled; an error of the
// upstream's ends it with that error.
func (c *Client) Cancel(ctx context.Context, r *cuzkv1.CancelProofRequest) (*cuzkv1.CancelProofResponse, error) {
	res, err := callAbout(c, ctx, r, c.rpc.CancelProof)
	if err != nil {
		return nil, err
	}
	if j := c.lookup(r.GetJobId(), r.GetRequestId(), res.GetJobId()); j != nil {
		c.finish(j, &cuzkv1.AwaitProofResponse{JobId: res.GetJobId(), Status: cuzkv1.AwaitProofResponse_CANCELLED}, nil, time.Now())
	}
	return res, nil
}

// Status is the upstream's GetStatus, bounded by ctx.
func (c *Client) Status(ctx context.Context) (*cuzkv1.GetStatusResponse, error) {
	res, err := c.rpc.GetStatus(ctx, &cuzkv1.GetStatusRequest{})
	return res, c.Err(err)
}

// PreloadSRS forwards r to the upstream's PreloadSRS (cuzk's SRS ids,
// "porep-32g", ...), bounded by ctx only: loading a Filecoin SRS takes
// minutes. Its error is as Err says it.
func (c *Client) PreloadSRS(ctx context.Context, r *cuzkv1.PreloadSrsRequest) (*cuzkv1.PreloadSrsResponse, error) {
	res, err := c.rpc.PreloadSRS(outgoing(ctx), r)
	return res, c.Err(err)
}

// EvictSRS forwards r to the upstream's EvictSRS; its error is as Err
// says it.
func (c *Client) EvictSRS(ctx context.Context, r *cuzkv1.EvictSrsRequest) (*cuzkv1.EvictSrsResponse, error) {
	res, err := c.rpc.EvictSRS(outgoing(ctx), r)
	return res, c.Err(err)
}

// MetricsPrefix is put before each of the upstream's metric names when
// they are re-exported beside this daemon's (cuzk_proofs_completed_total
// becomes upstream_cuzk_proofs_completed_total), so none can clash.
const MetricsPrefix = "upstream_"

// Metrics is the upstream's GetMetrics text with every metric name
// prefixed by MetricsPrefix (in # HELP, # TYPE and sample lines).
func (c *Client) Metrics(ctx context.Context) (string, error) {
	res, err := c.rpc.GetMetrics(ctx, &cuzkv1.GetMetricsRequest{})
	if err != nil {
		return "", c.Err(err)
	}
	return Prefix(res.GetPrometheusText(), MetricsPrefix), nil
}

// Prefix puts p before every metric name of the Prometheus text format
// text; other comment lines and blank lines are kept as they are.
func Prefix(text, p string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(text, "\n") {
		switch {
		case strings.HasPrefix(l, "# HELP "), strings.HasPrefix(l, "# TYPE "):
			b.WriteString(l[:7] + p + l[7:])
		case strings.TrimSpace(l) == "", strings.HasPrefix(l, "#"):
			b.WriteString(l)
		default:
			b.WriteString(p + l)
		}
	}
	return b.String()
}
