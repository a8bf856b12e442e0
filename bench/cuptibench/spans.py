"""Summarize an OTLP JSON lines trace file written by `cuzk gpu-trace`:

    python3 spans.py FILE [--trace TRACEID] [--want NAME ...]
    python3 spans.py FILE --dur NAME      the durations of spans NAME, ms

One line: spans, traces, kernels (spans with cuda.kernel.name), copies,
memsets, syncs, NVTX ranges, windows, cuda.idle, untraced under windows
and the window time they leave, kernels in --trace and whether each
--want name is there. Exit 1 when a --want name is missing.
"""
import json
import signal
import statistics
import sys
from collections import Counter


def spans_of(path):
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for s in ss.get("spans", []):
                    yield s


def attrs(s):
    out = {}
    for kv in s.get("attributes", []):
        v = kv.get("value", {})
        out[kv["key"]] = next(iter(v.values()), None) if v else None
    return out


def main():
    args = sys.argv[1:]
    path, trace, want = args[0], None, []
    i = 1
    while i < len(args):
        if args[i] == "--trace":
            trace = args[i + 1]
            i += 2
        elif args[i] == "--dur":
            durs = [(int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])) / 1e6 for s in spans_of(path) if s["name"] == args[i + 1]]
            print(" ".join(f"{d:.1f}" for d in durs))
            return
        elif args[i] == "--want":
            want.append(args[i + 1])
            i += 2
        else:
            i += 1
    try:
        ss = list(spans_of(path))
    except FileNotFoundError:
        print(f"{path}: no trace file")
        sys.exit(1)
    by_id = {s["spanId"]: s for s in ss}
    names = Counter(s["name"] for s in ss)
    kernels = [s for s in ss if "cuda.kernel.name" in attrs(s)]
    windows = [s for s in ss if s["name"] == "cuda.device.window"]
    wids = {s["spanId"] for s in windows}
    untraced_w = [s for s in ss if s["name"] == "untraced" and s.get("parentSpanId") in wids]
    untraced_ms = sum(float(attrs(s).get("cuzk.untraced.ms") or 0) for s in untraced_w)
    window_ms = sum((int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])) / 1e6 for s in windows)
    in_trace = sum(1 for k in kernels if trace and k["traceId"] == trace)
    ranges = sum(1 for s in ss if "nvtx.kind" in attrs(s))
    print(f"{path}: {len(ss)} spans, {len({s['traceId'] for s in ss})} traces, {len(kernels)} kernels"
          f" ({in_trace} in trace {trace})" if trace else f"{path}: {len(ss)} spans, {len({s['traceId'] for s in ss})} traces, {len(kernels)} kernels", end="")
    print(f", memcpy {sum(v for k, v in names.items() if k.startswith('cuda.memcpy'))}, memset {names['cuda.memset']},"
          f" sync {names['cuda.synchronize']}, nvtx {ranges}, windows {len(windows)} ({window_ms:.1f} ms),"
          f" idle {names['cuda.idle']}, untraced under windows {len(untraced_w)} ({untraced_ms:.2f} ms)"
          + (f", kernel us median {statistics.median(kd):.2f}" if (kd := [(int(k['endTimeUnixNano']) - int(k['startTimeUnixNano'])) / 1e3 for k in kernels]) else ""))
    print("  top names: " + ", ".join(f"{k} {v}" for k, v in names.most_common(12)))
    missing = [w for w in want if names[w] == 0]
    if missing:
        print("  MISSING: " + ", ".join(missing))
        sys.exit(1)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head -1`
    main()
