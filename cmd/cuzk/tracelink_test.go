package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With JAEGER_UI set, a prove whose trace was sent over OTLP ends with the
// link to that trace in the UI; without it, no jaeger line.
func TestProvePrintsTheJaegerLinkOfTheTraceItSent(t *testing.T) {
	otlpEnvReceiver(t)
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	for _, ui := range []string{"http://127.0.0.1:16686/", ""} {
		t.Setenv(envJaegerUI, ui)
		out, errOut, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "512", "--backend", "cpu",
			"--proof", filepath.Join(dir, "p.bin"))
		if err != nil {
			t.Fatalf("prove: %v\n%s", err, errOut)
		}
		var id string
		for _, l := range strings.Split(out, "\n") {
			if i := strings.Index(l, "(trace id "); strings.HasPrefix(l, "trace     sent") && i >= 0 {
				id = strings.TrimSuffix(l[i+len("(trace id "):], ")")
			}
		}
		if len(id) != 32 {
			t.Fatalf("no trace id on the trace line:\n%s", out)
		}
		link := "jaeger    http://127.0.0.1:16686/trace/" + id + "\n"
		if ui != "" && !strings.Contains(out, link) {
			t.Errorf("JAEGER_UI=%s: output lacks %q:\n%s", ui, link, out)
		}
		if ui == "" && strings.Contains(out, "jaeger ") {
			t.Errorf("a jaeger line without JAEGER_UI:\n%s", out)
		}
	}
}

// A JAEGER_UI that is no http(s) URL is refused in one line naming the
// variable, before any proving (no proof file), by prove and by submit.
func TestAMalformedJaegerUIIsRefusedBeforeProving(t *testing.T) {
	clearOTLPEnv(t)
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	for _, bad := range []string{"127.0.0.1:16686", "ftp://x", "http://", "http://h/?q=1"} {
		t.Setenv(envJaegerUI, bad)
		proof := filepath.Join(dir, "p.bin")
		_, _, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "512", "--backend", "cpu", "--proof", proof)
		if err == nil || !strings.Contains(err.Error(), "JAEGER_UI=") || strings.Contains(err.Error(), "\n") {
			t.Errorf("JAEGER_UI=%q: prove: want one line naming JAEGER_UI, got %v", bad, err)
		}
		if _, serr := os.Stat(proof); serr == nil {
			t.Errorf("JAEGER_UI=%q: a proof was written", bad)
		}
		_, _, err = runCuzk(t, "submit", "--addr", "127.0.0.1:1")
		if err == nil || !strings.Contains(err.Error(), "JAEGER_UI=") {
			t.Errorf("JAEGER_UI=%q: submit: want the JAEGER_UI error, got %v", bad, err)
		}
	}
}
