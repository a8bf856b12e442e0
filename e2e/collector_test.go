package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

// collectorVersion is the release of the Collector builder and of every
// component in deploy/otelcol-builder.yaml.
const collectorVersion = "v0.161.0"

// collectorBinary returns the Collector built from deploy/otelcol-builder.yaml:
// $OTELCUZK_OTELCOL_BIN (e2e/run.sh builds or reuses it). Without it the
// test skips, except in CI, where it fails.
func collectorBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("OTELCUZK_OTELCOL_BIN"); p != "" {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("OTELCUZK_OTELCOL_BIN not set: run e2e/run.sh, which builds the Collector")
	}
	t.Skip("OTELCUZK_OTELCOL_BIN not set (e2e/run.sh builds the Collector " + collectorVersion + ")")
	return ""
}

const collectorConfig = "../deploy/otel-collector.yaml"

// TestCollectorConfigValidates: the Collector built from exactly the
// components of deploy/otelcol-builder.yaml accepts deploy/otel-collector.yaml
// and deploy/otelcol-gateway.yaml, and rejects the first with a component it
// does not have (so validation is real).
func TestCollectorConfigValidates(t *testing.T) {
	bin := collectorBinary(t)
	for _, cfg := range []string{collectorConfig, gatewayConfig} {
		if out, err := exec.Command(bin, "validate", "--config", cfg).CombinedOutput(); err != nil {
			t.Fatalf("validate %s: %v\n%s", cfg, err, out)
		}
	}
	cfg, err := os.ReadFile(collectorConfig)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(cfg), "processors: [memory_limiter, tail_sampling, resource/sampler, batch]",
		"processors: [memory_limiter, tail_sampling, resource/sampler, batch, groupbytrace]", 1)
	if broken == string(cfg) {
		t.Fatal("pipeline line not found in the config; update the test")
	}
	path := filepath.Join(t.TempDir(), "broken.yaml")
	os.WriteFile(path, []byte(broken), 0o644)
	out, err := exec.Command(bin, "validate", "--config", path).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "groupbytrace") {
		t.Errorf("a config naming a missing processor validated: %v\n%s", err, out)
	}
}

// collectorInstance is an otelcol-custom process on loopback.
type collectorInstance struct {
	OTLPGRPC, OTLPHTTP, Metrics string // host:port
}

// startCollector runs the Collector built from the manifest with config
// (a path) and env (its OTELCOL_* and endpoint variables); the OTLP and
// metrics listen addresses are picked here. It waits until OTLP gRPC
// accepts connections and stops the process at the end of the test,
// logging its output when the test failed.
func startCollector(t *testing.T, name, config string, env ...string) *collectorInstance {
	t.Helper()
	return startCollectorConfigs(t, name, []string{config}, env...)
}

// startCollectorConfigs is startCollector with several --config values,
// merged by the Collector in order: a file, then overlays such as
// "yaml:exporters::otlp_grpc/tempo::retry_on_failure::enabled: false".
func startCollectorConfigs(t *testing.T, name string, configs []string, env ...string) *collectorInstance {
	t.Helper()
	bin := collectorBinary(t)
	addrs := freeLoopbackAddrs(t, 3)
	c := &collectorInstance{OTLPGRPC: addrs[0], OTLPHTTP: addrs[1], Metrics: addrs[2]}
	var args []string
	for _, cfg := range configs {
		args = append(args, "--config", cfg)
	}
	cmd := exec.Command(bin, args...)
	metricsHost, metricsPort, _ := net.SplitHostPort(c.Metrics)
	cmd.Env = append(append(os.Environ(),
		"OTELCOL_OTLP_GRPC_LISTEN="+c.OTLPGRPC,
		"OTELCOL_OTLP_HTTP_LISTEN="+c.OTLPHTTP,
		"OTELCOL_METRICS_HOST="+metricsHost,
		"OTELCOL_METRICS_PORT="+metricsPort,
	), env...)
	logPath := filepath.Join(t.TempDir(), name+".log")
	done := startLogged(t, cmd, "collector "+name, logPath)
	err := waitFor(context.Background(), 30*time.Second, func() error {
		select {
		case err := <-done:
			done <- err
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("collector %s exited: %v\n%s", name, err, tail(b, 2048))
		default:
		}
		c, err := net.DialTimeout("tcp", addrs[0], 200*time.Millisecond)
		if err != nil {
			return err
		}
		return c.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// otlpEnv points an OTel SDK program at this Collector's OTLP gRPC port.
func (c *collectorInstance) otlpEnv(service string) []string {
	return []string{
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + c.OTLPGRPC,
		"OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_EXPORTER_OTLP_INSECURE=true",
		"OTEL_SERVICE_NAME=" + service,
		"OTEL_BSP_SCHEDULE_DELAY=200",
	}
}

// TestCollectorTailSamplingToJaegerAndTempo runs deploy/otel-collector.yaml
// for real between a program and two Jaegers (the second standing in for
// Tempo: both take OTLP gRPC). With the "rest" fraction at 0, a failed
// trace and a slow one reach both backends; a fast successful one reaches
// neither.
func TestCollectorTailSamplingToJaegerAndTempo(t *testing.T) {
	jaeger, tempo := startJaeger(t), startJaeger(t)
	col := startCollector(t, "otelcol", collectorConfig,
		"JAEGER_OTLP_ENDPOINT="+jaeger.OTLPGRPC,
		"TEMPO_OTLP_ENDPOINT="+tempo.OTLPGRPC,
		"OTELCOL_DECISION_WAIT=1s",
		"OTELCOL_SLOW_PROOF_MS=250",
		"OTELCOL_SAMPLE_PERCENT=0",
	)
	send := func(name string, args ...string) string {
		out, _ := runProgram(t, time.Minute, col.otlpEnv("e2e-collector-"+name), gapspanBin(t), args...)
		return strings.TrimSpace(out)
	}
	// The fast one first: the Collector decides traces in the order their
	// decision_wait expires, so once the later ones are in the backends the
	// fast one has been decided too.
	fast := send("fast", "-gap", "0s")
	failed := send("failed", "-gap", "0s", "-error")
	slow := send("slow", "-gap", "400ms")

	for _, backend := range []*jaegerInstance{jaeger, tempo} {
		for _, id := range []string{failed, slow} {
			traceOf(t, backend, id, "e2e.gap", "e2e.before", "e2e.after")
		}
	}
	for _, backend := range []*jaegerInstance{jaeger, tempo} {
		_, err := tracefile.FetchJaeger(context.Background(), nil, backend.QueryURL(), fast)
		if !errors.Is(err, tracefile.ErrTraceNotFound) {
			t.Errorf("fast successful trace %s: %v, want it sampled out", fast, err)
		}
	}
}
