"""Execute, normalise and check the course notebooks.

    python tools/notebooks.py execute NOTEBOOK...   # run top to bottom in a fresh kernel, normalise, save
    python tools/notebooks.py normalize NOTEBOOK... # normalise in place
    python tools/notebooks.py check NOTEBOOK...     # exit 1 if a notebook is not normalised or
                                                    # breaks the line length or chapter template
    python tools/notebooks.py determinism NOTEBOOK...  # run each twice (temporary copies), compare
                                                       # outputs, streams joined as nbval joins them
    python tools/notebooks.py retag-solutions NOTEBOOK...  # give solution cells the metadata of
                                                           # rule 4 (folds code and outputs)
    python tools/notebooks.py install-cell NOTEBOOK...  # put the install cell (rule 0) first, or
                                                        # bring it up to date
    python tools/notebooks.py quiz-cell NOTEBOOK...     # end a chapter with its self-check questions

Normalised means: outputs and execution counts kept; volatile metadata (timings, widget state,
the kernel's exact Python version) dropped; written by nbformat with sorted keys, so diffs stay small.
Normalising also writes each figure's caption into a markdown cell right after the figure,
``**Figure k.** <caption>``, tagged ``remove-cell``: Jupyter shows it, the web site (which shows
the caption from the metadata under the numbered figure) leaves it out.

The install cell (rule 0): the first code cell of every notebook installs the course's package
from the repository configured in pyproject.toml (``[tool.course]``, see tools/repository.py),
``git+URL@BRANCH``, where ``course_utils`` cannot be imported (Colab), and does nothing and prints
nothing where it can (``make setup``, Binder). ``COURSE_INSTALL_FROM`` in the environment names
another source (a local checkout, for the test). The site leaves it out (tag ``remove-cell``).
``install-cell`` writes it; ``tools/repository.py check`` and the tests find a stale one.

``check`` also enforces, on every notebook, that code lines and printed lines (streams and
``text/plain``) are at most 88 characters (LINE_LENGTH), and, on every chapter (notebooks 01 and
up), the chapter template:

1. Title and intro. The first cell is markdown and starts ``# NN · Title`` (NN = the file's
   number). It holds ``**Learning objectives.**``, ``**Prerequisites.**``, ``**Time.** About N
   minutes`` and a link to the notation page, ``(../notation.md)``.
2. Set-up. The first code cell after the install cell calls ``use_course_style()``, is tagged ``hide-input`` and has
   ``{"mystnb": {"code_prompt_show": "Show the set-up"}}`` (folded on the site).
3. Headings. Level-2 headings (``## ``) are not numbered (no ``## 1.``); the last four are, in
   this order, ``## Common misconceptions``, ``## Summary``, ``## Exercises``, ``## References``,
   then optionally ``## Self-check``: a markdown cell and one code cell that shows the chapter's
   questions (``course_utils.quiz.show_quiz``, data in ``course_utils/data/quizzes/NN.json``),
   written by ``quiz-cell``.
4. Exercises. In the Exercises section each exercise starts a markdown cell with
   ``**Exercise N.M.**`` (N = chapter number, M = 1, 2, ... in order) and is followed, before the
   next exercise, by exactly one solution: a code cell whose first line is
   ``# Solution to Exercise N.M`` (a neutral comment, so a collapsed cell in Jupyter shows no
   answer) with the metadata SOLUTION_METADATA: tagged ``hide-cell``, so that the site folds its
   code AND its outputs behind one "Show solution" toggle (``hide-input`` would fold the code
   only and leave the answer it prints in view), and ``jupyter.source_hidden`` and
   ``jupyter.outputs_hidden``, so that JupyterLab folds both too. ``retag-solutions`` converts a
   solution cell of the older form (tagged ``hide-input``) to this one. No other cell of the
   section is tagged ``hide-input`` or ``hide-cell``; set-up and check cells keep ``hide-input``
   (their outputs stay in view).
5. Check cells. A code cell that only runs checks (it calls ``check_close``/``check_true``,
   prints nothing but ``PASS`` lines and their witnesses, shows no figure, defines no function, and nothing it
   assigns is used by a later cell) is tagged ``hide-input`` with
   ``{"mystnb": {"code_prompt_show": "Show the check"}}``: its PASS lines stay on the page.
6. Figures. Every figure output (a PNG, or a moving figure of ``course_utils.interactive``) has
   ``mystnb.figure.name`` (``fig-NN-...``) and ``caption`` and ``mystnb.image.alt``; a PNG was
   drawn by ``use_course_style()``'s formatter (its output metadata has ``width`` and
   ``smallest_text_px``), and its smallest text is at least 9 px when the
   figure is shrunk to the site's column (SITE_COLUMN_PX); a markdown cell refers to it as
   ``[Figure k](#fig-NN-...)`` with its number k (figures are numbered from 1 on each page).
7. References. The References cell links to the bibliography page, ``(../bibliography.md)``.
8. Witnesses. Every ``check_close``/``check_true`` call passes ``witness="<kind>: <detail>"`` and
   every PASS line it printed carries the ``[kind: detail]`` tag (``tools/witnesses.py`` prints
   the counts per notebook and kind).
9. Glossary. Each term of the glossary page is a link to its entry where the chapter first uses
   it (``tools/glossary_links.py`` says what counts as a use, and ``--link`` adds the links).

Notebook 00 (the set-up check) only has to meet the line length.
"""

from __future__ import annotations

import argparse
import ast
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
LINE_LENGTH = 88
SITE_COLUMN_PX = 720  # width of a figure in the site's text column at 1280 px (CSS pixels)
MIN_TEXT_PX = 9.0
CAPTION_TAG = "remove-cell"
PROMPTS = {"setup": "Show the set-up", "check": "Show the check", "solution": "Show solution"}
SOLUTION_TAG = "hide-cell"
SOLUTION_METADATA = {
    "jupyter": {"source_hidden": True, "outputs_hidden": True},
    "mystnb": {"code_prompt_show": PROMPTS["solution"], "code_prompt_hide": "Hide solution"},
    "tags": [SOLUTION_TAG],
}
CHECKS = {"check_close", "check_true"}
LAST_SECTIONS = ["Common misconceptions", "Summary", "Exercises", "References"]


def _is_caption_cell(cell) -> bool:
    return (cell.cell_type == "markdown" and CAPTION_TAG in cell.metadata.get("tags", [])
            and cell.source.startswith("**Figure "))


def _is_moving_figure(output) -> bool:
    """A moving figure of ``course_utils.interactive`` (HTML with its frames and sliders)."""
    return 'class="course-explorer"' in "".join(output.get("data", {}).get("text/html", ""))


def _figure_meta(cell) -> dict | None:
    """The ``mystnb.figure`` metadata of a code cell that shows a figure (a PNG, or a moving
    figure, numbered and captioned like the others), else None."""
    if cell.cell_type != "code" or not any(
            "image/png" in output.get("data", {}) or _is_moving_figure(output)
            for output in cell.get("outputs", [])):
        return None
    return cell.metadata.get("mystnb", {}).get("figure", {})


def with_caption_cells(cells: list) -> list:
    """``cells`` with a caption cell (``**Figure k.** caption``, tagged remove-cell) after each
    captioned figure, and no stale caption cells."""
    result, number = [], 0
    for cell in cells:
        if _is_caption_cell(cell):
            continue
        result.append(cell)
        meta = _figure_meta(cell)
        if meta is not None and meta.get("caption"):
            number += 1
            result.append(nbformat.v4.new_markdown_cell(
                f"**Figure {number}.** {meta['caption'].strip()}",
                id=f"caption-{meta.get('name') or number}"[:64],
                metadata={"tags": [CAPTION_TAG]}))
    return result


def normalized(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Return a copy of ``nb`` with volatile metadata removed and figure caption cells in place."""
    nb = copy.deepcopy(nb)
    nb.cells = with_caption_cells(nb.cells)
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

    # No progress bars in committed outputs (course_utils.lab reads it; the kernel inherits it).
    os.environ["COURSE_PROGRESS"] = "0"

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

    os.environ["COURSE_PROGRESS"] = "0"  # as execute()
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


def _output_text(output) -> str:
    if output.get("output_type") == "stream":
        return "".join(output.get("text", ""))
    return "".join(output.get("data", {}).get("text/plain", ""))


def line_problems(nb) -> list[str]:
    """Code or printed lines longer than LINE_LENGTH."""
    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for number, line in enumerate(cell.source.splitlines(), 1):
            if len(line) > LINE_LENGTH:
                problems.append(f"cell {index}: code line {number} has {len(line)} characters "
                                f"(at most {LINE_LENGTH})")
        for output in cell.get("outputs", []):
            for line in _output_text(output).splitlines():
                if len(line) > LINE_LENGTH:
                    problems.append(f"cell {index}: a printed line has {len(line)} characters "
                                    f"(at most {LINE_LENGTH}): {line[:50]!r}...")
                    break
    return problems


def _tags(cell) -> list:
    return cell.metadata.get("tags", [])


def _prompt(cell) -> str | None:
    return cell.metadata.get("mystnb", {}).get("code_prompt_show")


def _parsed(source: str):
    try:
        return ast.parse(source)
    except SyntaxError:  # IPython magics: not a check cell
        return None


def _names_used(tree) -> set:
    return {node.id for node in ast.walk(tree)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


def _names_bound(tree) -> set:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def check_only_cells(cells: list) -> list[int]:
    """Indices of the code cells that only run checks (rule 5 of the template)."""
    trees = [_parsed(cell.source) if cell.cell_type == "code" else None for cell in cells]
    found = []
    for index, (cell, tree) in enumerate(zip(cells, trees, strict=True)):
        if tree is None or cell.source.lstrip().startswith("# Solution"):
            continue
        calls = {node.func.id for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
        defines = any(isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom))
                      for node in ast.walk(tree))
        outputs = cell.get("outputs", [])
        lines = "".join(_output_text(o) for o in outputs).splitlines()
        if (not calls & CHECKS or defines or not lines
                or any(o.get("output_type") != "stream" for o in outputs)
                or not all(line.startswith(("PASS  ", "      [", "       ")) for line in lines)):
            continue
        later = set().union(*(_names_used(t) for t in trees[index + 1:] if t is not None))
        if not _names_bound(tree) & later:
            found.append(index)
    return found


def _headings(cell) -> list[str]:
    return [line[3:].strip() for line in cell.source.splitlines() if line.startswith("## ")]


def template_problems(path: pathlib.Path, nb) -> list[str]:
    """How a chapter notebook departs from the chapter template (see the module docstring)."""
    match = re.match(r"(\d\d)_", path.name)
    if not match or int(match.group(1)) == 0:
        return []
    number = match.group(1)
    chapter = str(int(number))
    cells, problems = nb.cells, []
    first = cells[0] if cells else None
    intro = first.source if first is not None and first.cell_type == "markdown" else ""
    if not re.match(rf"# {number} · \S", intro):
        problems.append(f"the first cell must start with the title '# {number} · <title>'")
    for needed, what in ((r"\*\*Learning objectives\.\*\*", "**Learning objectives.**"),
                         (r"\*\*Prerequisites\.\*\*", "**Prerequisites.**"),
                         (r"\*\*Time\.\*\* About \d+ minutes", "**Time.** About N minutes"),
                         (r"\]\(\.\./notation\.md(#[^)]*)?\)", "a link to (../notation.md)")):
        if not re.search(needed, intro):
            problems.append(f"the first cell must hold {what}")
    code = [i for i, cell in enumerate(cells)
            if cell.cell_type == "code" and cell.get("id") != INSTALL_CELL_ID]
    if code:
        setup = cells[code[0]]
        if ("use_course_style()" not in setup.source or "hide-input" not in _tags(setup)
                or _prompt(setup) != PROMPTS["setup"]):
            problems.append(f"cell {code[0]}: the set-up cell must call use_course_style(), "
                            f"be tagged hide-input and have code_prompt_show {PROMPTS['setup']!r}")
    headings = [(i, h) for i, cell in enumerate(cells) if cell.cell_type == "markdown"
                for h in _headings(cell)]
    numbered = [h for _, h in headings if re.match(r"\d+\.\s", h)]
    if numbered:
        problems.append(f"level-2 headings must not be numbered: {numbered}")
    if headings and headings[-1][1] == QUIZ_HEADING:
        headings = headings[:-1]
    if [h for _, h in headings[-4:]] != LAST_SECTIONS:
        problems.append(f"the last level-2 headings must be {LAST_SECTIONS} (then "
                        f"{QUIZ_HEADING!r}), got {[h for _, h in headings[-4:]]}")
    sections = dict((h, i) for i, h in headings)
    start, end = sections.get("Exercises"), sections.get("References")
    if start is not None and end is not None:
        problems += _exercise_problems(cells, start, end, chapter)
    for index in check_only_cells(cells):
        cell = cells[index]
        if "hide-input" not in _tags(cell) or _prompt(cell) != PROMPTS["check"]:
            problems.append(f"cell {index} only runs checks: tag it hide-input with "
                            f"code_prompt_show {PROMPTS['check']!r}")
    problems += _figure_problems(cells)
    if end is not None and "(../bibliography.md" not in cells[end].source:
        problems.append("the References cell must link to (../bibliography.md)")
    return problems


def _exercise_problems(cells, start, end, chapter) -> list[str]:
    problems, expected, current, solutions = [], 1, None, 0
    for index in range(start, end + 1):
        cell = cells[index]
        found = re.findall(r"^\*\*Exercise (\d+)\.(\d+)\.\*\*", cell.source, re.M) \
            if cell.cell_type == "markdown" else []
        for chap, number in found:
            if current is not None and solutions != 1:
                problems.append(f"Exercise {chapter}.{current} has {solutions} solution cells "
                                "(one is needed)")
            if chap != chapter or int(number) != expected:
                problems.append(f"cell {index}: expected **Exercise {chapter}.{expected}.**, "
                                f"got **Exercise {chap}.{number}.**")
            current, solutions, expected = number, 0, int(number) + 1
        if cell.cell_type != "code":
            continue
        first = (cell.source.splitlines() or [""])[0]
        if {"hide-input", SOLUTION_TAG} & set(_tags(cell)) or first.startswith("# Solution"):
            solutions += 1
            wanted = f"# Solution to Exercise {chapter}.{current}"
            if current is None or first.strip() != wanted:
                problems.append(f"cell {index}: a solution's first line must be {wanted!r}, "
                                f"got {first!r}")
            if not is_folded_solution(cell):
                problems.append(f"cell {index}: a solution must be tagged {SOLUTION_TAG} (code "
                                "and outputs folded) with the metadata "
                                f"{json.dumps(SOLUTION_METADATA, sort_keys=True)} "
                                "(run `tools/notebooks.py retag-solutions`)")
    if current is None:
        problems.append("the Exercises section has no **Exercise N.M.** paragraph")
    elif solutions != 1:
        problems.append(f"Exercise {chapter}.{current} has {solutions} solution cells "
                        "(one is needed)")
    return problems


def is_folded_solution(cell) -> bool:
    """Whether a solution cell folds its code and its outputs (rule 4)."""
    tags = _tags(cell)
    jupyter = cell.metadata.get("jupyter", {})
    return (SOLUTION_TAG in tags and "hide-input" not in tags and "hide-output" not in tags
            and _prompt(cell) == PROMPTS["solution"]
            and jupyter.get("source_hidden") is True and jupyter.get("outputs_hidden") is True)


def retagged_solutions(nb) -> int:
    """Give every solution cell of ``nb`` (first line ``# Solution to Exercise``) the metadata
    of rule 4, in place; other tags and metadata are kept. Returns the number of cells changed."""
    changed = 0
    for cell in nb.cells:
        if cell.cell_type != "code" or not cell.source.startswith("# Solution to Exercise"):
            continue
        before = json.dumps(cell.metadata, sort_keys=True)
        tags = [t for t in _tags(cell) if t not in ("hide-input", "hide-output", SOLUTION_TAG)]
        cell.metadata["tags"] = [*tags, SOLUTION_TAG]
        cell.metadata.setdefault("jupyter", {}).update(SOLUTION_METADATA["jupyter"])
        cell.metadata.setdefault("mystnb", {}).update(SOLUTION_METADATA["mystnb"])
        changed += json.dumps(cell.metadata, sort_keys=True) != before
    return changed


def retag_solutions(path: pathlib.Path) -> int:
    """Retag the solution cells of the notebook at ``path`` and save it normalised."""
    nb = nbformat.read(path, as_version=4)
    changed = retagged_solutions(nb)
    path.write_text(_text(normalized(nb)))
    print(f"{path}: {changed} solution cell(s) retagged")
    return changed


def _figure_problems(cells) -> list[str]:
    problems, number = [], 0
    prose = "\n".join(cell.source for cell in cells
                      if cell.cell_type == "markdown" and not _is_caption_cell(cell))
    for index, cell in enumerate(cells):
        meta = _figure_meta(cell)
        if meta is None:
            continue
        number += 1
        name = meta.get("name", "")
        image = cell.metadata.get("mystnb", {}).get("image", {})
        if not (name and meta.get("caption") and image.get("alt")):
            problems.append(f"cell {index}: a figure needs mystnb.figure.name and caption and "
                            "mystnb.image.alt")
        elif f"[Figure {number}](#{name})" not in prose:
            problems.append(f"cell {index}: no markdown cell refers to the figure as "
                            f"[Figure {number}](#{name})")
        for output in cell.outputs:
            if "image/png" not in output.get("data", {}):
                continue
            shown = output.get("metadata", {}).get("image/png", {})
            width, text = shown.get("width"), shown.get("smallest_text_px")
            if not width:
                problems.append(f"cell {index}: the figure was not drawn by use_course_style()'s "
                                "formatter (no width in its output metadata)")
            elif text is not None and text * min(1.0, SITE_COLUMN_PX / width) < MIN_TEXT_PX:
                problems.append(
                    f"cell {index}: figure {name!r} is {width} px wide and its smallest text "
                    f"{text} px; shrunk to the {SITE_COLUMN_PX} px column that is "
                    f"{text * min(1.0, SITE_COLUMN_PX / width):.1f} px (at least {MIN_TEXT_PX}): "
                    "make the figure narrower or its text larger")
    return problems


def problems_of(path: pathlib.Path) -> list[str]:
    """Everything ``check`` reports for one notebook."""
    nb = nbformat.read(path, as_version=4)
    problems = [] if path.read_text() == _text(normalized(nb)) else [
        "not normalised (run 'make execute' or 'make normalize')"]
    problems += line_problems(nb) + template_problems(path, nb) + witness_problems(nb)
    match = re.match(r"(\d\d)_", path.name)
    if match and int(match.group(1)) > 0:
        from glossary_links import unlinked

        problems += [f"rule 9: the first use of {item} is not a link to the glossary "
                     "(tools/glossary_links.py --link adds it)" for item in unlinked(path)]
    return problems


def witness_problems(nb) -> list[str]:
    """Checks that name no witness (rule 8): a call without ``witness=`` or a PASS line without
    its ``[kind: detail]`` tag (see ``tools/witnesses.py``)."""
    from witnesses import calls_without_witness, pass_lines

    raw = json.loads(nbformat.writes(nb))
    return calls_without_witness(raw) + [
        f"cell {item['cell']}: the PASS line {item['name'][:50]!r} names no witness"
        for item in pass_lines(raw) if item["kind"] is None]


INSTALL_CELL_ID = "install-course"
INSTALL_VARIABLE = "COURSE_INSTALL_FROM"


def install_cell_source(url: str, branch: str) -> str:
    """The install cell's code for a repository URL (empty: none configured) and branch."""
    source = f"git+{url}@{branch}" if url else ""
    return "\n".join([
        "# Installs the course's package where it is missing (as on Colab); does nothing where",
        "# it is installed (make setup, Binder). From pyproject.toml's repository-url.",
        "import importlib.util",
        "import os",
        "import subprocess",
        "import sys",
        "",
        f'_source = os.environ.get("{INSTALL_VARIABLE}") or (',
        f'    "{source}")',
        'if importlib.util.find_spec("course_utils") is None:',
        "    if not _source:",
        "        raise ModuleNotFoundError(",
        '            "course_utils is missing and no repository is configured: run "',
        "            \"`pip install -e .` in a clone of the course (its README)\")",
        '    subprocess.run([sys.executable, "-m", "pip", "install", "-q", _source], check=True)',
        "    importlib.invalidate_caches()",
    ])


def _configured_repository() -> tuple[str, str]:
    from repository import configured

    return configured()


def install_cell_problems(path: pathlib.Path) -> list[str]:
    """How a notebook's install cell departs from rule 0 (missing, not first, stale)."""
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    wanted = install_cell_source(*_configured_repository())
    if not code or code[0].get("id") != INSTALL_CELL_ID:
        return [f"the first code cell is not the install cell (tools/notebooks.py install-cell "
                f"notebooks/{path.name})"]
    cell = code[0]
    problems = []
    if cell.source != wanted:
        problems.append("the install cell is not the one pyproject.toml's repository-url gives "
                        f"(tools/notebooks.py install-cell notebooks/{path.name})")
    if cell.get("outputs") or "remove-cell" not in _tags(cell):
        problems.append("the install cell must print nothing here and be tagged remove-cell")
    return problems


def write_install_cell(path: pathlib.Path) -> bool:
    """Insert the install cell before the first code cell, or update it; True if it changed."""
    nb = nbformat.read(path, as_version=4)
    source = install_cell_source(*_configured_repository())
    existing = [cell for cell in nb.cells if cell.get("id") == INSTALL_CELL_ID]
    if existing:
        if existing[0].source == source:
            return False
        existing[0].source = source
    else:
        cell = nbformat.v4.new_code_cell(source, id=INSTALL_CELL_ID,
                                         metadata={"tags": ["remove-cell"]})
        first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
        nb.cells.insert(first, cell)
    path.write_text(_text(normalized(nb)))
    return True


QUIZ_HEADING = "Self-check"
QUIZ_TEXT = (
    "## Self-check\n\n"
    "A few quick questions on this chapter. Click an answer, or type a number and press Enter: "
    "the page says whether it is right, and why. They answer on the web page without a kernel; "
    "in Jupyter, run the cell below.")


def write_quiz_cell(path: pathlib.Path) -> bool:
    """End a chapter with its Self-check section (rule 3), or update it; True if it changed."""
    match = re.match(r"(\d\d)_", path.name)
    if not match:
        raise ValueError(f"notebook name must start with its number NN_, got {path.name!r}")
    chapter = int(match.group(1))
    nb = nbformat.read(path, as_version=4)
    code = f"from course_utils.quiz import show_quiz\n\nshow_quiz({chapter})"
    wanted = [
        nbformat.v4.new_markdown_cell(QUIZ_TEXT, id="self-check-text"),
        nbformat.v4.new_code_cell(code, id="self-check",
                                  metadata={"tags": ["remove-input", "nbval-ignore-output"]}),
    ]
    kept = [cell for cell in nb.cells if cell.get("id") not in ("self-check-text", "self-check")]
    old = [cell for cell in nb.cells if cell.get("id") in ("self-check-text", "self-check")]
    if [(c.cell_type, c.source) for c in old] == [(c.cell_type, c.source) for c in wanted]:
        return False
    nb.cells = kept + wanted
    path.write_text(_text(normalized(nb)))
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("execute", "normalize", "check", "determinism",
                                                 "retag-solutions", "install-cell", "quiz-cell"))
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
    elif args.command == "install-cell":
        for path in args.notebooks:
            print(f"{path}: {'install cell written' if write_install_cell(path) else 'up to date'}")
    elif args.command == "quiz-cell":
        for path in args.notebooks:
            print(f"{path}: {'self-check cell written' if write_quiz_cell(path) else 'up to date'}")
    elif args.command == "retag-solutions":
        for path in args.notebooks:
            retag_solutions(path)
    elif args.command == "determinism":
        if args.jobs < 1:
            parser.error("--jobs must be >= 1")
        return 1 if determinism(args.notebooks, args.jobs) else 0
    else:
        bad = 0
        for path in args.notebooks:
            problems = problems_of(path)
            bad += bool(problems)
            for problem in problems:
                print(f"{path}: {problem}")
        if bad:
            print(f"{bad} of {len(args.notebooks)} notebooks need changes")
            return 1
        print(f"{len(args.notebooks)} notebooks normalised, within {LINE_LENGTH} characters, "
              "and chapters follow the template")
    return 0


if __name__ == "__main__":
    sys.exit(main())
