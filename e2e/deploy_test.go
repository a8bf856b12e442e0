package e2e

import (
	"encoding/json"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

const deployDir = "../deploy"

func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// TestDeployFilesAgree checks what no single tool checks in deploy/: the
// compose file mounts files that exist; the Collector image is the release
// the builder manifest builds; the Collector's exporters, Grafana's data
// sources and Prometheus's scrape target point at ports the services
// actually listen on; the dashboard uses provisioned data sources; the
// systemd unit and Prometheus use the daemon's default ports.
func TestDeployFilesAgree(t *testing.T) {
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Volumes     []string          `yaml:"volumes"`
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
		} `yaml:"services"`
	}
	readYAML(t, "compose.yaml", &compose)
	for _, want := range []string{"otel-collector", "jaeger", "tempo", "prometheus", "grafana"} {
		if _, ok := compose.Services[want]; !ok {
			t.Errorf("compose.yaml has no %s service", want)
		}
	}
	for name, s := range compose.Services {
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, "./") {
				if _, err := os.Stat(filepath.Join(deployDir, src)); err != nil {
					t.Errorf("%s mounts %s: %v", name, src, err)
				}
			}
		}
	}
	if img := compose.Services["otel-collector"].Image; !strings.HasSuffix(img, ":"+strings.TrimPrefix(collectorVersion, "v")) {
		t.Errorf("collector image %s is not release %s, which otelcol-builder.yaml builds and CI validates", img, collectorVersion)
	}
	manifest, err := os.ReadFile(filepath.Join(deployDir, "otelcol-builder.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`gomod: (\S+) (\S+)`).FindAllStringSubmatch(string(manifest), -1) {
		if m[2] != collectorVersion {
			t.Errorf("builder manifest: %s at %s, want every component at %s", m[1], m[2], collectorVersion)
		}
	}

	// service:port pairs that listen inside the compose network.
	var tempo struct {
		Server struct {
			HTTPListenPort int `yaml:"http_listen_port"`
		} `yaml:"server"`
		Distributor struct {
			Receivers struct {
				OTLP struct {
					Protocols struct {
						GRPC struct {
							Endpoint string `yaml:"endpoint"`
						} `yaml:"grpc"`
					} `yaml:"protocols"`
				} `yaml:"otlp"`
			} `yaml:"receivers"`
		} `yaml:"distributor"`
	}
	readYAML(t, "tempo.yaml", &tempo)
	_, tempoOTLP, _ := net.SplitHostPort(tempo.Distributor.Receivers.OTLP.Protocols.GRPC.Endpoint)
	listening := map[string]bool{
		"jaeger:4317":        true, // all-in-one OTLP gRPC
		"jaeger:16686":       true, // all-in-one query API
		"prometheus:9090":    true,
		"tempo:" + tempoOTLP: true,
		"tempo:" + strconv.Itoa(tempo.Server.HTTPListenPort): true,
	}
	env := compose.Services["otel-collector"].Environment
	for _, k := range []string{"JAEGER_OTLP_ENDPOINT", "TEMPO_OTLP_ENDPOINT"} {
		if !listening[env[k]] {
			t.Errorf("collector %s=%s: nothing listens there", k, env[k])
		}
	}

	var ds struct {
		Datasources []struct {
			UID  string `yaml:"uid"`
			Type string `yaml:"type"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	readYAML(t, "grafana/provisioning/datasources/datasources.yaml", &ds)
	uids := map[string]string{}
	for _, d := range ds.Datasources {
		u, err := url.Parse(d.URL)
		if err != nil || !listening[u.Host] {
			t.Errorf("data source %s: %s: nothing listens there", d.UID, d.URL)
		}
		uids[d.UID] = d.Type
	}
	for _, typ := range []string{"prometheus", "jaeger", "tempo"} {
		found := false
		for _, v := range uids {
			found = found || v == typ
		}
		if !found {
			t.Errorf("no %s data source provisioned", typ)
		}
	}
	b, err := os.ReadFile(filepath.Join(deployDir, "grafana/dashboards/cuzk.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title      string `json:"title"`
			Datasource struct {
				Type string `json:"type"`
				UID  string `json:"uid"`
			} `json:"datasource"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		if uids[p.Datasource.UID] != p.Datasource.Type {
			t.Errorf("panel %q uses data source %s/%s, not provisioned", p.Title, p.Datasource.Type, p.Datasource.UID)
		}
	}

	// The daemon's default metrics port is what Prometheus and the unit use.
	help, _ := runProgram(t, 30*time.Second, nil, cuzkBin(t), "serve", "--help")
	m := regexp.MustCompile(`--metrics-listen[^\n]*default: "([^"]+)"`).FindStringSubmatch(help)
	if m == nil {
		t.Fatalf("no --metrics-listen default in cuzk serve --help:\n%s", help)
	}
	_, port, _ := net.SplitHostPort(m[1])
	prom, err := os.ReadFile(filepath.Join(deployDir, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(prom), ":"+port+`"`) {
		t.Errorf("prometheus.yml does not scrape the daemon's default metrics port %s", port)
	}
	// The Collector's own metrics: Prometheus scrapes the port compose
	// tells the Collector to serve them on.
	var scrape struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, "prometheus.yml", &scrape)
	collectorMetrics := "otel-collector:" + env["OTELCOL_METRICS_PORT"]
	found := false
	for _, sc := range scrape.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				found = found || (sc.JobName == "otel-collector" && target == collectorMetrics)
			}
		}
	}
	if !found {
		t.Errorf("prometheus.yml has no otel-collector job scraping %s, where compose serves the Collector's metrics", collectorMetrics)
	}
	// The dashboard's "slow" (seconds, in the Tempo panel of failed or
	// slow proofs) is the Collector's slow policy, so the panel lists what
	// tail sampling keeps.
	var slow string
	var vars struct {
		Templating struct {
			List []struct{ Name, Query string } `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &vars); err != nil {
		t.Fatal(err)
	}
	for _, v := range vars.Templating.List {
		if v.Name == "slow" {
			slow = v.Query
		}
	}
	col, err := os.ReadFile(filepath.Join(deployDir, "otel-collector.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	threshold := ""
	if m := regexp.MustCompile(`threshold_ms: \$\{env:OTELCOL_SLOW_PROOF_MS:-(\d+)\}`).FindSubmatch(col); m != nil {
		threshold = string(m[1])
	}
	if slow == "" || threshold != slow+"000" {
		t.Errorf("dashboard variable slow = %q s, the Collector's slow policy %q ms: they disagree", slow, threshold)
	}
	unit, err := os.ReadFile(filepath.Join(deployDir, "cuzk.service"))
	if err != nil {
		t.Fatal(err)
	}
	// The unit serves metrics at $CUZK_METRICS_LISTEN (set in the unit,
	// overridden in /etc/cuzk/cuzk.env), on the port Prometheus scrapes.
	if !strings.Contains(string(unit), "--metrics-listen ${CUZK_METRICS_LISTEN}") ||
		!strings.Contains(string(unit), "\nEnvironment=CUZK_METRICS_LISTEN=127.0.0.1:"+port+"\n") {
		t.Errorf("cuzk.service does not serve metrics at $CUZK_METRICS_LISTEN, default 127.0.0.1:%s", port)
	}
}
