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
//
// Where the last records are flushed, by how the program ends:
//   exit() or main's return   atexit handler and destructor: flush, goodbye
//   a CUDA context destroyed  the CUPTI resource callback: flush and send there
//                             (Go programs: os.Exit and main's return run no
//                             atexit handler, but cuCtxDestroy comes first)
//   a fatal signal            our handler, installed only where the program
//   (SIGTERM, SIGSEGV, ...)   left the default action: the writer flushes
//                             (bounded wait), then the default action runs
//   _exit, SIGKILL, exit_group  nothing can run: what the writer's last
//                             periodic flush (every FLUSH_MS) had not sent
//                             is lost, and cuzk gpu-trace says so
#define FLUSH_MS 100
#define _GNU_SOURCE
#include "../../cz_core.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
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
static pthread_mutex_t send_mu = PTHREAD_MUTEX_INITIALIZER; // one sender at a time: frames stay whole
static volatile sig_atomic_t sig_pending, sig_done;
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

// send_queued sends what the queue holds; 0 on success. The writer
// thread and the context-destroy hook both send: send_mu keeps the
// batches in order and whole.
static int send_queued(void) {
	pthread_mutex_lock(&send_mu);
	size_t n = 0;
	uint8_t *b = cz_take(&n);
	int r = 0;
	if (b && n && fd >= 0) r = send_all(b, n);
	free(b);
	pthread_mutex_unlock(&send_mu);
	return r;
}

static void queue_flushed(uint32_t reason, uint32_t sig) {
	uint8_t pl[8];
	memcpy(pl, &reason, 4);
	memcpy(pl + 4, &sig, 4);
	cz_queue_frame(CZ_FRAME_FLUSHED, pl, sizeof pl);
}

// on_context_destroy runs on the program's thread as a CUDA context is
// about to go: the last moment a Go program's records can be had.
static void on_context_destroy(int reason) {
	if (detached || stopping) return;
	cz_calibrate(16);
	cz_flush(1);
	queue_flushed((uint32_t)reason, 0);
	if (send_queued() != 0) detach("lost the connection to cuzk gpu-trace");
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
		cz_wait_data(FLUSH_MS / 2);
		double t = now_s();
		if (sig_pending && !sig_done) {
			// A fatal signal's handler waits for this: every record,
			// complete or not, then the default action ends the program.
			cz_calibrate(16);
			cz_flush(1);
			queue_flushed(CZ_FLUSH_SIGNAL, (uint32_t)sig_pending);
			send_queued();
			sig_done = 1;
			continue;
		}
		if (t - last_flush >= FLUSH_MS / 1000.0) {
			cz_flush(0);
			cz_api_tick();
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

// on_signal: a fatal signal whose action was the default. The writer
// thread flushes (a signal handler may not call CUPTI: the interrupted
// thread may hold its locks, or ours); this waits for it at most 1.5 s
// with nanosleep (async-signal-safe), then the default action runs
// (SA_RESETHAND restored it; the re-raised signal is delivered on return).
static void on_signal(int sig) {
	if (!detached && !stopping && !sig_pending) {
		sig_pending = sig;
		struct timespec ms = {0, 1000000};
		for (int i = 0; i < 1500 && !sig_done && !detached; i++) nanosleep(&ms, NULL);
	}
	raise(sig);
}

static void install_signal_handlers(void) {
	const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction old;
		if (sigaction(sigs[i], NULL, &old) != 0) continue;
		// Only where the program left the default: a handler of its own
		// (every Go program has them) is never replaced.
		if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
}

// A library unloaded (dlclose) or a process ending through exit after
// atexit ran: the same goodbye, once.
__attribute__((destructor)) static void on_unload(void) {
	if (!writer_done && !stopping) {
		stopping = 1;
		for (int i = 0; i < 3000 && !writer_done; i++) {
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
		}
	}
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

static int start_capture(void);

__attribute__((visibility("default"))) int InitializeInjection(void) {
	start_capture();
	return 1;
}

// InitializeInjectionNvtx2 is NVTX's injection entry point: cuzk
// gpu-trace names this library in NVTX_INJECTION64_PATH, so the capture
// starts at the program's first NVTX call, which often comes before its
// first CUDA call (an outer range pushed before CUDA is initialized: a
// Python job, a thread pool), and then hands NVTX on to CUPTI's own entry
// point so CUPTI raises the NVTX callbacks. 0 (NVTX stays a no-op) when
// CUPTI has none.
typedef int (*nvtx_init_fn)(void *);
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(void *getExportTable) {
	start_capture();
	void *h = cz_sym("InitializeInjectionNvtx2");
	if (h == NULL) return 0;
	return ((nvtx_init_fn)h)(getExportTable);
}

static int start_capture(void) {
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
	// API records only while an NVTX push range is open (cz_core.h,
	// CZ_START_LAZY_API). CUZK_GPUTRACE_API=1 keeps them on throughout,
	// =0 off throughout (measuring what they cost: no kernel is then a
	// child of its range); CUZK_GPUTRACE_HWTRACE=1 asks for the hardware
	// kernel timestamps.
	uint32_t flags = CZ_START_NVTX | CZ_START_MEMCPY | CZ_START_MEMSET | CZ_START_SYNC | CZ_START_LAZY_API;
	const char *api = getenv("CUZK_GPUTRACE_API");
	if (api && !strcmp(api, "0")) flags |= CZ_START_NO_API;
	if (api && !strcmp(api, "1")) flags &= ~(uint32_t)CZ_START_LAZY_API;
	const char *hw = getenv("CUZK_GPUTRACE_HWTRACE");
	if (hw && !strcmp(hw, "1")) flags |= CZ_START_HWTRACE;
	const char *kind = getenv("CUZK_GPUTRACE_KIND");
	if (kind && !strcmp(kind, "kernel")) flags |= CZ_START_KIND_KERNEL;
	if (cz_start(flags, err, sizeof err) != 0) {
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
	cz_set_flush_hook(on_context_destroy);
	if (!getenv("CUZK_GPUTRACE_NO_SIGNALS")) install_signal_handlers();
	return 1;
}
