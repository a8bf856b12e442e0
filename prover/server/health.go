package server

import (
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
)

// ServiceName is the name the health service reports for the proving
// service (the empty name "" reports the same: the daemon serves nothing
// else).
var ServiceName = cuzkv1.ProvingEngine_ServiceDesc.ServiceName

// healthMethodPrefix is the full method prefix of grpc.health.v1: its RPCs
// need no bearer token, as load balancers and orchestrators probe without
// one and the answer reveals nothing but readiness.
var healthMethodPrefix = "/" + healthpb.Health_ServiceDesc.ServiceName + "/"

// readiness is the serving status the health service reports, with the
// reason the daemon is not serving (GetStatus shows it).
type readiness struct {
	h      *health.Server
	mu     sync.Mutex
	reason string // "" when serving
}

func newReadiness() *readiness {
	r := &readiness{h: health.NewServer()}
	r.set("")
	return r
}

func (r *readiness) set(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reason = reason
	st := healthpb.HealthCheckResponse_SERVING
	if reason != "" {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	for _, name := range []string{"", ServiceName} {
		r.h.SetServingStatus(name, st)
	}
}

func (r *readiness) get() (ready bool, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reason == "", r.reason
}

// SetReady makes the health service (grpc.health.v1, for the service ""
// and ServiceName) answer SERVING. Safe for concurrent use.
func (s *Server) SetReady() { s.ready.set("") }

// SetNotReady makes the health service answer NOT_SERVING and GetStatus
// report reason (one line; an empty reason reads "not ready"). Proofs are
// still accepted and queue: readiness tells load balancers where work
// starts soonest. Safe for concurrent use.
func (s *Server) SetNotReady(reason string) {
	reason = strings.TrimSpace(strings.ReplaceAll(reason, "\n", " "))
	if reason == "" {
		reason = "not ready"
	}
	s.ready.set(reason)
}

// Ready reports whether the health service answers SERVING, and if not,
// why.
func (s *Server) Ready() (bool, string) { return s.ready.get() }

// WorkerService is the health service name of one device worker
// ("cuzk.v1.ProvingEngine/cuda:0"): SERVING until its device faults.
func WorkerService(worker string) string { return ServiceName + "/" + worker }

// DeviceFault reports that worker's device faulted (pass it to
// engine.WithFaultHook): its health service (WorkerService) answers
// NOT_SERVING from now on, and when no worker is healthy any more the
// daemon's too, with the fault as the reason. Safe for concurrent use.
func (s *Server) DeviceFault(worker string, err error) {
	s.ready.h.SetServingStatus(WorkerService(worker), healthpb.HealthCheckResponse_NOT_SERVING)
	st := s.eng.Status()
	for _, w := range st.Workers {
		if w.Healthy {
			return
		}
	}
	s.SetNotReady(fmt.Sprintf("every device faulted; %s: %v", worker, err))
}
