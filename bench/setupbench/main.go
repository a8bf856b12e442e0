// Command setupbench times Groth16 key setups of a built-in circuit: on
// the GPU (prover/setup with prover/gpu/fixedbase's multiplications), with
// the time of each setup.* step, against gnark's groth16.Setup on the CPU
// at the sizes of -cpu, in one run; at the sizes of -compare it also makes
// the keys with the CPU's multiplications from the same secrets and checks
// that both are byte-identical.
//
//	go build -o setupbench ./bench/setupbench
//	./setupbench -circuit merkle -log2 20,22,24 -cpu 20 -compare 18
//
// Results: bench/setup.md.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/constraint"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/bench/internal/host"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/gpu/fixedbase"
	"github.com/otelcuzk/otelcuzk/prover/setup"
)

func main() {
	cf := benchutil.NewCircuitFlags("20,22", 1, "unused")
	cpu := flag.String("cpu", "20", "comma-separated log2 sizes also set up by gnark's groth16.Setup (\"\": none)")
	compare := flag.String("compare", "", "comma-separated log2 sizes whose GPU keys are compared with the CPU multiplier's, same secrets")
	window := flag.Int("window", fixedbase.DefaultWindowBits, "window bits of the generator tables")
	sizes := cf.Parse("setupbench")
	benchutil.Exit("setupbench", run(*cf.Circuit, sizes, parseSet(*cpu), parseSet(*compare), *window))
}

func parseSet(s string) map[int]bool {
	m := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		if v, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
			m[v] = true
		}
	}
	return m
}

func run(circuit string, sizes []int, cpu, compare map[int]bool, window int) error {
	fmt.Printf("host: %s, GOMAXPROCS %d\n", host.String(), runtime.GOMAXPROCS(0))
	rec, tp, _, closeAll, err := benchutil.SyncTracing()
	if err != nil {
		return err
	}
	defer closeAll(context.Background())
	ctx := context.Background()
	start := time.Now()
	e, err := fixedbase.Open(ctx, 0, fixedbase.WithTracerProvider(tp), fixedbase.WithWindowBits(window))
	if err != nil {
		return err
	}
	defer e.Close()
	fmt.Printf("engine: kernels compiled or loaded and tables up in %.2f s (window %d)\n", time.Since(start).Seconds(), window)
	for _, lg := range sizes {
		start := time.Now()
		_, ccs, err := benchutil.Compile(circuit, lg)
		if err != nil {
			return err
		}
		fmt.Printf("\n%s 2^%d: %d constraints, %d wires; compiled in %.1f s\n", circuit, lg, ccs.GetNbConstraints(),
			ccs.GetNbInternalVariables()+ccs.GetNbPublicVariables()+ccs.GetNbSecretVariables(), time.Since(start).Seconds())
		rec.Reset()
		start = time.Now()
		pk, vk, err := setup.Setup(ctx, ccs, setup.WithMultiplier(e, "cuda"), setup.WithTracerProvider(tp))
		if err != nil {
			return err
		}
		gpu := time.Since(start)
		steps := map[string]time.Duration{}
		for _, s := range rec.Ended() {
			name := s.Name()
			for _, a := range s.Attributes() {
				if a.Key == semconv.KeySetupVector {
					name += "." + a.Value.AsString()
				}
			}
			steps[name] += s.EndTime().Sub(s.StartTime())
		}
		fmt.Printf("  GPU setup %.2f s: evaluate %.2f s; G1 a %.2f, b %.2f, z %.2f, k_pk %.2f s; G2 b %.2f s; commitment %.2f s; verifying key %.2f s; peak RSS %.1f GB\n",
			gpu.Seconds(), steps["setup.evaluate"].Seconds(), steps["setup.g1.a"].Seconds(), steps["setup.g1.b"].Seconds(), steps["setup.g1.z"].Seconds(),
			steps["setup.g1.k_pk"].Seconds(), steps["setup.g2.b"].Seconds(), steps["setup.commitment"].Seconds(), steps["setup.verifying_key"].Seconds(), peakRSS())
		fmt.Printf("  points: G1 %d, G2 %d\n", pk.NbG1(), pk.NbG2())
		if compare[lg] {
			if err := compareCPU(ctx, ccs, e); err != nil {
				return err
			}
		}
		pk, vk = nil, nil
		_, _ = pk, vk
		runtime.GC()
		if cpu[lg] {
			start = time.Now()
			if _, _, err := groth16.Setup(ccs); err != nil {
				return err
			}
			c := time.Since(start)
			fmt.Printf("  gnark groth16.Setup (CPU) %.1f s: GPU setup %.1fx faster; peak RSS %.1f GB\n", c.Seconds(), c.Seconds()/gpu.Seconds(), peakRSS())
		}
	}
	return nil
}

// compareCPU makes the keys of ccs twice from the same fixed secrets, with
// the GPU's and the CPU's multiplications, and requires the same bytes.
func compareCPU(ctx context.Context, ccs constraint.ConstraintSystem, e *fixedbase.Engine) error {
	info := ccs.GetCommitments().(constraint.Groth16Commitments)
	tw, err := setup.SampleToxicWaste(len(info))
	if err != nil {
		return err
	}
	start := time.Now()
	gpk, gvk, err := setup.Setup(ctx, ccs, setup.WithToxicWaste(tw), setup.WithMultiplier(e, "cuda"))
	if err != nil {
		return err
	}
	g := time.Since(start)
	start = time.Now()
	cpk, cvk, err := setup.Setup(ctx, ccs, setup.WithToxicWaste(tw))
	if err != nil {
		return err
	}
	c := time.Since(start)
	a, b := keyBytes(gpk, gvk), keyBytes(cpk, cvk)
	if !bytes.Equal(a, b) {
		return fmt.Errorf("GPU and CPU keys of the same secrets differ (%d and %d bytes)", len(a), len(b))
	}
	fmt.Printf("  same secrets: GPU keys (%.2f s) byte-identical to the CPU multiplier's (%.1f s), %d bytes\n", g.Seconds(), c.Seconds(), len(a))
	return nil
}

func keyBytes(pk *groth16_bls12381.ProvingKey, vk *groth16_bls12381.VerifyingKey) []byte {
	var b bytes.Buffer
	_, _ = vk.WriteTo(&b)
	_ = pk.WriteDump(&b)
	return b.Bytes()
}

// peakRSS is the process's peak resident set (VmHWM), GB.
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			kb, _ := strconv.Atoi(strings.Fields(l)[1])
			return float64(kb) / 1e6
		}
	}
	return 0
}
