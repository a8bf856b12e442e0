package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/consensys/gnark/logger"
	"github.com/urfave/cli/v2"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/internal/interrupt"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:  "setup",
		Usage: "build and cache the Groth16 proving key of a built-in circuit",
		Description: "Compiles the circuit and runs gnark's groth16.Setup once, storing the keys\n" +
			"in the key cache (keyed by the SHA-256 of the constraint system), so that\n" +
			"`cuzk prove` and `cuzk serve` start proving at once. A cached key is reused.\n" +
			"The compiled circuit is cached beside the keys (keyed by circuit, size,\n" +
			"gnark version and the build: its clean VCS revision, else the SHA-256 of\n" +
			"the executable, as for go run; an entry per build, the 3 most recently used\n" +
			"kept). Processes sharing the cache make a key once: a second one waits for\n" +
			"the first's setup (saying so) and reads its key. Ctrl-C or SIGTERM stops it\n" +
			"and exits 130; the key file is written whole or not at all.",
		Flags: append(builtinCircuitFlags(),
			&cli.StringFlag{Name: "cache-dir", Usage: "proving key cache (default $CUZK_CACHE_DIR or <user cache>/otelcuzk/keys)"},
			&cli.BoolFlag{Name: "progress", Usage: "show the setup spinner even when stderr is not a terminal"},
			&cli.BoolFlag{Name: "compressed-keys", Usage: "store the keys with compressed points (<hash>.keyz, about half the disk; read back by prove and serve with --compressed-keys)"},
			&cli.StringFlag{Name: "backend", Value: "auto", Usage: "cpu|cuda|auto: who makes missing keys (cpu: gnark's groth16.Setup; cuda: the fixed-base multiplications on the GPU; auto: cuda when a GPU is usable, else cpu)"},
		),
		OnUsageError: usageError,
		Action:       func(c *cli.Context) error { return oneLine(setupAction(c)) },
	})
}

func setupAction(c *cli.Context) error {
	// Ctrl-C or SIGTERM ends the run with one line and exit 130, as prove:
	// the keys are stored through a temporary file renamed into place
	// (atomicfile), so an interrupted setup leaves no partial key file; a
	// second signal quits at once (interrupt.Context).
	ctx, stop := interrupt.Context(c.Context)
	defer stop()
	err := setupKeys(ctx, c)
	if err != nil && ctx.Err() != nil {
		return cli.Exit("interrupted by a signal; no key written", exitInterrupted)
	}
	return err
}

// setupKeys compiles the circuit of c and loads or makes its keys until
// ctx ends, printing where they are.
func setupKeys(ctx context.Context, c *cli.Context) error {
	logger.Disable()
	errOut := c.App.ErrWriter
	if errOut == nil {
		errOut = os.Stderr
	}
	name, n := c.String("circuit"), c.Int("constraints")
	in, err := buildCircuit(c)
	if err != nil {
		return err
	}
	backend, err := newSetupBackend(c.String("backend"), errOut)
	if err != nil {
		return err
	}
	defer backend.Close()
	if err := backend.checkDevice(); err != nil {
		return backendHint(err)
	}
	kopts := []keycache.Option{keycache.WithProgress(errOut, c.Bool("progress")), keycache.WithSetup(backend.Setup)}
	if c.Bool("compressed-keys") {
		kopts = append(kopts, keycache.WithCompressedKeys())
	}
	cache, err := keycache.New(c.String("cache-dir"), kopts...)
	if err != nil {
		return err
	}
	// Setup makes a key to keep: refused before a compile and a setup
	// (minutes at scale) whose key nothing would keep. cuzk prove, which
	// needs its key for one proof, proves uncached instead.
	if err := cache.Writable(); err != nil {
		return fmt.Errorf("%w: the key would be made and lost; set --cache-dir or %s to a writable directory", err, keycache.EnvCacheDir)
	}
	start := time.Now()
	comp, err := cache.Compile(ctx, name, n, in.Compile)
	if err != nil {
		return err
	}
	compiled := time.Since(start)
	ccs := comp.CCS
	k, err := cache.LoadHashed(ctx, ccs, comp.Hash)
	if err != nil {
		return backendHint(err)
	}
	how := "made by groth16.Setup in " + human.Duration(time.Since(start))
	if backend.used == "cuda" {
		how = "made on the GPU (prover/setup, cuda) in " + human.Duration(time.Since(start))
	}
	if k.CacheHit {
		how = "already cached"
	}
	if k.Path == "" {
		// The store failed after all (a full disk): its line said why.
		return fmt.Errorf("the keys of %s were made but not stored in %s", name, cache.Dir())
	}
	keyFile, _ := filepath.Abs(k.Path)
	// The shape after a colon: it holds brackets of its own ("depth 24
	// (MiMC)"), and a bracket inside a bracket was hard to read.
	fmt.Fprintf(c.App.Writer, "%s, %d constraints: %s; keys %s\n  %s\n",
		name, ccs.GetNbConstraints(), in.Shape, how, keyFile)
	switch circuit, _ := filepath.Abs(comp.Path); {
	case comp.CacheHit:
		fmt.Fprintf(c.App.Writer, "  compiled circuit from the cache in %s: %s\n", human.Duration(compiled), circuit)
	case comp.Path != "":
		fmt.Fprintf(c.App.Writer, "  circuit compiled in %s and cached: %s\n", human.Duration(compiled), circuit)
	default:
		fmt.Fprintf(c.App.Writer, "  circuit compiled in %s, not cached (circuit cache off)\n", human.Duration(compiled))
	}
	return nil
}
