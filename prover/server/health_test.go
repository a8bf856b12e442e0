package server

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func healthOf(t *testing.T, d *daemon, service string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	conn, err := grpc.NewClient(d.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r, err := healthpb.NewHealthClient(conn).Check(ctx5(t), &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		t.Fatalf("health check of %q: %v", service, err)
	}
	return r.GetStatus()
}

func TestHealthServiceFollowsReadiness(t *testing.T) {
	// The token guards the proving service, not the health probe.
	d := startDaemon(t, nil, WithBearerToken("s3cret"))
	for _, svc := range []string{"", ServiceName} {
		if got := healthOf(t, d, svc); got != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health of %q at start: %v, want SERVING", svc, got)
		}
	}
	d.srv.SetNotReady("compiling kernel module msm_g2\nsecond line")
	for _, svc := range []string{"", ServiceName} {
		if got := healthOf(t, d, svc); got != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("health of %q while not ready: %v, want NOT_SERVING", svc, got)
		}
	}
	if ok, why := d.srv.Ready(); ok || why != "compiling kernel module msm_g2 second line" {
		t.Errorf("Ready() = %v, %q; want false with the reason on one line", ok, why)
	}
	d.srv.SetReady()
	if got := healthOf(t, d, ServiceName); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health after SetReady: %v, want SERVING", got)
	}
	if ok, why := d.srv.Ready(); !ok || why != "" {
		t.Errorf("Ready() after SetReady = %v, %q", ok, why)
	}
}
