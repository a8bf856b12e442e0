package msm

import (
	"context"
	"errors"
	"fmt"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/prover/gpu/kernels"
)

// msmScalarKernels is the module of msm.cu's part 1 (MSM_PART_SCALAR):
// the digit, scan and scatter kernels, the same for G1 and G2.
type msmScalarKernels struct {
	mod                                     *cudaspans.Module
	fill, digits, scan, scatter, affineScan *cudaspans.Function
}

// msmGroup is the point kernels of one group, G1 or G2 (msm.cu with
// MSM_G2, kernel names with the suffix _g2), each part its own module
// (MSM_PART 2 to 5), with the shared scalar kernels.
type msmGroup struct {
	g2                                      bool
	mods                                    []*cudaspans.Module
	affineBytes, xyzzBytes                  int
	fill, digits, scan, scatter, affineScan *cudaspans.Function
	accumulate, merge, reduce, windowSum    *cudaspans.Function
	// The affine bucket sums (part 6, msmaffine.cuh).
	affineLevel, affineFinish *cudaspans.Function
}

// msmCompileOptions returns the NVRTC inputs of a G1 or G2 MSM module,
// with extra's defines, headers and flags added.
func msmCompileOptions(g2 bool, extra cudaspans.CompileOptions) cudaspans.CompileOptions {
	o := extra
	o.Headers = map[string]string{"msm.cuh": kernels.MSMHeader, "msmaffine.cuh": kernels.MSMAffineHeader,
		"ec.cuh": kernels.EC, "ff.cuh": kernels.FF, "fp2.cuh": kernels.FP2}
	for k, v := range extra.Headers {
		o.Headers[k] = v
	}
	o.Defines = map[string]string{}
	for k, v := range extra.Defines {
		o.Defines[k] = v
	}
	if g2 {
		o.Defines["MSM_G2"] = ""
	}
	return o
}

// msmPart is one module of msm.cu (MSM_PART), its kernel names for G1;
// the point parts' G2 kernels carry the suffix _g2.
type msmPart struct {
	name    string
	part    int // MSM_PART
	kernels []string
	affine  bool // the affine bucket sums: compiled only for an MSM that uses them
}

// msmScalarPart and msmPointParts are msm.cu's modules (kernels/msm.cu,
// "Parts"): ptxas compiles a module on one core, so the parts compile in
// parallel; the scalar part is shared by G1 and G2.
var (
	msmScalarPart = msmPart{"msm_scalar", 1, []string{"msm_fill_u32", "msm_digits_count", "msm_bucket_scan", "msm_scatter",
		"msm_affine_scan"}, false}
	msmPointParts = []msmPart{
		{"msm_accumulate", 2, []string{"msm_bucket_accumulate"}, false},
		{"msm_merge", 3, []string{"msm_segment_merge"}, false},
		{"msm_reduce", 4, []string{"msm_bucket_reduce"}, false},
		{"msm_window_sum", 5, []string{"msm_window_sum"}, false},
		{"msm_affine", 6, []string{"msm_affine_level", "msm_affine_finish"}, true},
	}
)

// Modules lists every module of the MSM as New compiles them by default
// (extra adds NVRTC options): the scalar part, then the point parts of G1
// and of G2, with the affine bucket sums' part of a group whose default
// uses them (AffineModules lists those of both groups).
func Modules(extra cudaspans.CompileOptions) []kernels.Module {
	out := []kernels.Module{msmScalarPart.module(false, extra)}
	for _, g2 := range []bool{false, true} {
		withAffine := defaultAffineTailG1 > 0
		if g2 {
			withAffine = defaultAffineTailG2 > 0
		}
		for _, p := range msmPointParts {
			if !p.affine || withAffine {
				out = append(out, p.module(g2, extra))
			}
		}
	}
	return out
}

// AffineModules lists the modules of the affine bucket sums of G1 and G2
// (WithAffineBuckets), as New compiles them for an MSM that uses them.
func AffineModules(extra cudaspans.CompileOptions) []kernels.Module {
	var out []kernels.Module
	for _, g2 := range []bool{false, true} {
		for _, p := range msmPointParts {
			if p.affine {
				out = append(out, p.module(g2, extra))
			}
		}
	}
	return out
}

// module returns the compile of part p for G1 or G2.
func (p msmPart) module(g2 bool, extra cudaspans.CompileOptions) kernels.Module {
	o := msmCompileOptions(g2 && p.part != 1, extra)
	o.Defines["MSM_PART"] = fmt.Sprint(p.part)
	km := kernels.Module{Name: p.name, Source: kernels.MSM, Opts: o, Kernels: p.kernels}
	if g2 && p.part != 1 {
		km.Name += "_g2"
		km.Kernels = nil
		for _, k := range p.kernels {
			km.Kernels = append(km.Kernels, k+"_g2")
		}
	}
	return km
}

// compileMSMScalar compiles the scalar part.
func compileMSMScalar(ctx context.Context, c *cudaspans.Context, extra cudaspans.CompileOptions) (*msmScalarKernels, error) {
	mod, fs, err := msmScalarPart.module(false, extra).Compile(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("msm: %w", err)
	}
	return &msmScalarKernels{mod: mod, fill: fs[0], digits: fs[1], scan: fs[2], scatter: fs[3], affineScan: fs[4]}, nil
}

// compileMSMGroup compiles the point parts of G1 or G2 on c, in parallel
// (extra adds NVRTC options), the affine bucket sums' part only when
// withAffine. The group's scalar kernels are set by with.
func compileMSMGroup(ctx context.Context, c *cudaspans.Context, g2 bool, extra cudaspans.CompileOptions, withAffine bool) (*msmGroup, error) {
	g := &msmGroup{g2: g2, affineBytes: msmAffineBytes, xyzzBytes: msmXYZZBytes}
	if g2 {
		g.affineBytes, g.xyzzBytes = msmAffine2Bytes, msmXYZZ2Bytes
	}
	targets := g.pointTargets()
	mods := make([]*cudaspans.Module, len(msmPointParts))
	jobs := make([]func() error, len(msmPointParts))
	for i, p := range msmPointParts {
		jobs[i] = func() error {
			if p.affine && !withAffine {
				return nil
			}
			mod, fs, err := p.module(g2, extra).Compile(ctx, c)
			if err != nil {
				return fmt.Errorf("msm: %s: %w", groupName(g2), err)
			}
			mods[i] = mod
			for k, f := range fs {
				*targets[i][k] = f
			}
			return nil
		}
	}
	err := kernels.Parallel(jobs...)
	for _, mod := range mods {
		if mod != nil {
			g.mods = append(g.mods, mod)
		}
	}
	if err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

// pointTargets returns, per part of msmPointParts, where its kernels go.
func (g *msmGroup) pointTargets() [][]**cudaspans.Function {
	return [][]**cudaspans.Function{{&g.accumulate}, {&g.merge}, {&g.reduce}, {&g.windowSum},
		{&g.affineLevel, &g.affineFinish}}
}

// with returns g with the scalar kernels of sk (nil for a nil g).
func (g *msmGroup) with(sk *msmScalarKernels) *msmGroup {
	if g == nil {
		return nil
	}
	g.fill, g.digits, g.scan, g.scatter, g.affineScan = sk.fill, sk.digits, sk.scan, sk.scatter, sk.affineScan
	return g
}

// close unloads the group's own modules (not the shared scalar one).
func (g *msmGroup) close() error {
	if g == nil {
		return nil
	}
	var errs []error
	for _, m := range g.mods {
		errs = append(errs, m.Close())
	}
	g.mods = nil
	return errors.Join(errs...)
}

func (sk *msmScalarKernels) close() error {
	if sk == nil || sk.mod == nil {
		return nil
	}
	err := sk.mod.Close()
	sk.mod = nil
	return err
}

// CompileG2 compiles (or loads from the kernel cache) the G2 kernels now
// rather than on the first G2 MSM; a no-op once they are loaded. Errors
// as New's.
func (m *MSM) CompileG2(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, err := m.group(ctx, true)
	return err
}

// group returns the G1 module, or the G2 module, compiling it on first
// use. m.mu is held.
func (m *MSM) group(ctx context.Context, g2 bool) (*msmGroup, error) {
	if m.closed || m.g1 == nil {
		return nil, errors.New("msm: closed")
	}
	if !g2 {
		return m.g1, nil
	}
	if m.g2 == nil {
		g, err := compileMSMGroup(ctx, m.c, true, m.compile, m.affineG2 > 0)
		if err != nil {
			return nil, err
		}
		m.g2 = g.with(m.scalar)
	}
	return m.g2, nil
}
