// Package interrupt is how a command of this repository stops on Ctrl-C:
// Context cancels its work on the first SIGINT or SIGTERM and ends the
// process on the second, as cuzk's commands and examples/curio-task do.
// Standard library only.
package interrupt

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Context returns a copy of parent that the first SIGINT or SIGTERM
// cancels; a second one ends the process at once with exit status
// 128 + the signal's number (130 for SIGINT, 143 for SIGTERM), as the
// default action would. The handler stays installed until stop is called:
// a shell starts a background job with SIGINT ignored, and removing the
// handler (signal.NotifyContext's stop) restores that, so a second
// `kill -INT` did nothing; and signal.NotifyContext without that stop
// swallows the second signal. stop, called when the command returns,
// removes the handler and releases ctx; it may be called more than once.
func Context(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
			return
		}
		select {
		case sig := <-sigs:
			os.Exit(128 + int(sig.(syscall.Signal)))
		case <-done:
		}
	}()
	var stopped bool
	return ctx, func() {
		if !stopped {
			stopped = true
			signal.Stop(sigs)
			close(done)
		}
		cancel()
	}
}
