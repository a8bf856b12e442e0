package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/prover"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func open(t *testing.T, dir string, opts ...Option) (*Journal, []string) {
	t.Helper()
	j, ids, err := Open(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return j, ids
}

func TestRecordsSurviveReopenAndUnfinishedOnesAreInterrupted(t *testing.T) {
	dir := t.TempDir()
	c := &clock{time.Unix(1_700_000_000, 0)}
	j, ids := open(t, dir, withClock(c.now))
	if len(ids) != 0 {
		t.Fatalf("fresh journal: interrupted %v", ids)
	}
	res := &prover.Result{Proof: []byte("proof"), PublicWitness: []byte{1, 2}, Backend: "cpu",
		Timings: prover.Timings{Prove: 3 * time.Millisecond, Total: 5 * time.Millisecond}}
	done := Record{RequestID: "done", JobID: "job-1", ParamsHash: ParamsHash("merkle", 1<<14, nil), State: StateSucceeded,
		TraceID: "abc", Submitted: c.t, Finished: c.t, Result: res}
	running := Record{RequestID: "running", JobID: "job-2", State: StateSubmitted, Submitted: c.t}
	for _, r := range []Record{done, running} {
		if err := j.Put(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	j, ids = open(t, dir, withClock(c.now))
	defer j.Close()
	if len(ids) != 1 || ids[0] != "running" {
		t.Errorf("interrupted %v, want [running]", ids)
	}
	got, ok, err := j.Get("done")
	if err != nil || !ok || got.State != StateSucceeded || !bytes.Equal(got.Result.Proof, res.Proof) ||
		got.Result.Timings != res.Timings || got.TraceID != "abc" || got.ParamsHash != done.ParamsHash {
		t.Errorf("done after reopen: %+v %v %v", got, ok, err)
	}
	got, ok, err = j.Get("running")
	if err != nil || !ok || got.State != StateInterrupted || !strings.Contains(got.Error, "interrupted by a restart") || got.Finished.IsZero() {
		t.Errorf("running after reopen: %+v %v %v", got, ok, err)
	}
	if _, ok, _ := j.Get("never"); ok {
		t.Error("unknown request id found")
	}
}

func TestRecordsExpireAfterTheTTL(t *testing.T) {
	c := &clock{time.Unix(1_700_000_000, 0)}
	j, _ := open(t, t.TempDir(), withClock(c.now), WithTTL(time.Minute))
	defer j.Close()
	must(t, j.Put(Record{RequestID: "old", State: StateSucceeded, Finished: c.t}))
	must(t, j.Put(Record{RequestID: "open", State: StateSubmitted, Submitted: c.t}))
	c.t = c.t.Add(2 * time.Minute)
	if _, ok, _ := j.Get("old"); ok {
		t.Error("a record past its TTL is still returned")
	}
	if _, ok, _ := j.Get("open"); !ok {
		t.Error("an unfinished record expired")
	}
	must(t, j.Put(Record{RequestID: "new", State: StateSucceeded, Finished: c.t}))
	all, err := j.All()
	must(t, err)
	if names := ids(all); names != "open,new" {
		t.Errorf("kept %s, want open,new", names)
	}
}

func TestTheOldestAreEvictedBeyondTheCaps(t *testing.T) {
	c := &clock{time.Unix(1_700_000_000, 0)}
	j, _ := open(t, t.TempDir(), withClock(c.now), WithMaxEntries(3))
	for i := range 5 {
		must(t, j.Put(Record{RequestID: fmt.Sprint("r", i), State: StateSucceeded, Finished: c.t}))
	}
	all, err := j.All()
	must(t, err)
	if got := ids(all); got != "r2,r3,r4" {
		t.Errorf("count cap 3: kept %s", got)
	}
	// Rewriting a record makes it the newest.
	must(t, j.Put(Record{RequestID: "r2", State: StateFailed, Finished: c.t}))
	must(t, j.Put(Record{RequestID: "r5", State: StateSucceeded, Finished: c.t}))
	all, _ = j.All()
	if got := ids(all); got != "r4,r2,r5" {
		t.Errorf("after rewriting r2: kept %s, want r4,r2,r5", got)
	}
	j.Close()

	j, _ = open(t, t.TempDir(), withClock(c.now), WithMaxBytes(4000))
	defer j.Close()
	big := &prover.Result{Proof: bytes.Repeat([]byte{7}, 1000)} // ~1.4 KB of JSON
	for i := range 6 {
		must(t, j.Put(Record{RequestID: fmt.Sprint("b", i), State: StateSucceeded, Finished: c.t, Result: big}))
	}
	all, _ = j.All()
	if got := ids(all); got != "b4,b5" {
		t.Errorf("byte cap 4000: kept %s", got)
	}
}

func TestASecondOpenIsRefusedAsLocked(t *testing.T) {
	dir := t.TempDir()
	j, _ := open(t, dir)
	defer j.Close()
	_, _, err := Open(dir)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), filepath.Join(dir, FileName)) {
		t.Errorf("second open: %v, want ErrLocked naming the file", err)
	}
}

func TestACorruptFileIsRefused(t *testing.T) {
	for name, content := range map[string][]byte{
		"garbage":   bytes.Repeat([]byte("not a bbolt file "), 1000),
		"truncated": nil, // filled below from a real journal
	} {
		dir := t.TempDir()
		if content == nil {
			j, _ := open(t, dir)
			must(t, j.Put(Record{RequestID: "x", State: StateSucceeded}))
			j.Close()
			b, err := os.ReadFile(filepath.Join(dir, FileName))
			must(t, err)
			content = b[:100]
		}
		must(t, os.WriteFile(filepath.Join(dir, FileName), content, 0o600))
		_, _, err := Open(dir)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), FileName) {
			t.Errorf("%s: %v, want ErrCorrupt naming the file", name, err)
		}
	}
}

func TestParamsHashSeparatesWhatMakesADifferentProof(t *testing.T) {
	base := ParamsHash("merkle", 100, [][]byte{[]byte("ab"), []byte("c")})
	for _, other := range []string{
		ParamsHash("merkle", 101, [][]byte{[]byte("ab"), []byte("c")}),
		ParamsHash("merkl", 100, [][]byte{[]byte("ab"), []byte("c")}),
		ParamsHash("merkle", 100, [][]byte{[]byte("a"), []byte("bc")}),
		ParamsHash("merkle", 100, [][]byte{[]byte("abc")}),
	} {
		if other == base {
			t.Errorf("two different requests hash alike")
		}
	}
	if ParamsHash("merkle", 100, [][]byte{[]byte("ab"), []byte("c")}) != base {
		t.Error("the same request hashes differently")
	}
}

func ids(rs []Record) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.RequestID)
	}
	return strings.Join(s, ",")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
