// Command compilepeak builds and compiles one built-in circuit and prints
// the compile's time and the compiled R1CS's heap; run under
// /usr/bin/time -f %M for the compile's peak resident set (the plan's
// "compile host" figure, bench/memory.md, compile peaks):
//
//	/usr/bin/time -f '%M KB' compilepeak porep 19 2>/dev/null
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/otelcuzk/otelcuzk/prover/circuits"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: compilepeak CIRCUIT LOG2")
		os.Exit(2)
	}
	lg, err := strconv.Atoi(os.Args[2])
	if err != nil || lg < 1 || lg > 32 {
		fmt.Fprintf(os.Stderr, "compilepeak: LOG2 %q: want 1 to 32\n", os.Args[2])
		os.Exit(2)
	}
	in, err := circuits.Build(os.Args[1], 1<<lg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "compilepeak:", err)
		os.Exit(1)
	}
	start := time.Now()
	ccs, err := in.Compile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "compilepeak:", err)
		os.Exit(1)
	}
	took := time.Since(start)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("%s 2^%d: compile %.2f s, %d constraints, compiled R1CS heap %.1f MiB\n",
		os.Args[1], lg, took.Seconds(), ccs.GetNbConstraints(), float64(ms.HeapAlloc)/(1<<20))
}
