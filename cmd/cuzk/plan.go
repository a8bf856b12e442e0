package main

import (
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

// planSizes are the sizes `cuzk prove --plan` tabulates besides the
// request's: 2^20 to 2^27 (a 32 GiB PoRep partition is about 2^27).
var planSizes = []int{20, 21, 22, 23, 24, 25, 26, 27}

// cpuFigures says whether a request runs on the CPU, so that the plan's
// CPU figures apply: --backend cpu, or auto (the default) on a host where
// no CUDA device is usable (cudaspans.Devices fails), where prove and
// setup fall back to the CPU. --backend cuda: false.
func cpuFigures(c *cli.Context) bool {
	switch c.String("backend") {
	case "cpu":
		return true
	case "cuda":
		return false
	}
	_, err := cudaspans.Devices()
	return err != nil
}

// checkPlan refuses, before anything is built, a request whose plan does
// not fit this host: with --backend cpu the CPU model of
// circuits.CheckMemory; otherwise the plan (circuits.Plan.Fits) against
// the host's available memory, with the CPU setup and prove figures when
// auto falls back to the CPU (cpuFigures), else those of the GPU setup and
// the CUDA prove, and for `cuzk setup` (which writes the key) the free
// space of the key cache's disk. The error names every figure that does
// not fit.
func checkPlan(c *cli.Context, name string, n int) error {
	if c.String("backend") == "cpu" {
		return circuits.CheckMemory(name, n)
	}
	cpu := cpuFigures(c)
	p, err := circuits.PlanFor(name, n)
	if err != nil {
		return err
	}
	avail, err := circuits.MemAvailable()
	if err != nil {
		return err
	}
	var disk uint64
	if c.Command.Name == "setup" {
		disk = diskFree(c.String("cache-dir"))
	}
	return p.Fits(cpu, avail, disk, c.Bool("ephemeral-keys"))
}

// diskFree is the space free to this user on the key cache's disk, 0 when
// unknown (the directory and its parents do not exist yet).
func diskFree(dir string) uint64 {
	if dir == "" {
		d, err := keycache.DefaultDir()
		if err != nil {
			return 0
		}
		dir = d
	}
	for ; dir != "" && dir != "/"; dir = parentDir(dir) {
		var st unix.Statfs_t
		if unix.Statfs(dir, &st) == nil {
			return st.Bavail * uint64(st.Bsize)
		}
	}
	return 0
}

func parentDir(d string) string {
	for i := len(d) - 1; i > 0; i-- {
		if d[i] == os.PathSeparator {
			return d[:i]
		}
	}
	return ""
}

// printPlan is `cuzk prove --plan`: the plan of the request and of its
// circuit at 2^20 to 2^27 as a Markdown table, then whether the request
// fits this host (available memory, the key cache's free disk). A request
// that does not fit is an error (exit 1) after the table.
func printPlan(w io.Writer, c *cli.Context) error {
	name, n := c.String("circuit"), c.Int("constraints")
	req, err := circuits.PlanFor(name, n)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "plan of %s at %d constraints (domain %d, about %d wires; bytes as GiB = 2^30):\n\n%s\n%s\n\n",
		name, n, req.Domain, req.Wires, circuits.PlanHeader, req.Row())
	fmt.Fprintf(w, "%s at 2^20 to 2^27:\n\n%s\n", name, circuits.PlanHeader)
	for _, lg := range planSizes {
		p, err := circuits.PlanFor(name, 1<<lg)
		if err != nil {
			fmt.Fprintf(w, "| %s | 2^%d | %v |\n", name, lg, err)
			continue
		}
		fmt.Fprintln(w, p.Row())
	}
	avail, err := circuits.MemAvailable()
	if err != nil {
		return err
	}
	disk := diskFree(c.String("cache-dir"))
	cpu := cpuFigures(c)
	fmt.Fprintf(w, "\nthis host: %s of memory available, %s free for the key cache\n", human.Bytes(avail), human.Bytes(disk))
	if err := req.Fits(cpu, avail, disk, c.Bool("ephemeral-keys")); err != nil {
		fmt.Fprintf(w, "does not fit: %v\n", err)
		// Non-zero, so a script (or `cuzk prove --plan && cuzk prove`)
		// stops: it exited 0 whatever the verdict.
		return fmt.Errorf("plan: %s at %d constraints does not fit this host (the plan's last line says which figures)", name, n)
	}
	figures := "cuda backend figures"
	switch {
	case cpu && c.String("backend") == "cpu":
		figures = "cpu backend figures"
	case cpu:
		figures = "cpu backend figures: auto, no CUDA device usable here"
	}
	fmt.Fprintf(w, "fits: peak host memory %s (%s)\n", human.Bytes(req.Host(cpu)), figures)
	return nil
}
