package server

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// The sector sizes Filecoin defines, in bytes, in the order of the
// registered proofs' sizes (filecoin-ffi: 2 KiB, 8 MiB, 512 MiB, 32 GiB,
// 64 GiB).
var sectorSizes = [5]uint64{2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30}

// kindNames are the proof kinds in words, for errors and spans.
var kindNames = map[cuzkv1.ProofKind]string{
	cuzkv1.ProofKind_POREP_SEAL_COMMIT:     "POREP_SEAL_COMMIT (PoRep C2)",
	cuzkv1.ProofKind_SNAP_DEALS_UPDATE:     "SNAP_DEALS_UPDATE (SnapDeals)",
	cuzkv1.ProofKind_WINDOW_POST_PARTITION: "WINDOW_POST_PARTITION (WindowPoSt)",
	cuzkv1.ProofKind_WINNING_POST:          "WINNING_POST (WinningPoSt)",
}

// KindName is a Filecoin proof kind in words ("POREP_SEAL_COMMIT (PoRep
// C2)"), or "proof_kind N" for a value cuzk does not define.
func KindName(k cuzkv1.ProofKind) string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("proof_kind %d", int32(k))
}

// registeredRange is, per kind, the registered proof numbers filecoin-ffi
// defines for it: RegisteredSealProof 0-19 (V1, V1_1, SyntheticPoRep,
// NI-PoRep, five sizes each), RegisteredPoStProof 0-4 (winning) and 5-14
// (window V1, V1_1), RegisteredUpdateProof 0-4. A number's size is its
// remainder by 5, an index of sectorSizes.
var registeredRange = map[cuzkv1.ProofKind][2]uint64{
	cuzkv1.ProofKind_POREP_SEAL_COMMIT:     {0, 19},
	cuzkv1.ProofKind_SNAP_DEALS_UPDATE:     {0, 4},
	cuzkv1.ProofKind_WINDOW_POST_PARTITION: {5, 14},
	cuzkv1.ProofKind_WINNING_POST:          {0, 4},
}

// CheckFilecoin checks the Filecoin fields of r, whose proof_kind is set:
// a kind cuzk defines, a sector size Filecoin defines, and a registered
// proof of that kind and size. Its error is an INVALID_ARGUMENT status
// naming the field.
func CheckFilecoin(r *cuzkv1.SubmitProofRequest) error {
	k := r.GetProofKind()
	rng, ok := registeredRange[k]
	if !ok {
		return status.Errorf(codes.InvalidArgument, "proof_kind %d unknown (want POREP_SEAL_COMMIT, SNAP_DEALS_UPDATE, WINDOW_POST_PARTITION or WINNING_POST)", int32(k))
	}
	if r.GetCircuit() != "" {
		return status.Errorf(codes.InvalidArgument, "circuit %q set with proof_kind %s: a request is either a Filecoin proof or one of this daemon's circuits", r.GetCircuit(), KindName(k))
	}
	size := -1
	for i, s := range sectorSizes {
		if r.GetSectorSize() == s {
			size = i
		}
	}
	if size < 0 {
		return status.Errorf(codes.InvalidArgument, "sector_size %d unknown (want 2048, 8388608, 536870912, 34359738368 or 68719476736)", r.GetSectorSize())
	}
	rp := r.GetRegisteredProof()
	if rp < rng[0] || rp > rng[1] {
		return status.Errorf(codes.InvalidArgument, "registered_proof %d unknown for %s (want %d to %d)", rp, KindName(k), rng[0], rng[1])
	}
	if int(rp%5) != size {
		return status.Errorf(codes.InvalidArgument, "registered_proof %d is for %d-byte sectors, sector_size is %d", rp, sectorSizes[rp%5], r.GetSectorSize())
	}
	return nil
}

// filecoinPriority is cuzk's priority of a Filecoin request: an unset one
// is CRITICAL for WinningPoSt, HIGH for WindowPoSt, else NORMAL.
func filecoinPriority(r *cuzkv1.SubmitProofRequest) (priority.Priority, error) {
	if r.GetPriority() != cuzkv1.Priority_PRIORITY_UNSPECIFIED {
		return cuzkv1.ToPriority(r.GetPriority())
	}
	switch r.GetProofKind() {
	case cuzkv1.ProofKind_WINNING_POST:
		return priority.Critical, nil
	case cuzkv1.ProofKind_WINDOW_POST_PARTITION:
		return priority.High, nil
	}
	return priority.Normal, nil
}

// FilecoinSRS are the SRS (proving parameter) ids cuzk's PreloadSRS and
// EvictSRS take (cuzk-core's srs_manager: one per Filecoin circuit and
// sector size), in its order.
var FilecoinSRS = []string{"porep-32g", "porep-64g", "wpost-32g", "winning-32g", "snap-32g", "snap-64g"}

// checkSRS refuses, for a daemon without an upstream, one of cuzk's
// Filecoin SRS ids (FilecoinSRS): UNIMPLEMENTED, saying that this daemon
// proves its own circuits and what PreloadSRS and EvictSRS take here. Other
// ids pass (a circuit unknown here is NOT_FOUND later).
func checkSRS(method, id string) error {
	for _, f := range FilecoinSRS {
		if id == f {
			return status.Errorf(codes.Unimplemented, "%s %q: a Filecoin SRS of cuzk; this daemon proves its own circuits only and has no upstream cuzk to forward it to (it takes a key as GetStatus lists it in loaded_srs, \"NAME/CONSTRAINTS\")", method, id)
		}
	}
	return nil
}
