package main

import (
	"strings"
	"testing"
)

// Bad arguments are refused in one line before anything listens.
func TestBadArgumentsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-fail", "BOGUS"}, `-fail "BOGUS": not a gRPC code name`},
		{[]string{"-fail", "OK"}, `-fail "OK": not a gRPC code name other than OK`},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-listen", "nohost:-1"}, "-listen nohost:-1: "},
		{[]string{"-fail-every", "-1", "-fail-proof", "x"}, "-fail-every -1: want 0 (off) or a positive count"},
		{[]string{"-fail-requests", "(", "-fail", "INTERNAL"}, `-fail-requests "(": error parsing regexp`},
		{[]string{"-fail-every", "2"}, "give -fail CODE or -fail-proof MESSAGE too"},
		{[]string{"-gpus", "0"}, "-gpus 0: want 1 or more"},
		{[]string{"-gpu-kernel-ms", "-1"}, "-gpu-kernel-ms -1 -kernel-ms 10: want 0 or more"},
		{[]string{"-listen", "unix://rel.sock"}, "unix:// takes an absolute path"},
	} {
		if err := run(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line with %q", tc.args, err, tc.want)
		}
	}
}
