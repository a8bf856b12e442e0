package cudaspans

import "testing"

func TestResourceDevicesDescribeEachGPU(t *testing.T) {
	d := newFakeDriver(newFakeClock())
	d.devices = 2
	infos, err := Devices(WithDriver(d))
	if err != nil {
		t.Fatal(err)
	}
	infos[1].Name, infos[1].UUID, infos[1].DriverVersion = "NVIDIA H200", "GPU-1234", 12080
	got := ResourceDevices(infos)
	if len(got) != 2 {
		t.Fatalf("%d devices, want 2", len(got))
	}
	if got[0].Vendor != "" || got[0].Model != "Fake H200" || got[0].DriverVersion != "13.0" || got[0].MemoryBytes != 141<<30 {
		t.Errorf("device 0: %+v", got[0])
	}
	if got[1].Vendor != "NVIDIA" || got[1].ID != "GPU-1234" || got[1].Ordinal != 1 || got[1].DriverVersion != "12.8" {
		t.Errorf("device 1: %+v", got[1])
	}
}
