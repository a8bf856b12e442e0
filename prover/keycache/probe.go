package keycache

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"

	"github.com/consensys/gnark"
)

// HasBuiltinKeys reports whether a load of built-in circuit at
// constraints would read its keys from this cache instead of running a setup: the circuit
// cache holds that circuit compiled by this build (HasCircuit; its stored
// hash names the key) and the key file of that hash is there (for a
// compressed cache, its .keyz or a raw .keys). It reads the circuit
// file's metadata only (its last bytes, no checksum pass: a file damaged
// elsewhere is found by the load), so a memory check before the circuit
// is built can count the prove's figure alone for a cached key. False
// with ephemeral keys, with the circuit cache off (no build revision), or
// when anything is missing or unreadable. Safe for concurrent use.
func (c *Cache) HasBuiltinKeys(ctx context.Context, circuit string, constraints int) bool {
	if c.ephemeral {
		return false
	}
	hash, ok := c.cachedCircuit(ctx, circuit, constraints)
	if !ok || hash == "" {
		return false
	}
	return c.HasKeys(hash)
}

// HasCircuit reports whether Compile of built-in circuit at constraints
// would read it from the circuit cache (a file of this build, gnark and
// gnark-crypto, by its metadata) instead of running gnark's compile. False
// with the circuit cache off. Safe for concurrent use.
func (c *Cache) HasCircuit(ctx context.Context, circuit string, constraints int) bool {
	_, ok := c.cachedCircuit(ctx, circuit, constraints)
	return ok
}

// cachedCircuit is the hash stored with the cached circuit at constraints
// when its file is this build's.
func (c *Cache) cachedCircuit(ctx context.Context, circuit string, constraints int) (hash string, ok bool) {
	if rev, _ := c.key(ctx); rev == "" {
		return "", false
	}
	meta, ok := circuitMetaOf(c.circuitPath(circuit, constraints))
	if !ok {
		return "", false
	}
	hash = meta.Hash
	meta.Hash, meta.NbConstraints = "", 0
	want := circuitMeta{
		Circuit: circuit, Constraints: constraints, Gnark: gnark.Version.String(),
		GnarkCrypto: gnarkCryptoVersion(), Revision: c.revision, Format: circuitFormat,
	}
	return hash, meta == want
}

// circuitMetaOf reads the metadata at the end of the checked circuit file
// at path (storeCircuit's layout: payload, then the metadata's JSON and its
// uint32 length, then the checksum trailer) without reading the rest.
func circuitMetaOf(path string) (circuitMeta, bool) {
	var meta circuitMeta
	f, st, err := openRegular(path)
	if err != nil {
		return meta, false
	}
	defer f.Close()
	if st.Size() < int64(trailerFixed) {
		return meta, false
	}
	fixed := make([]byte, trailerFixed)
	if _, err := f.ReadAt(fixed, st.Size()-int64(trailerFixed)); err != nil || string(fixed[trailerFixed-len(trailerMagic):]) != trailerMagic {
		return meta, false
	}
	length := binary.LittleEndian.Uint64(fixed[16:])
	if length < 4 || length > uint64(st.Size()) {
		return meta, false
	}
	var n [4]byte
	if _, err := f.ReadAt(n[:], int64(length)-4); err != nil {
		return meta, false
	}
	size := uint64(binary.LittleEndian.Uint32(n[:]))
	if size == 0 || size > 1<<16 || size > length-4 {
		return meta, false
	}
	mb := make([]byte, size)
	if _, err := f.ReadAt(mb, int64(length-4-size)); err != nil {
		return meta, false
	}
	dec := json.NewDecoder(bytes.NewReader(mb))
	dec.DisallowUnknownFields()
	if dec.Decode(&meta) != nil {
		return circuitMeta{}, false
	}
	return meta, true
}
