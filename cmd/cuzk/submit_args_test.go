package main

import (
	"net"
	"sync/atomic"
	"testing"

	"github.com/urfave/cli/v2"
)

// submit checks a built-in circuit's size before it dials the daemon, in
// prove's words with the range it wants: --constraints 0 waited on the
// daemon (an absent one answered "connection refused" instead). A circuit
// this binary does not know is the daemon's to check, so it is sent.
func TestSubmitChecksTheSizeBeforeDialingTheDaemon(t *testing.T) {
	clearOTLPEnv(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	var dialed atomic.Int32
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			dialed.Add(1)
			conn.Close()
		}
	}()
	for _, c := range []struct{ circuit, n, want string }{
		{"mulchain", "0", "bad constraint count: 0 (must be positive: want 1 to 2^32 = 4294967296)"},
		{"mulchain", "-1", "bad constraint count: -1 (must be positive: want 1 to 2^32 = 4294967296)"},
		{"merkle", "100", "bad constraint count: merkle needs at least 1344 constraints (two MiMC levels), got 100"},
		{"mulchain", "9999999999999", "bad constraint count: 9999999999999 (above 2^32 = 4294967296, the largest FFT domain of BLS12-381's scalar field: no Groth16 proof of that size exists)"},
	} {
		_, errOut, err := runCuzk(t, "submit", "--addr", lis.Addr().String(), "--circuit", c.circuit, "--constraints", c.n, "--timeout", "2s")
		if err == nil || err.Error() != c.want {
			t.Errorf("submit --circuit %s --constraints %s: %v, want %q", c.circuit, c.n, err, c.want)
		}
		if errOut != "" {
			t.Errorf("submit --circuit %s --constraints %s wrote %q (gnark's log?)", c.circuit, c.n, errOut)
		}
	}
	// Above 2^32 any circuit is refused before the dial, in the daemon's
	// words (cuzk submit --circuit-file's circuit sent it, to be refused).
	_, _, err = runCuzk(t, "submit", "--addr", lis.Addr().String(), "--circuit", "from-files", "--constraints", "4294967297", "--timeout", "2s")
	if want := "bad constraint count: 4294967297 (above 2^32 = 4294967296, the largest FFT domain of BLS12-381's scalar field: no Groth16 proof of that size exists)"; err == nil || err.Error() != want {
		t.Errorf("submit --circuit from-files --constraints 4294967297: %v, want %q", err, want)
	}
	// A negative --sector or --task-id names its flag before any dial (the
	// client refused the sector only once connected).
	for _, f := range []string{"--sector", "--task-id"} {
		_, _, err := runCuzk(t, "submit", "--addr", lis.Addr().String(), f, "-1", "--timeout", "2s")
		if want := f + " -1: must be 0 or more (0 to 2^63-1 = 9223372036854775807)"; err == nil || err.Error() != want {
			t.Errorf("submit %s -1: %v, want %q", f, err, want)
		}
	}
	if n := dialed.Load(); n != 0 {
		t.Errorf("submit dialed the daemon %d times before refusing its arguments", n)
	}
	// Not a built-in here: the daemon decides (this one is no daemon).
	if _, _, err := runCuzk(t, "submit", "--addr", lis.Addr().String(), "--circuit", "from-files", "--constraints", "0", "--timeout", "2s"); err == nil {
		t.Error("a submit to a listener that is no daemon succeeded")
	}
	if dialed.Load() == 0 {
		t.Error("a circuit this binary does not know was refused without asking the daemon")
	}
}

// submit's default proof is prove's (merkle, 32768 constraints): submit
// sent mulchain 1024, a proof of another circuit whose key prove had not
// made, after the README's first command.
func TestSubmitAndProveDefaultToTheSameProof(t *testing.T) {
	defaults := func(cmd string) (circuit, constraints string) {
		for _, c := range newApp().Commands {
			if c.Name != cmd {
				continue
			}
			for _, f := range c.Flags {
				df, ok := f.(cli.DocGenerationFlag)
				if !ok {
					continue
				}
				switch f.Names()[0] {
				case "circuit":
					circuit = df.GetDefaultText()
				case "constraints":
					constraints = df.GetDefaultText()
				}
			}
		}
		return circuit, constraints
	}
	pc, pn := defaults("prove")
	sc, sn := defaults("submit")
	if pc == "" || pn == "" || pc != sc || pn != sn {
		t.Errorf("prove's defaults %s %s, submit's %s %s", pc, pn, sc, sn)
	}
}
