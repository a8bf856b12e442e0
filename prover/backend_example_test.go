package prover_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	bls "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/consensys/gnark/logger"

	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
)

// countingBackend is a backend of one's own (DESIGN.md, "Where things
// are", a backend): it implements backend.Backend by handing the work to
// the CPU backend, the reference every backend is compared with, and
// counts the MSMs the prove asks of it. A real backend records its spans
// under the names it is given (span) as children of the span in ctx.
type countingBackend struct{ cpu *cpu.Backend }

// msmCalls counts the MSMs of every countingBackend.
var msmCalls atomic.Int32

// A backend package registers its factory from its init, so a binary has
// the backend exactly when it links the package (cmd/cuzk/backends.go).
func init() {
	backend.Register("counting", func(_ context.Context, o backend.Options) (backend.Backend, error) {
		return countingBackend{cpu.New(o.TracerProvider)}, nil
	})
}

func (countingBackend) Name() string { return "counting" }

func (b countingBackend) ComputeH(ctx context.Context, keyID string, d *fft.Domain, a, bb, c []fr.Element) error {
	return b.cpu.ComputeH(ctx, keyID, d, a, bb, c)
}

func (b countingBackend) MSMG1(ctx context.Context, call backend.Call, bases backend.BaseSet[bls.G1Affine], scalars []fr.Element) (bls.G1Jac, error) {
	msmCalls.Add(1)
	return b.cpu.MSMG1(ctx, call, bases, scalars)
}

func (b countingBackend) MSMG2(ctx context.Context, call backend.Call, bases backend.BaseSet[bls.G2Affine], scalars []fr.Element) (bls.G2Jac, error) {
	msmCalls.Add(1)
	return b.cpu.MSMG2(ctx, call, bases, scalars)
}

func (b countingBackend) Close() error { return b.cpu.Close() }

// Add a backend: implement backend.Backend, register a factory under a
// name (init, above), and open it by that name: prover.New, or
// `cuzk prove --backend NAME` once cmd/cuzk links the package.
func ExampleNew_backend() {
	logger.Disable()
	msmCalls.Store(0)
	dir, err := os.MkdirTemp("", "backend-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	p, err := prover.New(ctx, "counting", prover.WithKeyCacheDir(dir), prover.WithNotice(io.Discard))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close(ctx)
	res, err := p.Run(ctx, &prover.Request{Circuit: "mulchain", Constraints: 64, Verify: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("backend %s, verified %v, %d MSMs\n", res.Backend, res.Verified, msmCalls.Load())
	// Output: backend counting, verified true, 5 MSMs
}
