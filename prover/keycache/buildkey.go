package keycache

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// A cached circuit is keyed by what built the running binary, so that
// another build's circuit (another gnark, another circuit definition) is
// never read as this one's:
//   - a clean VCS build: "rev:" and its revision (BuildRevision);
//   - any other binary (go run, go test, -buildvcs=false, a modified tree):
//     "exe-sha256:" and the SHA-256 of the executable's bytes, which
//     change with any change of the code compiled into it.
const (
	keyRevisionPrefix = "rev:"
	keyExecPrefix     = "exe-sha256:"
)

// exeMemo is the file in the cache directory that remembers the hash of
// executables, so a rerun of the same binary does not hash it again: by
// path, size and modification time (a binary run again in place), and by
// its identity (exeIdentity: the Go build ID, the size and a sample of the
// bytes), which survives go run's fresh temporary path and time each run.
const exeMemo = "executables.json"

// exeMemoMax is the most executables exeMemo remembers; the least recently
// used go first (go run leaves a new path per run).
const exeMemoMax = 64

// exeStamp is what exeMemo stores per executable path.
type exeStamp struct {
	Size     int64  `json:"size"`
	ModNano  int64  `json:"mod_ns"`
	Identity string `json:"identity,omitempty"` // exeIdentity, "" when the binary has no Go build ID
	SHA256   string `json:"sha256"`
	UsedNano int64  `json:"used_ns,omitempty"` // last looked up, for exeMemoMax
}

// How ExecutableKey found a key (the cuzk.circuit.cache.key_source
// attribute of circuit.cache.key).
const (
	KeySourceProcess  = "process"  // hashed earlier in this process
	KeySourceStamp    = "stamp"    // the memo, by path, size and modification time
	KeySourceIdentity = "identity" // the memo, by build ID, size and sample (a go run binary at a new path)
	KeySourceHash     = "hash"     // the executable's bytes hashed
	KeySourceRevision = "revision" // the binary's clean VCS revision, nothing read
)

var (
	exeMu     sync.Mutex
	exeHashed = map[string]exeStamp{} // this process's hashes, by path
	// hashFile is replaced by tests to count the hashes made.
	hashFile = sha256File
)

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// exeSamples is how many 4 KiB pieces of the executable, evenly spaced
// from its start to its end, exeIdentity hashes (256 KiB of a 50 MB binary).
const exeSamples = 64

// exeIdentity is what names an executable's bytes without reading them
// all: its Go build ID (the ELF note .note.go.buildid, whose last part is
// the linker's content hash of the binary, so any rebuild that changes a
// byte changes it), its size, and the SHA-256 of exeSamples pieces of it
// (an edit after the link that keeps the size shows there when it touches
// a sampled piece). "" when the file is not an ELF with a Go build ID: such
// a binary is known by path, size and time only.
func exeIdentity(path string, size int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	ef, err := elf.NewFile(f)
	if err != nil {
		return ""
	}
	id := goBuildID(ef)
	if id == "" {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00", size, id)
	buf := make([]byte, 4096)
	for i := int64(0); i < exeSamples; i++ {
		off := (size - int64(len(buf))) * i / (exeSamples - 1)
		n, err := f.ReadAt(buf, max(off, 0))
		if err != nil && !errors.Is(err, io.EOF) {
			return ""
		}
		h.Write(buf[:n])
	}
	return fmt.Sprintf("go-build-id:%s size:%d sample:%x", id, size, h.Sum(nil)[:16])
}

// goBuildID is the Go build ID in ef's .note.go.buildid note (name "Go\x00",
// type 4), "" when there is none.
func goBuildID(ef *elf.File) string {
	sec := ef.Section(".note.go.buildid")
	if sec == nil {
		return ""
	}
	b, err := sec.Data()
	if err != nil || len(b) < 16 {
		return ""
	}
	bo := ef.ByteOrder
	namesz, descsz, typ := bo.Uint32(b), bo.Uint32(b[4:]), bo.Uint32(b[8:])
	nameEnd := 12 + (uint64(namesz)+3)&^3
	if typ != 4 || namesz != 4 || string(b[12:15]) != "Go\x00" || nameEnd+uint64(descsz) > uint64(len(b)) {
		return ""
	}
	return string(b[nameEnd : nameEnd+uint64(descsz)])
}

// ExecutableKey returns the circuit-cache key of the executable at path,
// "exe-sha256:" and the hex SHA-256 of its bytes, and where it came from
// (KeySource*): remembered per process, and in dir's executables.json by
// path, size and modification time (ns), or by the binary's identity (Go
// build ID, size, a sample of its bytes) for the same binary at another
// path (go run's), so the same binary is hashed once (about 25 ms for
// 50 MB). dir "" keeps no file. Errors: the executable cannot be read.
func ExecutableKey(path, dir string) (key, source string, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", "", fmt.Errorf("circuit cache key: %w", err)
	}
	want := exeStamp{Size: st.Size(), ModNano: st.ModTime().UnixNano()}
	exeMu.Lock()
	defer exeMu.Unlock()
	if s, ok := exeHashed[path]; ok && s.Size == want.Size && s.ModNano == want.ModNano {
		return keyExecPrefix + s.SHA256, KeySourceProcess, nil
	}
	memo := map[string]exeStamp{}
	memoPath := filepath.Join(dir, exeMemo)
	now := time.Now().UnixNano()
	if dir != "" {
		if b, err := os.ReadFile(memoPath); err == nil {
			_ = json.Unmarshal(b, &memo) // a damaged memo is rebuilt
		}
	}
	source = KeySourceHash
	if s, ok := memo[path]; ok && s.Size == want.Size && s.ModNano == want.ModNano && len(s.SHA256) == 64 {
		want, source = s, KeySourceStamp
	} else if want.Identity = exeIdentity(path, want.Size); want.Identity != "" {
		for _, s := range memo {
			if s.Identity == want.Identity && len(s.SHA256) == 64 {
				want.SHA256, source = s.SHA256, KeySourceIdentity
				break
			}
		}
	}
	if source == KeySourceHash {
		sum, err := hashFile(path)
		if err != nil {
			return "", "", fmt.Errorf("circuit cache key: hash the executable: %w", err)
		}
		want.SHA256 = sum
	}
	want.UsedNano = now
	exeHashed[path] = want
	if dir != "" {
		memo[path] = want
		pruneMemo(memo)
		if b, err := json.Marshal(memo); err == nil {
			// Best effort: without the memo the next run hashes again.
			tmp := memoPath + fmt.Sprintf(".%d.tmp", os.Getpid())
			if os.WriteFile(tmp, b, 0o644) == nil && os.Rename(tmp, memoPath) != nil {
				os.Remove(tmp)
			}
		}
	}
	return keyExecPrefix + want.SHA256, source, nil
}

// pruneMemo keeps the exeMemoMax most recently used entries of memo.
func pruneMemo(memo map[string]exeStamp) {
	if len(memo) <= exeMemoMax {
		return
	}
	paths := make([]string, 0, len(memo))
	for p := range memo {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool { return memo[paths[i]].UsedNano > memo[paths[j]].UsedNano })
	for _, p := range paths[exeMemoMax:] {
		delete(memo, p)
	}
}

// buildKey is the circuit-cache key of the running binary (see
// keyRevisionPrefix), a line saying which it is and where it came from
// (KeySourceRevision or ExecutableKey's); "" with the reason when neither
// a revision nor the executable can key it.
func buildKey(dir string) (key, describe, source string) {
	rev, why := BuildRevision()
	if rev != "" {
		return keyRevisionPrefix + rev, fmt.Sprintf("keyed by VCS revision %.12s", rev), KeySourceRevision
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", fmt.Sprintf("%s, and the executable is unknown (%v)", why, err), ""
	}
	return executableKey(exe, dir, why)
}

func executableKey(exe, dir, why string) (key, describe, source string) {
	key, source, err := ExecutableKey(exe, dir)
	if err != nil {
		return "", fmt.Sprintf("%s, and %v", why, err), ""
	}
	// "as why", not "(why)": why may hold its own brackets ("(go run,
	// go test or -buildvcs=false)"), and a bracket inside a bracket was hard to read.
	return key, fmt.Sprintf("keyed by the executable's SHA-256 %.12s, as %s", key[len(keyExecPrefix):], why), source
}
