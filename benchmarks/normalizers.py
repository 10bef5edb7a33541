"""Benchmark attnlib.normalizers against the entmax package and torch.softmax.

Forward + backward, float32, one CPU thread, on the shapes of the issue at score scales
1 and 10. On a shared machine the load drifts over a run, so every comparison is paired:
the methods are timed back to back in rounds, in an order that rotates from round to
round, after a warm-up, with the garbage collector off; a ratio is the median over
rounds of the per-round ratio, and the milliseconds are medians over rounds. Times are
the CPU time of the process (one thread): on a quiet machine that is the wall time, and
on a busy one it leaves out the time spent waiting for a core, which would otherwise
land on whichever method happened to be running. Bursts of load on a shared machine slow
the memory-bound softmax more than the attnlib maps (whose passes after the first run in
cache), so each row also records the ratio of the best rounds
(``ratio_to_softmax_of_minima``), an estimate of what a quiet machine shows.

- attnlib against torch.softmax (the tight target): many rounds of softmax and the three
  attnlib maps (sparsemax, 1.5-entmax, 1.25-entmax) together.
- attnlib against the entmax package (sorting, or bisection in ``entmax_bisect``, which
  takes
  seconds here): fewer rounds of (attnlib, package) pairs.
- The first call of a new process (``first_call``): fresh interpreters import torch and
  attnlib.normalizers, then time their first sparsemax, 1.5-entmax and 1.3-entmax call
  on a 4 × 16 input (the C loops already cached); medians over processes. ``loops``
  says which engine served on the CPU: ``"c"`` (the C loops) or ``"torch"`` (no C
  compiler built them).

    # the full run, writes attnlib/results/normalizers.json
    python benchmarks/normalizers.py
    # tiny sizes, a smoke test (< 30 s), to normalizers.quick.json
    python benchmarks/normalizers.py --quick

Where CUDA is present the run also times the GPU section (:func:`gpu_section`) and
writes it apart, to ``normalizers_gpu.json`` (``normalizers_gpu.quick.json``), naming
its device, so that a CPU-only rerun never replaces the GPU numbers (forward +
backward, float32 and bfloat16, CUDA events, medians): sparsemax, 1.5-entmax and
1.25-entmax rows against the entmax package, AdaSplash's row entmax and
``torch.softmax`` (scales 1 and 10); ``attention()`` with and without its weights
against a hand-written ``softmax(QKᵀ/√d)V`` and ``scaled_dot_product_attention``; and
1.5-entmax attention from 1k to 32k tokens (``attention(..., need_weights=False)``, the
flash kernels) against AdaSplash's attention, the dense entmax attention and SDPA, with
peak memory. :func:`gpu_verdicts` reads issue 37's targets (``GPU_TARGETS``) off the
result. The peers are imported only if installed (``pip install adasplash``); a GPU
machine without a registry needs their wheels brought along.
"""

from __future__ import annotations

import gc
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import entmax as E
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, parse_args, write_result  # noqa: E402

from attnlib.normalizers import _entmax_loops as entmax_loops  # noqa: E402
from attnlib.normalizers import entmax, sparsemax  # noqa: E402

SHAPES = [(4096, 1024), (256, 16384), (65536, 64)]
QUICK_SHAPES = [(64, 128), (8, 1024), (512, 16)]
SCALES = [1.0, 10.0]
OURS = {
    "sparsemax": sparsemax,
    "entmax15": lambda x: entmax(x, 1.5),
    "entmax a=1.25": lambda x: entmax(x, 1.25),
}
#: (row name, attnlib map, entmax-package map)
METHODS = [
    ("sparsemax", "sparsemax", lambda x: E.sparsemax(x, -1)),
    ("entmax15", "entmax15", lambda x: E.entmax15(x, -1)),
    ("entmax_bisect a=1.5", "entmax15", lambda x: E.entmax_bisect(x, 1.5, -1)),
    ("entmax_bisect a=1.25", "entmax a=1.25", lambda x: E.entmax_bisect(x, 1.25, -1)),
]
TARGETS = {"max_ratio_to_entmax": 0.5, "max_ratio_to_softmax": 4.0}
FIRST_CALL_TARGET_S = 0.1
# A fresh interpreter: imports first (timed apart), then each map's first call.
FIRST_CALL = """
import json, time
import torch, attnlib
clock = lambda: (time.perf_counter(), time.process_time())
t0 = clock()
from attnlib.normalizers import entmax, sparsemax
t1 = clock()
x = torch.randn(4, 16)
out = {"import_normalizers": [b - a for a, b in zip(t0, t1)]}
for name, fn in [("sparsemax", sparsemax), ("entmax15", lambda x: entmax(x, 1.5)),
                 ("entmax a=1.3", lambda x: entmax(x, 1.3))]:
    a = clock()
    fn(x)
    out[name] = [e - s for s, e in zip(a, clock())]
from attnlib.normalizers import _entmax_loops as entmax_loops
out["loops"] = "c" if entmax_loops.available() else "torch"
print(json.dumps(out))
"""


def fwd_bwd(fn, x, g):
    x = x.detach().requires_grad_()
    fn(x).backward(g)
    return x.grad


def rounds(fns: dict, x, g, n_rounds: int, warmup: int = 2) -> dict:
    """Seconds of forward+backward of each function in each of ``n_rounds`` rounds.

    Every round times each function once, back to back, starting one further along the
    list than the round before, so that no method always runs first (cold) or after the
    same one.
    """
    names = list(fns)
    for _ in range(warmup):
        for name in names:
            fwd_bwd(fns[name], x, g)
    times = {name: [] for name in names}
    gc.disable()
    try:
        for r in range(n_rounds):
            for k in range(len(names)):
                name = names[(r + k) % len(names)]
                t0 = time.process_time()
                fwd_bwd(fns[name], x, g)
                times[name].append(time.process_time() - t0)
    finally:
        gc.enable()
    return times


def paired_ratio(num: list, den: list) -> float:
    return statistics.median(a / b for a, b in zip(num, den))


def first_call(n_processes: int) -> dict:
    """Median times (wall, CPU) of the first calls in ``n_processes`` new processes."""
    run = [sys.executable, "-c", FIRST_CALL]
    # the cache exists from here on
    subprocess.run(run, check=True, capture_output=True)
    runs = [
        json.loads(subprocess.run(run, check=True, capture_output=True).stdout)
        for _ in range(n_processes)
    ]
    out = {"processes": n_processes, "loops": runs[0]["loops"]}
    for key in runs[0]:
        if key != "loops":
            out[key + "_wall_s"] = statistics.median(r[key][0] for r in runs)
            out[key + "_cpu_s"] = statistics.median(r[key][1] for r in runs)
    return out


def main(quick: bool = False) -> dict:
    torch.manual_seed(0)
    # One thread: the benchmark machines are shared, and a single thread gives stabler
    # ratios.
    torch.set_num_threads(1)
    n_softmax, n_entmax = (3, 2) if quick else (21, 5)
    loops = "c" if entmax_loops.available() else "torch"
    rows = []
    for shape in QUICK_SHAPES if quick else SHAPES:
        for scale in SCALES:
            x = torch.randn(*shape) * scale
            g = torch.randn(*shape)
            for _, ours, theirs in METHODS:  # the same answer and gradient first
                torch.testing.assert_close(OURS[ours](x), theirs(x), atol=1e-4, rtol=0)
                torch.testing.assert_close(
                    fwd_bwd(OURS[ours], x, g),
                    fwd_bwd(theirs, x, g),
                    atol=1e-3,
                    rtol=1e-3,
                )
            # The package first: its many large temporaries leave the allocator in the
            # steady state of a long-running process before the tight comparison (on the
            # first shape, softmax was otherwise timed while fresh pages were still
            # being faulted in).
            slow = {
                name: rounds(
                    {"attnlib": OURS[ours], "entmax": theirs}, x, g, n_entmax, warmup=1
                )
                for name, ours, theirs in METHODS
            }
            fast = rounds(
                {"softmax": lambda x: torch.softmax(x, -1), **OURS},
                x,
                g,
                n_softmax,
            )
            for name, ours, _ in METHODS:
                row = {
                    "method": name,
                    "shape": list(shape),
                    "scale": scale,
                    "attnlib_ms": 1e3 * statistics.median(fast[ours]),
                    "entmax_ms": 1e3 * statistics.median(slow[name]["entmax"]),
                    "softmax_ms": 1e3 * statistics.median(fast["softmax"]),
                    "ratio_to_entmax": paired_ratio(
                        slow[name]["attnlib"], slow[name]["entmax"]
                    ),
                    "ratio_to_softmax": paired_ratio(fast[ours], fast["softmax"]),
                    # best round against best round: what a quiet machine would show
                    "ratio_to_softmax_of_minima": min(fast[ours])
                    / min(fast["softmax"]),
                }
                rows.append(row)
                print(
                    f"{name:22s} {str(shape):14s} scale {scale:4.0f}: "
                    f"attnlib {row['attnlib_ms']:8.2f} ms  "
                    f"entmax {row['entmax_ms']:8.2f} ms  "
                    f"softmax {row['softmax_ms']:7.2f} ms  "
                    f"ratio/entmax {row['ratio_to_entmax']:.2f}  "
                    f"ratio/softmax {row['ratio_to_softmax']:.2f}",
                    flush=True,
                )
    first = first_call(3 if quick else 7)
    first_s = max(
        first[f"{k}_wall_s"] for k in ("sparsemax", "entmax15", "entmax a=1.3")
    )
    print(f"first call in a new process: {first}")
    return {
        "benchmark": (
            "normalizers: forward + backward, float32, CPU, one thread, process CPU "
            "time; medians over rounds that time the methods back to back in "
            "rotating order, ratios the medians of the per-round ratios"
        ),
        "machine": machine(entmax=E.__version__),
        "rounds": {"attnlib_vs_softmax": n_softmax, "attnlib_vs_entmax": n_entmax},
        "loops": loops,
        "rows": rows,
        "first_call": first,
        "targets": {
            **TARGETS,
            "max_first_call_s": {
                "target": FIRST_CALL_TARGET_S,
                "value": first_s,
                "met": first_s <= FIRST_CALL_TARGET_S,
            },
        },
    }


GPU_SHAPES = [(4096, 1024), (65536, 64), (131072, 512)]
GPU_QUICK_SHAPES = [(256, 128), (1024, 16)]
ATTENTION_SHAPE = (8, 16, 1024, 64)  # batch, heads, tokens, head size
GPU_TARGETS = {  # issue 37; forward + backward, float32 and bfloat16
    "row_shapes": [[4096, 1024], [131072, 512]],
    "max_row_ratio_to_adasplash": 1.0,
    "max_row_ratio_to_softmax": 2.0,
    "attention_tokens": [4096, 32768],
    "max_attention_ratio_to_adasplash": 1.0,
    "max_ratio_to_sdpa": 1.05,
}


def _last_softmax(x):
    return torch.softmax(x, -1)


def cuda_ms(fn, *args, n: int = 20, warmup: int = 3) -> float:
    """Median milliseconds of ``fn(*args)`` on the current CUDA stream (CUDA events)."""
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(n):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


ENTMAX_ATTENTION_LENGTHS = [1024, 2048, 4096, 8192, 16384, 32768]
ENTMAX_ATTENTION_QUICK = [256, 512]
ENTMAX_ATTENTION_HEADS = (1, 8, 64)  # batch, heads, head size


def _adasplash():
    """The peer's module (AdaSplash: Triton α-entmax rows and attention), or None."""
    try:
        import adasplash
    except ImportError:
        return None
    return adasplash


def cuda_ms_peak(fn, *args) -> tuple[float | None, float | None]:
    """``cuda_ms`` and the peak memory (MiB) of one call; (None, None) out of memory."""
    try:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn(*args)
        torch.cuda.synchronize()
        peak = (torch.cuda.max_memory_allocated() - base) / 2**20
        return cuda_ms(fn, *args, n=10, warmup=2), peak
    except torch.cuda.OutOfMemoryError:
        torch.cuda.empty_cache()
        return None, None


def _entmax_attention_fns(q, k, v, peer) -> dict:
    """The attentions timed by entmax_attention_section, on q, k, v."""
    from attnlib import attention

    d = q.shape[-1]
    fns = {
        "ours": lambda: attention(q, k, v, normalizer="entmax", need_weights=False)[0],
        "dense_entmax": lambda: entmax(q @ k.transpose(-1, -2) / d**0.5, 1.5) @ v,
        "softmax": lambda: torch.softmax(q @ k.transpose(-1, -2) / d**0.5, -1) @ v,
        "sdpa": lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v),
    }
    if peer is not None and hasattr(peer, "adasplash"):
        fns["adasplash"] = lambda: peer.adasplash(q, k, v, alpha=1.5, is_causal=False)
    return fns


def _ran_flash(q, k, v) -> bool:
    """Whether attention(..., need_weights=False) runs the flash kernels on q, k, v
    (rather than the dense path: not taken, or refused by Triton)."""
    from attnlib.functional import _triton_flash as triton_flash

    if not triton_flash.accepts(q, k, v):
        return False
    try:
        return triton_flash.flash_entmax_attention(q, k, v, alpha=1.5) is not None
    except torch.cuda.OutOfMemoryError:
        return False


def entmax_attention_section(quick: bool = False) -> dict:
    """Forward + backward of 1.5-entmax attention (issue 37): attnlib's, through
    ``attention(..., need_weights=False)`` (the flash kernels), against AdaSplash's
    attention (if installed), the dense entmax attention, softmax attention by hand and
    scaled_dot_product_attention, with peak memory, fp32 and bf16.
    """
    peer = _adasplash()
    b, h, d = ENTMAX_ATTENTION_HEADS
    rows = []
    for n in ENTMAX_ATTENTION_QUICK if quick else ENTMAX_ATTENTION_LENGTHS:
        for dtype in (torch.float32, torch.bfloat16):
            q, k, v = (
                torch.randn(b, h, n, d, device="cuda", dtype=dtype, requires_grad=True)
                for _ in "qkv"
            )

            def step(fn):
                def run():
                    fn().sum().backward()

                return run

            fns = _entmax_attention_fns(q, k, v, peer)
            row = {
                "tokens": n,
                "dtype": str(dtype).replace("torch.", ""),
            }
            for name, fn in fns.items():
                try:
                    row[f"{name}_ms"], row[f"{name}_peak_mib"] = cuda_ms_peak(step(fn))
                except Exception as err:  # a peer's API or a shape it refuses
                    row[f"{name}_ms"], row[f"{name}_error"] = None, repr(err)[:200]
            row["ours_flash"] = _ran_flash(q, k, v)
            for name in ("adasplash", "sdpa", "dense_entmax"):
                if row.get("ours_ms") and row.get(f"{name}_ms"):
                    row[f"ratio_to_{name}"] = row["ours_ms"] / row[f"{name}_ms"]
            print(f"GPU entmax attention {b}x{h}x{n}x{d} {dtype}: {row}", flush=True)
            rows.append(row)
    return {
        "shape": [b, h, None, d],
        "adasplash": getattr(peer, "__version__", None if peer is None else "?"),
        "rows": rows,
    }


def gpu_section(quick: bool = False) -> dict:
    """Forward + backward on CUDA: attnlib's maps against their peers, and attention.

    Returns
    -------
    dict
        ``device`` (the GPU's name), ``torch``, ``rows`` (one per shape, scale, dtype
        and map: ``ms``, ``entmax_ms``, ``softmax_ms``, ``ratio_to_entmax``,
        ``ratio_to_softmax``, and AdaSplash's ``adasplash_ms``, ``ratio_to_adasplash``),
        ``attention`` (``ms`` of attention() with and without its weights, of the
        hand-written softmax attention and of scaled_dot_product_attention, and the
        ratios), ``entmax_attention`` (:func:`entmax_attention_section`), the targets of
        issue 37 and their ``verdicts`` (:func:`gpu_verdicts`).
    """
    from attnlib import attention

    dev = torch.device("cuda")
    peers = {
        "sparsemax": (sparsemax, lambda x: E.sparsemax(x, -1)),
        "entmax15": (lambda x: entmax(x, 1.5), lambda x: E.entmax15(x, -1)),
        "entmax a=1.25": (
            lambda x: entmax(x, 1.25),
            lambda x: E.entmax_bisect(x, 1.25, -1),
        ),
    }
    peer = _adasplash()
    if peer is not None and hasattr(peer, "triton_entmax"):  # its row entmax
        peers["sparsemax"] += (lambda x: peer.triton_entmax(x, alpha=2.0),)
        peers["entmax15"] += (lambda x: peer.triton_entmax(x, alpha=1.5),)
        peers["entmax a=1.25"] += (lambda x: peer.triton_entmax(x, alpha=1.25),)
    rows = []
    for shape in GPU_QUICK_SHAPES if quick else GPU_SHAPES:
        for scale in SCALES:
            for dtype in (torch.float32, torch.bfloat16):
                x = (scale * torch.randn(shape, device=dev)).to(dtype)
                g = torch.randn(shape, device=dev, dtype=dtype)
                soft = cuda_ms(fwd_bwd, _last_softmax, x, g)
                for name, (ours, theirs, *ada) in peers.items():
                    ms = cuda_ms(fwd_bwd, ours, x, g)
                    ref = cuda_ms(fwd_bwd, theirs, x, g)
                    extra = {}
                    if ada:
                        try:
                            extra["adasplash_ms"] = cuda_ms(fwd_bwd, ada[0], x, g)
                            extra["ratio_to_adasplash"] = ms / extra["adasplash_ms"]
                        except Exception as err:  # a shape or dtype it refuses
                            extra["adasplash_error"] = repr(err)[:200]
                    rows.append(
                        {
                            **extra,
                            "map": name,
                            "shape": list(shape),
                            "scale": scale,
                            "dtype": str(dtype).replace("torch.", ""),
                            "ms": ms,
                            "entmax_ms": ref,
                            "softmax_ms": soft,
                            "ratio_to_entmax": ms / ref,
                            "ratio_to_softmax": ms / soft,
                        }
                    )
                    print(
                        f"GPU {name} {shape} x{scale} {dtype}: {ms:.3f} ms, "
                        f"/entmax {ms / ref:.2f}, /softmax {ms / soft:.2f}",
                        flush=True,
                    )
    b, h, n, d = (2, 4, 256, 64) if quick else ATTENTION_SHAPE
    q, k, v = (torch.randn(b, h, n, d, device=dev, requires_grad=True) for _ in "qkv")

    def step(fn):
        def run():
            fn().sum().backward()

        return run

    by_hand = lambda: torch.softmax(q @ k.transpose(-1, -2) / d**0.5, -1) @ v  # noqa
    times = {
        "attention_ms": cuda_ms(step(lambda: attention(q, k, v).output)),
        "attention_no_weights_ms": cuda_ms(
            step(lambda: attention(q, k, v, need_weights=False).output)
        ),
        "softmax_attention_ms": cuda_ms(step(by_hand)),
        "sdpa_ms": cuda_ms(
            step(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v))
        ),
    }
    times["ratio_to_softmax_attention"] = (
        times["attention_ms"] / times["softmax_attention_ms"]
    )
    times["ratio_to_sdpa"] = times["attention_ms"] / times["sdpa_ms"]
    times["no_weights_ratio_to_sdpa"] = (
        times["attention_no_weights_ms"] / times["sdpa_ms"]
    )
    print(f"GPU attention {b}x{h}x{n}x{d}: {times}", flush=True)
    result = {
        "benchmark": (
            "normalizers and attention on CUDA: forward + backward, CUDA events, "
            "medians of 20 after 3 warm-up calls"
        ),
        "device": torch.cuda.get_device_name(),
        "machine": machine(entmax=E.__version__),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "rows": rows,
        "attention": {"shape": [b, h, n, d], **times},
        "entmax_attention": entmax_attention_section(quick),
        "targets": GPU_TARGETS,
    }
    return {**result, "verdicts": gpu_verdicts(result)}


def _verdict(target: str, configs: list[tuple[bool, float | None]], bound) -> dict:
    """One target over its configurations, each ``(ours_timed, value)``: ours not timed
    (out of memory, an error) is a miss; a value of None beside our time means the peer
    was not timed. ``met`` is False if a value is over the bound or ours missed
    anywhere, True if every configuration has a value within it, else None (not
    measured); ``value`` is the worst value and ``note`` says what was missing."""
    values = [v for timed, v in configs if timed and v is not None]
    missed = sum(not timed for timed, _ in configs)
    unmeasured = sum(timed and v is None for timed, v in configs)
    notes = [
        f"{what} in {n} of {len(configs)}"
        for what, n in (("ours not timed", missed), ("no peer's time", unmeasured))
        if n
    ] + ([] if configs else ["no configuration timed"])
    if missed or any(v > bound for v in values):
        met = False
    else:
        met = None if unmeasured or not configs else True
    return {
        "target": target,
        "value": max(values) if values else None,
        "met": met,
        "note": "; ".join(notes),
    }


def gpu_verdicts(result: dict) -> list[dict]:
    """Issue 37's targets read off a GPU section's result (:func:`_verdict` each)."""
    t, verdicts = result["targets"], []
    lo, hi = t["attention_tokens"]
    for dtype in ("float32", "bfloat16"):
        rows = [r for r in result["rows"]
                if r["shape"] in t["row_shapes"] and r["dtype"] == dtype]  # fmt: skip
        verdicts.append(_verdict(
            f"row maps / AdaSplash's row entmax ≤ {t['max_row_ratio_to_adasplash']}, "
            f"{dtype}", [(True, r.get("ratio_to_adasplash")) for r in rows],
            t["max_row_ratio_to_adasplash"],
        ))  # fmt: skip
        verdicts.append(_verdict(
            f"row maps / softmax ≤ {t['max_row_ratio_to_softmax']}, {dtype}",
            [(True, r["ratio_to_softmax"]) for r in rows],
            t["max_row_ratio_to_softmax"],
        ))  # fmt: skip
        att = [r for r in result["entmax_attention"]["rows"]
               if r["dtype"] == dtype and lo <= r["tokens"] <= hi]  # fmt: skip
        verdicts.append(_verdict(
            f"entmax attention / AdaSplash ≤ {t['max_attention_ratio_to_adasplash']}, "
            f"{lo}-{hi} tokens, {dtype}",
            [(r.get("ours_ms") is not None, r.get("ratio_to_adasplash")) for r in att],
            t["max_attention_ratio_to_adasplash"],
        ))  # fmt: skip
        # linear memory: the peak per token at the longest length within 1.5 times
        # its value at the shortest (quadratic memory would multiply it by hi / lo)
        peak = {r["tokens"]: r.get("ours_peak_mib") for r in att}
        ends = [peak.get(n) for n in (lo, hi)]
        growth = (ends[1] / hi) / (ends[0] / lo) if all(ends) else None
        verdicts.append(_verdict(
            f"entmax attention's peak memory per token, {hi} against {lo} tokens "
            f"≤ 1.5 (linear), {dtype}", [(all(ends), growth)], 1.5,
        ))  # fmt: skip
    att = result["attention"]
    verdicts.append(_verdict(
        f"softmax attention() without weights / SDPA ≤ {t['max_ratio_to_sdpa']}",
        [(True, att.get("no_weights_ratio_to_sdpa"))], t["max_ratio_to_sdpa"],
    ))  # fmt: skip
    return verdicts


if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    if torch.cuda.is_available():
        gpu = gpu_section(args.quick)
        print("wrote", write_result("normalizers_gpu", gpu, args.quick))
    else:
        print("no CUDA device: the GPU section (normalizers_gpu.json) is not measured")
    result = main(args.quick)
    worst_e = max(r["ratio_to_entmax"] for r in result["rows"])
    worst_s = max(r["ratio_to_softmax"] for r in result["rows"])
    print(
        f"worst ratio to entmax {worst_e:.2f} (target "
        f"{TARGETS['max_ratio_to_entmax']}), "
        f"to softmax {worst_s:.2f} (target {TARGETS['max_ratio_to_softmax']})"
    )
    print("wrote", write_result("normalizers", result, args.quick))
