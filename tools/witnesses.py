"""The witness report: per notebook, the checks by the kind of witness they name.

    python tools/witnesses.py notebooks/*.ipynb           # table of counts; exit 1 on a missing witness
    python tools/witnesses.py --list notebooks/05_rope.ipynb   # also every check with its witness

Every ``check_close``/``check_true`` call in a notebook must pass ``witness="<kind>: <detail>"``
(see ``course_utils/checks.py`` for the kinds). The report reads two things:

- the code: every call to ``check_close``/``check_true`` must have a ``witness=`` argument;
- the committed outputs: every ``PASS`` line the checks printed, with the ``[kind: detail]`` tag
  after it (nbval re-runs the notebooks and compares these outputs, so they are what the code
  prints). A check inside a loop prints one line per pass, and each line is counted; the column
  ``calls`` counts the ``check_close``/``check_true`` calls in the code, so that the two can be
  compared (more lines than calls: a loop; fewer: a call in a function called once per case).

Two other kinds of ``PASS`` line are counted apart: exercise verdicts (``PASS  Exercise N.M``),
which grade a learner's answer, and ``check_raises`` lines (``[raises <Error>]``), whose evidence is
the error message printed under them.
"""

from __future__ import annotations

import argparse
import ast
import json
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from course_utils.checks import WITNESS_KINDS  # noqa: E402

CHECKS = ("check_close", "check_true")
_TAG = re.compile(r"\[(" + "|".join(re.escape(k) for k in WITNESS_KINDS) + r"): (.+?)\]\s*$")
_RAISES = re.compile(r"\[raises \w+\]\s*$")


def _code_cells(nb: dict) -> list[tuple[int, dict]]:
    return [(i, c) for i, c in enumerate(nb.get("cells", [])) if c.get("cell_type") == "code"]


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def check_calls(nb: dict) -> int:
    """How many ``check_close``/``check_true`` calls the notebook's code contains."""
    count = 0
    for _, cell in _code_cells(nb):
        try:
            tree = ast.parse(_source(cell))
        except SyntaxError:
            continue
        count += sum(isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                     and node.func.id in CHECKS for node in ast.walk(tree))
    return count


def calls_without_witness(nb: dict) -> list[str]:
    """``cell k, line n: check_close(...)`` for every check call with no ``witness=`` argument."""
    missing = []
    for index, cell in _code_cells(nb):
        try:
            tree = ast.parse(_source(cell))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in CHECKS
                    and not any(k.arg == "witness" for k in node.keywords)):
                missing.append(f"cell {index}, line {node.lineno}: {node.func.id}(...) has no witness")
    return missing


def pass_lines(nb: dict) -> list[dict]:
    """Every PASS line printed in the notebook's outputs, with its witness kind and detail.

    Each item: ``cell``, ``name``, ``kind`` (a witness kind, ``"exercise"``, ``"raises"`` or
    ``None`` when the line names no witness) and ``detail``.
    """
    found = []
    for index, cell in _code_cells(nb):
        text = "".join("".join(o.get("text", "")) for o in cell.get("outputs", [])
                       if o.get("output_type") == "stream")
        lines = text.splitlines()
        for n, line in enumerate(lines):
            if not line.startswith("PASS  "):
                continue
            head = line[len("PASS  "):]
            if re.match(r"Exercise \d+\.\d+", head):
                found.append({"cell": index, "name": head, "kind": "exercise", "detail": ""})
                continue
            tail = head
            # A witness too long for the PASS line is printed on indented lines below it.
            if n + 1 < len(lines) and lines[n + 1].startswith("      ["):
                k = n + 1
                tail += " " + lines[k].strip()
                while not tail.endswith("]") and k + 1 < len(lines) and lines[k + 1].startswith(" " * 7):
                    k += 1
                    tail += " " + lines[k].strip()
            tag = _TAG.search(" ".join(tail.split()))
            if tag:
                name = tail[:tail.rfind("[" + tag.group(1))].strip()
                found.append({"cell": index, "name": name, "kind": tag.group(1),
                              "detail": tag.group(2)})
            elif _RAISES.search(tail):
                found.append({"cell": index, "name": tail, "kind": "raises", "detail": ""})
            else:
                found.append({"cell": index, "name": head, "kind": None, "detail": ""})
    return found


def report(paths: list[pathlib.Path], listing: bool = False) -> int:
    """Print the table (and with ``listing`` every check); return how many problems were found."""
    columns = list(WITNESS_KINDS) + ["none"]
    short = {"brute force": "brute", "closed form": "closed", "invariant": "invar"}
    header = (f"{'notebook':34s} {'checks':>6s} {'calls':>6s} " + " ".join(f"{short.get(c, c):>7s}" for c in columns)
              + f" {'raises':>6s} {'exerc.':>6s}")
    print(header)
    problems, totals = [], dict.fromkeys(columns + ["checks", "calls", "raises", "exercise"], 0)
    listed = []
    for path in paths:
        nb = json.loads(path.read_text())
        lines = pass_lines(nb)
        counts = dict.fromkeys(columns + ["raises", "exercise"], 0)
        for item in lines:
            counts[item["kind"] or "none"] += 1
            if item["kind"] is None:
                problems.append(f"{path.name}: cell {item['cell']}: a PASS line names no witness: "
                                f"{item['name'][:60]!r}")
            if listing and item["kind"] in WITNESS_KINDS:
                listed.append(f"{path.name[:2]} c{item['cell']:<3d} {item['kind']:11s} "
                              f"{item['name'][:60]}  <- {item['detail']}")
        problems += [f"{path.name}: {m}" for m in calls_without_witness(nb)]
        n_checks, n_calls = sum(counts[c] for c in columns), check_calls(nb)
        print(f"{path.name:34s} {n_checks:6d} {n_calls:6d} " + " ".join(f"{counts[c]:7d}" for c in columns)
              + f" {counts['raises']:6d} {counts['exercise']:6d}")
        for c in columns + ["raises", "exercise"]:
            totals[c] += counts[c]
        totals["checks"] += n_checks
        totals["calls"] += n_calls
    print(f"{'all notebooks':34s} {totals['checks']:6d} {totals['calls']:6d} "
          + " ".join(f"{totals[c]:7d}" for c in columns)
          + f" {totals['raises']:6d} {totals['exercise']:6d}")
    if listed:
        print()
        print("\n".join(listed))
    if problems:
        print(f"\n{len(problems)} check(s) without a witness:")
        print("\n".join("  " + p for p in problems))
    return len(problems)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="+", type=pathlib.Path)
    parser.add_argument("--list", action="store_true", help="also list every check with its witness")
    args = parser.parse_args(argv)
    return 1 if report(args.notebooks, args.list) else 0


if __name__ == "__main__":
    sys.exit(main())
