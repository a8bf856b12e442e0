// A "CUDA program" for the gpu-trace tests: it loads the injection library
// as the CUDA driver would at cuInit, then launches fake kernels and NVTX
// ranges through fakecupti.so.
//
//   fakeprog basic|unbalanced|badname|traceparent TP|domain TP|exit N|goexit|_exit N|sigterm|crash|lazyapi|drop
//
// lazyapi checks that CUPTI's API records are on only while a range is
// open (exit 7 when they are on outside one, 8 when off inside one, 9
// when they were not switched on again for the second range).
// The exit paths: goexit ends as a Go program does (its context destroyed,
// then the exit_group system call: no atexit handler runs), _exit with no
// flush point at all, sigterm and crash by a fatal signal with the
// default action.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void (*launch)(const char *, uint64_t);
static void (*nvtx)(uint32_t, const void *, const void *);

static void push(const char *msg) { const void *p[1] = {msg}; nvtx(8, p, NULL); }
static void pop(void) { const void *p[1] = {NULL}; nvtx(11, p, NULL); }
static int (*api_on0)(void), (*ext_on)(void);
static int any_on(void) { return api_on0() || ext_on(); }
static int both_on(void) { return api_on0() && ext_on(); }

int main(int argc, char **argv) {
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	if (inj) {
		void *h = dlopen(inj, RTLD_NOW);
		int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
		if (!init) { fprintf(stderr, "fakeprog: cannot load %s: %s\n", inj, dlerror()); return 90; }
		init();
	}
	const char *cupti = getenv("CUZK_CUPTI_PATH");
	void *c = cupti ? dlopen(cupti, RTLD_NOW) : NULL;
	if (c) {
		launch = (void (*)(const char *, uint64_t))dlsym(c, "fake_launch");
		nvtx = (void (*)(uint32_t, const void *, const void *))dlsym(c, "fake_nvtx");
	}
	if (!launch || !nvtx) { fprintf(stderr, "fakeprog: no fake CUPTI\n"); return 91; }
	const char *mode = argc > 1 ? argv[1] : "basic";
	if (!strcmp(mode, "basic")) {
		push("phase");
		launch("kern_in_phase", 2000000);
		push("inner");
		launch("kern_in_inner", 1000000);
		pop();
		pop();
		launch("orphan", 500000);
	} else if (!strcmp(mode, "unbalanced")) {
		pop();
		push("left open");
		launch("kern_open", 1000);
	} else if (!strcmp(mode, "traceparent") && argc > 2) {
		char msg[200];
		snprintf(msg, sizeof msg, "request traceparent=%s", argv[2]);
		push(msg);
		launch("kern_request", 1000);
		pop();
	} else if (!strcmp(mode, "domain") && argc > 2) {
		// As Python's nvtx package and Rust's nvtx crate with a domain do:
		// nvtxDomainCreateA, nvtxDomainRangePushEx with an ASCII message
		// in nvtxEventAttributes_t, nvtxDomainRangePop.
		struct {
			uint16_t version, size;
			uint32_t category;
			int32_t colorType;
			uint32_t color;
			int32_t payloadType, reserved0;
			uint64_t payload;
			int32_t messageType, pad;
			const void *message;
		} attr = {3, sizeof attr, 0, 0, 0, 0, 0, 0, 1, 0, NULL};
		char msg[200];
		snprintf(msg, sizeof msg, "job traceparent=%s", argv[2]);
		attr.message = msg;
		const void *dom = (const void *)(uintptr_t)0x5150;
		const void *create[1] = {"python.job"};
		nvtx(41, create, &dom); // nvtxDomainCreateA returns dom
		const void *push[2] = {dom, &attr};
		nvtx(33, push, NULL); // nvtxDomainRangePushEx
		launch("kern_domain", 1000);
		const void *dpop[1] = {dom};
		nvtx(34, dpop, NULL); // nvtxDomainRangePop
	} else if (!strcmp(mode, "badname")) {
		// A record whose name pointer points nowhere (a CUPTI whose layout
		// moved the field): the program must not notice.
		launch((const char *)16, 1000);
		launch("good_after_bad", 1000);
	} else if (!strcmp(mode, "exit") && argc > 2) {
		launch("before_exit", 1000);
		return atoi(argv[2]);
	} else if (!strcmp(mode, "goexit")) {
		void (*destroy)(void) = (void (*)(void))dlsym(c, "fake_ctx_destroy");
		launch("before_goexit", 1000);
		destroy();
		syscall(SYS_exit_group, 0);
	} else if (!strcmp(mode, "_exit") && argc > 2) {
		launch("before__exit", 1000);
		_exit(atoi(argv[2]));
	} else if (!strcmp(mode, "sigterm")) {
		launch("before_sigterm", 1000);
		raise(SIGTERM);
		return 0; // not reached
	} else if (!strcmp(mode, "lazyapi")) {
		// The external correlation kind is switched with the API kinds
		// (it costs a launch even alone): off outside a range too, and on
		// inside one.
		api_on0 = (int (*)(void))dlsym(c, "fake_api_on");
		ext_on = (int (*)(void))dlsym(c, "fake_ext_on");
		int (*switched)(void) = (int (*)(void))dlsym(c, "fake_api_switched_on");
		if (any_on()) return 7;
		launch("lazy_before", 1000);
		push("first");
		if (!both_on()) return 8;
		launch("lazy_in_first", 1000);
		pop();
		usleep(400000); // a few writer ticks: switched off
		if (any_on()) return 7;
		launch("lazy_between", 1000);
		int before = switched();
		push("second");
		if (!both_on() || switched() == before) return 9;
		launch("lazy_in_second", 1000);
		pop();
	} else if (!strcmp(mode, "drop")) {
		// CUPTI's buffers overflowed: 40 records it could not keep.
		void (*drop)(size_t) = (void (*)(size_t))dlsym(c, "fake_drop");
		launch("before_drop", 1000);
		drop(40);
		launch("after_drop", 1000);
	} else if (!strcmp(mode, "crash")) {
		launch("before_crash", 1000);
		*(volatile int *)(uintptr_t)8 = 1;
		return 0;
	}
	usleep(300000); // a writer flush
	printf("fakeprog: %s done\n", mode);
	return 0;
}
