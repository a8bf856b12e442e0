package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
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
