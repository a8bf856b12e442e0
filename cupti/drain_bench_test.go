package cupti

import (
	"context"
	"testing"
)

// BenchmarkCudaspansDrain is the work cuda.cupti_ms adds to each
// cudaspans Synchronize in process: the records of 1000 kernels (each an
// external correlation record and a kernel record, as cz_core.c frames
// them) decoded and matched to their launches. ns/op is per 1000 kernels.
func BenchmarkCudaspansDrain(b *testing.B) {
	f := newFake()
	c, _, _, _ := startFake(b, f)
	defer c.Close(context.Background())
	const n = 1000
	var frames []byte
	ids := make([]uint64, n)
	for i := 0; i < n; i++ {
		ids[i] = uint64(0x1000 + i)
		frames = append(frames, ext(extCudaspans, ids[i], uint32(10+i))...)
		frames = append(frames, kernel("ours", uint32(10+i), f.gpuNow+uint64(i)*5000, 4000)...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.queue(frames)
		if got := c.cudaspansDurations(ids); len(got) != n {
			b.Fatalf("%d durations, want %d", len(got), n)
		}
	}
}
