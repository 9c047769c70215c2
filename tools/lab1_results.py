"""The trained experiment of the length-generalisation lab (notebook 09), written into the repository.

    python tools/lab1_results.py [--workers N]   # what `make lab1-results` runs

Trains every row of notebook 09 (six schemes and the toy-base RoPE) on copy_back and recall, with
the tasks, seeds, steps and variants of ``course_utils.lab.train.LENGTH_LAB``: 2 tasks x 7 rows
x 3 seeds, 1000 Adam steps each (about 6 CPU-minutes). Writes

* ``course_utils/data/records/lab1_results.json``: the accuracies per row, test length and seed, the settings,
  the command, the versions and the wall time;
* ``course_utils/data/records/lab1_results.npz``: the training losses of both tasks and the trained parameters
  of copy_back (the notebook's attention plots read them), float64, bit for bit.

Notebook 09 reads them unless its setup cell sets ``LIVE = True``, and retrains one stored model
to check it against the record.
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from course_utils.lab.tasks import make_task  # noqa: E402
from course_utils.lab.train import LENGTH_LAB, run_experiment, write_experiments  # noqa: E402

OUT = ROOT / "course_utils" / "data" / "records" / "lab1_results.json"
PARAMS_OF = ("copy_back",)  # the tasks whose trained parameters the notebook reads


def settings_of(lab=LENGTH_LAB):
    """The keyword arguments of run_experiment for the lab (the same for both tasks)."""
    return {key: lab[key] for key in ("train_length", "multipliers", "seeds", "steps",
                                      "variants")}


def record_arguments(doc, out, argv):
    """``--workers`` and ``--out`` of a tool that stores a lab's record (this one, lab2_core)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=None,
                        help="processes training side by side (default: one per core)")
    parser.add_argument("--out", type=pathlib.Path, default=out, help="the JSON file to write")
    return parser.parse_args(argv)


def record_meta(script, argv, wall, **extra):
    """The command, versions and wall time a stored lab record carries."""
    return {"command": f"python tools/{script}"
            + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:])),
            **extra,
            "versions": {"python": platform.python_version(), "numpy": np.__version__,
                         "platform": platform.platform(), "machine": platform.machine()},
            "wall_seconds": round(wall, 1)}


def main(argv: list[str] | None = None) -> int:
    args = record_arguments(__doc__, OUT, argv)
    settings = settings_of()
    start = time.perf_counter()
    experiments = {}
    for name, task_settings in LENGTH_LAB["tasks"].items():
        task = make_task(name, **task_settings)
        experiments[name] = (run_experiment(task, **settings, workers=args.workers,
                                            progress=False), settings)
        print(f"{name}: {len(experiments[name][0].schemes)} rows x "
              f"{len(settings['seeds'])} seeds trained ({time.perf_counter() - start:.0f} s)",
              flush=True)
    wall = time.perf_counter() - start
    meta = record_meta("lab1_results.py", argv, wall, seeds=list(settings["seeds"]))
    write_experiments(args.out, experiments, meta=meta, params_of=PARAMS_OF)
    print(f"wrote {args.out.name} and {args.out.with_suffix('.npz').name} ({wall:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
