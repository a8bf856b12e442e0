"""A CuPy job whose kernels join a caller's trace under `cuzk gpu-trace`.

The outer NVTX range's message carries a W3C traceparent, through NVIDIA's
`nvtx` package when installed (nvtx.push_range), else CuPy's own binding
(cupy.cuda.nvtx.RangePush); both reach the CUPTI that gpu-trace loads:

    cuzk gpu-trace -- python3 cupy_job.py --traceparent 00-<trace>-<span>-01
"""
import argparse
import sys

import cupy as cp

try:
    import nvtx

    def push(msg):
        nvtx.push_range(msg)

    def pop():
        nvtx.pop_range()

    BINDING = "nvtx"
except ImportError:
    from cupy.cuda import nvtx as _n

    def push(msg):
        _n.RangePush(msg)

    def pop():
        _n.RangePop()

    BINDING = "cupy.cuda.nvtx"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--traceparent", default="")
    ap.add_argument("--n", type=int, default=1 << 22)
    ap.add_argument("--iters", type=int, default=5)
    a = ap.parse_args()
    push("cupy.job" + (f" traceparent={a.traceparent}" if a.traceparent else ""))
    rng = cp.random.default_rng(1)
    x = rng.random(a.n, dtype=cp.float32)
    host = cp.asnumpy(x).astype("float64")
    for _ in range(a.iters):
        push("cupy.step")
        x = cp.sqrt(x * x + 1.0)
        host = (host * host + 1.0) ** 0.5
        pop()
    got = cp.asnumpy(x)
    cp.cuda.Stream.null.synchronize()
    pop()
    err = float(abs(got - host).max() / abs(host).max())
    ok = err < 1e-5
    print(f"cupy_job ({BINDING}): {a.iters} steps over {a.n} floats: max rel err {err:.2e}: {'ok' if ok else 'WRONG'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
