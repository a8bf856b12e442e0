// Package docs holds no code: its tests keep DESIGN.md true to the tree
// (every span name of otelcuzk/semconv/names.go in the table of where each span is
// made, at a file and function that exist; every CUDA source in the table
// of where each kernel lives) and every Go package of the repository
// documented.
package docs
