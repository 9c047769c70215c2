"""Execute, normalise and check the course notebooks.

    python tools/notebooks.py execute NOTEBOOK...   # run top to bottom in a fresh kernel, normalise, save
    python tools/notebooks.py normalize NOTEBOOK... # normalise in place
    python tools/notebooks.py check NOTEBOOK...     # exit 1 if any notebook is not normalised
    python tools/notebooks.py determinism NOTEBOOK...  # run each twice (temporary copies), compare
                                                       # outputs, streams joined as nbval joins them

Normalised means: outputs and execution counts kept; volatile metadata (timings, widget state,
the kernel's exact Python version) dropped; written by nbformat with sorted keys, so diffs stay small.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import difflib
import json
import os
import pathlib
import re
import sys
import time

import nbformat

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
CELL_METADATA_KEPT = ("tags", "jupyter", "mystnb")
TIMEOUT_SECONDS = 900


def normalized(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Return a copy of ``nb`` with volatile metadata removed."""
    nb = copy.deepcopy(nb)
    nb.metadata = nbformat.from_dict({
        "kernelspec": KERNELSPEC,
        "language_info": {"name": "python", "pygments_lexer": "ipython3"},
    })
    nb.nbformat, nb.nbformat_minor = 4, 5
    for index, cell in enumerate(nb.cells):
        cell.setdefault("id", f"cell-{index:03d}")
        cell.metadata = nbformat.from_dict(
            {k: cell.metadata[k] for k in CELL_METADATA_KEPT if k in cell.metadata}
        )
        if cell.cell_type == "code":
            cell.outputs = _joined_streams(cell.get("outputs", []))
            for output in cell.outputs:
                if "metadata" in output:
                    output.metadata = nbformat.from_dict(
                        {k: v for k, v in output.metadata.items() if k != "execution"}
                    )
        else:
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
    return nb


def _joined_streams(outputs: list) -> list:
    """Merge consecutive printed outputs of the same stream: how the kernel splits them varies
    from run to run, so joined pieces keep diffs to real changes (nbval joins them too)."""
    joined: list = []
    for output in outputs:
        previous = joined[-1] if joined else None
        if (output.get("output_type") == "stream" and previous is not None
                and previous.get("output_type") == "stream" and previous.get("name") == output.get("name")):
            previous["text"] = "".join(previous["text"]) + "".join(output["text"])
        else:
            joined.append(output)
    return joined


def _text(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def execute(path: pathlib.Path) -> None:
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=TIMEOUT_SECONDS, kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    path.write_text(_text(normalized(nb)))
    print(f"executed {path}")


def _execute_copy(path: str) -> tuple[str, float]:
    """Execute an in-memory copy of the notebook at ``path`` in a fresh kernel (the file is not
    touched); return the normalised notebook as JSON text and the seconds it took."""
    from nbclient import NotebookClient

    start = time.perf_counter()
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=TIMEOUT_SECONDS, kernel_name="python3",
        resources={"metadata": {"path": str(pathlib.Path(path).parent)}},
    )
    client.execute()
    return _text(normalized(nb)), time.perf_counter() - start


def coalesced(outputs: list) -> list:
    """Outputs with consecutive pieces of the same stream joined into one.

    How a cell's printing is cut into stream outputs depends on when the kernel flushes, so it
    can differ between two runs of the same code; nbval joins the pieces the same way before
    comparing.
    """
    merged: list = []
    for output in outputs:
        if (merged and output.get("output_type") == "stream"
                and merged[-1].get("output_type") == "stream"
                and merged[-1].get("name") == output.get("name")):
            merged[-1] = {**merged[-1], "text": merged[-1]["text"] + output["text"]}
        else:
            merged.append(dict(output))
    return merged


def split_differently(first: str, second: str) -> int:
    """How many code cells print the same text but cut into stream outputs differently."""
    cells_a = nbformat.reads(first, as_version=4).cells
    cells_b = nbformat.reads(second, as_version=4).cells
    return sum(a.get("outputs") != b.get("outputs")
               and coalesced(a.get("outputs", [])) == coalesced(b.get("outputs", []))
               for a, b in zip(cells_a, cells_b, strict=True) if a.cell_type == "code")


def first_difference(first: str, second: str) -> str | None:
    """Describe the first code cell whose normalised outputs differ between two runs, or None."""
    cells_a = nbformat.reads(first, as_version=4).cells
    cells_b = nbformat.reads(second, as_version=4).cells
    for index, (a, b) in enumerate(zip(cells_a, cells_b, strict=True)):
        if a.cell_type != "code":
            continue
        outputs_a = json.dumps(coalesced(a.get("outputs", [])), indent=1,
                               sort_keys=True).splitlines()
        outputs_b = json.dumps(coalesced(b.get("outputs", [])), indent=1,
                               sort_keys=True).splitlines()
        if outputs_a == outputs_b and a.get("execution_count") == b.get("execution_count"):
            continue
        source = (a.source.strip().splitlines() or [""])[0][:80]
        diff = list(difflib.unified_diff(outputs_a, outputs_b, "first run", "second run",
                                         lineterm="", n=1))
        shown = [line[:160] for line in diff[:24]]
        more = f"\n    ... ({len(diff) - 24} more diff lines)" if len(diff) > 24 else ""
        return (f"cell {index} (id {a.get('id', '?')}, starts {source!r}):\n    "
                + "\n    ".join(shown or ["execution counts differ"]) + more)
    return None


def determinism(paths: list[pathlib.Path], jobs: int) -> int:
    """Execute every notebook twice, each time in a fresh kernel, and compare normalised outputs.

    The runs execute copies in memory; no notebook file is written. Returns the number of
    notebooks whose two runs differ or fail.
    """
    start = time.perf_counter()
    failures = 0
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
        runs = {path: [pool.submit(_execute_copy, str(path)) for _ in range(2)] for path in paths}
        for path, futures in runs.items():
            try:
                (first, t1), (second, t2) = (future.result() for future in futures)
            except Exception as exc:  # a cell raised: report it and go on with the others
                failures += 1
                message = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip().splitlines()
                print(f"FAILED {path}: execution error: {message[-1] if message else exc!r}")
                continue
            difference = first_difference(first, second)
            if difference is None:
                split = split_differently(first, second)
                note = (f"; {split} cell(s) cut their printed text into stream outputs "
                        "differently, as nbval allows" if split else "")
                print(f"identical  {path}  (runs of {t1:.1f} s and {t2:.1f} s{note})")
            else:
                failures += 1
                print(f"DIFFERENT  {path}: first difference in {difference}")
    print(f"{len(paths) - failures} of {len(paths)} notebooks give identical outputs in two fresh "
          f"kernels ({time.perf_counter() - start:.0f} s with {jobs} parallel kernels)")
    return failures


def normalize(path: pathlib.Path) -> None:
    nb = nbformat.read(path, as_version=4)
    path.write_text(_text(normalized(nb)))


def is_normalized(path: pathlib.Path) -> bool:
    nb = nbformat.read(path, as_version=4)
    return path.read_text() == _text(normalized(nb))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("execute", "normalize", "check", "determinism"))
    parser.add_argument("notebooks", nargs="*", type=pathlib.Path)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="determinism: kernels run at once (default: up to 2)")
    args = parser.parse_args(argv)
    missing = [p for p in args.notebooks if not p.is_file()]
    if missing:
        parser.error(f"no such notebook: {', '.join(map(str, missing))}")
    if args.command == "execute":
        for path in args.notebooks:
            execute(path)
    elif args.command == "normalize":
        for path in args.notebooks:
            normalize(path)
    elif args.command == "determinism":
        if args.jobs < 1:
            parser.error("--jobs must be >= 1")
        return 1 if determinism(args.notebooks, args.jobs) else 0
    else:
        bad = [p for p in args.notebooks if not is_normalized(p)]
        for path in bad:
            print(f"not normalised: {path} (run 'make execute' or 'make normalize')")
        if bad:
            return 1
        print(f"{len(args.notebooks)} notebooks normalised")
    return 0


if __name__ == "__main__":
    sys.exit(main())
