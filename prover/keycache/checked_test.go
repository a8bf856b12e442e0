package keycache

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/constraint"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
)

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(int64(n))).Read(b)
	return b
}

func writeCheckedBytes(t *testing.T, path string, payload []byte) []byte {
	t.Helper()
	if err := writeChecked(path, func(w io.Writer) error {
		// In uneven pieces, as encoders write.
		for p := payload; len(p) > 0; {
			k := min(len(p), 1+len(p)/3)
			if _, err := w.Write(p[:k]); err != nil {
				return err
			}
			p = p[k:]
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// smallChunks makes checksum chunks and parallel copies small for one test.
func smallChunks(t *testing.T) {
	c, p, q := checkChunk, parallelBytes, copyPiece
	checkChunk, parallelBytes, copyPiece = 64<<10, 32<<10, 16<<10
	t.Cleanup(func() { checkChunk, parallelBytes, copyPiece = c, p, q })
}

func TestCheckedFileReadsBackAndFindsEveryDamagedByte(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, checkChunk - 1, checkChunk, 2*checkChunk + 12345} {
		payload := randomBytes(n)
		data := writeCheckedBytes(t, filepath.Join(dir, "f"), payload)
		got, err := checkedPayload(data)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("%d bytes: read back %d bytes, %v", n, len(got), err)
		}
		if n == 0 {
			continue
		}
		// One flipped bit anywhere: in the payload (first, middle and last
		// chunk) or in the trailer.
		for _, at := range []int{0, n / 2, n - 1, n, len(data) - 13} {
			bad := bytes.Clone(data)
			bad[at] ^= 0x10
			if _, err := checkedPayload(bad); err == nil {
				t.Errorf("%d bytes: a flipped bit at %d went unnoticed", n, at)
			}
		}
		if _, err := checkedPayload(data[:len(data)-1]); !errors.Is(err, errNoTrailer) {
			t.Errorf("%d bytes: cut short, err = %v, want errNoTrailer", n, err)
		}
		if _, err := checkedPayload(append(bytes.Clone(data[:n/2]), data[n:]...)); !errors.Is(err, errChecksum) {
			t.Errorf("%d bytes: half the payload missing, err = %v, want errChecksum", n, err)
		}
	}
	bad := writeCheckedBytes(t, filepath.Join(dir, "g"), randomBytes(3*checkChunk))
	bad[2*checkChunk+5] ^= 1
	if _, err := checkedPayload(bad); err == nil || !strings.Contains(err.Error(), "bytes 33554432 to 50331648") {
		t.Errorf("err = %v, want it to name the damaged chunk's bytes", err)
	}
}

func TestParallelReaderReadsWhatABytesReaderReads(t *testing.T) {
	data := randomBytes(3*parallelBytes + 77)
	r := bytesReader(data)
	var got []byte
	for _, k := range []int{5, parallelBytes + 3, 1, 2 * parallelBytes, 1000} {
		p := make([]byte, k)
		n, err := io.ReadFull(r, p)
		got = append(got, p[:n]...)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, data) || r.remaining() != 0 {
		t.Fatalf("read %d of %d bytes, or other bytes", len(got), len(data))
	}
	if _, err := r.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("at the end: %v, want io.EOF", err)
	}
}

// readKeysChecked is the reference load the fast one must equal: the file
// read whole, its checksums recomputed in one pass and compared with its
// trailer, the keys decoded by gnark through a buffered reader.
func readKeysChecked(t *testing.T, path string) (*groth16_bls12381.ProvingKey, groth16.VerifyingKey) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	nChunks := int(binary.LittleEndian.Uint64(data[len(data)-trailerFixed:]))
	payload := data[:len(data)-trailerFixed-4*nChunks]
	var trailer bytes.Buffer
	cw := &checksumWriter{w: io.Discard}
	cw.Write(payload)
	cw.w = &trailer
	if err := cw.writeTrailer(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(trailer.Bytes(), data[len(payload):]) {
		t.Fatal("trailer differs from the checksums of the payload")
	}
	r := bufio.NewReader(bytes.NewReader(payload))
	vk := groth16.NewVerifyingKey(ecc.BLS12_381)
	if _, err := vk.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	pk := new(groth16_bls12381.ProvingKey)
	if err := pk.ReadDump(r); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatal("trailing bytes")
	}
	return pk, vk
}

func TestFastKeyLoadEqualsTheCheckedLoad(t *testing.T) {
	dir := t.TempDir()
	c, _ := New(dir)
	// Small chunks and copy pieces, so a small key spans many chunks and
	// its point slices are copied in parallel pieces, as at 2^22.
	smallChunks(t)
	ccs := compile(t, 1<<12)
	made, err := c.Load(context.Background(), ccs)
	if err != nil {
		t.Fatal(err)
	}
	path := c.path(made.Hash)
	if st, _ := os.Stat(path); st.Size() < 8*int64(checkChunk) || st.Size() < 4*int64(parallelBytes) {
		t.Fatalf("key file of %d bytes: too small to span chunks", st.Size())
	}
	pk, vk, checked, err := c.readKeys(context.Background(), path)
	if err != nil || !checked {
		t.Fatalf("fast load: checked %v, %v", checked, err)
	}
	refPK, refVK := readKeysChecked(t, path)
	if !reflect.DeepEqual(pk, refPK) {
		t.Error("fast load's proving key differs from the checked load's")
	}
	if !reflect.DeepEqual(pk, made.PK) {
		t.Error("loaded proving key differs from the one setup made")
	}
	if !bytes.Equal(circuitstest.Bytes(t, vk), circuitstest.Bytes(t, refVK)) || !bytes.Equal(circuitstest.Bytes(t, vk), circuitstest.Bytes(t, made.VK)) {
		t.Error("verifying keys differ")
	}
}

// cachedKeys sets up the keys of a 2^10 circuit in a new cache.
func cachedKeys(t *testing.T) (dir string, c *Cache, ccs constraint.ConstraintSystem, k *Keys) {
	t.Helper()
	dir = t.TempDir()
	c, _ = New(dir)
	ccs = compile(t, 1<<10)
	k, err := c.Load(context.Background(), ccs)
	if err != nil {
		t.Fatal(err)
	}
	return dir, c, ccs, k
}

func TestKeyFileWithAFlippedByteIsRefusedNamingTheDamage(t *testing.T) {
	dir, c, ccs, k := cachedKeys(t)
	path := c.path(k.Hash)
	data, _ := os.ReadFile(path)
	// A point's coordinate, which ReadDump would take as it is.
	data[len(data)/2] ^= 0x01
	os.WriteFile(path, data, 0o644)
	requireRefused(t, dir, ccs, path, "damaged", "checksum mismatch")
}

func TestKeyFileOfTheOlderFormatIsReadThenGivenChecksums(t *testing.T) {
	_, c, ccs, k := cachedKeys(t)
	path := c.path(k.Hash)
	// The file as builds before the checksums wrote it.
	if err := writeAtomic(path, func(w io.Writer) error { return writeKeys(w, k.PK, k.VK) }); err != nil {
		t.Fatal(err)
	}
	if _, _, checked, err := c.readKeys(context.Background(), path); err != nil || checked {
		t.Fatalf("older file: checked %v, %v; want read unchecked", checked, err)
	}
	k2, err := c.Load(context.Background(), ccs)
	if err != nil || !k2.CacheHit {
		t.Fatalf("older file not used: %v", err)
	}
	if !reflect.DeepEqual(k2.PK, k.PK) {
		t.Error("older file read as other keys")
	}
	if _, _, checked, err := c.readKeys(context.Background(), path); err != nil || !checked {
		t.Errorf("older file not given checksums: checked %v, %v", checked, err)
	}
}

func TestKeysLoadSpansNameTheHashReadAndDecode(t *testing.T) {
	dir := t.TempDir()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	c, _ := New(dir, WithTracerProvider(tp))
	ccs := compile(t, 1<<10)
	k, err := c.Load(context.Background(), ccs) // setup
	if err != nil {
		t.Fatal(err)
	}
	names := func() map[string]sdktrace.ReadOnlySpan {
		m := map[string]sdktrace.ReadOnlySpan{}
		for _, s := range rec.Ended() {
			m[s.Name()] = s
		}
		return m
	}
	got := names()
	for _, n := range []string{semconv.SpanKeysHash, semconv.SpanKeysSetup, semconv.SpanKeysStore} {
		if s, ok := got[n]; !ok || s.Parent().SpanID() != got[semconv.SpanKeyLoad].SpanContext().SpanID() {
			t.Errorf("setup: no %s under keys.load", n)
		}
	}
	rec.Reset()
	if _, err := c.LoadHashed(context.Background(), ccs, k.Hash); err != nil {
		t.Fatal(err)
	}
	got = names()
	if _, ok := got[semconv.SpanKeysHash]; ok {
		t.Error("keys.hash recorded though the hash was given")
	}
	load := got[semconv.SpanKeyLoad]
	for _, n := range []string{semconv.SpanKeysRead, semconv.SpanKeysDecode} {
		if s, ok := got[n]; !ok || s.Parent().SpanID() != load.SpanContext().SpanID() {
			t.Errorf("cache hit: no %s under keys.load", n)
		}
	}
	attrs := map[string]string{}
	for _, a := range load.Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	for _, a := range got[semconv.SpanKeysRead].Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	if attrs[string(semconv.KeyKeyHashSource)] != "circuit_cache" || attrs[string(semconv.KeyKeyCacheHit)] != "true" ||
		attrs[string(semconv.KeyKeyChecked)] != "true" {
		t.Errorf("attributes %v", attrs)
	}
}
