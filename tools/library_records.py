"""Record library outputs as data for the notebooks' checks, and recompute them for the tests.

    python tools/library_records.py --write            # (re)write every record
    python tools/library_records.py --write NAME ...   # only these
    python tools/library_records.py --check            # recompute and compare, exit 1 on a difference

Needs the reference extra (``make reference``: torch, transformers). A recorder is a function
``record_<name>()`` in a module of ``tools/recorders/`` (one module per topic); it calls the
library's own function and returns ``(function, source, inputs, outputs)``; ``--write`` stores
them in ``course_utils/data/library/<name>.json`` with the installed library's version. The
notebooks read the records through :func:`course_utils.data.library_record` and stay numpy-only.
``tests/test_library_records.py`` recomputes every stored record with the installed library, and
fails on a record no recorder here produces (so no record can be typed by hand).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIBRARY_DIR = ROOT / "course_utils" / "data" / "library"
RTOL = 1e-6


def _recorders() -> dict:
    """name -> recorder, from every ``record_<name>`` function in ``tools/recorders/*.py``
    (one module per topic)."""
    found = {}
    for path in sorted((ROOT / "tools" / "recorders").glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"recorders.{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for attr, value in vars(module).items():
            if attr.startswith("record_") and callable(value):
                name = attr[len("record_"):]
                if name in found:
                    raise ValueError(f"two recorders named {name!r} in tools/recorders/")
                found[name] = value
    return found


#: name -> recorder. A record's name is its file's stem in course_utils/data/library/.
RECORDERS = _recorders()


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return value


def compute(name: str) -> dict:
    """The record ``name`` as it would be written now, with the installed library's version."""
    import transformers

    function, source, inputs, outputs = RECORDERS[name]()
    return {"library": "transformers", "version": transformers.__version__, "function": function,
            "source": source, "recorded_by": f"tools/library_records.py {name}",
            "inputs": {k: _jsonable(v) for k, v in inputs.items()},
            "outputs": {k: _jsonable(np.asarray(v)) for k, v in outputs.items()}}


def differences(name: str) -> list[str]:
    """How the stored record ``name`` differs from what the installed library computes now."""
    stored = json.loads((LIBRARY_DIR / f"{name}.json").read_text())
    fresh = compute(name)
    problems = []
    for key in ("function", "source", "inputs"):
        if stored[key] != fresh[key]:
            problems.append(f"{name}: {key} differs: stored {stored[key]!r:.80}, now {fresh[key]!r:.80}")
    for key, value in fresh["outputs"].items():
        if key not in stored["outputs"]:
            problems.append(f"{name}: output {key!r} is not stored")
            continue
        a, b = np.asarray(stored["outputs"][key], float), np.asarray(value, float)
        # A recorder whose outputs are long float32 sums (a whole model's forward pass) states
        # an absolute tolerance as its ``atol`` attribute: another CPU or thread count sums in
        # another order.
        atol = getattr(RECORDERS[name], "atol", 0.0)
        if a.shape != b.shape or not np.allclose(a, b, rtol=RTOL, atol=atol):
            problems.append(f"{name}: output {key!r} differs from transformers "
                            f"{fresh['version']} (stored with {stored['version']})")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="records to write (default: all)")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(RECORDERS))
    if unknown:
        parser.error(f"unknown record(s) {unknown}; known: {sorted(RECORDERS)}")
    names = args.names or sorted(RECORDERS)
    if args.write:
        LIBRARY_DIR.mkdir(parents=True, exist_ok=True)
        for name in names:
            (LIBRARY_DIR / f"{name}.json").write_text(json.dumps(compute(name), indent=1) + "\n")
            print(f"wrote {name}")
        return 0
    problems = [p for name in names for p in differences(name)]
    print("\n".join(problems) or f"{len(names)} records agree with the installed transformers")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
