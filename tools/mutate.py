"""The mutation campaign: apply each mutant of tools/mutants.py, run its tests.

Usage (from the repository root; ``make mutate`` runs the first form)::

    python tools/mutate.py                      # every mutant, writes tools/MUTATION.md
    python tools/mutate.py --mutants a,b        # a subset, report printed only
    python tools/mutate.py --check              # only check that every snippet is found
    python tools/mutate.py --list

The working tree is never modified: its files (tracked and untracked, less what git
ignores) are copied to a temporary folder, each mutant is applied there and reverted
afterwards, and pytest runs in that copy with the copy first on ``PYTHONPATH`` (checked:
``attnlib`` must import from the copy). No bytecode is written or read
(``PYTHONDONTWRITEBYTECODE``, no ``__pycache__`` copied), so a mutated module is never
served from a stale ``.pyc``; numba's on-disk cache lives in a temporary folder, a fresh
one for each mutant of a file that holds compiled code, so compiled loops are never
served from a cache of the unmutated source.

Each mutant runs ``pytest -x -q -p no:cacheprovider <its test files>`` under a timeout.
Outcomes: ``killed`` (a test failed or errored), ``timeout`` (counted as killed, and
reported as such), ``survived`` (every test passed), ``stale`` (its snippet is not found
exactly once: the campaign refuses to start). Before the mutants, the unmutated tree
must pass every test file the campaign uses, or the campaign stops: a kill means
nothing against a failing baseline.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from mutants import MUTANTS, Mutant, apply, resolve  # noqa: E402

REPORT = ROOT / "tools" / "MUTATION.md"
RESULTS = ROOT / "tools" / "mutation_results.json"
HISTORY_MARK = "<!-- history: date | mutants | killed | timeouts | survived | score -->"
NUMBA_FILES = {
    "attnlib/denoise/_nlm.py",
    "attnlib/kernel_regression/_kernelsums.py",
    "attnlib/utils/fastexp.py",
}
THREADS = {
    k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
}


def stale(mutants: list[Mutant], root: Path) -> list[str]:
    """Names of the mutants whose snippet is not found exactly once (with the count)."""
    problems = []
    for m in mutants:
        file, spans = resolve(m, root)
        if len(spans) != 1:
            place = f"{file}, in {m.where}" if m.where else file
            problems.append(f"{m.name}: snippet in {place} found {len(spans)} times")
        for test in m.tests:
            if not (root / test.split("::")[0]).exists():
                problems.append(f"{m.name}: test file {test} missing")
    return problems


def copy_tree(dest: Path) -> None:
    """Copy the working tree's files (tracked, untracked, not ignored) to ``dest``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        src = ROOT / os.fsdecode(name)
        if src.is_file():
            target = dest / os.fsdecode(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)


def environment(copy: Path, numba_cache: Path) -> dict[str, str]:
    env = dict(os.environ, **THREADS)
    env.update(
        PYTHONPATH=str(copy),
        PYTHONDONTWRITEBYTECODE="1",
        NUMBA_CACHE_DIR=str(numba_cache),
        ATTNLIB_PROGRESS="summary",
        MPLBACKEND="Agg",
    )
    return env


def pytest(tests, copy: Path, env: dict, timeout: float) -> tuple[str, float, str]:
    """Run ``tests`` in ``copy``: (outcome, seconds, last lines of output)."""
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [*cmd, *tests],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - start, ""
    seconds = time.perf_counter() - start
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-6:])
    if done.returncode == 0:
        return "survived", seconds, tail
    if done.returncode in (1, 2):  # failures, or an error while collecting or running
        return "killed", seconds, tail
    return f"error (pytest exit {done.returncode})", seconds, tail


def run_mutant(m: Mutant, copy: Path, shared_cache: Path, timeout: float):
    file, _ = resolve(m, copy)
    path = copy / file
    original = path.read_text()
    stat = path.stat()
    cache = shared_cache
    if file in NUMBA_FILES:
        cache = Path(tempfile.mkdtemp(prefix="numba-", dir=copy.parent))
    try:
        path.write_text(apply(original, m))
        return pytest(m.tests, copy, environment(copy, cache), timeout)
    finally:
        path.write_text(original)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        if cache != shared_cache:
            shutil.rmtree(cache, ignore_errors=True)


def report(results, header: str, history: list[str]) -> str:
    killed = sum(r["outcome"] in ("killed", "timeout") for r in results)
    timeouts = sum(r["outcome"] == "timeout" for r in results)
    survivors = [r for r in results if r["outcome"] == "survived"]
    score = 100 * killed / len(results)
    lines = [
        "# Mutation report",
        "",
        header,
        "",
        f"**Score: {killed} of {len(results)} mutants killed ({score:.1f} %)**"
        f" ({timeouts} of them by timeout, counted as killed).",
        "",
        "Regenerate with `make mutate` (writes this file); `make mutate"
        " MUTANTS=name1,name2` runs a subset and prints its report. The mutants and"
        " the tests each should fail are in `tools/mutants.py`.",
        "",
        "## Survivors",
        "",
    ]
    if not survivors:
        lines.append("None.")
    for r in survivors:
        why = r["accepted"] or "NOT EXPLAINED: add a test that kills it"
        lines.append(f"- `{r['name']}` ({r['file']}): {why}")
    lines += [
        "",
        "## Every mutant",
        "",
        "| mutant | file | outcome | seconds |",
        "|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| `{r['name']}` | {r['file']} | {r['outcome']}"
            f"{' *carried*' if r.get('carried') else ''} | {r['seconds']:.0f} |"
        )
    stamp = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    row = (
        f"| {stamp} | {len(results)} | {killed} | {timeouts} | {len(survivors)}"
        f" | {score:.1f} % |"
    )
    lines += [
        "",
        "## History",
        "",
        HISTORY_MARK,
        "| date | mutants | killed | of which timeouts | survived | score |",
        "|---|---|---|---|---|---|",
        *history,
        row,
        "",
    ]
    return "\n".join(lines)


def previous_history() -> list[str]:
    if not REPORT.exists():
        return []
    text = REPORT.read_text()
    if HISTORY_MARK not in text:
        return []
    rows = text.split(HISTORY_MARK, 1)[1].strip().splitlines()[2:]
    return [r for r in rows if r.startswith("| 2")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutants", help="comma-separated names (default: all)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per mutant")
    parser.add_argument("--check", action="store_true", help="only look for stale ones")
    parser.add_argument("--list", action="store_true", help="list the mutants")
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument(
        "--rerun-survivors",
        action="store_true",
        help="re-run only the survivors (and new mutants) of the last full run's"
        " tools/mutation_results.json, carrying its kills over (adding tests cannot"
        " revive a killed mutant; the baseline checks that the tests pass unmutated)",
    )
    args = parser.parse_args(argv)

    names = [m.name for m in MUTANTS]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        print(f"duplicate mutant names: {sorted(duplicates)}")
        return 2
    chosen = MUTANTS
    if args.mutants:
        wanted = args.mutants.split(",")
        unknown = set(wanted) - set(names)
        if unknown:
            print(f"unknown mutants: {sorted(unknown)}")
            return 2
        chosen = [m for m in MUTANTS if m.name in wanted]
    carried = {}
    if args.rerun_survivors:
        last = json.loads(RESULTS.read_text())["results"]
        carried = {
            r["name"]: dict(r, carried=True)
            for r in last
            if r["outcome"] in ("killed", "timeout")
        }
        chosen = [m for m in chosen if m.name not in carried]
    if args.list:
        for m in chosen:
            print(f"{m.name:45s} {m.file:35s} {' '.join(m.tests)}")
        return 0
    problems = stale(chosen, ROOT)
    if problems:
        print("STALE mutants (update tools/mutants.py):", *problems, sep="\n  ")
        return 1
    if args.check:
        print(f"{len(chosen)} mutants, every snippet found exactly once")
        return 0

    started = dt.datetime.now()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "attnlib", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    header = (
        f"Run {started:%Y-%m-%d %H:%M} on commit {commit}"
        f"{' plus uncommitted changes' if dirty else ''}, Python"
        f" {sys.version.split()[0]}, one process,"
        f" per-mutant timeout {args.timeout:.0f} s; the tree as copied when the run"
        " started."
    )
    with tempfile.TemporaryDirectory(prefix="attnlib-mutate-") as tmp:
        copy, shared_cache = Path(tmp) / "tree", Path(tmp) / "numba-shared"
        copy_tree(copy)
        env = environment(copy, shared_cache)
        probe = "import attnlib; print(attnlib.__file__)"
        where = subprocess.run(
            [sys.executable, "-c", probe], cwd=copy, env=env, capture_output=True
        )
        if not where.stdout.decode().startswith(str(copy)):
            print(f"attnlib does not import from the copy: {where.stdout!r}")
            return 2
        if not args.skip_baseline:
            every = MUTANTS if args.rerun_survivors else chosen
            files = sorted({t for m in every for t in m.tests})
            outcome, seconds, tail = pytest(files, copy, env, 20 * args.timeout)
            print(f"baseline ({len(files)} test files): {outcome} in {seconds:.0f} s")
            if outcome != "survived":
                print("the unmutated tree fails its tests; fix that first\n" + tail)
                return 2
        results = []
        for i, m in enumerate(chosen, 1):
            outcome, seconds, tail = run_mutant(m, copy, shared_cache, args.timeout)
            results.append(
                dict(
                    name=m.name,
                    file=m.file,
                    outcome=outcome,
                    seconds=seconds,
                    accepted=m.accepted,
                )
            )
            print(
                f"[{i}/{len(chosen)}] {m.name}: {outcome} ({seconds:.0f} s)", flush=True
            )
    if carried:
        fresh = {r["name"]: r for r in results}
        results = [fresh.get(m.name) or carried[m.name] for m in MUTANTS]
        header += (
            f" Only the survivors of the previous full run were re-run; its"
            f" {len(carried)} kills are carried over (marked *carried*)."
        )
    text = report(results, header, previous_history())
    if args.mutants:
        print(text)
    else:
        REPORT.write_text(text)
        payload = {"header": header, "results": results}
        RESULTS.write_text(json.dumps(payload, indent=1) + "\n")
        print(f"wrote {REPORT.relative_to(ROOT)}")
    errors = [r for r in results if r["outcome"].startswith("error")]
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
