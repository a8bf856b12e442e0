package backend

import (
	"strings"
	"testing"
)

// The words parse once into typed settings ("" is each default); a
// malformed word is an error naming it and the words it wants, and Check
// refuses a typed value no parse could have made.
func TestDeviceSettingsParseOnceAndRefuseUnknownWords(t *testing.T) {
	for _, c := range []struct {
		hc, g2 string
		want   DeviceSettings
	}{
		{"", "", DeviceSettings{HostCopyRegistered, G2OnGPU}},
		{"register", "cpu", DeviceSettings{HostCopyRegister, G2OnCPU}},
		{"pageable", "gpu", DeviceSettings{HostCopyPageable, G2OnGPU}},
	} {
		got, err := ParseDeviceSettings(c.hc, c.g2)
		if err != nil || got != c.want || got.Check() != nil {
			t.Errorf("ParseDeviceSettings(%q, %q) = %+v, %v; want %+v", c.hc, c.g2, got, err, c.want)
		}
	}
	for _, c := range [][2]string{{"pinned", ""}, {"", "GPU"}} {
		if _, err := ParseDeviceSettings(c[0], c[1]); err == nil || !strings.Contains(err.Error(), "want") {
			t.Errorf("ParseDeviceSettings(%q, %q) = %v, want an error naming the words it wants", c[0], c[1], err)
		}
	}
	if (DeviceSettings{}).Check() != nil {
		t.Error("the zero value (the defaults) is refused")
	}
	if (DeviceSettings{HostCopy: "pinned"}).Check() == nil || (DeviceSettings{MSMG2: "fpga"}).Check() == nil {
		t.Error("Check accepted a value no parse makes")
	}
}
