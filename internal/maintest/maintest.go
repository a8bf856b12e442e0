// Package maintest runs a command's main in a child process of its own
// test binary, so that a test can signal it and read its exit status: the
// test starts os.Args[0] with -test.run naming one helper test, an
// environment variable set, and the command's arguments after "--"; the
// helper test calls HelperMain. Test support: imported by _test.go files
// only (cmd/cuzk, examples/curio-task).
package maintest

import (
	"os"
	"testing"
)

// HelperMain is the body of a command's helper test: when the environment
// variable env is "1" it runs main as program name with the arguments
// after "--" in os.Args and exits the process with status 0 when main
// returns (main's own os.Exit ends it sooner); otherwise it skips t, so
// the helper test does nothing in an ordinary run.
func HelperMain(t *testing.T, env, name string, main func()) {
	if os.Getenv(env) != "1" {
		t.Skip("helper process")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Args = append([]string{name}, args...)
	main()
	os.Exit(0)
}
