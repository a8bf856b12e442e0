/*
 * foreign.h: a small CUDA program written without cudaspans, as code
 * this project did not write would be: the CUDA driver API (libcuda.so.1
 * loaded with dlopen), kernels compiled at run time by NVRTC (libnvrtc
 * loaded with dlopen), and its phases marked with NVTX (nvtxlite.h).
 */
#ifndef FOREIGN_H
#define FOREIGN_H

#include <stddef.h>

typedef struct {
	int iters;         /* kernel launches per "compute" phase */
	int elems;         /* floats per buffer */
	const char *label; /* message of the outer NVTX range ("foreign.run" when NULL) */
	int rc;            /* out: 0, or -1 with err set */
	char err[256];
} foreign_args;

/* foreign_run runs the program once: NVTX range label holding the ranges
 * "upload" (a copy to the device), "compute" (iters launches of scale and
 * saxpy, payload = iters, category 7), "download" (a copy back and a
 * check), plus a start/end range "foreign.check" and a range in domain
 * "foreign". Safe to call again; not concurrently. */
void foreign_run(foreign_args *a);

/* foreign_run_cb is foreign_run with a void * argument (cupti.Call). */
void foreign_run_cb(void *a);

#endif
