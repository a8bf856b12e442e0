// Package buffer holds the large buffers of a proof that live outside the
// Go heap, and their release: the Buffer interface with its Kind (mmap'd
// host memory, pinned host memory, device memory), the mmap'd host buffer
// (Mmap), and the Releaser, which gives buffers back in one ReleaseMode
// (sync, async or pool) and records each release as a buffer.release span
// (DESIGN.md, "Buffer release").
//
// The package has no cgo: the CPU prover uses it for its mmap'd vectors
// without linking the CUDA bridge. Pinned and device buffers are made by
// cudaspans (which needs the driver) and implement Buffer.
//
// # One meaning of a nil Releaser
//
// A nil *Releaser is a synchronous Releaser: its methods free at once on
// the caller's goroutine, with buffer.release spans on the global
// TracerProvider. A function that takes a *Releaser and has a
// TracerProvider of its own uses OrSync(r, tp), which gives a synchronous
// Releaser on tp for a nil r. Nothing else is made of a nil Releaser.
//
// # One channel for the release mode
//
// The mode is a property of the Releaser; it travels with the Releaser
// (prover.WithReleaser, backend.Options.Releaser) and nowhere else.
// Where an async release's span is parented travels in the context
// (WithReleaseParent), which the Releaser reads.
package buffer
