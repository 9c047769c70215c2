"""Execute, normalise and check the course notebooks.

    python tools/notebooks.py execute NOTEBOOK...   # run top to bottom in a fresh kernel, normalise, save
    python tools/notebooks.py normalize NOTEBOOK... # normalise in place
    python tools/notebooks.py check NOTEBOOK...     # exit 1 if any notebook is not normalised

Normalised means: outputs and execution counts kept; volatile metadata (timings, widget state,
the kernel's exact Python version) dropped; written by nbformat with sorted keys, so diffs stay small.
"""

from __future__ import annotations

import argparse
import copy
import pathlib
import sys

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
            for output in cell.get("outputs", []):
                if "metadata" in output:
                    output.metadata = nbformat.from_dict(
                        {k: v for k, v in output.metadata.items() if k != "execution"}
                    )
        else:
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
    return nb


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


def normalize(path: pathlib.Path) -> None:
    nb = nbformat.read(path, as_version=4)
    path.write_text(_text(normalized(nb)))


def is_normalized(path: pathlib.Path) -> bool:
    nb = nbformat.read(path, as_version=4)
    return path.read_text() == _text(normalized(nb))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("execute", "normalize", "check"))
    parser.add_argument("notebooks", nargs="*", type=pathlib.Path)
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
