package circuits

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MemAvailable returns the kernel's estimate of memory available for new
// work without swapping, in bytes (MemAvailable in /proc/meminfo, Linux ≥
// 3.14). It returns an error where /proc/meminfo has no such line.
func MemAvailable() (uint64, error) { return memAvailable("/proc/meminfo") }

func memAvailable(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read available memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse MemAvailable in %s: %w", path, err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return 0, fmt.Errorf("no MemAvailable line in %s", path)
}

// CheckMemory estimates the memory that compiling, setting up and proving
// circuit name at constraints needs, and returns an error wrapping
// ErrTooLarge when it exceeds MemAvailable, before anything is allocated.
// Errors also wrap ErrUnknownCircuit, ErrNotBuiltin or ErrBadConstraints.
func CheckMemory(name string, constraints int) error {
	avail, err := MemAvailable()
	if err != nil {
		return err
	}
	return checkMemory(name, constraints, avail)
}

func checkMemory(name string, constraints int, avail uint64) error {
	s, err := LookupBuiltin(name)
	if err != nil {
		return err
	}
	if err := checkPositive(constraints); err != nil {
		return err
	}
	need := s.MemoryBytes(constraints)
	if need > avail {
		return fmt.Errorf("%w: %s with %d constraints needs about %.1f GiB, %.1f GiB available",
			ErrTooLarge, name, constraints, float64(need)/(1<<30), float64(avail)/(1<<30))
	}
	return nil
}

// linearBytes is base + perConstraint·n bytes, saturating at the largest
// uint64 so absurd sizes are refused rather than wrapped around.
func linearBytes(base, perConstraint uint64, n int) uint64 {
	if n <= 0 {
		return base
	}
	if uint64(n) > (^uint64(0)-base)/perConstraint {
		return ^uint64(0)
	}
	return base + uint64(n)*perConstraint
}
