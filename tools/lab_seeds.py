"""Do the lab's conclusions hold on every seed? Run notebook 09 once per seed, and once with all.

    python tools/lab_seeds.py [--seeds 0 1 2 3 4] [--write]   # what `make lab-seeds` runs
    python tools/lab_seeds.py --notebook notebooks/12_lab_context_extension.ipynb [--write]

The lab checks its conclusions on the mean over the seeds in its setup cell (``SEEDS``). This
tool executes a temporary copy of the notebook in a fresh kernel for each seed alone
(``SEEDS = (k,)``; ``LIVE = True`` where the setup cell has that flag, so that it trains rather
than reads its stored run), so that every check must hold for that one seed, and once with all
the seeds together, whose accuracy table (the cell tagged ``lab-results-table``) it prints. With ``--write`` the
results go into ``benchmarks/RESULTS.md`` between the lab-seeds markers. Exit status 1 if a
check fails for any seed.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from results_section import write_section

ROOT = pathlib.Path(__file__).resolve().parent.parent
LAB = ROOT / "notebooks" / "09_lab_length_generalization.ipynb"
SECTIONS = {"09_lab_length_generalization": "lab-seeds",
            "12_lab_context_extension": "lab2-seeds"}  # sections of benchmarks/RESULTS.md
SEEDS_LINE = re.compile(r"^SEEDS = \([^)]*\)", re.M)
LIVE_LINE = re.compile(r"^LIVE = (True|False)\b", re.M)  # a lab that reads a stored run
TABLE_TAG = "lab-results-table"  # the cell whose output is the accuracy table


def run(seeds: tuple[int, ...], lab: pathlib.Path = LAB) -> dict:
    nb = nbformat.read(lab, as_version=4)
    setup = [c for c in nb.cells if c.cell_type == "code" and SEEDS_LINE.search(c.source)]
    if len(setup) != 1:
        raise SystemExit(f"{lab.name}: expected one cell with a line 'SEEDS = (...)'")
    setup[0].source = SEEDS_LINE.sub(f"SEEDS = {tuple(seeds)!r}", setup[0].source)
    # The stored run holds the seeds of the setup cell only: train these seeds here.
    setup[0].source = LIVE_LINE.sub("LIVE = True", setup[0].source)
    client = NotebookClient(nb, timeout=1800, kernel_name="python3",
                            resources={"metadata": {"path": str(lab.parent)}})
    start = time.perf_counter()
    error = None
    try:
        client.execute()
    except CellExecutionError as exc:
        lines = [ln for ln in str(exc).splitlines() if "AssertionError" in ln or "FAIL" in ln]
        error = lines[-1].strip() if lines else str(exc).splitlines()[-1]
    text = "\n".join(
        "".join(o.get("text", "")) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
        if o.get("output_type") == "stream"
    )
    checks = len(re.findall(r"^PASS\s", text, re.M))
    table = "\n".join(
        "".join(o.get("text", "")) for c in nb.cells
        if c.cell_type == "code" and TABLE_TAG in c.metadata.get("tags", [])
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream" and o.get("name") == "stdout"  # not progress bars
    )
    return {"seeds": tuple(seeds), "passed": checks, "error": error,
            "seconds": time.perf_counter() - start, "table": table.strip()}


def report(single: list[dict], together: dict | None) -> str:
    lines = ["| seeds | checks passed | first failure | time |", "|---|---|---|---|"]
    for r in single + ([together] if together else []):
        seeds = ", ".join(map(str, r["seeds"]))
        lines.append(f"| {seeds} | {r['passed']} | {r['error'] or 'none'} | {r['seconds']:.0f} s |")
    return "\n".join(lines)


def write(single: list[dict], together: dict | None, lab: pathlib.Path = LAB) -> None:
    table = ""
    if together and together["table"]:
        table = (f"\n\nThe accuracy tables of the run with seeds {together['seeds']}, as the "
                 f"notebook prints them:\n\n```\n{together['table']}\n```")
    section = SECTIONS.get(lab.stem, f"seeds-{lab.stem}")
    title = "The lab's checks" if section == "lab-seeds" else f"`{lab.stem}`'s checks"
    write_section(section, (
        f"## {title} on every seed\n\n"
        f"`tools/lab_seeds.py` executed `{lab.stem}` in a fresh kernel once per seed "
        "alone (every check must then hold for that seed) and once with all of them.\n\n"
        f"{report(single, together)}{table}"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--write", action="store_true", help="write into benchmarks/RESULTS.md")
    parser.add_argument("--notebook", type=pathlib.Path, default=LAB,
                        help="the lab notebook to run (default: notebook 09)")
    args = parser.parse_args(argv)
    lab = args.notebook.resolve()
    single = []
    for seed in args.seeds:
        result = run((seed,), lab)
        print(f"seed {seed}: {result['passed']} checks passed, "
              f"{'failed: ' + result['error'] if result['error'] else 'none failed'} "
              f"({result['seconds']:.0f} s)", flush=True)
        single.append(result)
    together = run(tuple(args.seeds), lab) if len(args.seeds) > 1 else None
    if together:
        print(f"seeds {together['seeds']}: {together['passed']} checks passed, "
              f"{'failed: ' + together['error'] if together['error'] else 'none failed'} "
              f"({together['seconds']:.0f} s)\n{together['table']}")
    if args.write:
        write(single, together, lab)
    return 1 if any(r["error"] for r in single + ([together] if together else [])) else 0


if __name__ == "__main__":
    sys.exit(main())
