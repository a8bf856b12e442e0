// C++ callers: cudaspans_scope ends its span when it leaves scope, also on
// an early return.
#include "../../cudaspans.h"

extern "C" int ctest_scoped(uint64_t parent, int early) {
	cudaspans_scope outer(parent, "cpp.outer");
	{
		cudaspans_scope inner(outer.h, "cpp.inner");
		cudaspans_set_int(inner.h, "cpp.early", early);
		if (early) return 1;
	}
	return outer.h != 0 ? 2 : 0;
}
