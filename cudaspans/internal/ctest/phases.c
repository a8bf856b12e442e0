// A C program in the style of supraseal's prover, recording its phases
// through cudaspans.h. Built by cgo into the test binary of package ctest.
#include "../../cudaspans.h"

#include <time.h>

static void spin_us(long us) {
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000L < us);
}

// ctest_prove records prove > (sort, msm > bucket_reduce), the msm with
// attributes, and, when stream is given, a device-clock phase on it.
// It returns how many begins returned a usable handle.
int ctest_prove(uint64_t parent, void *stream, long sort_us, long reduce_us) {
	int ok = 0;
	cudaspans_handle prove = cudaspans_begin(parent, "c.prove", NULL);
	ok += prove != 0;

	cudaspans_handle sort = cudaspans_begin(prove, "c.sort", NULL);
	ok += sort != 0;
	spin_us(sort_us);
	cudaspans_end(sort);

	cudaspans_handle msm = cudaspans_begin(prove, "c.msm", NULL);
	ok += msm != 0;
	cudaspans_set_int(msm, "cuzk.msm.size", 1 << 20);
	cudaspans_set_double(msm, "c.window_bits", 13.5);
	cudaspans_set_str(msm, "c.curve", "bls12-381");
	cudaspans_handle red = cudaspans_begin(msm, "c.bucket_reduce", NULL);
	ok += red != 0;
	spin_us(reduce_us);
	cudaspans_end(red);
	cudaspans_end(msm);

	if (stream != NULL) {
		cudaspans_handle dev = cudaspans_begin(prove, "c.device_phase", stream);
		ok += dev != 0;
		cudaspans_end(dev);
	}
	cudaspans_end(prove);
	return ok;
}
