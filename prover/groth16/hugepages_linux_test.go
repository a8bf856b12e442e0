package groth16

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// vmFlags returns the VmFlags line of the mapping that starts at addr in
// /proc/self/smaps ("rd wr mr mw me ac hg" …).
func vmFlags(t *testing.T, addr uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	start := fmt.Sprintf("%x-", addr)
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "-") && !strings.Contains(line, ":") || strings.HasPrefix(line, start) {
			in = strings.HasPrefix(line, start)
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return line
		}
	}
	t.Fatalf("no mapping at %#x in /proc/self/smaps", addr)
	return ""
}

func TestFreshSynthesisBuffersAskForHugePages(t *testing.T) {
	probe, err := unix.Mmap(-1, 0, 4<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(probe)
	if err := unix.Madvise(probe, unix.MADV_HUGEPAGE); err != nil {
		t.Skipf("this kernel has no transparent huge pages (madvise: %v)", err)
	}
	hb, v, zeroed, err := newFrBuffer(nil, 1<<17) // 4 MiB
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Free()
	if !zeroed || len(v) != 1<<17 {
		t.Fatalf("fresh buffer: zeroed %v, %d elements", zeroed, len(v))
	}
	if flags := vmFlags(t, uintptr(unsafe.Pointer(unsafe.SliceData(hb.Bytes())))); !strings.Contains(flags+" ", " hg ") {
		t.Errorf("fresh synthesis buffer without MADV_HUGEPAGE: %s", flags)
	}
}
