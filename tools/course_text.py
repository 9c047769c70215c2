"""Write the text chapter 13 measures a released model on: the course's own prose.

    python tools/course_text.py [--check]

The text is the markdown cells of notebooks 01 to 12, in order, exactly as stored (no code cells,
no outputs), each cell's source followed by a blank line, each notebook preceded by a line
``# notebooks/<name>``. It is written once to ``course_utils/data/text/course_prose.txt`` and its
sha256 is stored in ``course_utils/real_model/measures.py`` (``CORPUS_SHA256``), which checks it
on every read. The stored file is the data: it does not follow later edits of the chapters (the
records and ``course_utils/data/records/long_context.json`` were measured on it), so this tool is run again only
to replace the text on purpose, followed by the recorders and ``make long-context``.
``--check`` says whether the notebooks still give the stored text (information, not an error).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "course_utils" / "data" / "text" / "course_prose.txt"
CHAPTERS = [f"{n:02d}" for n in range(1, 13)]


def course_prose(root=ROOT):
    """The markdown cells of notebooks 01-12 in order, as one string."""
    parts = []
    for prefix in CHAPTERS:
        (path,) = sorted((root / "notebooks").glob(f"{prefix}_*.ipynb"))
        parts.append(f"# notebooks/{path.name}\n")
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                source = "".join(cell["source"]).strip()
                if source:
                    parts.append(source + "\n")
    return "\n".join(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare the notebooks' prose with the stored text, write nothing")
    args = parser.parse_args(argv)
    text = course_prose()
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print(f"{OUT.relative_to(ROOT)}: " + ("the notebooks give the stored text" if same else
              "the notebooks' prose has changed since it was stored (the stored file stays)"))
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8", newline="\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(text)} characters, sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
