// Command cuzk proves Groth16 over BLS12-381 on the CPU or a CUDA GPU and
// shows where the time of each proof went, as OpenTelemetry traces.
//
//	cuzk prove    prove a built-in circuit locally, print the trace waterfall
//	cuzk serve    run the gRPC proving daemon (cuzk.v1.ProvingEngine)
//	cuzk submit   send a proof request to a daemon
//	cuzk trace    read a trace back (file, Jaeger or Tempo) and explain it
//	cuzk setup    build and cache the proving key of a circuit
package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/urfave/cli/v2"
)

// commands is filled by the init functions of the files beside this one,
// one file per subcommand.
var commands []*cli.Command

func newApp() *cli.App {
	sort.Slice(commands, func(i, j int) bool { return commands[i].Name < commands[j].Name })
	return &cli.App{
		Name:     "cuzk",
		Usage:    "traced Groth16 proving (BLS12-381) on CPU and CUDA",
		Commands: commands,
		// One line on stderr and exit 1 for any error; no usage dump.
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "cuzk:", err)
		os.Exit(1)
	}
}
