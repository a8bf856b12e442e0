package server

import (
	"bytes"
	"errors"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	gnarkwitness "github.com/consensys/gnark/backend/witness"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// FuzzCheckWitness: CheckWitness never panics, and what it accepts gnark's
// own decoder reads back with the same counts and bytes (what it refuses
// wraps groth16.ErrBadWitness).
func FuzzCheckWitness(f *testing.F) {
	f.Add(witness(1, 1, []byte{1}, []byte{2}))
	f.Add(witness(0, 0))
	f.Add([]byte{0, 0, 0, 1})
	f.Add(append(witness(1, 0, []byte{7}), 0))
	f.Add(witness(0, 1, bytesOf(0xff, 32)))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		err := CheckWitness(b)
		if err != nil {
			if !errors.Is(err, groth16.ErrBadWitness) {
				t.Fatalf("CheckWitness error %v does not wrap groth16.ErrBadWitness", err)
			}
			return
		}
		w, werr := gnarkwitness.New(ecc.BLS12_381.ScalarField())
		if werr != nil {
			t.Fatal(werr)
		}
		if err := w.UnmarshalBinary(b); err != nil {
			t.Fatalf("CheckWitness accepted %d bytes that gnark refuses: %v", len(b), err)
		}
		again, err := w.MarshalBinary()
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("gnark's reading of an accepted witness does not write back the same bytes (%v)", err)
		}
	})
}

// FuzzRequest: the server's request check never panics; it answers
// INVALID_ARGUMENT or NOT_FOUND, or a request whose every witness passes
// CheckWitness and whose fields are the message's.
func FuzzRequest(f *testing.F) {
	good := witness(1, 1, []byte{1}, []byte{2})
	f.Add("r1", "mulchain", uint64(1024), []byte(nil), int32(2), []byte(nil), uint8(0))
	f.Add("r2", "merkle", uint64(1<<20), good, int32(4), []byte(nil), uint8(0))
	f.Add("r3", "mulchain", uint64(16), []byte(nil), int32(0), append(append([]byte(nil), good...), good...), uint8(2))
	f.Add("", "mulchain", uint64(16), []byte(nil), int32(1), []byte(nil), uint8(0))
	f.Add("r4", "nosuch", uint64(16), []byte("junk"), int32(9), []byte("junkjunk"), uint8(3))
	f.Add("r5", "mulchain", uint64(1)<<40, good, int32(-1), good, uint8(1))
	s := &Server{cfg: newConfig(nil)}
	s.cfg.known = func(c string) bool { return testCircuits[c] }
	f.Fuzz(func(t *testing.T, id, circuit string, constraints uint64, w []byte, prio int32, blob []byte, nparts uint8) {
		r := &cuzkv1.SubmitProofRequest{RequestId: id, Circuit: circuit, Constraints: constraints, Witness: w, Priority: cuzkv1.Priority(prio)}
		if n := int(nparts); n > 0 {
			size := (len(blob) + n - 1) / n
			for k := range n {
				lo, hi := min(k*size, len(blob)), min((k+1)*size, len(blob))
				r.Partitions = append(r.Partitions, blob[lo:hi])
			}
		}
		req, err := s.request(r)
		if err != nil {
			if c := status.Code(err); c != codes.InvalidArgument && c != codes.NotFound {
				t.Fatalf("request refused with %v (%v), want INVALID_ARGUMENT or NOT_FOUND", c, err)
			}
			return
		}
		if req.RequestID != id || req.Circuit != circuit || uint64(req.Constraints) != constraints || id == "" || !testCircuits[circuit] {
			t.Fatalf("accepted request %+v does not carry the message's fields", req)
		}
		all := append([][]byte{req.Witness}, req.Partitions...)
		for k, pw := range all {
			if len(pw) > 0 {
				if err := CheckWitness(pw); err != nil {
					t.Fatalf("accepted witness %d fails CheckWitness: %v", k, err)
				}
			}
		}
		if len(req.Partitions) > 1 && len(req.Witness) > 0 {
			t.Fatal("accepted both a witness and partitions")
		}
	})
}
