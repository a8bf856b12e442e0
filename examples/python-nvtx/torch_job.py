"""A PyTorch job whose kernels join a caller's trace under `cuzk gpu-trace`.

The only line tracing needs is the outer NVTX range's message carrying a
W3C traceparent (torch.cuda.nvtx.range_push); everything inside it (the
matrix products, the copies) becomes its children in that trace:

    cuzk gpu-trace -- python3 torch_job.py --traceparent 00-<trace>-<span>-01
"""
import argparse
import sys

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--traceparent", default="")
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--iters", type=int, default=3)
    a = ap.parse_args()
    msg = "torch.job" + (f" traceparent={a.traceparent}" if a.traceparent else "")
    torch.cuda.nvtx.range_push(msg)
    torch.backends.cuda.matmul.allow_tf32 = False
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(a.n, a.n, device="cuda", generator=g)
    ref = x.double()
    for _ in range(a.iters):
        torch.cuda.nvtx.range_push("torch.step")
        x = torch.tanh(x @ x.T / a.n)
        ref = torch.tanh(ref @ ref.T / a.n)
        torch.cuda.nvtx.range_pop()
    err = ((x.double() - ref).norm() / ref.norm()).item()
    out = x.sum().item()  # a device-to-host copy
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    ok = err < 1e-2  # float32 against float64 over a few contracting steps
    print(f"torch_job: {a.iters} steps of {a.n}x{a.n}: rel err {err:.2e} sum {out:.3f}: {'ok' if ok else 'WRONG'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
