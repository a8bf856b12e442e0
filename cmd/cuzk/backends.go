package main

// The CUDA backend registers itself as "cuda" when its package is linked
// in. It loads the driver at run time, so this binary still runs (on the
// CPU, with one line saying why) on hosts without a GPU.
import _ "github.com/otelcuzk/otelcuzk/prover/gpu"
