package msm

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/gputest"
	"github.com/otelcuzk/otelcuzk/prover/gpu/kernels"
)

// TestGoMirrorsOfKernelConstantsMatchTheEmbeddedHeaders: the constants the
// MSM plan repeats equal those of the kernel sources this binary embeds
// and compiles (issue 13 item 1), so an edit on one side only fails here
// rather than on the GPU.
func TestGoMirrorsOfKernelConstantsMatchTheEmbeddedHeaders(t *testing.T) {
	gputest.CheckMirrors(t, "msm.cuh", kernels.MSMHeader,
		gputest.Mirror{Name: "MSM_SEGMENT", Go: msmSegment},
		gputest.Mirror{Name: "MSM_REDUCE_SLICE", Go: msmReduceSlice},
		gputest.Mirror{Name: "MSM_WINDOW_SUM_THREADS", Go: msmWindowThreads},
		gputest.Mirror{Name: "MSM_SCAN_THREADS", Go: msmScanThreads},
		gputest.Mirror{Name: "MSM_NEG_FLAG", Go: msmMaxPoints + 1}, // point indices below the flag bit
		gputest.Mirror{Name: "MSM_AFFINE_TAIL", Go: msmAffineTail})
	gputest.CheckMirrors(t, "msm.cu", kernels.MSM, gputest.Mirror{Name: "MSM_PART_SCALAR", Go: msmScalarPart.part})
	// The point kernels' blocks: msmBlock threads (their launch bounds).
	for _, m := range regexp.MustCompile(`__launch_bounds__\((\d+)[,)]`).FindAllStringSubmatch(kernels.MSM, -1) {
		if n, _ := strconv.Atoi(m[1]); n != msmBlock && n != msmWindowThreads {
			t.Errorf("msm.cu launch bounds %d: the host launches blocks of %d (msmBlock)", n, msmBlock)
		}
	}
}

// TestMSMPartsListTheKernelsOfEachPartOfMsmCu: each module the host
// compiles (msmScalarPart, msmPointParts) names the MSM_PART number and
// the kernels of that part's #if block in msm.cu, and every kernel of
// msm.cu is in exactly one part.
func TestMSMPartsListTheKernelsOfEachPartOfMsmCu(t *testing.T) {
	names := map[int]string{1: "MSM_PART_SCALAR", 2: "MSM_PART_ACCUMULATE", 3: "MSM_PART_MERGE",
		4: "MSM_PART_REDUCE", 5: "MSM_PART_WINDOW_SUM", 6: "MSM_PART_AFFINE"}
	// A point kernel is named MSM_POINT_KERNEL(name)(...), a scalar one
	// extern "C" __global__ void msm_name(...).
	kernelRe := regexp.MustCompile(`MSM_POINT_KERNEL\((\w+)\)\(|extern "C" __global__ void (msm_\w+)\(`)
	src := kernels.MSM
	total := 0
	for _, p := range append([]msmPart{msmScalarPart}, msmPointParts...) {
		macro := names[p.part]
		if v := gputest.HeaderInt(t, src, macro); v != p.part {
			t.Errorf("%s: MSM_PART %d on the Go side, %s = %d in msm.cu", p.name, p.part, macro, v)
		}
		start := strings.Index(src, "#if MSM_HAS("+macro+")")
		end := strings.Index(src, "#endif  // "+macro)
		if start < 0 || end < start {
			t.Fatalf("msm.cu has no #if MSM_HAS(%s) block", macro)
		}
		var got []string
		for _, m := range kernelRe.FindAllStringSubmatch(src[start:end], -1) {
			got = append(got, m[1]+m[2])
		}
		if !slices.Equal(got, p.kernels) {
			t.Errorf("part %s: msm.cu defines %v, the host looks up %v", p.name, got, p.kernels)
		}
		total += len(got)
	}
	if all := len(kernelRe.FindAllString(src, -1)); all != total {
		t.Errorf("msm.cu defines %d kernels, the parts hold %d", all, total)
	}
}
