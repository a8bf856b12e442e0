// Command cuzk proves Groth16 over BLS12-381 on the CPU or a CUDA GPU and
// shows where the time of each proof went, as OpenTelemetry traces.
//
//	cuzk prove    prove a built-in circuit locally, print the trace waterfall
//	cuzk serve    run the gRPC proving daemon (cuzk.v1.ProvingEngine)
//	cuzk submit   send a proof request to a daemon
//	cuzk cancel   cancel a daemon's job by its request id
//	cuzk trace    read a trace back (file, Jaeger or Tempo) and explain it
//	cuzk setup    build and cache the proving key of a circuit
//	cuzk gpu-trace run a CUDA program with its kernels and NVTX ranges traced (CUPTI)
package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
)

// commands is filled by the init functions of the files beside this one,
// one file per subcommand.
var commands []*cli.Command

func newApp() *cli.App {
	sort.Slice(commands, func(i, j int) bool { return commands[i].Name < commands[j].Name })
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.Name
		// Every command: a bad flag is its one-line error, and a command
		// that takes no arguments refuses stray ones rather than ignoring
		// them.
		if c.OnUsageError == nil {
			c.OnUsageError = usageError
		}
		if c.ArgsUsage == "" && c.Before == nil {
			c.Before = noArgs
		}
	}
	return &cli.App{
		Name:     "cuzk",
		Usage:    "traced Groth16 proving (BLS12-381) on CPU and CUDA",
		Commands: commands,
		// Turns on --version (-v), whose VersionPrinter (version.go)
		// prints the whole build; --help shows this one string.
		Version: otelcuzk.Version(),
		// One line on stderr and exit 1 for any error; no usage dump.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   usageError,
		// The SDK's own errors on one line of stderr, without its "parse
		// url" line for a gRPC host:port endpoint otelcuzk honours.
		Before: func(c *cli.Context) error {
			w := c.App.ErrWriter
			if w == nil {
				w = os.Stderr
			}
			otelcuzk.SetSDKLogger(w)
			return nil
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("unknown command %q (want one of: %s)", c.Args().First(), strings.Join(names, ", "))
			}
			return showUsage(c)
		},
	}
}

func main() {
	if err := newApp().Run(os.Args); err != nil {
		var code exitCode // gpu-trace: the traced program's status
		if errors.As(err, &code) {
			os.Exit(int(code))
		}
		if err.Error() != "" { // a usage error printed its usage already
			fmt.Fprintln(os.Stderr, "cuzk:", err)
		}
		if ec, ok := err.(cli.ExitCoder); ok && ec.ExitCode() > 1 {
			os.Exit(ec.ExitCode()) // usage, or cuzk trace diff --fail-over: 2
		}
		os.Exit(1)
	}
}
