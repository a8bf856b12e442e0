package keycache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
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
// executables by path, size and modification time, so a rerun of the same
// binary (go run's cached build) does not hash it again.
const exeMemo = "executables.json"

// exeStamp is what exeMemo stores per executable path.
type exeStamp struct {
	Size    int64  `json:"size"`
	ModNano int64  `json:"mod_ns"`
	SHA256  string `json:"sha256"`
}

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

// ExecutableKey returns the circuit-cache key of the executable at path,
// "exe-sha256:" and the hex SHA-256 of its bytes: remembered per process,
// and in dir's executables.json, by path, size and modification time (ns),
// so the same binary is hashed once (about 0.1 s for 50 MB). dir "" keeps
// no file. Errors: the executable cannot be read.
func ExecutableKey(path, dir string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("circuit cache key: %w", err)
	}
	want := exeStamp{Size: st.Size(), ModNano: st.ModTime().UnixNano()}
	exeMu.Lock()
	defer exeMu.Unlock()
	if s, ok := exeHashed[path]; ok && s.Size == want.Size && s.ModNano == want.ModNano {
		return keyExecPrefix + s.SHA256, nil
	}
	memo := map[string]exeStamp{}
	memoPath := filepath.Join(dir, exeMemo)
	if dir != "" {
		if b, err := os.ReadFile(memoPath); err == nil {
			_ = json.Unmarshal(b, &memo) // a damaged memo is rebuilt
		}
		if s, ok := memo[path]; ok && s.Size == want.Size && s.ModNano == want.ModNano && len(s.SHA256) == 64 {
			exeHashed[path] = s
			return keyExecPrefix + s.SHA256, nil
		}
	}
	sum, err := hashFile(path)
	if err != nil {
		return "", fmt.Errorf("circuit cache key: hash the executable: %w", err)
	}
	want.SHA256 = sum
	exeHashed[path] = want
	if dir != "" {
		memo[path] = want
		if b, err := json.Marshal(memo); err == nil {
			// Best effort: without the memo the next run hashes again.
			tmp := memoPath + fmt.Sprintf(".%d.tmp", os.Getpid())
			if os.WriteFile(tmp, b, 0o644) == nil && os.Rename(tmp, memoPath) != nil {
				os.Remove(tmp)
			}
		}
	}
	return keyExecPrefix + sum, nil
}

// buildKey is the circuit-cache key of the running binary (see
// keyRevisionPrefix) and a line saying which it is; "" with the reason
// when neither a revision nor the executable can key it.
func buildKey(dir string) (key, describe string) {
	rev, why := BuildRevision()
	if rev != "" {
		return keyRevisionPrefix + rev, fmt.Sprintf("keyed by VCS revision %.12s", rev)
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", fmt.Sprintf("%s, and the executable is unknown (%v)", why, err)
	}
	return executableKey(exe, dir, why)
}

func executableKey(exe, dir, why string) (key, describe string) {
	key, err := ExecutableKey(exe, dir)
	if err != nil {
		return "", fmt.Sprintf("%s, and %v", why, err)
	}
	return key, fmt.Sprintf("keyed by the executable's SHA-256 %.12s (%s)", key[len(keyExecPrefix):], why)
}
