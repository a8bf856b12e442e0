package gpu

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestParallelCopyCopiesEveryByte: the multi-goroutine copy of the staged
// mode copies every byte at sizes around its piece boundaries.
func TestParallelCopyCopiesEveryByte(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 63, 2<<20 - 1, 2 << 20, 4<<20 + 65, 17<<20 + 3} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		dst := bytes.Repeat([]byte{0xA5}, n)
		parallelCopy(dst, src)
		if !bytes.Equal(dst, src) {
			t.Fatalf("parallelCopy of %d bytes differs from its source", n)
		}
	}
}

func TestParseHostCopy(t *testing.T) {
	for in, want := range map[string]HostCopy{"": HostCopyStaged, "staged": HostCopyStaged,
		"register": HostCopyRegister, "pageable": HostCopyPageable} {
		got, err := ParseHostCopy(in)
		if err != nil || got != want {
			t.Errorf("ParseHostCopy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseHostCopy("pinned"); err == nil {
		t.Error(`ParseHostCopy("pinned") gave no error`)
	}
}

func TestCheckEnvNamesTheMalformedVariable(t *testing.T) {
	for _, ok := range [][2]string{{"", ""}, {"staged", "gpu"}, {"register", "cpu"}, {"pageable", ""}} {
		t.Setenv("CUZK_CUDA_HOST_COPY", ok[0])
		t.Setenv("CUZK_CUDA_MSM_G2", ok[1])
		if err := CheckEnv(); err != nil {
			t.Errorf("CUZK_CUDA_HOST_COPY=%q CUZK_CUDA_MSM_G2=%q: %v", ok[0], ok[1], err)
		}
	}
	t.Setenv("CUZK_CUDA_HOST_COPY", "")
	t.Setenv("CUZK_CUDA_MSM_G2", "GPU")
	if err := CheckEnv(); err == nil || !strings.Contains(err.Error(), "CUZK_CUDA_MSM_G2") {
		t.Errorf("CUZK_CUDA_MSM_G2=GPU: %v, want an error naming the variable", err)
	}
	t.Setenv("CUZK_CUDA_MSM_G2", "")
	t.Setenv("CUZK_CUDA_HOST_COPY", "pinned")
	if err := CheckEnv(); err == nil || !strings.Contains(err.Error(), "CUZK_CUDA_HOST_COPY") {
		t.Errorf("CUZK_CUDA_HOST_COPY=pinned: %v, want an error naming the variable", err)
	}
}
