package backend

import (
	"errors"
	"strings"
)

// FallbackNotice is the one line a caller of backend "auto" prints when the
// CUDA backend is not usable and the CPU runs instead:
//
//	backend auto: cuda unavailable (REASON); using cpu
//
// REASON is the Reason of the *UnavailableError in err (Unavailable), else
// err's text; either without the prefixes wrappers add on the way up
// ("cuda backend: ", "backend unavailable: ", "cuda: ", "fixedbase: ")
// and without a segment that repeats the end of the one before it
// (dlerror's text names the library dlopen was given: "dlopen
// libcuda.so.1: libcuda.so.1: ...").
// Without the line ending newline. Safe for concurrent use.
func FallbackNotice(err error) string {
	msg := err.Error()
	var unavailable *UnavailableError
	if errors.As(err, &unavailable) {
		msg = unavailable.Reason.Error()
	}
	for _, p := range []string{"cuda backend: ", ErrUnavailable.Error() + ": ", "cuda: ", "fixedbase: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	parts := strings.Split(msg, ": ")
	kept := parts[:1]
	for _, s := range parts[1:] {
		if prev := kept[len(kept)-1]; s == prev || strings.HasSuffix(prev, " "+s) {
			continue
		}
		kept = append(kept, s)
	}
	return "backend auto: cuda unavailable (" + strings.Join(kept, ": ") + "); using cpu"
}
