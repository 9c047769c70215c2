"""The core run of the context-extension lab (notebook 12), written into the repository.

    python tools/lab2_core.py [--workers N]   # what `make lab2-core` runs

Runs ``run_context_extension`` with the task, RoPE base and settings of
``course_utils.lab.extension.CONTEXT_LAB``, the notebook's: 3 pre-trainings, 3 models trained at
4L and 36 fine-tunes (about 2 minutes on 2 free cores). Writes

* ``course_utils/data/records/lab2_core.json``: the settings, the run's settings, the
  pre-trained model's config, the command, the versions and the wall time;
* ``course_utils/data/records/lab2_core.npz``: every array of the run (correct predictions by
  position and by distance, losses, fine-tune curves, baselines) and the pre-trained parameters.

Notebook 12 reads them unless its setup cell sets ``LIVE = True``, and retrains part of the run
to check it against the record.
"""

from __future__ import annotations

import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lab1_results import record_arguments, record_meta  # noqa: E402

from course_utils.lab.extension import (  # noqa: E402
    CONTEXT_LAB,
    run_context_extension,
    write_extension,
)
from course_utils.lab.model import ModelConfig  # noqa: E402
from course_utils.lab.tasks import make_task  # noqa: E402

OUT = ROOT / "course_utils" / "data" / "records" / "lab2_core.json"


def main(argv: list[str] | None = None) -> int:
    args = record_arguments(__doc__, OUT, argv)
    task = make_task(**CONTEXT_LAB["task"])
    config = ModelConfig(scheme="rope", vocab_size=task.vocab_size,
                         rope_base=CONTEXT_LAB["rope_base"])
    settings = CONTEXT_LAB["settings"]
    start = time.perf_counter()
    run = run_context_extension(task, config, **settings, workers=args.workers, progress=False)
    wall = time.perf_counter() - start
    meta = record_meta("lab2_core.py", argv, wall)
    write_extension(args.out, run, settings, meta=meta)
    print(f"wrote {args.out.name} and {args.out.with_suffix('.npz').name} ({wall:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
