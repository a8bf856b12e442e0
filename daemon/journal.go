package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/journal"
)

// DefaultStateDir is --state-dir's default: $XDG_STATE_HOME/otelcuzk, else
// ~/.local/state/otelcuzk; "none" without a home directory.
func DefaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "otelcuzk")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "otelcuzk")
	}
	return "none"
}

// openJournal opens the job journal of cfg.StateDir (none when empty) and
// returns the engine options that keep finished jobs (--result-ttl,
// --max-results, the journal) and the function that closes it. A journal
// another daemon holds, or a corrupt one, is a one-line error naming the
// file (for a corrupt one, what to do).
func openJournal(cfg Config) ([]engine.Option, func(), error) {
	if cfg.ResultTTL < 0 {
		return nil, nil, fmt.Errorf("serve: --result-ttl %v: want 0 or more", cfg.ResultTTL)
	}
	if cfg.MaxResults < 0 {
		return nil, nil, fmt.Errorf("serve: --max-results %d: want at least 1", cfg.MaxResults)
	}
	ttl, n := cfg.ResultTTL, cfg.MaxResults
	if ttl == 0 {
		ttl = engine.DefaultResultTTL
	}
	if n == 0 {
		n = engine.DefaultMaxResults
	}
	opts := []engine.Option{engine.WithResultTTL(ttl), engine.WithMaxResults(n)}
	if cfg.StateDir == "" {
		return opts, func() {}, nil
	}
	j, interrupted, err := journal.Open(cfg.StateDir, journal.WithTTL(ttl), journal.WithMaxEntries(n))
	if errors.Is(err, journal.ErrCorrupt) {
		// Open makes a new journal where there is none.
		return nil, nil, fmt.Errorf("serve: --state-dir: %w; move it aside (the daemon makes a new one) or run with --state-dir none", err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("serve: --state-dir: %w", err)
	}
	if len(interrupted) > 0 {
		what := fmt.Sprintf("%d jobs were interrupted by the last stop (%s): they answer", len(interrupted), j.Path())
		if len(interrupted) == 1 {
			what = fmt.Sprintf("1 job was interrupted by the last stop (%s): it answers", j.Path())
		}
		fmt.Fprintf(cfg.Log, "cuzk serve: %s FAILED until resubmitted\n", what)
	}
	return append(opts, engine.WithJournal(j)), func() {
		if err := j.Close(); err != nil {
			fmt.Fprintf(cfg.Log, "cuzk serve: closing the journal: %v\n", err)
		}
	}, nil
}
