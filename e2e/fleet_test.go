package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

const gatewayConfig = "../deploy/otelcol-gateway.yaml"

// samplerNames returns, per span id, the values of resource attribute
// cuzk.tail_sampler on the spans of trace id in Jaeger (Jaeger keeps
// resource attributes as process tags).
func samplerNames(t *testing.T, j *jaegerInstance, id string) map[string][]string {
	t.Helper()
	resp, err := http.Get(j.QueryURL() + "/api/traces/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data []struct {
			Spans []struct {
				SpanID    string `json:"spanID"`
				ProcessID string `json:"processID"`
			} `json:"spans"`
			Processes map[string]struct {
				Tags []struct {
					Key   string `json:"key"`
					Value any    `json:"value"`
				} `json:"tags"`
			} `json:"processes"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Data) != 1 {
		t.Fatalf("trace %s from Jaeger: %v (%d traces)", id, err, len(body.Data))
	}
	out := map[string][]string{}
	for _, s := range body.Data[0].Spans {
		for _, tag := range body.Data[0].Processes[s.ProcessID].Tags {
			if tag.Key == "cuzk.tail_sampler" {
				out[s.SpanID] = append(out[s.SpanID], fmt.Sprint(tag.Value))
			}
		}
		if _, ok := out[s.SpanID]; !ok {
			out[s.SpanID] = nil
		}
	}
	return out
}

// TestFleetLayoutKeepsTracesWhole runs the fleet layout of deploy/: the
// daemon exports to one first-tier Collector (otelcol-gateway.yaml),
// examples/curio-task to another, and both gateways route by trace id to
// two tail-sampling Collectors (otel-collector.yaml), each stamping its own
// name. Every trace, whose spans entered at two gateways, arrives whole in
// Jaeger and every span of it carries the same single sampler name; over
// the runs both samplers are used (so the routing really spreads).
func TestFleetLayoutKeepsTracesWhole(t *testing.T) {
	j, tempo := startJaeger(t), startJaeger(t)
	var samplers []*collectorInstance
	for i := 1; i <= 2; i++ {
		samplers = append(samplers, startCollector(t, fmt.Sprintf("sampler-%d", i), collectorConfig,
			"JAEGER_OTLP_ENDPOINT="+j.OTLPGRPC, "TEMPO_OTLP_ENDPOINT="+tempo.OTLPGRPC,
			fmt.Sprintf("OTELCOL_SAMPLER_NAME=sampler-%d", i),
			"OTELCOL_DECISION_WAIT=30s", "OTELCOL_DECISION_AFTER_ROOT=2s", "OTELCOL_SAMPLE_PERCENT=100"))
	}
	route := []string{"OTELCOL_SAMPLER_1=" + samplers[0].OTLPGRPC, "OTELCOL_SAMPLER_2=" + samplers[1].OTLPGRPC}
	gwDaemon := startCollector(t, "gateway-1", gatewayConfig, route...)
	gwCurio := startCollector(t, "gateway-2", gatewayConfig, route...)

	stamp := time.Now().UnixNano()
	daemonService := fmt.Sprintf("e2e-fleet-serve-%d", stamp)
	curioService := fmt.Sprintf("e2e-fleet-curio-%d", stamp)
	d := startDaemon(t, gwDaemon.otlpEnv(daemonService))

	used := map[string]int{}
	// Trace ids are random: each run picks a sampler by its hash. Up to
	// 16 runs until both were used (all on one: probability 2^-15).
	for run := 0; run < 16 && len(used) < 2; run++ {
		out, _ := runProgram(t, 3*time.Minute, nil, curioTaskBin(t),
			"--addr", d.Addr, "--otlp-endpoint", gwCurio.OTLPHTTP, "--service", curioService,
			"--circuit", "mulchain", "--constraints", fmt.Sprint(e2eConstraints),
			"--task-id", fmt.Sprint(stamp%1_000_000+int64(run)), "--task-name", "WdPost")
		m := anyTraceID.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("curio-task printed no trace id:\n%s", out)
		}
		id := strings.ToLower(m[1])
		for _, backend := range []*jaegerInstance{j, tempo} {
			st := daemonLayers(t, backend, id, daemonService) // whole: every layer, engine.job under the daemon's server span
			if task := st.one(t, "curio.task"); task.ParentID != "" || task.Service != curioService {
				t.Errorf("trace %s: curio.task parent %q service %q, want the root of %s", id, task.ParentID, task.Service, curioService)
			}
		}
		names := map[string]bool{}
		for span, ns := range samplerNames(t, j, id) {
			if len(ns) != 1 {
				t.Errorf("trace %s span %s carries sampler names %v, want exactly one", id, span, ns)
			}
			for _, n := range ns {
				names[n] = true
			}
		}
		if len(names) != 1 {
			t.Errorf("trace %s passed through samplers %v, want one", id, names)
		}
		for n := range names {
			used[n]++
		}
	}
	if len(used) != 2 {
		t.Errorf("16 traces all went through %v: the gateways do not spread traces", used)
	}
	t.Logf("traces per sampler: %v", used)
}
