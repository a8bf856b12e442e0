// Command peers times this repository's GPU MSM and NTT against sppark's
// (supranational/sppark, the MSM and NTT under supraseal-c2, the GPU
// prover under cuzk) on the same device, the same points and the same
// scalars, in one run, each result checked against gnark-crypto: G1 MSM at
// -sizes, G2 MSM at -g2-sizes, forward NTT at -ntt-sizes. Results go to
// bench/peers.md.
//
// It writes the inputs and a manifest to -dir, times ours, runs the sppark
// program (-sppark, built on the GPU host by bench/peers/build.sh from a
// sppark and a blst checkout) on the manifest, reads back sppark's raw
// results and compares both with gnark-crypto's MultiExp and FFT before
// printing ours/sppark. The correctness job "check" (2^16 random points
// with 0, 1, r−1, infinity and repeated bases mixed in) runs first on both.
//
//	go build -o .dev/bin/peers ./bench/peers                              # here
//	bench/peers/build.sh SPPARK BLST .dev/bin/sppark_bench                # there
//	./.dev/bin/peers -sppark .dev/bin/sppark_bench -dir /tmp/peers         # there
//
// The bases of each size are 2^16 random points repeated (as msmbench's:
// the MSM's work does not depend on the points being distinct); the
// scalars are uniform. Times are medians of -reps after one warm-up, wall
// time of the whole call: ours from resident bases through MSM.G1Resident
// (the CUDA backend's path), sppark's from msm_t's resident points
// through msm_t::invoke, scalars from host memory, pageable and pinned.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/bench/internal/device"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/gpu/msm"
	"github.com/otelcuzk/otelcuzk/prover/gpu/ntt"
)

func main() {
	sppark := flag.String("sppark", "", "the sppark program built by bench/peers/build.sh (empty: ours only)")
	dir := flag.String("dir", "/tmp/peers", "scratch folder for the inputs, the manifest and sppark's results")
	sizes := flag.String("sizes", "20,22,24", "log2 sizes of the G1 MSM")
	g2Sizes := flag.String("g2-sizes", "22", "log2 sizes of the G2 MSM (empty: none)")
	nttSizes := flag.String("ntt-sizes", "20,24", "log2 sizes of the forward NTT (empty: none)")
	reps := flag.Int("reps", 5, "timed runs per job after one warm-up (median reported)")
	affine := flag.Int("affine", -1, "our bucket sums: msm.WithAffineBuckets(N) (0: XYZZ; -1: the MSM's default)")
	flag.Parse()
	if *affine >= 0 {
		oursOptions = append(oursOptions, msm.WithAffineBuckets(*affine))
	}
	benchutil.Exit("peers", run(*sppark, *dir, *sizes, *g2Sizes, *nttSizes, *reps))
}

// oursOptions are the options of our MSM (-affine).
var oursOptions []msm.Option

// job is one line of the manifest: an MSM (group 1 or 2) or an NTT.
type job struct {
	kind, name string
	log2       int
	npts       int // distinct points in the points file
	n          int
	reps       int
	ptsFile    string
	scFile     string
	outFile    string

	// Ours, sppark's (ms; -1 when not timed) and the checks.
	ours, oursPinned, peer, peerPinned float64
	oursEqual, peerEqual               bool
	peerErr                            string
	peerRan                            bool
	want                               any // gnark-crypto's result (wantG1, wantG2, wantNTT)
}

func (j *job) line() string {
	if j.kind == "ntt" {
		return fmt.Sprintf("ntt %s %s %d %d %s", j.name, j.ptsFile, j.log2, j.reps, j.outFile)
	}
	return fmt.Sprintf("%s %s %s %d %d %s %d %s", j.kind, j.name, j.ptsFile, j.npts, j.n, j.scFile, j.reps, j.outFile)
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v < 1 || v > 28 {
			return nil, fmt.Errorf("size %q: want a log2 size in [1, 28]", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func run(sppark, dir, sizeList, g2List, nttList string, reps int) error {
	g1s, err := parseSizes(sizeList)
	if err != nil {
		return err
	}
	g2s, err := parseSizes(g2List)
	if err != nil {
		return err
	}
	ntts, err := parseSizes(nttList)
	if err != nil {
		return err
	}
	if reps < 1 {
		return fmt.Errorf("-reps %d: want at least 1", reps)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ctx := context.Background()
	c, s, err := device.Open()
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Println(device.Line(c))

	// Inputs, written once: 2^16 G1 and 2^14 G2 random points, and the
	// check set of msmbench (edge scalars and points mixed in).
	_, _, g1, g2 := curve.Generators()
	r1 := curve.BatchScalarMultiplicationG1(&g1, benchutil.RandomScalars(1<<16))
	var r2 []curve.G2Affine
	if len(g2s) > 0 {
		r2 = curve.BatchScalarMultiplicationG2(&g2, benchutil.RandomScalars(1<<14))
	}
	check1, checkS := benchutil.EdgeCheckSet(r1)
	path := func(name string) string { return filepath.Join(dir, name) }
	write := func(name string, b []byte) error { return os.WriteFile(path(name), b, 0o644) }
	if err := write("g1.pts", cudaspans.AsBytes(r1)); err != nil {
		return err
	}
	if err := write("check.pts", cudaspans.AsBytes(check1)); err != nil {
		return err
	}
	if err := write("check.sc", cudaspans.AsBytes(checkS)); err != nil {
		return err
	}
	if len(r2) > 0 {
		if err := write("g2.pts", cudaspans.AsBytes(r2)); err != nil {
			return err
		}
	}
	maxLog := slices.Max(append(append([]int{16}, g1s...), g2s...))
	scalars := benchutil.RandomScalars(1 << maxLog)
	if err := write("scalars", cudaspans.AsBytes(scalars)); err != nil {
		return err
	}

	jobs := []*job{{kind: "g1", name: "check", log2: 16, npts: len(check1), n: len(check1), reps: 1,
		ptsFile: path("check.pts"), scFile: path("check.sc")}}
	for _, lg := range g1s {
		jobs = append(jobs, &job{kind: "g1", name: fmt.Sprintf("g1-%d", lg), log2: lg, npts: len(r1), n: 1 << lg, reps: reps,
			ptsFile: path("g1.pts"), scFile: path("scalars")})
	}
	for _, lg := range g2s {
		jobs = append(jobs, &job{kind: "g2", name: fmt.Sprintf("g2-%d", lg), log2: lg, npts: len(r2), n: 1 << lg, reps: reps,
			ptsFile: path("g2.pts"), scFile: path("scalars")})
	}
	for _, lg := range ntts {
		name := fmt.Sprintf("ntt-%d", lg)
		if err := write(name+".in", cudaspans.AsBytes(scalars[:1<<lg])); err != nil {
			return err
		}
		jobs = append(jobs, &job{kind: "ntt", name: name, log2: lg, n: 1 << lg, reps: 2 * reps, ptsFile: path(name + ".in")})
	}
	for _, j := range jobs {
		j.outFile = path(j.name + ".out")
		j.ours, j.oursPinned, j.peer, j.peerPinned = -1, -1, -1, -1
	}

	// Ours first, each result checked against gnark-crypto.
	if err := runOurs(ctx, c, s, jobs, check1, checkS, r1, r2, scalars); err != nil {
		return err
	}
	// Then sppark on the same inputs.
	if sppark != "" {
		if err := runPeer(sppark, path("manifest"), jobs); err != nil {
			return err
		}
		if err := checkPeer(jobs, check1, checkS, r1, r2, scalars); err != nil {
			return err
		}
	}
	printTable(jobs, sppark != "")
	for _, j := range jobs {
		if !j.oursEqual || (j.peerRan && !j.peerEqual) {
			return errors.New("a result differs from gnark-crypto's (table above)")
		}
	}
	return nil
}

// wantG1, wantG2 and wantNTT return gnark-crypto's result for a job,
// computed on first use (MultiExp and FFT on all host cores).
func wantG1(j *job, check1 []curve.G1Affine, checkS []fr.Element, r1 []curve.G1Affine, scalars []fr.Element) (curve.G1Jac, error) {
	if w, ok := j.want.(curve.G1Jac); ok {
		return w, nil
	}
	var w curve.G1Jac
	var err error
	if j.name == "check" {
		_, err = w.MultiExp(check1, checkS, ecc.MultiExpConfig{})
	} else {
		_, err = w.MultiExp(benchutil.Repeat(r1, j.n), scalars[:j.n], ecc.MultiExpConfig{})
	}
	j.want = w
	return w, err
}

func wantG2(j *job, r2 []curve.G2Affine, scalars []fr.Element) (curve.G2Jac, error) {
	if w, ok := j.want.(curve.G2Jac); ok {
		return w, nil
	}
	var w curve.G2Jac
	_, err := w.MultiExp(benchutil.Repeat(r2, j.n), scalars[:j.n], ecc.MultiExpConfig{})
	j.want = w
	return w, err
}

func wantNTT(j *job, scalars []fr.Element) []fr.Element {
	if w, ok := j.want.([]fr.Element); ok {
		return w
	}
	v := slices.Clone(scalars[:j.n])
	fft.NewDomain(uint64(j.n)).FFT(v, fft.DIF)
	j.want = v
	return v
}

// checkAndTime compares our MSM of sc with want (j.oursEqual), then times
// it on sc (j.ours) and, when scPin is not nil, on the same scalars in
// pinned memory (j.oursPinned), each the median of j.reps runs after a
// warm-up.
func checkAndTime[P any, PP interface {
	*P
	Equal(*P) bool
}](j *job, want P, sc, scPin []fr.Element, run func([]fr.Element) (P, error)) error {
	got, err := run(sc)
	if err != nil {
		return err
	}
	j.oursEqual = PP(&got).Equal(&want)
	timeMs := func(sc []fr.Element) (float64, error) {
		d, err := benchutil.TimeMedian(j.reps, func() error { _, err := run(sc); return err })
		return benchutil.Ms(d), err
	}
	if j.ours, err = timeMs(sc); err != nil {
		return err
	}
	if scPin != nil {
		if j.oursPinned, err = timeMs(scPin); err != nil {
			return err
		}
	}
	return nil
}

func runOurs(ctx context.Context, c *cudaspans.Context, s *cudaspans.Stream, jobs []*job,
	check1 []curve.G1Affine, checkS []fr.Element, r1 []curve.G1Affine, r2 []curve.G2Affine, scalars []fr.Element) error {
	m, err := msm.New(ctx, c, append([]msm.Option{msm.WithG2()}, oursOptions...)...)
	if err != nil {
		return err
	}
	defer m.Close()
	bases, err := msm.NewDeviceBases(ctx, c)
	if err != nil {
		return err
	}
	defer bases.EvictAll(ctx)
	e, err := ntt.New(ctx, c)
	if err != nil {
		return err
	}
	defer e.Close()
	pinned, err := c.AllocPinned(ctx, len(scalars)*32)
	if err != nil {
		return err
	}
	defer c.Free(ctx, pinned)
	scP := unsafe.Slice((*fr.Element)(pinned.Ptr()), len(scalars))
	copy(scP, scalars)

	for _, j := range jobs {
		switch j.kind {
		case "g1":
			pts, sc, scPin := benchutil.Repeat(r1, j.n), scalars[:j.n], scP[:j.n]
			if j.name == "check" {
				pts, sc, scPin = check1, checkS, nil
			}
			set := backend.BaseSet[curve.G1Affine]{ID: "peers:" + j.name, Points: pts}
			want, err := wantG1(j, check1, checkS, r1, scalars)
			if err != nil {
				return err
			}
			if err := checkAndTime(j, want, sc, scPin, func(sc []fr.Element) (curve.G1Jac, error) {
				return m.G1Resident(ctx, backend.Call{}, s, bases, set, sc)
			}); err != nil {
				return err
			}
		case "g2":
			set := backend.BaseSet[curve.G2Affine]{ID: "peers:" + j.name, Points: benchutil.Repeat(r2, j.n)}
			want, err := wantG2(j, r2, scalars)
			if err != nil {
				return err
			}
			sc, scPin := scalars[:j.n], scP[:j.n]
			if err := checkAndTime(j, want, sc, scPin, func(sc []fr.Element) (curve.G2Jac, error) {
				return m.G2Resident(ctx, backend.Call{}, s, bases, set, sc)
			}); err != nil {
				return err
			}
		case "ntt":
			d := fft.NewDomain(uint64(j.n))
			buf, err := c.Alloc(ctx, j.n*32)
			if err != nil {
				return err
			}
			fwd := func() error {
				if err := e.Transform(ctx, s, d, buf.Ptr(), ntt.DIF, false, false); err != nil {
					return err
				}
				return s.Synchronize(ctx)
			}
			if err := cudaspans.HtoD(ctx, s, buf.Ptr(), scalars[:j.n]); err != nil {
				return err
			}
			t, err := benchutil.TimeMedian(j.reps, fwd)
			if err != nil {
				return err
			}
			j.ours = benchutil.Ms(t)
			got := make([]fr.Element, j.n)
			if err := cudaspans.HtoD(ctx, s, buf.Ptr(), scalars[:j.n]); err != nil {
				return err
			}
			if err := fwd(); err != nil {
				return err
			}
			if err := cudaspans.DtoH(ctx, s, got, buf.Ptr()); err != nil {
				return err
			}
			if err := s.Synchronize(ctx); err != nil {
				return err
			}
			buf.Free()
			j.oursEqual = slices.Equal(got, wantNTT(j, scalars))
		}
		bases.EvictAll(ctx)
		fmt.Printf("ours %s: %.2f ms (pinned %.2f), equal to gnark-crypto %v\n", j.name, j.ours, j.oursPinned, j.oursEqual)
	}
	return nil
}

// runPeer writes the manifest and runs the sppark program on it.
func runPeer(bin, manifest string, jobs []*job) error {
	var b strings.Builder
	for _, j := range jobs {
		fmt.Fprintln(&b, j.line())
	}
	if err := os.WriteFile(manifest, []byte(b.String()), 0o644); err != nil {
		return err
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, manifest)
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	runErr := cmd.Run()
	fmt.Print(out.String())
	byName := map[string]*job{}
	for _, j := range jobs {
		byName[j.name] = j
	}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || byName[f[1]] == nil {
			continue
		}
		j := byName[f[1]]
		switch f[0] {
		case "RESULT":
			if len(f) != 4 {
				return fmt.Errorf("sppark: bad line %q", sc.Text())
			}
			j.peerRan = true
			j.peer, _ = strconv.ParseFloat(f[2], 64)
			if f[3] != "-" {
				j.peerPinned, _ = strconv.ParseFloat(f[3], 64)
			}
		case "ERROR":
			j.peerErr = strings.Join(f[2:], " ")
		}
	}
	if runErr != nil && !anyRan(jobs) {
		return fmt.Errorf("sppark program: %w", runErr)
	}
	return nil
}

func anyRan(jobs []*job) bool {
	for _, j := range jobs {
		if j.peerRan {
			return true
		}
	}
	return false
}

// checkPeer compares sppark's results with gnark-crypto's.
func checkPeer(jobs []*job, check1 []curve.G1Affine, checkS []fr.Element, r1 []curve.G1Affine, r2 []curve.G2Affine, scalars []fr.Element) error {
	for _, j := range jobs {
		if !j.peerRan {
			continue
		}
		b, err := os.ReadFile(j.outFile)
		if err != nil {
			return err
		}
		switch j.kind {
		case "g1":
			var got curve.G1Jac
			if len(b) != int(unsafe.Sizeof(got)) {
				return fmt.Errorf("sppark %s: %d result bytes, want %d", j.name, len(b), unsafe.Sizeof(got))
			}
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&got)), len(b)), b)
			want, err := wantG1(j, check1, checkS, r1, scalars)
			if err != nil {
				return err
			}
			j.peerEqual = got.Equal(&want)
		case "g2":
			var got curve.G2Jac
			if len(b) != int(unsafe.Sizeof(got)) {
				return fmt.Errorf("sppark %s: %d result bytes, want %d", j.name, len(b), unsafe.Sizeof(got))
			}
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&got)), len(b)), b)
			want, err := wantG2(j, r2, scalars)
			if err != nil {
				return err
			}
			j.peerEqual = got.Equal(&want)
		case "ntt":
			got := make([]fr.Element, j.n)
			if len(b) != len(cudaspans.AsBytes(got)) {
				return fmt.Errorf("sppark %s: %d result bytes, want %d", j.name, len(b), len(cudaspans.AsBytes(got)))
			}
			copy(cudaspans.AsBytes(got), b)
			j.peerEqual = slices.Equal(got, wantNTT(j, scalars))
		}
	}
	return nil
}

func ms(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func ratio(a, b float64) string {
	if a < 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func printTable(jobs []*job, withPeer bool) {
	fmt.Println("\n| job | n | ours, scalars pageable (ms) | ours, pinned (ms) | sppark, pageable (ms) | sppark, pinned (ms) | ours/sppark pageable | ours/sppark pinned | ours = gnark | sppark = gnark |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, j := range jobs {
		peer, peerPinned, peq := "-", "-", "-"
		if withPeer {
			switch {
			case j.peerRan:
				peer, peerPinned, peq = ms(j.peer), ms(j.peerPinned), fmt.Sprint(j.peerEqual)
			case j.peerErr != "":
				peer, peq = "error: "+j.peerErr, "-"
			default:
				peer = "not run"
			}
		}
		rp, rpp := "-", "-"
		if j.peerRan && j.peerEqual && j.oursEqual {
			rp, rpp = ratio(j.ours, j.peer), ratio(j.oursPinned, j.peerPinned)
		}
		what := j.kind + " MSM"
		if j.kind == "ntt" {
			what = "forward NTT (resident)"
		}
		fmt.Printf("| %s %s | 2^%d | %s | %s | %s | %s | %s | %s | %v | %s |\n", what, j.name, j.log2, ms(j.ours), ms(j.oursPinned),
			peer, peerPinned, rp, rpp, j.oursEqual, peq)
	}
}
