package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/daemon"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// writeVersion names the revision with its time and a modified tree, the Go
// version and gnark's and gnark-crypto's versions; a build without a VCS
// stamp says so.
func TestVersionShowsRevisionGoAndGnarkVersions(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/otelcuzk/otelcuzk", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "github.com/consensys/gnark", Version: "v0.14.0"},
			{Path: "github.com/consensys/gnark-crypto", Version: "v0.19.0"},
		},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "47dd6bd57224f6a824735dee9525dc4967053046"},
			{Key: "vcs.time", Value: "2026-12-01T19:44:01Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	var b bytes.Buffer
	writeVersion(&b, bi)
	for _, want := range []string{
		"revision      47dd6bd57224f6a824735dee9525dc4967053046 (2026-12-01T19:44:01Z), modified tree\n",
		"go            go1.26.8\n", "gnark         v0.14.0\n", "gnark-crypto  v0.19.0\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("version lacks %q:\n%s", want, b.String())
		}
	}
	bi.Settings = nil
	bi.Deps = bi.Deps[:1]
	b.Reset()
	writeVersion(&b, bi)
	if !strings.Contains(b.String(), "revision      none (") || !strings.Contains(b.String(), "gnark-crypto  not linked") ||
		strings.Contains(b.String(), "modified") {
		t.Errorf("a build without a VCS stamp:\n%s", b.String())
	}
}

// cuzk --version prints this test binary's own build: its Go version and
// the gnark module it links.
func TestVersionFlagPrintsTheBuild(t *testing.T) {
	out, _, err := runCuzk(t, "--version")
	if err != nil {
		t.Fatal(err)
	}
	bi, _ := debug.ReadBuildInfo()
	if !strings.Contains(out, "go            "+bi.GoVersion+"\n") || !strings.Contains(out, "gnark         v") {
		t.Errorf("cuzk --version:\n%s", out)
	}
}

// One version string for one build, everywhere it is named: cuzk
// --version's first line, --help's VERSION, the service.version of a
// proof's spans, the instrumentation scope version of otelcuzk's own spans
// and the version a daemon's GetStatus reports. They were "(devel)",
// "build", "(devel)" and "0.1.0".
func TestOneVersionStringEverywhere(t *testing.T) {
	clearOTLPEnv(t)
	want := otelcuzk.Version()
	bi, _ := debug.ReadBuildInfo()
	if want != semconv.BuildVersion(bi) {
		t.Fatalf("otelcuzk.Version() %q is not this build's %q", want, semconv.BuildVersion(bi))
	}
	out, _, err := runCuzk(t, "--version")
	if err != nil || !strings.HasPrefix(out, "cuzk          "+want+"\n") {
		t.Errorf("cuzk --version: %v\n%s, want its first line to name %q", err, out, want)
	}
	if out, _, err = runCuzk(t, "--help"); err != nil || !strings.Contains(out, "VERSION:\n   "+want+"\n") {
		t.Errorf("cuzk --help: %v\n%s, want VERSION %q", err, out, want)
	}

	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	traceFile := filepath.Join(dir, "t.jsonl")
	if _, errOut, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "256", "--backend", "cpu",
		"--proof", filepath.Join(dir, "p.bin"), "--trace-file", traceFile); err != nil {
		t.Fatalf("prove: %v\n%s", err, errOut)
	}
	raw, err := os.ReadFile(traceFile)
	if err != nil {
		t.Fatal(err)
	}
	var services, scopes []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var doc struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []struct {
						Key   string
						Value struct{ StringValue string }
					}
				}
				ScopeSpans []struct {
					Scope struct{ Name, Version string }
				}
			}
		}
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatal(err)
		}
		for _, rs := range doc.ResourceSpans {
			for _, a := range rs.Resource.Attributes {
				if a.Key == "service.version" {
					services = append(services, a.Value.StringValue)
				}
			}
			for _, ss := range rs.ScopeSpans {
				if ss.Scope.Name == semconv.ScopeName {
					scopes = append(scopes, ss.Scope.Version)
				}
			}
		}
	}
	if len(services) == 0 || len(scopes) == 0 {
		t.Fatalf("the trace has %d service.version values and %d %s scopes", len(services), len(scopes), semconv.ScopeName)
	}
	for _, v := range append(services, scopes...) {
		if v != want {
			t.Errorf("the trace names the version %q, want %q (service.version %q, scope %q)", v, want, services, scopes)
			break
		}
	}

	d := startDaemon(t, daemon.Config{})
	st, err := d.client(t).Status(context.Background())
	if err != nil || st.Version != want {
		t.Errorf("GetStatus version %q (%v), want %q", st.Version, err, want)
	}
	if out, _, err := runCuzk(t, "status", "--addr", d.addr); err != nil || !strings.Contains(out, "  version "+want+"  ") {
		t.Errorf("cuzk status: %v\n%s", err, out)
	}
}
