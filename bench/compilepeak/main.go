// Command compilepeak builds and compiles one built-in circuit and prints
// the compile's time and the compiled R1CS's heap; run under
// /usr/bin/time -f %M for the compile's peak resident set (the plan's
// "compile host" figure, bench/memory.md, compile peaks):
//
//	/usr/bin/time -f '%M KB' compilepeak porep 19 2>/dev/null
//
// -cpuprofile FILE writes a CPU profile of the compile alone (go tool
// pprof -top -cum FILE): bench/memory.md, where porep's compile goes.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/otelcuzk/otelcuzk/prover/circuits"
)

func main() {
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the compile to this file")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: compilepeak [-cpuprofile FILE] CIRCUIT LOG2")
		os.Exit(2)
	}
	name := flag.Arg(0)
	lg, err := strconv.Atoi(flag.Arg(1))
	if err != nil || lg < 1 || lg > 32 {
		fmt.Fprintf(os.Stderr, "compilepeak: LOG2 %q: want 1 to 32\n", flag.Arg(1))
		os.Exit(2)
	}
	in, err := circuits.Build(name, 1<<lg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "compilepeak:", err)
		os.Exit(1)
	}
	var prof *os.File
	if *cpuprofile != "" {
		if prof, err = os.Create(*cpuprofile); err == nil {
			err = pprof.StartCPUProfile(prof)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "compilepeak:", err)
			os.Exit(1)
		}
	}
	start := time.Now()
	ccs, err := in.Compile()
	took := time.Since(start)
	if prof != nil {
		pprof.StopCPUProfile()
		if cerr := prof.Close(); cerr != nil {
			fmt.Fprintln(os.Stderr, "compilepeak:", cerr)
			os.Exit(1)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "compilepeak:", err)
		os.Exit(1)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("%s 2^%d: compile %.2f s, %d constraints, compiled R1CS heap %.1f MiB\n",
		name, lg, took.Seconds(), ccs.GetNbConstraints(), float64(ms.HeapAlloc)/(1<<20))
}
