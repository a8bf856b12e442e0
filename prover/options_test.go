package prover

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// TestEachOptionFitsOnlyTheFunctionsThatReadIt: the option types are what
// turns an option passed where it means nothing (WithKeyCacheDir to Prove)
// into a compile error; this pins which function takes which option, and
// that every option changes the configuration it is applied to.
func TestEachOptionFitsOnlyTheFunctionsThatReadIt(t *testing.T) {
	rel, err := buffer.NewReleaser(buffer.ReleaseSync)
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Close(context.Background())
	var one fr.Element
	one.SetOne()
	for _, c := range []struct {
		name                     string
		opt                      any
		prove, synthesize, piped bool
	}{
		{"WithBackend", groth16.WithBackend(cpu.New(nil)), true, false, false},
		{"WithKeyID", groth16.WithKeyID("k"), true, false, false},
		{"WithReleaser", WithReleaser(rel), true, true, true},
		{"WithRandomness", WithRandomness(one, one), true, true, true},
		{"WithTracerProvider", WithTracerProvider(noop.NewTracerProvider()), true, true, true},
		{"WithProvingKey", groth16.WithProvingKey(gnarkgroth16.NewProvingKey(ecc.BLS12_381)), false, true, false},
		{"WithKeyCacheDir", WithKeyCacheDir("/k"), false, false, true},
		{"WithNotice", WithNotice(&bytes.Buffer{}), false, false, true},
		{"WithSeed", WithSeed(7), false, false, true},
		{"WithProgress", WithProgress(true), false, false, true},
		{"WithBuildRevision", WithBuildRevision("r"), false, false, true},
	} {
		_, isProve := c.opt.(groth16.ProveOption)
		_, isSynth := c.opt.(groth16.SynthesizeOption)
		l, isPipe := c.opt.(ProverOption)
		if isProve != c.prove || isSynth != c.synthesize || isPipe != c.piped {
			t.Errorf("%s fits Prove %v, Synthesize %v, New %v; want %v, %v, %v",
				c.name, isProve, isSynth, isPipe, c.prove, c.synthesize, c.piped)
		}
		if _, all := c.opt.(Option); all != (c.prove && c.synthesize && c.piped) {
			t.Errorf("%s is an Option: %v", c.name, all)
		}
		// What a prove or synthesis option changes, prover/groth16's
		// TestEachOptionChangesTheConfiguration checks.
		if isPipe {
			def := newConfig(nil)
			cf := def
			l.applyProver(&cf)
			if reflect.DeepEqual(cf, def) {
				t.Errorf("%s leaves the Prover's configuration as it was", c.name)
			}
		}
	}
}

// TestAnOptionWhereItMeansNothingDoesNotCompile builds, through an
// overlay (nothing is written into the tree), callers that pass an option
// to a function that does not read it: each must fail to compile, naming
// the option type, while a caller with the right options builds.
func TestAnOptionWhereItMeansNothingDoesNotCompile(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	if testing.Short() {
		t.Skip("builds packages with the go tool")
	}
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	const head = "package %s\n\nimport (\n\t\"context\"\n\n\t\"github.com/otelcuzk/otelcuzk/prover\"\n\t\"github.com/otelcuzk/otelcuzk/prover/groth16\"\n)\n\nvar _, _ = prover.New, groth16.Prove\n\nfunc f(ctx context.Context) {\n\t%s\n}\n"
	cases := map[string]string{
		"prove_keycachedir":     `_, _ = groth16.Prove(ctx, nil, nil, nil, prover.WithKeyCacheDir("/k"))`,
		"proveassignment_seed":  `_, _ = groth16.ProveAssignment(ctx, nil, nil, prover.WithSeed(2))`,
		"synthesize_backend":    `_, _ = groth16.Synthesize(ctx, nil, nil, groth16.WithBackend(nil))`,
		"pipeline_keyid":        `_, _ = prover.New(ctx, "cpu", groth16.WithKeyID("k"))`,
		"pipeline_provingkey":   `_, _ = prover.New(ctx, "cpu", groth16.WithProvingKey(nil))`,
		"prove_provingkey":      `_, _ = groth16.Prove(ctx, nil, nil, nil, groth16.WithProvingKey(nil))`,
		"control_right_options": `_, _ = groth16.Prove(ctx, nil, nil, nil, groth16.WithBackend(nil), groth16.WithKeyID("k"), prover.WithTracerProvider(nil)); _, _ = groth16.Synthesize(ctx, nil, nil, groth16.WithProvingKey(nil), prover.WithReleaser(nil)); _, _ = prover.New(ctx, "cpu", prover.WithKeyCacheDir("/k"), prover.WithSeed(2), prover.WithTracerProvider(nil))`,
	}
	dir := t.TempDir()
	replace := map[string]string{}
	var pkgs []string
	for name, call := range cases {
		src := filepath.Join(dir, name+".go")
		if err := os.WriteFile(src, fmt.Appendf(nil, head, name, call), 0o600); err != nil {
			t.Fatal(err)
		}
		replace[filepath.Join(cwd, "optioncheck", name, "x.go")] = src
		pkgs = append(pkgs, "./optioncheck/"+name)
	}
	overlay, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command(goBin, append([]string{"build", "-overlay=" + ov}, pkgs...)...).CombinedOutput()
	// The go tool writes each failed package's errors under "# <path>".
	errs := map[string]string{}
	for _, block := range strings.Split("\n"+string(out), "\n# ")[1:] {
		path, msg, _ := strings.Cut(block, "\n")
		errs[path[strings.LastIndex(path, "/")+1:]] = msg
	}
	for name := range cases {
		msg, failed := errs[name]
		switch {
		case name == "control_right_options" && failed:
			t.Errorf("a caller with the right options does not build:\n%s", msg)
		case name != "control_right_options" && !failed:
			t.Errorf("%s compiled; want a compile error\n%s", name, out)
		case failed && name != "control_right_options" && !strings.Contains(msg, "Option (missing method apply"):
			t.Errorf("%s fails for another reason than the option's type:\n%s", name, msg)
		}
	}
}
