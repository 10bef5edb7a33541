"""The unseen-seed audit: every chapter executed on seeds nobody chose, claim by claim.

A chapter draws every random number from ``attnlib.utils.seeds``, which the environment
variable ``ATTNLIB_SEED_OFFSET`` shifts. This tool executes each chapter at several
offsets (drawn at run time, at least ``UNSEEN_FLOOR``: the offsets used while writing a
claim stay below it) and reads every claim cell's outcome from the executed notebook:
*held* (the cell ran without an error), *failed* (it raised: an assert, or an error
that an earlier failure left behind) or *not run*. Errors outside claim cells are
reported too.

    python tools/unseen.py                          # every chapter, 3 fresh offsets
    python tools/unseen.py --chapters 04 05 --offsets 123456 777777
    python tools/unseen.py --record                 # also add the audit to the record

    python tools/unseen.py --sweeps full            # re-run the sweeps claims read

``make test-unseen`` runs the first form with ``--record --sweeps full``: the table is
printed, and the audit is added to ``book/unseen_audit.json``, from which the claims
ledger shows, beside each claim, at how many unseen offsets it has held. A claim counts
an audit only while its code and statement are the ones that audit executed (a
rewritten claim starts again).

A claim that reads a committed sweep (``claims_lib.sweep_reads``) would re-read the same
file at every offset. With ``--sweeps``, every sweep such a claim reads that an offset
moves (``SWEEPS``) is first re-run at each offset into a scratch folder, and the chapter
at that offset reads it there (``ATTNLIB_RESULTS_DIR``); the audit records which sweeps
were re-run where, and the ledger counts such a claim only at those offsets. The
results no audit re-runs are listed in ``NOT_RERUN`` with the reason.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import claims_lib  # noqa: E402

RECORD = claims_lib.UNSEEN_RECORD
RESULTS_VARIABLE = "ATTNLIB_RESULTS_DIR"  # attnlib.results.RERUN_VARIABLE
# Offsets below this are for writing and tuning a claim; an audit offset is never one.
UNSEEN_FLOOR = claims_lib.UNSEEN_FLOOR  # 10 000
UNSEEN_CEILING = 1_000_000  # attnlib.utils.runtime.MAX_SEED_OFFSET


def draw_offsets(n: int, avoid=()) -> list[int]:
    """``n`` distinct offsets from ``UNSEEN_FLOOR`` to ``UNSEEN_CEILING``, not in
    ``avoid``."""
    avoid, found = set(avoid), []
    while len(found) < n:
        k = UNSEEN_FLOOR + secrets.randbelow(UNSEEN_CEILING - UNSEEN_FLOOR + 1)
        if k not in avoid and k not in found:
            found.append(k)
    return found


def chapter_key(name: str) -> str:
    """``07b_continuous_attention.ipynb`` -> ``07b``, as the ledger numbers claims."""
    return Path(name).stem.split("_", 1)[0]


def _error_line(outputs: list) -> str | None:
    for out in outputs:
        if out.get("output_type") == "error":
            value = (out.get("evalue") or "").strip().splitlines()
            return f"{out.get('ename', 'Error')}: {value[0] if value else ''}"[:300]
    return None


#: A line an instrumented claim cell prints (``execute(instrument=...)``): the
#: fingerprint of its values, read back by :func:`read_outcomes`.
FINGERPRINT_TAG = "calibrate-fingerprint:"


def _fingerprint(outputs: list) -> str | None:
    for out in outputs:
        if out.get("output_type") == "stream":
            text = out.get("text", "")
            text = "".join(text) if isinstance(text, list) else text
            for line in text.splitlines():
                if line.startswith(FINGERPRINT_TAG):
                    value = line[len(FINGERPRINT_TAG) :].strip()
                    return None if value == "None" else value
    return None


def read_outcomes(nb: dict, path: Path) -> dict:
    """Each claim's outcome in an executed notebook, and the errors outside claims
    (and, where the cell printed one, the fingerprint of its values)."""
    claims = {c.index: c for c in claims_lib.claims(nb, path)}
    outcomes, other_errors = {}, []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        error = _error_line(cell.get("outputs", []))
        if i in claims:
            c = claims[i]
            ran = cell.get("execution_count") is not None
            outcomes[c.cell_id] = {
                "number": c.number,
                "kind": c.kind,
                "key": claims_lib.claim_key(c),
                "outcome": "failed" if error else ("held" if ran else "not run"),
                **({"error": error} if error else {}),
            }
            if fp := _fingerprint(cell.get("outputs", [])):
                outcomes[c.cell_id]["fingerprint"] = fp
        elif error:
            other_errors.append({"cell": i, "id": cell.get("id", "?"), "error": error})
    return {"claims": outcomes, "errors": other_errors}


def execute(
    path: Path,
    offset: int,
    timeout: int = 900,
    instrument: dict[int, str] | None = None,
    env_extra: dict[str, str] | None = None,
) -> dict:
    """Execute one chapter at ``offset`` (errors allowed) and read its outcomes.

    ``instrument``: code appended to the cells of these indices for the run (the
    outcomes are read against the notebook as written); ``env_extra``: more
    environment for the kernel (``ATTNLIB_RESULTS_DIR`` of re-run sweeps).
    """
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    original = json.loads(nbformat.writes(nb))
    for i, code in (instrument or {}).items():
        nb.cells[i].source = nb.cells[i].source + "\n" + code
    env = {
        **os.environ,
        **(env_extra or {}),
        "ATTNLIB_SEED_OFFSET": str(offset),
        "ATTNLIB_PROGRESS": "off",
        "PYTHONPATH": os.pathsep.join(
            p for p in [str(ROOT), os.environ.get("PYTHONPATH", "")] if p
        ),
    }
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    start = time.perf_counter()
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    # the kernel inherits this process's environment
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    executed = json.loads(nbformat.writes(nb))
    for cell, ran in zip(original["cells"], executed["cells"]):
        cell["outputs"] = ran.get("outputs", [])
        cell["execution_count"] = ran.get("execution_count")
    result = read_outcomes(original, path)
    result["seconds"] = round(time.perf_counter() - start, 1)
    return result


# ------------------------------------------------------------ sweeps re-run too
#: The committed sweeps a claim reads that an offset moves, by the benchmark that
#: writes them: re-run at an offset ``k`` (``--seed-offset k``), each writes
#: ``<name>.unseen.json`` into the folder ``ATTNLIB_RESULTS_OUT`` names, and the
#: chapter executed at ``k`` with ``ATTNLIB_RESULTS_DIR`` on that folder reads it in
#: place of the committed re-run (``attnlib.results.load``).
SWEEPS = {
    "continuous.unseen": "benchmarks/continuous.py",
    "denoise.unseen": "benchmarks/denoise.py",
    "mux.unseen": "benchmarks/mux.py",
    "self_expression.unseen": "benchmarks/self_expression.py",
    "subspace.unseen": "benchmarks/subspace.py",
    "symmetry.unseen": "benchmarks/symmetry.py",
}
_AUTHORS = (
    "the authors' run at seeds 0-4, which the chapter states as such; its twin at "
    "an unseen offset, {name}.unseen, is the one re-run"
)
_TIMING = "a timing benchmark: no seed offset moves what its claim reads"
#: The committed results claims read that no audit re-runs, and why.
NOT_RERUN = {
    "continuous": _AUTHORS.format(name="continuous"),
    "denoise": _AUTHORS.format(name="denoise"),
    "kernel_regression": _TIMING,
    "lle": _TIMING,
    "mux": _AUTHORS.format(name="mux"),
    "normalizers": _TIMING,
    "self_expression": _AUTHORS.format(name="self_expression"),
    "subspace": _AUTHORS.format(name="subspace"),
    "symmetry": _AUTHORS.format(name="symmetry"),
}


def sweeps_read(paths) -> list[str]:
    """The re-runnable sweeps (``SWEEPS``) that the claims of these chapters read."""
    found = set()
    for path in paths:
        for names in claims_lib.sweep_reads(claims_lib.load(path), path).values():
            found |= names & set(SWEEPS)
    return sorted(found)


def rerun_sweeps(names, offset: int, folder: Path, quick: bool, timeout: int) -> dict:
    """Re-run each sweep at ``offset`` into ``folder``: ``{name: seconds}`` of those
    that completed (a sweep that failed or ran past ``timeout`` is left out, and the
    chapter reads the committed file there)."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "ATTNLIB_RESULTS_OUT": str(folder),
        "ATTNLIB_PROGRESS": "off",
        "PYTHONPATH": os.pathsep.join(
            p for p in [str(ROOT), os.environ.get("PYTHONPATH", "")] if p
        ),
    }
    done = {}
    for name in names:
        script = ROOT / SWEEPS[name]  # an absolute path stays as it is
        cmd = [sys.executable, str(script), "--seed-offset", str(offset)]
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                cmd + (["--quick"] if quick else []),
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            ok = proc.returncode == 0 and (folder / f"{name}.json").is_file()
            why = "" if ok else (proc.stderr.strip().splitlines() or ["?"])[-1]
        except subprocess.TimeoutExpired:
            ok, why = False, f"ran past {timeout} s"
        seconds = round(time.perf_counter() - start, 1)
        print(
            f"  sweep {name} at offset {offset}"
            + (" (quick)" if quick else "")
            + (f": {seconds} s" if ok else f": not re-run ({why[:200]})"),
            flush=True,
        )
        if ok:
            done[name] = seconds
    return done


def rerun_all(names, offsets, scratch: Path, quick: bool, timeout: int):
    """Re-run the sweeps at every offset, each offset into its own folder under
    ``scratch``: ``({offset: folder}, {name: {"quick", "offsets", "seconds"}})``, the
    second as :func:`record` keeps it."""
    folders, sweeps = {}, {}
    for k in offsets:
        folders[k] = scratch / str(k)
        for name, seconds in rerun_sweeps(names, k, folders[k], quick, timeout).items():
            entry = sweeps.setdefault(
                name, {"quick": quick, "offsets": [], "seconds": []}
            )
            entry["offsets"].append(k)
            entry["seconds"].append(seconds)
    return folders, sweeps


def _job(args):
    path, offset, timeout, folder = args
    extra = {RESULTS_VARIABLE: str(folder)} if folder else None
    try:
        return path.name, offset, execute(path, offset, timeout, env_extra=extra)
    except Exception as err:  # a kernel that died: every claim of the chapter not run
        return path.name, offset, {"claims": {}, "errors": [{"error": repr(err)}]}


def audit(paths, offsets, workers: int = 2, timeout: int = 900, folders=None) -> dict:
    """Execute every chapter at every offset; the results by chapter and offset.

    ``folders``: ``{offset: folder of sweeps re-run there}``, read by the chapters in
    place of the committed files.
    """
    folders = folders or {}
    jobs = [(p, k, timeout, folders.get(k)) for p in paths for k in offsets]
    runs: dict = {p.name: {} for p in paths}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for name, offset, result in pool.map(_job, jobs):
            runs[name][str(offset)] = result
            failed = sum(
                o["outcome"] != "held" for o in result["claims"].values()
            ) + len(result["errors"])
            print(
                f"  {name} at offset {offset}: {len(result['claims'])} claims,"
                f" {failed} failed or errored, {result.get('seconds', '?')} s",
                flush=True,
            )
    return runs


def table(runs: dict, offsets) -> tuple[str, int]:
    """The claim-by-offset table (failures in full, held claims counted) and the number
    of failed claims and errors."""
    lines = [
        "| chapter | claims | " + " | ".join(f"offset {k}" for k in offsets) + " |",
        "|---|---|" + "---|" * len(offsets),
    ]
    bad_lines, n_bad = [], 0
    for name, by_offset in runs.items():
        key = chapter_key(name)
        counts = []
        n_claims = max((len(r["claims"]) for r in by_offset.values()), default=0)
        for k in offsets:
            r = by_offset.get(str(k), {"claims": {}, "errors": []})
            held = sum(o["outcome"] == "held" for o in r["claims"].values())
            counts.append(f"{held}/{n_claims} held")
            for cid, o in r["claims"].items():
                if o["outcome"] != "held":
                    n_bad += 1
                    bad_lines.append(
                        f"- {key}.{o['number']} ({o['kind'] or 'unclassified'}, cell"
                        f" {cid}) at offset {k}: {o['outcome']}"
                        f" {o.get('error', '')}".rstrip()
                    )
            for e in r["errors"]:
                n_bad += 1
                bad_lines.append(
                    f"- {key}, cell {e.get('cell', '?')} at offset {k}: error outside a"
                    f" claim: {e['error']}"
                )
        lines.append(f"| {key} | {n_claims} | " + " | ".join(counts) + " |")
    text = "\n".join(lines)
    if bad_lines:
        text += "\n\nFailed:\n" + "\n".join(bad_lines)
    return text, n_bad


def record(runs: dict, offsets, path: Path = RECORD, sweeps: dict | None = None):
    """Add an audit to the record the claims ledger reads.

    ``sweeps``: ``{name: {"quick": bool, "offsets": [...], "seconds": [...]}}``, the
    sweeps re-run at those of the offsets (``claims_lib.rerun_sweeps``).
    """
    rec = claims_lib.load_unseen_record(path)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    rec["audits"].append(
        {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "commit": commit,
            "offsets": list(offsets),
            "sweeps": sweeps or {},
            "chapters": {
                name: {
                    str(k): {
                        "seconds": r.get("seconds"),
                        "claims": {
                            cid: {"key": o["key"], "outcome": o["outcome"]}
                            for cid, o in r["claims"].items()
                        },
                        "errors": len(r["errors"]),
                    }
                    for k, r in by_offset.items()
                }
                for name, by_offset in runs.items()
            },
        }
    )
    path.write_text(json.dumps(rec, indent=1) + "\n")


def used_offsets(rec: dict | None = None) -> set[int]:
    rec = claims_lib.load_unseen_record() if rec is None else rec
    return {int(k) for a in rec["audits"] for k in a["offsets"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", nargs="+", help="chapter prefixes (01 07b ...)")
    parser.add_argument("--offsets", nargs="+", type=int, help="default: 3 drawn now")
    parser.add_argument("--draw", type=int, default=3, help="how many offsets to draw")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    parser.add_argument(
        "--record", action="store_true", help=f"add the audit to {RECORD.name}"
    )
    parser.add_argument(
        "--sweeps",
        choices=("off", "quick", "full"),
        default="off",
        help="re-run the sweeps the claims read at each offset first (quick: the"
        " benchmarks' smoke form, which checks the plumbing but counts for no claim)",
    )
    parser.add_argument(
        "--sweep-timeout", type=int, default=1800, help="seconds per sweep re-run"
    )
    args = parser.parse_args(argv)
    paths = claims_lib.chapter_notebooks()
    if args.chapters:
        paths = [p for p in paths if any(p.name.startswith(c) for c in args.chapters)]
        if not paths:
            parser.error(f"no chapter starts with {args.chapters}")
    offsets = args.offsets or draw_offsets(args.draw, avoid=used_offsets())
    print(
        f"Unseen-seed audit of {len(paths)} chapter(s) at offsets {offsets}"
        f" (ATTNLIB_SEED_OFFSET; seed s becomes s + offset)",
        flush=True,
    )
    folders, sweeps = {}, {}
    if args.sweeps != "off":
        names = sweeps_read(paths)
        scratch = Path(tempfile.mkdtemp(prefix="unseen-sweeps-"))
        print(f"Re-running {', '.join(names)} at each offset into {scratch}")
        folders, sweeps = rerun_all(
            names, offsets, scratch, args.sweeps == "quick", args.sweep_timeout
        )
        for name, why in NOT_RERUN.items():
            print(f"  not re-run: {name} ({why})")
    runs = audit(
        paths, offsets, workers=args.workers, timeout=args.timeout, folders=folders
    )
    text, n_bad = table(runs, offsets)
    print("\n" + text)
    print(f"\n{n_bad} failed claim(s) or error(s) at offsets {offsets}")
    if args.record:
        record(runs, offsets, sweeps=sweeps)
        print(f"recorded in {RECORD.relative_to(ROOT)}")
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main())
