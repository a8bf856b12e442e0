package daemon

import (
	"strings"
	"testing"
)

// The CUDA backend's settings are read from the environment here, once,
// and a malformed value is refused naming its variable, on any host.
func TestDeviceSettingsComeFromTheEnvironmentAndNameAMalformedVariable(t *testing.T) {
	// Parsed once, here: an unset variable is its default's typed value.
	for _, ok := range [][4]string{{"", "", "registered", "gpu"}, {"staged", "gpu", "staged", "gpu"}, {"register", "cpu", "register", "cpu"}, {"pageable", "", "pageable", "gpu"}} {
		t.Setenv("CUZK_CUDA_HOST_COPY", ok[0])
		t.Setenv("CUZK_CUDA_MSM_G2", ok[1])
		s, err := DeviceSettingsFromEnv()
		if err != nil || string(s.HostCopy) != ok[2] || string(s.MSMG2) != ok[3] {
			t.Errorf("CUZK_CUDA_HOST_COPY=%q CUZK_CUDA_MSM_G2=%q: %+v, %v", ok[0], ok[1], s, err)
		}
	}
	t.Setenv("CUZK_CUDA_HOST_COPY", "")
	t.Setenv("CUZK_CUDA_MSM_G2", "GPU")
	if _, err := DeviceSettingsFromEnv(); err == nil || !strings.Contains(err.Error(), "CUZK_CUDA_MSM_G2") {
		t.Errorf("CUZK_CUDA_MSM_G2=GPU: %v, want an error naming the variable", err)
	}
	t.Setenv("CUZK_CUDA_MSM_G2", "")
	t.Setenv("CUZK_CUDA_HOST_COPY", "pinned")
	if _, err := DeviceSettingsFromEnv(); err == nil || !strings.Contains(err.Error(), "CUZK_CUDA_HOST_COPY") {
		t.Errorf("CUZK_CUDA_HOST_COPY=pinned: %v, want an error naming the variable", err)
	}
	t.Setenv("CUZK_CUDA_HOST_COPY", "")
	// CUPTI's setting is checked here too: cupti says a bad value only
	// when CUPTI starts, never on a host without a GPU.
	for _, ok := range []string{"", "1", "0", "500ms"} {
		t.Setenv("CUZK_CUPTI_NO_FORCED_FLUSH", ok)
		if _, err := DeviceSettingsFromEnv(); err != nil {
			t.Errorf("CUZK_CUPTI_NO_FORCED_FLUSH=%q: %v", ok, err)
		}
	}
	t.Setenv("CUZK_CUPTI_NO_FORCED_FLUSH", "bogus")
	if _, err := DeviceSettingsFromEnv(); err == nil || err.Error() != `CUZK_CUPTI_NO_FORCED_FLUSH="bogus" is not 0, 1 or a duration such as 500ms` {
		t.Errorf("CUZK_CUPTI_NO_FORCED_FLUSH=bogus: %v, want an error naming the variable and the value", err)
	}
}
