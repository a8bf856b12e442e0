package e2e

import (
	"bytes"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	cuzkdaemon "github.com/otelcuzk/otelcuzk/daemon"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
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

// serviceUnit reads deploy/cuzk.service's [Service] section: every value of
// each key, in order (Environment= lines and the like repeat).
func serviceUnit(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, "cuzk.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit := map[string][]string{}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && section == "[Service]" {
			unit[k] = append(unit[k], v)
		}
	}
	return unit
}

// TestServiceUnitWritesWhereSystemdLets checks that cuzk.service gives the
// daemon a writable place for everything it keeps: with DynamicUser=yes and
// ProtectSystem=strict only the directories systemd makes for the unit
// (StateDirectory= under /var/lib, CacheDirectory= under /var/cache, ...)
// and ReadWritePaths= are writable, and the user's home is /, so the
// defaults (~/.local/state/otelcuzk, ~/.cache/otelcuzk) would be read-only
// and serve would refuse to start. The job journal (--state-dir), the key
// cache (--cache-dir) and the kernel cache are resolved as cuzk serve does,
// under the unit's environment. With systemd-analyze on PATH, the unit
// also verifies without a warning.
func TestServiceUnitWritesWhereSystemdLets(t *testing.T) {
	unit := serviceUnit(t)
	if got := unit["DynamicUser"]; len(got) != 1 || got[0] != "yes" {
		t.Fatalf("cuzk.service DynamicUser=%v: this test assumes yes", got)
	}
	if got := unit["ProtectSystem"]; len(got) != 1 || got[0] != "strict" {
		t.Fatalf("cuzk.service ProtectSystem=%v: this test assumes strict", got)
	}
	// The paths systemd makes writable for the unit, and the variables it
	// sets to them (systemd.exec(5), "RuntimeDirectory=").
	writable := unit["ReadWritePaths"]
	env := map[string]string{}
	for key, root := range map[string]string{"StateDirectory": "/var/lib", "CacheDirectory": "/var/cache", "LogsDirectory": "/var/log", "RuntimeDirectory": "/run"} {
		var dirs []string
		for _, v := range unit[key] {
			for _, d := range strings.Fields(v) {
				dirs = append(dirs, filepath.Join(root, d))
			}
		}
		writable = append(writable, dirs...)
		env[strings.ToUpper(strings.TrimSuffix(key, "Directory"))+"_DIRECTORY"] = strings.Join(dirs, ":")
	}
	// The daemon's environment: a dynamic user's home is /; the unit's
	// Environment= lines over nothing else of ours.
	for _, k := range []string{"XDG_STATE_HOME", "XDG_CACHE_HOME", "CUZK_STATE_DIR", "CUZK_CACHE_DIR"} {
		t.Setenv(k, "")
	}
	t.Setenv("HOME", "/")
	for _, line := range unit["Environment"] {
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
			env[k] = v
		}
	}
	if len(unit["ExecStart"]) != 1 {
		t.Fatalf("cuzk.service ExecStart=%v: want one", unit["ExecStart"])
	}
	args := strings.Fields(os.Expand(unit["ExecStart"][0], func(k string) string { return env[k] }))
	flag := func(name string) string {
		for i, a := range args {
			if a == name && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, name+"="); ok {
				return v
			}
		}
		return ""
	}
	stateDir := flag("--state-dir")
	if stateDir == "" {
		stateDir = os.Getenv("CUZK_STATE_DIR")
	}
	if stateDir == "" {
		stateDir = cuzkdaemon.DefaultStateDir()
	}
	keyDir := flag("--cache-dir")
	if keyDir == "" {
		var err error
		if keyDir, err = keycache.DefaultDir(); err != nil {
			t.Fatal(err)
		}
	}
	userCache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	under := func(dir string) bool {
		for _, w := range writable {
			if rel, err := filepath.Rel(w, dir); err == nil && filepath.IsAbs(dir) && !strings.HasPrefix(rel, "..") {
				return true
			}
		}
		return false
	}
	for _, d := range []struct{ what, dir string }{
		{"the job journal (--state-dir, CUZK_STATE_DIR)", stateDir},
		{"the key cache (--cache-dir, CUZK_CACHE_DIR, XDG_CACHE_HOME)", keyDir},
		{"the kernel cache (XDG_CACHE_HOME)", filepath.Join(userCache, "otelcuzk", "kernels")},
	} {
		if d.dir == "none" || !under(d.dir) {
			t.Errorf("cuzk.service: %s is %q, not under a directory the unit may write (%v): set StateDirectory=/CacheDirectory= and point the variable there", d.what, d.dir, writable)
		}
	}

	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not on PATH: the unit's syntax is not verified")
		return
	}
	// verify wants ExecStart's program to exist: this test's own binary
	// stands in for /usr/local/bin/cuzk.
	b, err := os.ReadFile(filepath.Join(deployDir, "cuzk.service"))
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(t.TempDir(), "cuzk.service")
	if err := os.WriteFile(copyPath, bytes.ReplaceAll(b, []byte("/usr/local/bin/cuzk "), []byte(self+" ")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", copyPath).CombinedOutput()
	// verify exits 0 on an unknown key; its warnings name the file.
	if err != nil || bytes.Contains(out, []byte(copyPath)) {
		t.Errorf("systemd-analyze verify cuzk.service: %v\n%s", err, out)
	}
}
