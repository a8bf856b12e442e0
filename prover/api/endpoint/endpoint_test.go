package endpoint

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSocketPathOfEachForm(t *testing.T) {
	for addr, want := range map[string]string{
		"unix:///run/curio/cuzk.sock": "/run/curio/cuzk.sock",
		"unix:cuzk.sock":              "cuzk.sock",
		"unix:/abs.sock":              "/abs.sock",
	} {
		if p, ok := SocketPath(addr); !ok || p != want {
			t.Errorf("SocketPath(%q) = %q, %v; want %q", addr, p, ok, want)
		}
	}
	if _, ok := SocketPath("127.0.0.1:9820"); ok {
		t.Error("a TCP address taken for a socket")
	}
}

func TestCheckNamesTheFlagAndWhatIsWrong(t *testing.T) {
	for _, good := range []string{"127.0.0.1:9820", "[::1]:9820", ":9820", "unix:///run/cuzk.sock", "unix:rel.sock"} {
		if err := Check("--listen", good); err != nil {
			t.Errorf("Check(%q): %v", good, err)
		}
	}
	for addr, want := range map[string]string{
		"":                "is empty",
		"host:1 2":        "blanks",
		"unix://":         "no socket path",
		"unix://rel.sock": "absolute path",
		"localhost":       "want host:port or unix:///path",
	} {
		err := Check("--upstream", addr)
		if err == nil || !strings.Contains(err.Error(), "--upstream") || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%q): %v, want an error naming --upstream and %q", addr, err, want)
		}
	}
}

// A unix socket: its folder made, a stale socket replaced, a live one
// refused, a file that is no socket left alone, the file gone at Close.
func TestListenOnAUnixSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run", "cuzk.sock")
	addr := "unix://" + path
	l, err := Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	if String(l) != addr {
		t.Errorf("String %q, want %q", String(l), addr)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if _, err := Listen(addr); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a second Listen on a served socket: %v, want 'in use'", err)
	}
	l.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the socket file outlives Close: %v", err)
	}
	// A stale socket: bound, never accepted on, its file left behind.
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	l2, err := Listen(addr)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	l2.Close()
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("keep me"), 0o644)
	if _, err := Listen("unix://" + plain); err == nil || !strings.Contains(err.Error(), "no socket") {
		t.Fatalf("Listen on a plain file: %v", err)
	}
	if b, _ := os.ReadFile(plain); string(b) != "keep me" {
		t.Fatal("the plain file was touched")
	}
}

func TestListenOnTCP(t *testing.T) {
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !strings.HasPrefix(String(l), "127.0.0.1:") {
		t.Errorf("String %q", String(l))
	}
}
