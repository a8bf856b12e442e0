package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

func TestParseSizesTakesLog2SizesAndRefusesTheRest(t *testing.T) {
	got, err := parseSizes(" 20, 22,,24 ")
	if err != nil || len(got) != 3 || got[0] != 20 || got[2] != 24 {
		t.Fatalf("parseSizes: %v, %v", got, err)
	}
	for _, bad := range []string{"20,x", "0", "29", "-1"} {
		if _, err := parseSizes(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("parseSizes(%q): %v, want a one-line error", bad, err)
		}
	}
}

// fakePeer writes a program that prints out as sppark_bench would and
// exits with rc.
func fakePeer(t *testing.T, out string, rc int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "peer.sh")
	script := "#!/bin/sh\ncat <<'X'\n" + out + "X\nexit " + string(rune('0'+rc)) + "\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func testJobs(dir string) []*job {
	return []*job{
		{kind: "g1", name: "g1-20", log2: 20, npts: 16, n: 1 << 20, reps: 3, ptsFile: dir + "/p", scFile: dir + "/s", outFile: dir + "/a.out", peer: -1, peerPinned: -1},
		{kind: "g2", name: "g2-22", log2: 22, npts: 8, n: 1 << 22, reps: 3, ptsFile: dir + "/q", scFile: dir + "/s", outFile: dir + "/b.out", peer: -1, peerPinned: -1},
		{kind: "ntt", name: "ntt-24", log2: 24, n: 1 << 24, reps: 6, ptsFile: dir + "/n", outFile: dir + "/n.out", peer: -1, peerPinned: -1},
	}
}

func TestRunPeerWritesTheManifestAndReadsResultsAndErrors(t *testing.T) {
	dir := t.TempDir()
	jobs := testJobs(dir)
	bin := fakePeer(t, "RESULT g1-20 23.129 21.373\nERROR g2-22 cannot read q\nRESULT ntt-24 4.433 -\n", 1)
	manifest := filepath.Join(dir, "manifest")
	if err := runPeer(bin, manifest, jobs); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	want := "g1 g1-20 " + dir + "/p 16 1048576 " + dir + "/s 3 " + dir + "/a.out\n" +
		"g2 g2-22 " + dir + "/q 8 4194304 " + dir + "/s 3 " + dir + "/b.out\n" +
		"ntt ntt-24 " + dir + "/n 24 6 " + dir + "/n.out\n"
	if string(b) != want {
		t.Errorf("manifest:\n%s\nwant:\n%s", b, want)
	}
	g1, g2, n := jobs[0], jobs[1], jobs[2]
	if !g1.peerRan || g1.peer != 23.129 || g1.peerPinned != 21.373 {
		t.Errorf("g1 job: ran %v, %v / %v ms", g1.peerRan, g1.peer, g1.peerPinned)
	}
	if g2.peerRan || g2.peerErr != "cannot read q" {
		t.Errorf("g2 job: ran %v, error %q", g2.peerRan, g2.peerErr)
	}
	if !n.peerRan || n.peer != 4.433 || n.peerPinned != -1 {
		t.Errorf("ntt job: ran %v, %v / %v ms", n.peerRan, n.peer, n.peerPinned)
	}
}

func TestRunPeerRefusesAMalformedResultAndAProgramThatRanNothing(t *testing.T) {
	dir := t.TempDir()
	if err := runPeer(fakePeer(t, "RESULT g1-20 1.0\n", 0), filepath.Join(dir, "m1"), testJobs(dir)); err == nil ||
		!strings.Contains(err.Error(), "bad line") {
		t.Errorf("a short RESULT line: %v, want a bad-line error", err)
	}
	if err := runPeer(fakePeer(t, "", 2), filepath.Join(dir, "m2"), testJobs(dir)); err == nil ||
		!strings.Contains(err.Error(), "sppark program") {
		t.Errorf("a program that failed before any job: %v, want its error", err)
	}
}

// checkAndTime records whether our result equals gnark-crypto's, times
// the pageable scalars and, only when given, the pinned ones (-1 left
// otherwise), and stops at an error of the MSM.
func TestCheckAndTimeRecordsTheCheckAndTheTimedVariants(t *testing.T) {
	g1, _, _, _ := curve.Generators()
	var other curve.G1Jac
	other.Double(&g1)
	sc, scPin := make([]fr.Element, 4), make([]fr.Element, 4)
	for _, c := range []struct {
		name      string
		result    curve.G1Jac
		pin       []fr.Element
		wantEqual bool
		wantCalls int // 1 check, then a warm-up and j.reps runs a variant
	}{
		{"equal, pinned too", g1, scPin, true, 1 + 2*(1+3)},
		{"not equal, no pinned", other, nil, false, 1 + 1 + 3},
	} {
		j := &job{reps: 3, ours: -1, oursPinned: -1}
		var pinnedCalls int
		calls := 0
		err := checkAndTime(j, g1, sc, c.pin, func(s []fr.Element) (curve.G1Jac, error) {
			calls++
			if c.pin != nil && &s[0] == &scPin[0] {
				pinnedCalls++
			}
			return c.result, nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if j.oursEqual != c.wantEqual || calls != c.wantCalls {
			t.Errorf("%s: equal %v after %d calls, want %v after %d", c.name, j.oursEqual, calls, c.wantEqual, c.wantCalls)
		}
		if j.ours < 0 {
			t.Errorf("%s: pageable time not recorded (%v)", c.name, j.ours)
		}
		if pinned := c.pin != nil; pinned != (j.oursPinned >= 0) || pinned != (pinnedCalls == 4) {
			t.Errorf("%s: pinned time %v after %d pinned calls", c.name, j.oursPinned, pinnedCalls)
		}
	}
	boom := errors.New("boom")
	j := &job{reps: 3, ours: -1, oursPinned: -1}
	if err := checkAndTime(j, g1, sc, scPin, func([]fr.Element) (curve.G1Jac, error) { return g1, boom }); !errors.Is(err, boom) {
		t.Errorf("failing MSM: err %v, want boom", err)
	}
}
