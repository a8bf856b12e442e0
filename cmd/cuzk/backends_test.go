package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

type gateWarmer struct {
	release chan struct{}
	err     error
}

func (g gateWarmer) Warmup(context.Context) error {
	<-g.release
	return g.err
}

func TestWarmupInBackgroundSaysSoWhenItTakesLongAndWhenItEnds(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{{nil, "cuda: kernels ready after"}, {errors.New("no NVRTC"), "cuda: kernel warm-up failed after"}} {
		var out bytes.Buffer
		g := gateWarmer{make(chan struct{}), tc.err}
		done := warmupInBackground(context.Background(), g, &out, 10*time.Millisecond)
		time.Sleep(50 * time.Millisecond)
		close(g.release)
		<-done
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "cuda: compiling the kernel modules") || !strings.HasPrefix(lines[1], tc.want) {
			t.Errorf("output %q, want the compiling line then %q", out.String(), tc.want)
		}
		if tc.err != nil && !strings.Contains(lines[1], "no NVRTC") {
			t.Errorf("failure line %q lacks the error", lines[1])
		}
	}
	// A quick warm-up (kernel cache hit, or the CPU backend) prints nothing.
	var out bytes.Buffer
	g := gateWarmer{make(chan struct{}), nil}
	close(g.release)
	<-warmupInBackground(context.Background(), g, &out, time.Second)
	if out.Len() != 0 {
		t.Errorf("a quick warm-up printed %q", out.String())
	}
}

// The CUDA backend's settings are read from the environment here, once,
// and a malformed value is refused naming its variable, on any host.
func TestDeviceSettingsComeFromTheEnvironmentAndNameAMalformedVariable(t *testing.T) {
	for _, ok := range [][2]string{{"", ""}, {"staged", "gpu"}, {"register", "cpu"}, {"pageable", ""}} {
		t.Setenv("CUZK_CUDA_HOST_COPY", ok[0])
		t.Setenv("CUZK_CUDA_MSM_G2", ok[1])
		s, err := deviceSettings()
		if err != nil || s.HostCopy != ok[0] || s.MSMG2 != ok[1] {
			t.Errorf("CUZK_CUDA_HOST_COPY=%q CUZK_CUDA_MSM_G2=%q: %+v, %v", ok[0], ok[1], s, err)
		}
	}
	t.Setenv("CUZK_CUDA_HOST_COPY", "")
	t.Setenv("CUZK_CUDA_MSM_G2", "GPU")
	if _, err := deviceSettings(); err == nil || !strings.Contains(err.Error(), "CUZK_CUDA_MSM_G2") {
		t.Errorf("CUZK_CUDA_MSM_G2=GPU: %v, want an error naming the variable", err)
	}
	t.Setenv("CUZK_CUDA_MSM_G2", "")
	t.Setenv("CUZK_CUDA_HOST_COPY", "pinned")
	if _, err := deviceSettings(); err == nil || !strings.Contains(err.Error(), "CUZK_CUDA_HOST_COPY") {
		t.Errorf("CUZK_CUDA_HOST_COPY=pinned: %v, want an error naming the variable", err)
	}
}
