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

``make test-unseen`` runs the first form with ``--record``: the table is printed, and
the audit is added to ``book/unseen_audit.json``, from which the claims ledger shows,
beside each claim, at how many unseen offsets it has held. A claim counts an audit only
while its code and statement are the ones that audit executed (a rewritten claim starts
again).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import secrets
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import claims_lib  # noqa: E402

RECORD = claims_lib.UNSEEN_RECORD
# Offsets below this are for writing and tuning a claim; an audit offset is never one.
UNSEEN_FLOOR = 10_000
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


def read_outcomes(nb: dict, path: Path) -> dict:
    """Each claim's outcome in an executed notebook, and the errors outside claims."""
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
        elif error:
            other_errors.append({"cell": i, "id": cell.get("id", "?"), "error": error})
    return {"claims": outcomes, "errors": other_errors}


def execute(path: Path, offset: int, timeout: int = 900) -> dict:
    """Execute one chapter at ``offset`` (errors allowed) and read its outcomes."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    env = {
        **os.environ,
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
    result = read_outcomes(json.loads(nbformat.writes(nb)), path)
    result["seconds"] = round(time.perf_counter() - start, 1)
    return result


def _job(args):
    path, offset, timeout = args
    try:
        return path.name, offset, execute(path, offset, timeout)
    except Exception as err:  # a kernel that died: every claim of the chapter not run
        return path.name, offset, {"claims": {}, "errors": [{"error": repr(err)}]}


def audit(paths, offsets, workers: int = 2, timeout: int = 900) -> dict:
    """Execute every chapter at every offset; the results by chapter and offset."""
    jobs = [(p, k, timeout) for p in paths for k in offsets]
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


def record(runs: dict, offsets, path: Path = RECORD) -> None:
    """Add an audit to the record the claims ledger reads."""
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
    runs = audit(paths, offsets, workers=args.workers, timeout=args.timeout)
    text, n_bad = table(runs, offsets)
    print("\n" + text)
    print(f"\n{n_bad} failed claim(s) or error(s) at offsets {offsets}")
    if args.record:
        record(runs, offsets)
        print(f"recorded in {RECORD.relative_to(ROOT)}")
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main())
