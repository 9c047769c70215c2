"""Insert the course's moving figures (``course_utils.interactive``) into the chapters.

    python tools/insert_interactive.py NOTEBOOK...   # insert where missing, save normalised
    python tools/insert_interactive.py --check NOTEBOOK...  # exit 1 if one is missing

Each figure goes at the end of a section (just before the next level-2 heading) of one chapter,
found by the start of the section's heading, as a short markdown cell saying what to move and a
code cell that draws the figure. The cells have fixed ids (``explore-<name>``), so running the
tool again changes nothing. The code cell is tagged ``nbval-ignore-output``: like a figure's PNG,
which nbval does not compare either, its pictures may differ in a few pixels between machines;
``tests/test_interactive.py`` checks the figures themselves. Run
``tools/notebooks.py execute`` on a notebook afterwards to store the figure's output.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import nbformat

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from notebooks import _text, normalized  # noqa: E402

# notebook file prefix -> list of (section heading start, explorer function, lead-in markdown)
PLACES = {
    "05_": [(
        "## RoPE rotates each pair of channels", "rope_base_explorer",
        "**Move the base.** The slider below changes the base $b$ and redraws the wavelength "
        "$\\lambda_i = 2\\pi/\\theta_i$ of every pair $i$ of a 128-channel head, on a log "
        "scale, against a context of 4,096 tokens (dashed). A larger base lifts the slow pairs "
        "above the line: they turn less than once within the context. The pictures are drawn in "
        "advance for each setting, so the slider works without a running kernel."),
    ],
    "06_": [(
        "## The bias matrices", "alibi_explorer",
        "**Move the head count.** The slider below changes the number of heads $H$: on the left "
        "the slopes $mu_h$ on a log scale, on the right the bias $-mu_h\\,(m - n)$ of the last "
        "query in each head. More heads fill the same range of slopes more densely, from steep "
        "heads that see only their neighbours to flat ones that see the whole input. The "
        "pictures are drawn in advance, so the slider works without a running kernel."),
    ],
    "07_": [(
        "## Six ways to change the frequencies", "rope_scaling_explorer",
        "**Move the factor.** The slider below changes the factor $s$ and redraws the "
        "wavelength of every pair before and after Position Interpolation, NTK-aware scaling "
        "and YaRN ($d = 128$, $b = 10000$, $L = 4096$). PI lifts every pair by $s$; NTK-aware "
        "scaling leaves the fast pairs almost as they were and stretches the slow ones; YaRN "
        "keeps the fast pairs exactly and interpolates the slow ones, with its ramp between. "
        "The pictures are drawn in advance, so the slider works without a running kernel."),
    ],
    "10_": [(
        "## M-RoPE: three position ids per token", "mrope_explorer",
        "**Move the frame and the grid.** The sliders below pick a video's grid of tokens per "
        "frame (after $2 \\times 2$ merging) and one of its four frames, and show the temporal, "
        "height and width ids of that frame's tokens. Only the temporal id changes from frame "
        "to frame; the text after the video resumes at the start plus the larger side of the "
        "grid. The pictures are drawn in advance, so the sliders work without a running kernel."),
    ],
}


def _cell_id(function: str) -> str:
    return "explore-" + function.removesuffix("_explorer").replace("_", "-")


def _place(nb, heading: str) -> int | None:
    """Index before which a cell ends the section that starts with ``heading``."""
    start = next((i for i, cell in enumerate(nb.cells) if cell.cell_type == "markdown"
                  and any(line.startswith(heading) for line in cell.source.splitlines())), None)
    if start is None:
        return None
    for index in range(start + 1, len(nb.cells)):
        cell = nb.cells[index]
        if cell.cell_type == "markdown" and any(
                line.startswith("## ") for line in cell.source.splitlines()):
            return index
    return len(nb.cells)


def missing(path: pathlib.Path, nb) -> list[str]:
    places = next((v for k, v in PLACES.items() if path.name.startswith(k)), [])
    ids = {cell.get("id") for cell in nb.cells}
    return [function for _, function, _ in places if _cell_id(function) not in ids]


def insert(path: pathlib.Path) -> int:
    """Insert the figures ``path`` lacks; return how many were inserted."""
    nb = nbformat.read(path, as_version=4)
    places = next((v for k, v in PLACES.items() if path.name.startswith(k)), [])
    added = 0
    for heading, function, lead in places:
        if function not in missing(path, nb):
            continue
        index = _place(nb, heading)
        if index is None:
            raise SystemExit(f"{path}: no section starting {heading!r}")
        cell_id = _cell_id(function)
        code = nbformat.v4.new_code_cell(
            f"from course_utils.interactive import {function}\n\n{function}()",
            id=cell_id, metadata={"tags": ["nbval-ignore-output"]})
        text = nbformat.v4.new_markdown_cell(lead, id=f"{cell_id}-lead")
        nb.cells[index:index] = [text, code]
        added += 1
    if added:
        path.write_text(_text(normalized(nb)))
    print(f"{path}: {added} figure(s) inserted")
    return added


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=pathlib.Path)
    parser.add_argument("--check", action="store_true",
                        help="only report notebooks that lack their figures")
    args = parser.parse_args(argv)
    if args.check:
        lacking = {path: missing(path, nbformat.read(path, as_version=4))
                   for path in args.notebooks}
        for path, functions in lacking.items():
            for function in functions:
                print(f"{path}: no {function}() cell")
        return 1 if any(lacking.values()) else 0
    for path in args.notebooks:
        insert(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
