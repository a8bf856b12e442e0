// Package host describes the machine a benchmark ran on, for the first
// line of its report.
package host

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

// CPUModel is the "model name" of /proc/cpuinfo, or "unknown CPU".
func CPUModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "model name") {
			if i := strings.Index(l, ":"); i >= 0 {
				return strings.TrimSpace(l[i+1:])
			}
		}
	}
	return "unknown CPU"
}

// String is "N CPUs (GOMAXPROCS M), model, go version".
func String() string {
	return fmt.Sprintf("%d CPUs (GOMAXPROCS %d), %s, %s", runtime.NumCPU(), runtime.GOMAXPROCS(0), CPUModel(), runtime.Version())
}
