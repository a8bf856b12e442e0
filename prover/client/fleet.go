package client

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	_ "google.golang.org/grpc/health" // client-side health checking (grpc.health.v1 Watch)
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
)

// The load-balancing policy of a client of several daemons (DialAddrs).
// One grpc.ClientConn holds a SubConn per daemon, fed by a manual resolver
// with the static address list; its picker routes each call by what the
// call's context says (a route):
//
//   - a request id (Submit, Prove, AwaitRequest): rendezvous hashing
//     (highest random weight; Thaler and Ravishankar, "Using name-based
//     mappings to increase hit rates", IEEE/ACM ToN 1998) of the id over
//     the daemons, taking the first in rank that is READY and skipping
//     those in TRANSIENT_FAILURE (down, or NOT_SERVING by grpc.health.v1).
//     A daemon still connecting makes the call wait instead of being
//     skipped, so a request id does not move because a client was just
//     started. A daemon skipped for NOT_SERVING that holds the request
//     id's job still gets the id's calls (Client.routeRequest asks it). When every daemon that is up is NOT_SERVING (warming up,
//     as cuzk serve does until its kernels are ready, while it queues
//     proofs), the first in rank among them takes the call. The ranking depends only on the id and the address list,
//     so every client with the same list, in any process, sends a request
//     id to the same daemon: a retry finds its job instead of proving it
//     twice, unless the daemon that held it has failed meanwhile;
//   - a daemon address (Await, Cancel, StatusAt of a job id, which names
//     its daemon): that daemon's SubConn, NOT_SERVING or not (a daemon
//     out of rotation still answers for the jobs it holds); UNAVAILABLE
//     when it is down.
//
// Health comes from the SubConn's health listener (grpc.health.v1 Watch,
// enabled by the service config DialAddrs sets); connectivity and health
// are kept apart for that reason.
const balancerName = "cuzk_request_hash"

func init() { balancer.Register(fleetBuilder{}) }

// route is the routing of one call, carried in its context. The picker
// writes the address it chose into picked.
type route struct {
	key  string // request id to hash; used when addr is ""
	addr string // the daemon that must answer

	mu     sync.Mutex
	picked string
}

func (r *route) setPicked(a string) {
	r.mu.Lock()
	r.picked = a
	r.mu.Unlock()
}

// Picked returns the address of the daemon the call went to ("" before the
// pick).
func (r *route) Picked() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.picked
}

type routeKey struct{}

func withRoute(ctx context.Context, r *route) context.Context {
	return context.WithValue(ctx, routeKey{}, r)
}

// rendezvousScore is the weight of daemon addr for key: FNV-1a 64 of
// key, a zero byte and addr, finished with the splitmix64 mixer (FNV's
// low bits alone spread similar strings poorly). Stable across processes
// and Go versions, unlike hash/maphash.
func rendezvousScore(key, addr string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(addr))
	z := h.Sum64() + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// rank returns addrs ordered by rendezvousScore for key, highest first
// (ties, which need a 64-bit collision, by address).
func rank(key string, addrs []string) []string {
	out := append([]string(nil), addrs...)
	sort.Slice(out, func(i, j int) bool {
		si, sj := rendezvousScore(key, out[i]), rendezvousScore(key, out[j])
		if si != sj {
			return si > sj
		}
		return out[i] < out[j]
	})
	return out
}

type fleetBuilder struct{}

func (fleetBuilder) Name() string { return balancerName }

func (fleetBuilder) Build(cc balancer.ClientConn, _ balancer.BuildOptions) balancer.Balancer {
	return &fleetBalancer{cc: cc, subConns: map[string]*daemonConn{}}
}

// daemonConn is one daemon's SubConn and what the balancer knows of it.
type daemonConn struct {
	sc    balancer.SubConn
	state connectivity.State // of the connection
	err   error              // the last connection error, while in TRANSIENT_FAILURE
	// health is READY (SERVING), TRANSIENT_FAILURE (not serving, healthErr
	// says how) or IDLE (not known yet) while state is READY.
	health    connectivity.State
	healthErr error
}

// fleetBalancer keeps one SubConn per address. Its methods are called by
// gRPC from one goroutine; the pickers it builds are immutable snapshots.
type fleetBalancer struct {
	cc         balancer.ClientConn
	subConns   map[string]*daemonConn
	addrs      []string // in the resolver's order
	resolveErr error
	view       *fleetView // the Client's window on the pickers; nil if not given
}

// fleetView lets a Client see the daemons' states the balancer last
// published (the balancer is gRPC's; the view reaches it through the
// resolver state's attributes).
type fleetView struct {
	mu sync.Mutex
	p  *fleetPicker
}

type fleetViewKey struct{}

func (v *fleetView) set(p *fleetPicker) {
	v.mu.Lock()
	v.p = p
	v.mu.Unlock()
}

// skippedFirst returns the daemon ranked first for key among those
// connected when the picker skips it: it says NOT_SERVING (out of
// rotation; cuzk serve, whose shutdown also says so, refuses new calls
// then and counts as down) while a daemon ranked below it serves. It may still hold key's job; "" when routing by key
// reaches the first-ranked daemon up anyway.
func (v *fleetView) skippedFirst(key string) string {
	v.mu.Lock()
	p := v.p
	v.mu.Unlock()
	if p == nil {
		return ""
	}
	skipped := ""
	for _, a := range rank(key, p.addrs) {
		d := p.conns[a]
		switch {
		case d.state == connectivity.TransientFailure:
			continue // down: it answers nothing
		case d.state == connectivity.Ready && d.health == connectivity.TransientFailure:
			if skipped == "" {
				skipped = a
			}
			continue
		case d.state == connectivity.Ready && d.health == connectivity.Ready:
			return skipped
		}
		return "" // connecting or health unknown: the picker waits for it
	}
	return "" // none serving: the picker takes the first up anyway
}

func (b *fleetBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	b.resolveErr = nil
	if v, ok := s.ResolverState.Attributes.Value(fleetViewKey{}).(*fleetView); ok {
		b.view = v
	}
	seen := map[string]bool{}
	b.addrs = b.addrs[:0]
	for _, a := range s.ResolverState.Addresses {
		if seen[a.Addr] {
			continue
		}
		seen[a.Addr] = true
		b.addrs = append(b.addrs, a.Addr)
		if _, ok := b.subConns[a.Addr]; ok {
			continue
		}
		d := &daemonConn{state: connectivity.Idle, health: connectivity.Idle}
		sc, err := b.cc.NewSubConn([]resolver.Address{a}, balancer.NewSubConnOptions{
			StateListener: func(st balancer.SubConnState) { b.updateSubConn(d, st) },
		})
		if err != nil {
			d.state, d.err = connectivity.TransientFailure, err
			b.subConns[a.Addr] = d
			continue
		}
		d.sc = sc
		b.subConns[a.Addr] = d
		sc.Connect()
	}
	for a, d := range b.subConns {
		if !seen[a] {
			if d.sc != nil {
				d.sc.Shutdown()
			}
			delete(b.subConns, a)
		}
	}
	if len(b.addrs) == 0 {
		b.resolveErr = fmt.Errorf("no daemon addresses")
		b.publish()
		return balancer.ErrBadResolverState
	}
	b.publish()
	return nil
}

func (b *fleetBalancer) updateSubConn(d *daemonConn, st balancer.SubConnState) {
	s := st.ConnectivityState
	switch {
	case s == connectivity.Shutdown:
		return
	case d.state == connectivity.TransientFailure && (s == connectivity.Idle || s == connectivity.Connecting):
		// A failed daemon stays failed (skipped) until it is READY
		// again; the reconnection attempts in between change nothing.
		if s == connectivity.Idle {
			d.sc.Connect()
		}
		return
	case s == connectivity.Idle:
		// A lost connection goes IDLE: reconnect at once, so the daemon
		// is either back or in TRANSIENT_FAILURE soon.
		d.sc.Connect()
	}
	d.state, d.err = s, st.ConnectionError
	d.health, d.healthErr = connectivity.Idle, nil
	if s == connectivity.Ready {
		// Called back with READY (SERVING; also when the daemon has no
		// health service) or TRANSIENT_FAILURE (NOT_SERVING, ...).
		d.sc.RegisterHealthListener(func(h balancer.SubConnState) {
			if d.state != connectivity.Ready {
				return
			}
			hs := h.ConnectivityState
			if hs == connectivity.Connecting {
				// The watch is being (re)opened: what was known stands.
				return
			}
			d.health, d.healthErr = hs, h.ConnectionError
			b.publish()
		})
	}
	b.publish()
}

func (b *fleetBalancer) ResolverError(err error) {
	b.resolveErr = err
	if len(b.subConns) == 0 {
		b.publish()
	}
}

func (b *fleetBalancer) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

func (b *fleetBalancer) ExitIdle() {
	for _, d := range b.subConns {
		if d.sc != nil && d.state == connectivity.Idle {
			d.sc.Connect()
		}
	}
}

func (b *fleetBalancer) Close() {
	for _, d := range b.subConns {
		if d.sc != nil {
			d.sc.Shutdown()
		}
	}
}

// publish hands gRPC a new picker and the aggregate state: READY when any
// daemon is, else CONNECTING when any is on its way, else TRANSIENT_FAILURE.
func (b *fleetBalancer) publish() {
	p := &fleetPicker{addrs: append([]string(nil), b.addrs...), conns: map[string]daemonConn{}, resolveErr: b.resolveErr}
	agg := connectivity.TransientFailure
	for _, a := range b.addrs {
		d := b.subConns[a]
		p.conns[a] = *d
		switch {
		case d.state == connectivity.Ready && d.health == connectivity.Ready:
			agg = connectivity.Ready
		case d.state == connectivity.Idle, d.state == connectivity.Connecting,
			d.state == connectivity.Ready && d.health == connectivity.Idle:
			if agg != connectivity.Ready {
				agg = connectivity.Connecting
			}
		}
	}
	if b.view != nil {
		b.view.set(p)
	}
	b.cc.UpdateState(balancer.State{ConnectivityState: agg, Picker: p})
}

type fleetPicker struct {
	addrs      []string
	conns      map[string]daemonConn
	resolveErr error
}

func (p *fleetPicker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	r, _ := info.Ctx.Value(routeKey{}).(*route)
	if r == nil {
		// A call without a route (none of the client's own): any READY
		// daemon, in list order.
		r = &route{}
	}
	if r.addr != "" {
		d, ok := p.conns[r.addr]
		if !ok {
			return balancer.PickResult{}, status.Errorf(codes.InvalidArgument, "daemon %s is not one of %s", r.addr, strings.Join(p.addrs, ", "))
		}
		return p.pickOne(r, r.addr, d)
	}
	if len(p.addrs) == 0 {
		return balancer.PickResult{}, status.Errorf(codes.Unavailable, "no daemon: %v", p.resolveErr)
	}
	var failed, notServing []string
	for _, a := range rank(r.key, p.addrs) {
		d := p.conns[a]
		switch {
		case d.state == connectivity.TransientFailure:
			failed = append(failed, fmt.Sprintf("%s: %v", a, d.err))
			continue
		case d.state == connectivity.Ready && d.health == connectivity.TransientFailure:
			failed = append(failed, fmt.Sprintf("%s: %v", a, d.healthErr))
			notServing = append(notServing, a)
			continue
		case d.state == connectivity.Ready && d.health == connectivity.Idle:
			// Connected, health not known yet: wait rather than move
			// the request id to another daemon.
			return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
		}
		return p.pickOne(r, a, d)
	}
	if len(notServing) > 0 {
		// Every daemon that is up says NOT_SERVING (a fleet warming up:
		// the daemon queues proofs until it is ready). The first in rank
		// is the one the request id goes to once all serve, so a retry
		// then still finds its job.
		a := notServing[0]
		return p.pickOne(r, a, p.conns[a])
	}
	return balancer.PickResult{}, status.Errorf(codes.Unavailable, "no daemon available (%s)", strings.Join(failed, "; "))
}

func (p *fleetPicker) pickOne(r *route, a string, d daemonConn) (balancer.PickResult, error) {
	switch d.state {
	case connectivity.Ready:
		r.setPicked(a)
		return balancer.PickResult{SubConn: d.sc}, nil
	case connectivity.TransientFailure:
		return balancer.PickResult{}, status.Errorf(codes.Unavailable, "daemon %s unavailable: %v", a, d.err)
	}
	// Connecting or idle: wait for the next picker.
	return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
}

// jobOn returns the client-side job id of daemon job id on addr:
// "addr/id". A daemon's job ids contain no "/", so the last "/" splits it.
func jobOn(addr, id string) string {
	if id == "" {
		return ""
	}
	return addr + "/" + id
}

// splitJob splits a job id of a client of several daemons into the
// daemon's address and its own job id.
func (c *Client) splitJob(id string) (addr, daemonID string, err error) {
	i := strings.LastIndexByte(id, '/')
	if i <= 0 || i == len(id)-1 {
		return "", "", status.Errorf(codes.InvalidArgument, "job id %q names no daemon (want ADDRESS/JOB, as Submit returns)", id)
	}
	addr, daemonID = id[:i], id[i+1:]
	for _, a := range c.addrs {
		if a == addr {
			return addr, daemonID, nil
		}
	}
	return "", "", status.Errorf(codes.InvalidArgument, "job id %q names daemon %s, not one of %s", id, addr, strings.Join(c.addrs, ", "))
}

// ErrSeveralDaemons is returned by Status on a client of several daemons:
// ask each with StatusAt.
var ErrSeveralDaemons = semconv.NewError(semconv.ErrorTypeInvalidRequest, "several daemons: ask each with StatusAt")

// DialAddrs returns a client of several daemons ("host:port" each, at
// least one, no duplicates) that spreads jobs over them with gRPC's own
// machinery: a manual resolver holds the list and a load-balancing policy
// (cuzk_request_hash) picks the daemon of each call.
//
//   - Submit, Prove and AwaitRequest go to the daemon that rendezvous
//     hashing of the request id ranks first among the daemons that are up
//     and SERVING (grpc.health.v1; a daemon without the health service
//     counts as serving), or, when none is serving, among those up (they
//     queue the proof until ready). A retry with the same request id
//     therefore finds the job the first call made, as long as that daemon
//     stays up: when the daemon ranked first is up but NOT_SERVING
//     (out of rotation: a warm-up that failed, a health status an
//     operator set), it is asked first (AwaitProof by request id, not
//     waiting; a span of its own in the caller's trace) and the call goes
//     to it when it holds the job; new request ids go to the others.
//   - The job ids the client returns name their daemon: "ADDRESS/JOB"
//     (Job.ID, Result.JobID). Await and Cancel of such an id go to that
//     daemon, and fail with UNAVAILABLE while it is down; an id naming
//     another daemon is INVALID_ARGUMENT.
//   - StatusAt asks one daemon; PreloadKeys and EvictKeys ask all.
//
// Traces are as with Dial: each call's client span is a child of the span
// in its context, and the daemon's spans join that trace. The connections
// are made at the first call, to every daemon. A daemon that stops or
// restarts is noticed when its connection closes; a host that vanishes
// without closing it only by TCP's own timeouts, or sooner with client
// keepalive (WithDialOptions(grpc.WithKeepaliveParams(...))). With WithTLS,
// each daemon's certificate is verified against the host of its address
// (unless the tls.Config names a ServerName). Errors: an address that is
// not host:port, a duplicated one, or options that grpc.NewClient refuses.
func DialAddrs(addrs []string, opts ...Option) (*Client, error) {
	if len(addrs) == 0 {
		return nil, errors.New("no daemon address")
	}
	cfg := newConfig(opts)
	seen := map[string]bool{}
	state := resolver.State{}
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || port == "" || strings.Contains(a, "/") {
			return nil, fmt.Errorf("daemon address %q: want host:port", a)
		}
		if seen[a] {
			return nil, fmt.Errorf("daemon address %s given twice", a)
		}
		seen[a] = true
		// ServerName: TLS checks each daemon's certificate against its
		// own host; without it gRPC would use the target's name ("fleet").
		// A ServerName in the tls.Config names every daemon's instead.
		ra := resolver.Address{Addr: a, ServerName: host}
		if cfg.tls != nil && cfg.tls.ServerName != "" {
			ra.ServerName = ""
		}
		state.Addresses = append(state.Addresses, ra)
	}
	view := &fleetView{}
	state.Attributes = attributes.New(fleetViewKey{}, view)
	r := manual.NewBuilderWithScheme("cuzk-fleet")
	r.InitialState(state)
	dopts := append(dialOptions(cfg),
		grpc.WithResolvers(r),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"`+balancerName+`":{}}],"healthCheckConfig":{"serviceName":""}}`))
	conn, err := grpc.NewClient(r.Scheme()+":///fleet", dopts...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", strings.Join(addrs, ", "), err)
	}
	return &Client{conn: conn, api: cuzkv1.NewProvingEngineClient(conn), addrs: append([]string(nil), addrs...), view: view}, nil
}

// Addrs returns the daemons of a client made by DialAddrs (nil for Dial).
func (c *Client) Addrs() []string { return append([]string(nil), c.addrs...) }

// routeRequest routes a call by request id; rt is nil for a client of one
// daemon. When the daemon ranked first for the id is up but skipped (NOT_SERVING,
// out of rotation) and holds the id's job, the call goes to it instead, and held
// is that job as the daemon reported it (so a retry while a daemon is out of rotation
// finds its job rather than proving it again elsewhere).
func (c *Client) routeRequest(ctx context.Context, requestID string) (_ context.Context, rt *route, held *Result) {
	if len(c.addrs) == 0 {
		return ctx, nil, nil
	}
	if a := c.view.skippedFirst(requestID); a != "" {
		if res := c.holds(ctx, a, requestID); res != nil {
			rt = &route{addr: a}
			return withRoute(ctx, rt), rt, rt.result(res)
		}
	}
	rt = &route{key: requestID}
	return withRoute(ctx, rt), rt, nil
}

// probeTimeout bounds holds' question to a daemon that is out of rotation
// (a variable for the tests).
var probeTimeout = 10 * time.Second

// holds asks daemon addr for the job of requestID without waiting for it:
// its result (a running job's as far as it got), or nil when addr has no
// such job or does not answer.
func (c *Client) holds(ctx context.Context, addr, requestID string) *Result {
	// A daemon that cannot answer this in probeTimeout is as good as down.
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	resp, err := c.api.AwaitProof(withRoute(ctx, &route{addr: addr}), &cuzkv1.AwaitProofRequest{RequestId: requestID, TimeoutMs: 1})
	if err != nil {
		// DEADLINE_EXCEEDED for a job still running, the job's own
		// status for one that failed: both carry its result.
		return resultOfError(err)
	}
	return resultFrom(resp)
}

// routeJob routes a call to the daemon that job id names and returns the
// daemon's own id for it.
func (c *Client) routeJob(ctx context.Context, id string) (context.Context, string, error) {
	if len(c.addrs) == 0 {
		return ctx, id, nil
	}
	addr, daemonID, err := c.splitJob(id)
	if err != nil {
		return ctx, "", err
	}
	return withRoute(ctx, &route{addr: addr}), daemonID, nil
}

func routeOf(ctx context.Context) *route {
	r, _ := ctx.Value(routeKey{}).(*route)
	return r
}

// jobID is the client's job id for the daemon's id (unchanged without a
// route).
func (r *route) jobID(daemonID string) string {
	if r == nil {
		return daemonID
	}
	a := r.addr
	if a == "" {
		a = r.Picked()
	}
	return jobOn(a, daemonID)
}

// result rewrites res's job id to name its daemon.
func (r *route) result(res *Result) *Result {
	if res != nil && r != nil {
		res.JobID = r.jobID(res.JobID)
	}
	return res
}

// StatusAt returns the status of daemon addr, one of Addrs (or the address
// of a client made by Dial, whatever its value).
func (c *Client) StatusAt(ctx context.Context, addr string) (*Status, error) {
	if len(c.addrs) > 0 {
		ctx = withRoute(ctx, &route{addr: addr})
	}
	return c.status(ctx)
}

func (c *Client) preloadAll(ctx context.Context, circuit string, constraints uint64) (Key, bool, error) {
	var key Key
	all := true
	for _, a := range c.addrs {
		r, err := c.api.PreloadKeys(withRoute(ctx, &route{addr: a}), &cuzkv1.PreloadKeysRequest{Circuit: circuit, Constraints: constraints})
		if err != nil {
			return Key{}, false, fmt.Errorf("preload keys on %s: %w", a, err)
		}
		k := r.GetKey()
		key = keyOf(k)
		all = all && r.GetCacheHit()
	}
	return key, all, nil
}

func (c *Client) evictAll(ctx context.Context, circuit string, constraints uint64) (bool, error) {
	held := false
	for _, a := range c.addrs {
		r, err := c.api.EvictKeys(withRoute(ctx, &route{addr: a}), &cuzkv1.EvictKeysRequest{Circuit: circuit, Constraints: constraints})
		if err != nil {
			return held, fmt.Errorf("evict keys on %s: %w", a, err)
		}
		held = held || r.GetEvicted()
	}
	return held, nil
}
