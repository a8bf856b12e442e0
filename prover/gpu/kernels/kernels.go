// Package kernels holds the CUDA C++ of the GPU backend, embedded in the
// binary and compiled at run time by NVRTC through cudaspans (Module):
//
//   - ff.cuh: the fields Fr and Fp of BLS12-381 (Montgomery form, as
//     gnark-crypto's), with the PTX carry chains of the device's add, sub
//     and multiplications and their host emulation;
//   - fp2.cuh: Fp2, G2's coordinate field;
//   - ec.cuh: G1 and G2, one template over the coordinate field (affine,
//     Jacobian and XYZZ points), and the batched affine pair step that
//     batchadd.cuh and msmaffine.cuh share;
//   - ntt.cuh, ntt.cu: the NTT passes and groth16's pointwise step
//     (prover/gpu/ntt compiles them);
//   - msm.cuh, msm.cu: Pippenger's MSM, one source compiled as several
//     modules per group (prover/gpu/msm); msmaffine.cuh: its bucket sums
//     by batched affine additions (one inversion per thread);
//   - batchadd.cuh, batchadd.cu: the batch addition of the bases of the
//     wires whose value is 1 (prover/gpu/msm, BatchAdd);
//   - rate.cu: multiply-rate probes (prover/gpu.MeasureRates);
//   - fixedbase.cuh, fixedbase.cu: the fixed-base scalar multiplications
//     of a Groth16 key setup (prover/gpu/fixedbase).
//
// The headers are plain C++ too: prover/gpu/internal/hostarith, hostec,
// hostbatch and hostmsm compile them with g++ (through links named *.h in their
// folders, so Go's build cache sees an edit) and test them against
// gnark-crypto.
package kernels

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync"

	"github.com/otelcuzk/otelcuzk/cudaspans"
)

// The sources, as compiled.
var (
	//go:embed ff.cuh
	FF string
	//go:embed fp2.cuh
	FP2 string
	//go:embed ec.cuh
	EC string
	//go:embed ntt.cuh
	NTTHeader string
	//go:embed ntt.cu
	NTT string
	//go:embed msm.cuh
	MSMHeader string
	//go:embed msm.cu
	MSM string
	//go:embed msmaffine.cuh
	MSMAffineHeader string
	//go:embed rate.cu
	Rate string
	//go:embed fixedbase.cuh
	FixedBaseHeader string
	//go:embed fixedbase.cu
	FixedBase string
	//go:embed batchadd.cuh
	BatchAddHeader string
	//go:embed batchadd.cu
	BatchAdd string
)

// Module is one NVRTC compile: the module's name (its cuda.compile span's
// cuda.module.name), source, options (headers, defines, flags) and the
// kernels it must export.
type Module struct {
	Name, Source string
	Opts         cudaspans.CompileOptions
	Kernels      []string
}

// Compile compiles m on c (or loads it from the kernel cache) and looks up
// its kernels, in Kernels' order. Errors: the compile's (a
// *cudaspans.CompileError with the log, cudaspans.ErrNoCompiler) or a
// missing kernel, each naming the module.
func (m Module) Compile(ctx context.Context, c *cudaspans.Context) (*cudaspans.Module, []*cudaspans.Function, error) {
	mod, err := c.Compile(ctx, m.Name, m.Source, m.Opts)
	if err != nil {
		return nil, nil, fmt.Errorf("compile %s kernels: %w", m.Name, err)
	}
	fs := make([]*cudaspans.Function, len(m.Kernels))
	for i, k := range m.Kernels {
		if fs[i], err = mod.Function(k); err != nil {
			_ = mod.Close()
			return nil, nil, err
		}
	}
	return mod, fs, nil
}

// Parallel runs the functions (module compiles: ptxas works on one module
// on one core) on their own goroutines and returns their errors joined.
func Parallel(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, f := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
