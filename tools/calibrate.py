"""Calibrate the claims: run each at many fresh offsets and count its false alarms.

A claim about an experiment asserts a threshold that its seeds satisfy; a reader's own
``ATTNLIB_SEED_OFFSET`` must not break it. This tool measures how often it does: it
runs claims at offsets drawn at random from ``UNSEEN_FLOOR`` up (those below are the
authors'), and adds each run to ``book/calibration.json``. The ledger reads that record
and every unseen-seed audit of ``book/unseen_audit.json`` (tools/unseen.py) and shows,
claim by claim, at how many fresh offsets it ran, how often it failed, and the one-sided
95 % Clopper-Pearson upper bound on its false-alarm rate (``claims_lib.calibration``).
A claim that re-reads a committed sweep is never counted at an offset where that sweep
was not re-run; a claim whose values are identical at two fresh offsets is offset-free.

Two ways to run a claim:

* **cheap** (``CHEAP``, the registry): only the claim's own computation, in one Python
  process per chapter: the chapter's setup cell, the earlier cells the claim cell's
  names come from (followed back name by name, :func:`claim_slice`) and the claim cell,
  executed afresh at each offset. For a claim that calls one cheap function this costs
  a fraction of a second an offset, so it runs at hundreds of offsets.
* **chapter**: the whole chapter at a few offsets (``unseen.execute``), each claim
  cell's values fingerprinted as it runs.

    python tools/calibrate.py --probe                  # time each claim's slice once
    python tools/calibrate.py --cheap --budget-s 600 --record
    python tools/calibrate.py --chapters 04 --draw 2 --record
    python tools/calibrate.py --table                  # the calibration, claim by claim
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))
import claims_lib  # noqa: E402
import unseen  # noqa: E402

RECORD = claims_lib.CALIBRATION_RECORD
#: The claims cheap enough to run alone at hundreds of offsets: ``chapter#cell id``,
#: each with the seconds its slice took per offset when it was entered (``--probe``,
#: on one core of the 2-core machine that wrote the record).
CHEAP = {
    "02_kernel_regression.ipynb#c02rough": 0.6,  # 02.1, Epanechnikov as smooth
    "04_lle.ipynb#7fb27b941602401d91542211134fc71a": 0.3,  # 04.1, negative weights
    "04_lle.ipynb#df4bbc56": 1.3,  # 04.5, affine weights predict a hidden point
    "06_symmetry.ipynb#9fca0b0f": 0.7,  # 06.15, the RBF teacher's own-token weight
}
#: Experiment claims measured and left out (seconds per offset after the first, same
#: machine, loaded): 05.4 (c05a0024) 4.2-4.6, 05.8 (653cd855) 9-10, 03.6 (629ee20b)
#: 5-9, 07a.13 (dd9ab111) 8-13, 06.20 (rev06-length-control) over 40; the slices of
#: the other experiment claims ran past 5 s at their first offset (``--probe``), or
#: the claims read a committed sweep (which a slice would only re-read).
WORKER_TAG = "calibrate-worker:"  # a worker's result line (the cells print too)
#: Module-state calls a slice keeps wherever they are (they change no name).
STATE_CALLS = (
    "torch.set_default_dtype",
    "torch.manual_seed",
    "torch.set_num_threads",
    "np.random.seed",
    "set_seed",
    "threadpool_limits",
    "warnings.",
)


# ------------------------------------------------------------------ the claim's slice
def _free_reads(node: ast.AST) -> set[str]:
    """The names a statement reads from outside itself: in a function or a lambda,
    not its parameters or its own local names."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = node.args
        params = {
            a.arg
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]
            + [x for x in (args.vararg, args.kwarg) if x]
        }
        body = node.body if isinstance(node.body, list) else [node.body]
        local = set().union(*(claims_lib._stored_names(b) for b in body), params)
        inner = set().union(*(_free_reads(b) for b in body)) - local
        defaults = [*args.defaults, *(d for d in args.kw_defaults if d)]
        decorators = getattr(node, "decorator_list", [])
        return inner.union(*(_free_reads(d) for d in [*defaults, *decorators]))
    reads = set()
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
            reads.add(child.id)
        else:
            reads |= _free_reads(child)
    return reads


def _cell_names(code: str) -> tuple[set[str], set[str], set[str]]:
    """(names a cell binds or changes, names it reads before binding them, modules
    it imports)."""
    tree = claims_lib._parse(code)
    if tree is None:
        return set(), set(), set()
    stored, read, modules = set(), set(), set()
    for stmt in tree.body:
        read |= _free_reads(stmt) - stored
        names = claims_lib._stored_names(stmt)
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            modules |= names
        stored |= names
    return stored, read, modules


def claim_slice(nb: dict, index: int) -> list[int]:
    """The cells claim cell ``index`` needs, in order: the setup cell, the earlier
    cells that last bound or changed each name the claim (or a cell it needs) reads,
    every earlier cell that sets module state (``STATE_CALLS``), and the claim cell.

    A method call on an imported module (``plt.plot``) is not taken to change it; a
    name is followed back to the last cell that binds it (and further only if that
    cell reads it too, as ``rows.append(x)`` does).
    """
    cells = nb["cells"]
    codes = {
        i: claims_lib.source(c)
        for i, c in enumerate(cells[: index + 1])
        if c["cell_type"] == "code"
    }
    info = {i: _cell_names(code) for i, code in codes.items()}
    modules = set().union(*(m for _, _, m in info.values()))
    needed = set(info[index][1])
    keep = {index}
    for i in sorted(codes, reverse=True):
        if i >= index:
            continue
        stored, read, own_modules = info[i]
        tags = cells[i].get("metadata", {}).get("tags", [])
        state = any(
            line.lstrip().startswith(STATE_CALLS) for line in codes[i].splitlines()
        )
        changed = (stored - modules) | own_modules
        if "setup" in tags or state or changed & needed:
            keep.add(i)
            needed = (needed - (changed - read)) | read
    return sorted(keep)


# ------------------------------------------------------------------- fingerprints
FINGERPRINT_SOURCE = """
def _calibrate_fingerprint(ns, names):
    import hashlib, types
    import numpy as np

    def as_bytes(v, depth=0):
        if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
            return repr(v).encode()
        if isinstance(v, np.generic):
            return repr(v.item()).encode()
        if isinstance(v, np.ndarray):
            return v.tobytes() if v.dtype != object else as_bytes(v.tolist(), depth)
        if type(v).__module__.startswith("torch") and hasattr(v, "detach"):
            return v.detach().cpu().numpy().tobytes()
        if type(v).__module__.startswith("pandas") and hasattr(v, "to_numpy"):
            return (repr(getattr(v, "index", None)).encode()
                    + as_bytes(v.to_numpy(), depth))
        if depth < 3 and isinstance(v, (list, tuple, set, frozenset)):
            parts = [as_bytes(x, depth + 1) for x in
                     (sorted(v, key=repr) if isinstance(v, (set, frozenset)) else v)]
            return None if any(p is None for p in parts) else b"|".join(parts)
        if depth < 3 and isinstance(v, dict):
            parts = [as_bytes(k, depth + 1) + b":" + (as_bytes(x, depth + 1) or b"?")
                     for k, x in sorted(v.items(), key=lambda kv: repr(kv[0]))]
            return None if any(b"?" == p[-1:] for p in parts) else b"|".join(parts)
        return None

    h, n = hashlib.sha256(), 0
    for name in sorted(names):
        if name not in ns:
            continue
        v = ns[name]
        if isinstance(v, (types.ModuleType, types.FunctionType, type)) or callable(v):
            continue
        b = as_bytes(v)
        if b is None:
            return None  # a value it cannot read: no fingerprint, never offset-free
        h.update(name.encode() + b"=" + b)
        n += 1
    return h.hexdigest()[:16] if n else None
"""


def fingerprint_names(code: str) -> list[str]:
    """The names a claim cell reads or binds: what its fingerprint hashes."""
    stored, read, modules = _cell_names(code)
    return sorted((stored | read) - modules)


# -------------------------------------------------------------------- cheap runs
def _worker(notebook: str, cell_ids: list[str], offsets: list[int], limit: float):
    """Run each claim's slice at each offset in this process; one JSON line each.

    ``limit``: seconds one slice may take at one offset (then it counts as not run,
    and the claim is dropped from the run).
    """
    import signal
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from IPython.display import display

    path = Path(notebook) if Path(notebook).is_absolute() else ROOT / "book" / notebook
    nb = claims_lib.load(path)
    by_id = {c.cell_id: c for c in claims_lib.claims(nb, path)}
    fp_ns: dict = {}
    exec(FINGERPRINT_SOURCE, fp_ns)
    compiled = {}
    for cid in cell_ids:
        c = by_id[cid]
        compiled[cid] = (
            [
                compile(
                    claims_lib._blank_magics(claims_lib.source(nb["cells"][i])),
                    f"{notebook}[{i}]",
                    "exec",
                )
                for i in claim_slice(nb, c.index)
            ],
            fingerprint_names(c.code),
        )

    timed_out = [False]  # a library may wrap the TimeoutError in an error of its own

    def alarm(signum, frame):
        timed_out[0] = True
        raise TimeoutError(f"slice ran past {limit} s")

    signal.signal(signal.SIGALRM, alarm)
    os.chdir(path.parent)
    # the setup once, untimed: its imports are paid once per process, not per slice
    os.environ["ATTNLIB_SEED_OFFSET"] = str(offsets[0])
    warm = {"__name__": "__main__"}
    for cell in nb["cells"]:
        if "setup" in cell.get("metadata", {}).get("tags", []):
            exec(claims_lib._blank_magics(claims_lib.source(cell)), warm)
    alive = list(cell_ids)
    for k in offsets:
        os.environ["ATTNLIB_SEED_OFFSET"] = str(k)
        for cid in list(alive):
            codes, names = compiled[cid]
            ns = {"__name__": "__main__", "display": display}  # as IPython has it
            start = time.perf_counter()
            outcome, error, fp = "held", None, None
            timed_out[0] = False
            signal.setitimer(signal.ITIMER_REAL, limit)
            try:
                with warnings.catch_warnings():
                    for code in codes:
                        exec(code, ns)
                signal.setitimer(signal.ITIMER_REAL, 0)
                fp = fp_ns["_calibrate_fingerprint"](ns, names)
            except Exception as err:  # an assert, or what a failure left behind
                outcome, error = "failed", f"{type(err).__name__}: {err}"[:300]
                if timed_out[0]:
                    outcome, error = "not run", f"slice ran past {limit} s"
                    alive.remove(cid)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                plt.close("all")
            line = {
                "claim": f"{path.name}#{cid}",
                "offset": k,
                "outcome": outcome,
                "seconds": round(time.perf_counter() - start, 3),
                "fingerprint": fp,
            }
            if error:
                line["error"] = error
            print(WORKER_TAG + json.dumps(line), flush=True)


def run_cheap(
    claims: list[str], offsets: list[int], budget_s: float, limit: float = 30.0
) -> list[dict]:
    """Run the cheap claims (``chapter#cell id``) at ``offsets``, one chapter process
    at a time, within ``budget_s`` seconds in all (what is left when a chapter's
    process is stopped is not run); every line a worker printed."""
    by_chapter: dict[str, list[str]] = {}
    for claim in claims:
        notebook, cid = claim.split("#", 1)
        by_chapter.setdefault(notebook, []).append(cid)
    lines, start = [], time.perf_counter()
    chapters = sorted(by_chapter)
    for n, notebook in enumerate(chapters):
        left = budget_s - (time.perf_counter() - start)
        share = left / (len(chapters) - n)  # the rest of the budget, shared evenly
        if share < 5:
            print(f"  {notebook}: no budget left", flush=True)
            continue
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            notebook,
            *by_chapter[notebook],
            "--offsets",
            *map(str, offsets),
            "--limit",
            str(limit),
        ]
        env = {**os.environ, "ATTNLIB_PROGRESS": "off", "MPLBACKEND": "Agg"}
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in [str(ROOT), os.environ.get("PYTHONPATH", "")] if p
        )
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(var, "1")
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        got = []
        try:
            out, _ = proc.communicate(timeout=share)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        for text in out.splitlines():
            if text.startswith(WORKER_TAG):
                got.append(json.loads(text[len(WORKER_TAG) :]))
        done = len({g["offset"] for g in got})
        print(
            f"  {notebook}: {len(by_chapter[notebook])} claims at {done} offsets,"
            f" {sum(g['outcome'] == 'failed' for g in got)} failures",
            flush=True,
        )
        lines += got
    return lines


def cheap_run_record(lines: list[dict], seconds: float, paths=None) -> dict:
    """A record's run from the workers' lines: per claim its key, each offset's outcome,
    errors, and the fingerprints of the first two offsets (``paths``: the chapters,
    default the book's)."""
    run = _run_header("cheap", seconds)
    keys = _current_keys(paths)
    for line in lines:
        if line["outcome"] == "not run":
            continue
        entry = run["claims"].setdefault(
            line["claim"],
            {"key": keys[line["claim"]], "offsets": {}, "fingerprints": {}},
        )
        k = str(line["offset"])
        entry["offsets"][k] = line["outcome"]
        if line.get("error"):
            entry.setdefault("errors", {})[k] = line["error"]
        if line.get("fingerprint") and len(entry["fingerprints"]) < 2:
            entry["fingerprints"][k] = line["fingerprint"]
    for entry in run["claims"].values():
        if not entry["fingerprints"]:
            del entry["fingerprints"]
    return run


def _current_keys(paths=None) -> dict[str, str]:
    return {
        f"{p.name}#{c.cell_id}": claims_lib.claim_key(c)
        for p in paths or claims_lib.chapter_notebooks()
        for c in claims_lib.claims(claims_lib.load(p), p)
    }


def _run_header(via: str, seconds: float, sweeps: dict | None = None) -> dict:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": commit,
        "via": via,
        "seconds": round(seconds, 1),
        "sweeps": sweeps or {},
        "claims": {},
    }


# ------------------------------------------------------------------ chapter runs
def instrument(path: Path) -> dict[int, str]:
    """The code appended to each claim cell of a chapter for a run: it prints the
    fingerprint of the values the cell reads and binds (``unseen.FINGERPRINT_TAG``)."""
    nb = claims_lib.load(path)
    return {
        c.index: (
            f"exec({FINGERPRINT_SOURCE!r})\n"
            f"print({unseen.FINGERPRINT_TAG!r}, _calibrate_fingerprint("
            f"globals(), {fingerprint_names(c.code)!r}))"
        )
        for c in claims_lib.claims(nb, path)
    }


def run_chapters(paths, offsets, budget_s: float, timeout: int = 900) -> dict:
    """Each chapter at each offset, one at a time, fingerprinting its claims; stops
    starting new runs once ``budget_s`` is spent. A run of the record."""
    run, start = _run_header("chapter", 0.0), time.perf_counter()
    for path in paths:
        for k in offsets:
            if time.perf_counter() - start > budget_s:
                print(f"  budget spent: {path.name} at {k} not run", flush=True)
                continue
            result = unseen.execute(path, k, timeout, instrument=instrument(path))
            print(
                f"  {path.name} at {k}: {result.get('seconds')} s,"
                f" {sum(o['outcome'] == 'failed' for o in result['claims'].values())}"
                " failed",
                flush=True,
            )
            for cid, o in result["claims"].items():
                if o["outcome"] == "not run":
                    continue
                entry = run["claims"].setdefault(
                    f"{path.name}#{cid}",
                    {"key": o["key"], "offsets": {}, "fingerprints": {}},
                )
                entry["offsets"][str(k)] = o["outcome"]
                if o.get("error"):
                    entry.setdefault("errors", {})[str(k)] = o["error"]
                if o.get("fingerprint") and len(entry["fingerprints"]) < 2:
                    entry["fingerprints"][str(k)] = o["fingerprint"]
    for entry in run["claims"].values():
        if not entry["fingerprints"]:
            del entry["fingerprints"]
    run["seconds"] = round(time.perf_counter() - start, 1)
    return run


def add_run(run: dict, path: Path = RECORD) -> None:
    """Add a run to the calibration record."""
    rec = claims_lib.load_calibration(path)
    rec.setdefault("schema", SCHEMA)
    rec["runs"].append(run)
    path.write_text(json.dumps(rec, indent=1) + "\n")


SCHEMA = (
    "runs: one per calibration run (tools/calibrate.py). via: cheap (the claim's slice "
    "alone) or chapter (the whole chapter). sweeps: the committed results re-run at "
    "each offset of the run (empty: none). claims: 'chapter#cell id' -> key (the "
    "claim's code, statement and seeds it ran as: claims_lib.claim_key), offsets "
    "(offset -> held | failed), errors (offset -> first error line), fingerprints "
    "(offset -> hash of the values the claim cell reads and binds, at two offsets). "
    "The ledger counts, per claim as it now is, each distinct offset of at least "
    "10 000 of these runs and of book/unseen_audit.json (claims_lib.calibration)."
)


# -------------------------------------------------------------------- the table
def calibration_table(paths=None) -> list[dict]:
    """Every claim's calibration, as the ledger shows it."""
    rows = []
    for path in paths or claims_lib.chapter_notebooks():
        nb = claims_lib.load(path)
        cals = claims_lib.calibration(nb, path)
        for c in claims_lib.claims(nb, path):
            cal = cals[c.cell_id]
            rows.append(
                {
                    "claim": f"{unseen.chapter_key(path.name)}.{c.number}",
                    "kind": c.kind,
                    "mode": cal.mode,
                    "tried": cal.tried,
                    "failures": cal.failures,
                    "bound": cal.bound,
                    "reread": cal.reread,
                    "cheap": f"{path.name}#{c.cell_id}" in CHEAP,
                }
            )
    return rows


def print_table(rows: list[dict], only_experiments: bool = False) -> None:
    print("| claim | kind | mode | offsets tried | failures | 95 % bound |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        if only_experiments and r["kind"] != "experiment":
            continue
        bound = f"{r['bound']:.4f}" if r["tried"] else "—"
        mode = r["mode"] + (" (cheap)" if r["cheap"] else "")
        if r["mode"] == "reread":
            mode += f", {r['reread']} re-reads not counted"
        print(
            f"| {r['claim']} | {r['kind']} | {mode} | {r['tried']} |"
            f" {r['failures']} | {bound} |"
        )


def probe(paths, offset: int, limit: float) -> None:
    """Time every claim's slice at one fresh offset (candidates for ``CHEAP``)."""
    claims = [
        f"{p.name}#{c.cell_id}"
        for p in paths
        for c in claims_lib.claims(claims_lib.load(p), p)
    ]
    lines = run_cheap(claims, [offset], budget_s=10 * limit * len(claims), limit=limit)
    for line in sorted(lines, key=lambda x: x["seconds"]):
        print(
            f"{line['seconds']:8.3f} s  {line['outcome']:7s} {line['claim']}"
            f" {line.get('error', '')[:80]}"
        )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--chapters", nargs="+", help="chapter prefixes (01 07b ...)")
    parser.add_argument("--cheap", action="store_true", help="the CHEAP registry")
    parser.add_argument("--probe", action="store_true", help="time every slice once")
    parser.add_argument("--table", action="store_true", help="print the calibration")
    parser.add_argument("--offsets", nargs="+", type=int, help="default: drawn now")
    parser.add_argument("--draw", type=int, default=200, help="offsets to draw")
    parser.add_argument("--budget-s", type=float, default=600.0)
    parser.add_argument("--limit", type=float, default=30.0, help="s per slice")
    parser.add_argument("--record", action="store_true", help=f"add to {RECORD.name}")
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.worker[0], args.worker[1:], args.offsets, args.limit)
        return 0
    paths = claims_lib.chapter_notebooks()
    if args.chapters:
        paths = [p for p in paths if any(p.name.startswith(c) for c in args.chapters)]
    if args.table:
        print_table(calibration_table(paths))
        return 0
    avoid = unseen.used_offsets() | _calibrated_offsets()
    if args.probe:
        probe(paths, unseen.draw_offsets(1, avoid)[0], args.limit)
        return 0
    offsets = args.offsets or unseen.draw_offsets(args.draw, avoid)
    if any(k < unseen.UNSEEN_FLOOR for k in offsets):
        parser.error(f"offsets below {unseen.UNSEEN_FLOOR} are the authors'")
    start = time.perf_counter()
    if args.cheap:
        names = {p.name for p in paths}
        claims = [c for c in CHEAP if c.split("#")[0] in names]
        lines = run_cheap(claims, offsets, args.budget_s, args.limit)
        run = cheap_run_record(lines, time.perf_counter() - start)
    else:
        run = run_chapters(paths, offsets, args.budget_s)
    failed = {
        claim: sorted(k for k, o in e["offsets"].items() if o == "failed")
        for claim, e in run["claims"].items()
    }
    for claim, ks in failed.items():
        if ks:
            print(f"  {claim} failed at offsets {', '.join(ks)}")
    if args.record:
        add_run(run)
        print(f"recorded in {RECORD.relative_to(ROOT)}")
    print_table(calibration_table(paths), only_experiments=True)
    return 0


def _calibrated_offsets() -> set[int]:
    rec = claims_lib.load_calibration()
    return {
        int(k) for r in rec["runs"] for e in r["claims"].values() for k in e["offsets"]
    }


if __name__ == "__main__":
    sys.exit(main())
