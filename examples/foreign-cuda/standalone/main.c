// foreign-cuda, standalone: the C part of the example (../foreign.c) as
// an executable of its own, to trace with `cuzk gpu-trace`:
//
//   foreign-cuda [--iters N] [--elems N] [--runs N] [--pause-ms N] [--traceparent 00-...]
//
// --runs N runs the program N times, --pause-ms apart, as a daemon serves
// requests; --traceparent puts "traceparent=<value>" into the outer NVTX
// range's message, the one-line change that lets `cuzk gpu-trace` put a
// request's GPU work into the caller's trace.
#include "../foreign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv) {
	int iters = 10, elems = 1 << 20, runs = 1, pause_ms = 0;
	const char *tp = NULL;
	for (int i = 1; i < argc; i++) {
		const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v) { fprintf(stderr, "foreign-cuda: %s needs a value\n", f); return 2; }
		if (!strcmp(f, "--iters")) iters = atoi(v);
		else if (!strcmp(f, "--elems")) elems = atoi(v);
		else if (!strcmp(f, "--runs")) runs = atoi(v);
		else if (!strcmp(f, "--pause-ms")) pause_ms = atoi(v);
		else if (!strcmp(f, "--traceparent")) tp = v;
		else { fprintf(stderr, "foreign-cuda: unknown flag %s\n", f); return 2; }
		i++;
	}
	if (iters < 1 || iters > 24 || elems < 1 || runs < 1) {
		fprintf(stderr, "foreign-cuda: want 1 <= --iters <= 24, --elems >= 1, --runs >= 1\n");
		return 2;
	}
	char label[160];
	if (tp) snprintf(label, sizeof label, "foreign.request traceparent=%s", tp);
	else snprintf(label, sizeof label, "foreign.run");
	for (int r = 0; r < runs; r++) {
		foreign_args a = {.iters = iters, .elems = elems, .label = label};
		foreign_run(&a);
		if (a.rc) {
			fprintf(stderr, "foreign-cuda: %s\n", a.err);
			return 1;
		}
		if (pause_ms > 0 && r + 1 < runs) {
			struct timespec ts = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};
			nanosleep(&ts, NULL);
		}
	}
	printf("foreign-cuda: %d runs of %d iterations over %d floats: ok\n", runs, iters, elems);
	return 0;
}
