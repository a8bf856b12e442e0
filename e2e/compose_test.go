package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// loadCompose loads a compose file with compose-go, the loader Docker
// Compose itself uses (interpolation, normalisation, validation against the
// compose specification, paths resolved against the file's folder), with
// an empty environment so only the file's own defaults apply.
func loadCompose(ctx context.Context, path string) (*types.Project, error) {
	opts, err := cli.NewProjectOptions([]string{path},
		cli.WithWorkingDirectory(filepath.Dir(path)), cli.WithEnv(nil),
		cli.WithName("otelcuzk"), cli.WithResolvedPaths(true))
	if err != nil {
		return nil, err
	}
	return opts.LoadProject(ctx)
}

// composeProblems returns what is unsafe or broken in a loaded project: a
// published port not bound to 127.0.0.1, a service on the host's network
// (no binds at all), a bind mount whose source does not exist (Docker
// would create an empty directory in its place).
func composeProblems(p *types.Project) []string {
	var out []string
	for _, name := range p.ServiceNames() {
		s := p.Services[name]
		if s.NetworkMode == "host" {
			// Every port the service listens on is then on the host's
			// interfaces, whatever ports: says.
			out = append(out, fmt.Sprintf("%s runs with network_mode host: its ports bypass the 127.0.0.1 binds", name))
		}
		for _, port := range s.Ports {
			if port.Published != "" && port.HostIP != "127.0.0.1" {
				out = append(out, fmt.Sprintf("%s publishes %s on %q, not 127.0.0.1", name, port.Published, port.HostIP))
			}
		}
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if _, err := os.Stat(v.Source); err != nil {
				out = append(out, fmt.Sprintf("%s bind-mounts %s: %v", name, v.Source, err))
			}
		}
	}
	return out
}

// TestComposeFileLoadsAndIsSafe: deploy/compose.yaml loads with compose-go,
// every bind-mounted file exists and every published port is bound to
// 127.0.0.1; the same checks catch a port on all interfaces and a missing
// file (so they are real).
func TestComposeFileLoadsAndIsSafe(t *testing.T) {
	ctx := context.Background()
	path, err := filepath.Abs(filepath.Join(deployDir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadCompose(ctx, path)
	if err != nil {
		t.Fatalf("compose-go: %v", err)
	}
	binds, ports := 0, 0
	for _, s := range p.Services {
		ports += len(s.Ports)
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeBind {
				binds++
			}
		}
	}
	if binds < 5 || ports < 6 {
		t.Errorf("compose.yaml has %d bind mounts and %d ports: the loader read less than the file has", binds, ports)
	}
	for _, problem := range composeProblems(p) {
		t.Error(problem)
	}
	if g := p.Services["grafana"].Environment["GF_AUTH_ANONYMOUS_ORG_ROLE"]; g == nil || (*g != "Viewer" && *g != "") {
		t.Errorf("grafana's anonymous role is %v, want Viewer at most", g)
	}

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(b), `"127.0.0.1:9090:9090"`, `"9090:9090"`, 1)
	broken = strings.Replace(broken, "./prometheus.yml:", "./prometheus-missing.yml:", 1)
	broken = strings.Replace(broken, "  jaeger:\n", "  jaeger:\n    network_mode: host\n", 1)
	if strings.Count(broken, "network_mode: host") != 1 || broken == string(b) {
		t.Fatal("compose.yaml lines the test edits are gone; update the test")
	}
	// The edited copy goes into a copy of deploy/, so the relative mounts
	// resolve as in the original and nothing is written into the tree.
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Dir(path))); err != nil {
		t.Fatal(err)
	}
	bpath := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(bpath, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	bp, err := loadCompose(ctx, bpath)
	if err != nil {
		t.Fatalf("compose-go on the edited file: %v", err)
	}
	got := strings.Join(composeProblems(bp), "\n")
	if !strings.Contains(got, "prometheus publishes 9090") || !strings.Contains(got, "prometheus-missing.yml") ||
		!strings.Contains(got, "jaeger runs with network_mode host") {
		t.Errorf("the checks missed a port on all interfaces, a service on the host's network or a missing mount:\n%s", got)
	}
	if _, err := loadCompose(ctx, filepath.Join(t.TempDir(), "none.yaml")); err == nil {
		t.Error("a missing compose file loaded")
	}
}
