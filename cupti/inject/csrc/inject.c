// libcuzkinject.so: the CUDA injection library of `cuzk gpu-trace`. The
// CUDA driver loads it from CUDA_INJECTION64_PATH at cuInit and calls
// InitializeInjection; it starts CUPTI activity capture (../../cz_core.c)
// and a writer thread that sends the frames to `cuzk gpu-trace` over the
// Unix socket named by CUZK_GPUTRACE_SOCK.
//
// It must never crash, block or change the traced program: every failure
// (no socket, no CUPTI, CUPTI in use, the reader gone) detaches, says so
// once on stderr, and the program runs on untraced. Sends time out rather
// than block, SIGPIPE is never raised, exit waits at most a few seconds
// for the last records, and a forked child carries no capture.
#define _GNU_SOURCE
#include "../../cz_core.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MIN_VERSION 18 /* cupti.MinVersion */

static int fd = -1;
static volatile int detached, stopping, writer_done;
static pthread_t writer;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static int said;

static void say(const char *fmt, ...) {
	if (__atomic_exchange_n(&said, 1, __ATOMIC_SEQ_CST)) return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "cuzk gpu-trace: %s; the program runs on untraced\n", msg);
}

static int send_all(const uint8_t *b, size_t n) {
	while (n > 0) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR) continue;
		if (w <= 0) return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static void detach(const char *why) {
	if (detached) return;
	detached = 1;
	cz_stop();
	if (fd >= 0) close(fd);
	fd = -1;
	say("%s", why);
}

// send_queued sends what the queue holds; 0 on success.
static int send_queued(void) {
	size_t n = 0;
	uint8_t *b = cz_take(&n);
	int r = 0;
	if (b && n && fd >= 0) r = send_all(b, n);
	free(b);
	return r;
}

static double now_s(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *write_loop(void *arg) {
	(void)arg;
	double last_flush = now_s(), last_cal = last_flush;
	while (!stopping && !detached) {
		cz_wait_data(100);
		double t = now_s();
		if (t - last_flush >= 0.2) {
			cz_flush(0);
			last_flush = t;
		}
		if (t - last_cal >= 1.0) {
			cz_calibrate(16);
			last_cal = t;
		}
		if (send_queued() != 0) {
			char why[160];
			snprintf(why, sizeof why, "lost the connection to cuzk gpu-trace (%s)", strerror(errno));
			detach(why);
		}
	}
	if (!detached) {
		// Exiting: the last records, then goodbye.
		cz_calibrate(16);
		cz_stop();
		cz_queue_frame(CZ_FRAME_BYE, NULL, 0);
		send_queued();
		close(fd);
		fd = -1;
		detached = 1;
	}
	pthread_mutex_lock(&mu);
	writer_done = 1;
	pthread_cond_broadcast(&done_cv);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void at_exit(void) {
	if (detached && writer_done) return;
	stopping = 1;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 3;
	pthread_mutex_lock(&mu);
	while (!writer_done)
		if (pthread_cond_timedwait(&done_cv, &mu, &ts) == ETIMEDOUT) break;
	pthread_mutex_unlock(&mu);
}

// In a child of fork the writer thread does not exist and the socket is
// the parent's: the child runs untraced (an exec'd child is traced anew).
static void in_child(void) {
	detached = 1;
	writer_done = 1;
	if (fd >= 0) close(fd);
	fd = -1;
}

static int connect_to(const char *path) {
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) return -1;
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof a.sun_path) {
		close(s);
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(a.sun_path, path);
	if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
		int e = errno;
		close(s);
		errno = e;
		return -1;
	}
	struct timeval tv = {2, 0}; // a send blocked this long means the reader is gone
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	return s;
}

static void send_hello(uint32_t version) {
	char exe[1024];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n < 0) n = 0;
	exe[n] = 0;
	uint8_t pl[8 + sizeof exe];
	uint32_t pid = (uint32_t)getpid();
	memcpy(pl, &pid, 4);
	memcpy(pl + 4, &version, 4);
	memcpy(pl + 8, exe, (size_t)n);
	cz_queue_frame(CZ_FRAME_HELLO, pl, 8 + (size_t)n);
}

// fail_early tells cuzk gpu-trace why (a NOTE frame) and detaches.
static int fail_early(const char *why) {
	cz_note(why);
	send_queued();
	detach(why);
	return 1;
}

__attribute__((visibility("default"))) int InitializeInjection(void) {
	static int once;
	if (__atomic_exchange_n(&once, 1, __ATOMIC_SEQ_CST)) return 1;
	const char *sock = getenv("CUZK_GPUTRACE_SOCK");
	if (!sock || !*sock) {
		detached = writer_done = 1;
		say("CUZK_GPUTRACE_SOCK is not set (libcuzkinject.so is meant to be loaded by cuzk gpu-trace)");
		return 1;
	}
	if ((fd = connect_to(sock)) < 0) {
		char why[256];
		snprintf(why, sizeof why, "cannot reach cuzk gpu-trace at %s (%s)", sock, strerror(errno));
		detached = writer_done = 1;
		say("%s", why);
		return 1;
	}
	const char *lib = getenv("CUZK_CUPTI_PATH");
	char err[512];
	if (cz_open(lib && *lib ? lib : "libcupti.so", err, sizeof err) != 0) {
		writer_done = 1;
		return fail_early(err);
	}
	uint32_t v = cz_version();
	send_hello(v);
	if (v < MIN_VERSION) {
		snprintf(err, sizeof err, "CUPTI API version %u is older than %d (CUDA 11.8)", v, MIN_VERSION);
		writer_done = 1;
		return fail_early(err);
	}
	if (cz_start(CZ_START_NVTX | CZ_START_MEMCPY | CZ_START_MEMSET | CZ_START_SYNC, err, sizeof err) != 0) {
		writer_done = 1;
		return fail_early(err);
	}
	if (pthread_create(&writer, NULL, write_loop, NULL) != 0) {
		writer_done = 1;
		return fail_early("cannot start the writer thread");
	}
	pthread_detach(writer);
	pthread_atfork(NULL, NULL, in_child);
	atexit(at_exit);
	return 1;
}
