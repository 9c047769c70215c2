"""The full grid of the context-extension lab (notebook 12), written into the repository.

    python tools/lab2_grid.py [--seeds 0 1 2 3 4] [--workers N] [--quick] [--render]

Trains the notebook's RoPE model once per seed at L = 16 tokens on ``recall_latest``, extends it
to 2L and 4L with every method (unchanged RoPE, PI, NTK-aware, dynamic NTK, YaRN with and
without its temperature), fine-tunes each once for 200 steps (evaluated after 0, 25, 50, 100 and
200 steps), and trains the from-scratch ceiling at 4L. Then it repeats the fine-tunes with two
other fine-tune learning rates (no ceiling), to see whether the verdicts depend on it. Writes:

* ``benchmarks/LAB2_GRID.md``: the tables (mean over seeds [worst-best seed]), the seeds, the
  settings and the versions;
* ``benchmarks/lab2_grid.json``: the same numbers, which notebook 12 reads;
* ``benchmarks/lab2_grid.png``: accuracy against fine-tune steps at 2L and 4L.

``--render`` only rewrites ``LAB2_GRID.md`` from the JSON. ``--quick`` runs two seeds and
checkpoints up to 50 steps (a smoke test; it writes to a
temporary directory, not into the repository).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from course_utils.lab.extension import (  # noqa: E402
    METHOD_LABELS,
    format_table,
    plot_vs_steps,
    run_context_extension,
    table_rows,
)
from course_utils.lab.model import ModelConfig  # noqa: E402
from course_utils.lab.tasks import make_task  # noqa: E402

TRAIN_LENGTH = 16
# The base at which the same share of RoPE's exponent range turns within L as for Llama 2
# (b = 1e4 turning within 4096 tokens): log_b(L / 2 pi) equal for both (notebook 12).
LLAMA2_SHARE = np.log(4096 / (2 * np.pi)) / np.log(1e4)
TOY_BASE = float((TRAIN_LENGTH / (2 * np.pi)) ** (1 / LLAMA2_SHARE))
SETTINGS = {"train_length": TRAIN_LENGTH, "multipliers": (2, 4), "steps": 1000, "batch": 16,
            "lr": 1e-2, "tune_batch": 8, "tune_lr": 1e-3, "tune_warmup": 10, "n_test": 128,
            "scratch_batch": 8}
LR_VARIANTS = (3e-4, 3e-3)


def summarise(result):
    """Mean, worst and best seed of every accuracy and loss, as lists for JSON."""
    acc, ceiling = result.accuracy(), result.scratch_accuracy()

    def stats(x):
        return {"mean": np.round(x.mean(axis=-1), 4).tolist(),
                "min": np.round(x.min(axis=-1), 4).tolist(),
                "max": np.round(x.max(axis=-1), 4).tolist(),
                "per_seed": np.round(x, 4).tolist()}

    out = {"methods": list(result.methods), "multipliers": list(result.multipliers),
           "checkpoints": list(result.checkpoints), "seeds": list(result.seeds),
           "accuracy": stats(acc), "loss": stats(result.loss),
           "base_accuracy": np.round(result.base_accuracy, 4).tolist(),
           "settings": {k: (list(v) if isinstance(v, tuple) else v)
                        for k, v in result.settings.items()}}
    if result.settings["scratch"]:
        out["scratch_accuracy"] = stats(ceiling)
        out["scratch_loss"] = stats(result.scratch_loss)
    return out


def _table(run):
    scratch = run.get("scratch_accuracy", {}).get("per_seed")
    headers, rows = table_rows(run["methods"], run["checkpoints"], run["multipliers"],
                               run["accuracy"]["per_seed"], scratch)
    return format_table(headers, rows, markdown=True)


def render(record, *, workers=None):
    """``LAB2_GRID.md`` from the JSON record (so the two never disagree)."""
    main = record["main"]
    s, v, task = main["settings"], record["versions"], record["task"]
    lines = [
        "# Context-extension lab: the full grid",
        "",
        "Written by `python tools/lab2_grid.py` (notebook 12 executes a three-seed core of it and",
        "shows these tables beside its own). Accuracy over the labelled positions at or beyond the",
        f"training length L = {s['train_length']}, mean over seeds (worst-best seed); column "
        "`4L 25`: at 4L after 25 fine-tune steps.",
        "",
        f"- task: `{task['name']}` {task['settings']}",
        f"- model: 2 layers, d_model 32, 4 heads of 8, RoPE base {record['toy_base']:.4f}",
        f"- seeds: {main['seeds']}; pre-training {s['steps']} steps of {s['batch']} sequences, "
        f"lr {s['lr']}",
        f"- fine-tune: batch {s['tune_batch']}, lr {s['tune_lr']} (constant after "
        f"{s['tune_warmup']} warm-up steps), checkpoints {main['checkpoints']}",
        f"- from scratch: at {max(s['multipliers']) * s['train_length']} tokens, {s['steps']} "
        f"steps of {s['scratch_batch']} sequences",
        f"- versions: Python {v['python']}, numpy {v['numpy']}, {v['platform']}; "
        f"{record['seconds']} s" + (f" with {workers} workers" if workers else ""),
        "",
        f"## Main grid (fine-tune lr {s['tune_lr']:g})",
        "",
        _table(main),
        "",
    ]
    for lr, run in record["lr_variants"].items():
        lines += [f"## Fine-tune lr {float(lr):g} (the verdicts under another learning rate)", "",
                  _table(run), ""]
    lines += ["![accuracy against fine-tune steps](lab2_grid.png)", "",
              "Methods: " + ", ".join(METHOD_LABELS[m] for m in main["methods"]) + "."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--render", action="store_true",
                        help="only rewrite LAB2_GRID.md from benchmarks/lab2_grid.json")
    args = parser.parse_args(argv)
    if args.render:
        record = json.loads((ROOT / "benchmarks" / "lab2_grid.json").read_text())
        (ROOT / "benchmarks" / "LAB2_GRID.md").write_text(render(record))
        return 0
    seeds = tuple(args.seeds[:2] if args.quick else args.seeds)
    checkpoints = (0, 25, 50) if args.quick else (0, 25, 50, 100, 200)
    out_dir = pathlib.Path(tempfile.mkdtemp()) if args.quick else ROOT / "benchmarks"
    task = make_task("recall_latest", n_keys=4, n_values=8)
    config = ModelConfig(scheme="rope", vocab_size=task.vocab_size, rope_base=TOY_BASE)
    start = time.perf_counter()
    main_run = run_context_extension(task, config, seeds=seeds, checkpoints=checkpoints,
                                     workers=args.workers, **SETTINGS)
    variants = {}
    for lr in LR_VARIANTS:
        variants[lr] = run_context_extension(task, config, seeds=seeds, checkpoints=checkpoints,
                                             workers=args.workers, scratch=False,
                                             **(SETTINGS | {"tune_lr": lr}))
    elapsed = time.perf_counter() - start

    record = {"task": {"name": task.name, "settings": dict(task.settings)},
              "toy_base": TOY_BASE, "main": summarise(main_run),
              "lr_variants": {str(lr): summarise(r) for lr, r in variants.items()},
              "versions": main_run.settings["versions"], "seconds": round(elapsed)}
    (out_dir / "lab2_grid.json").write_text(json.dumps(record, indent=1) + "\n")

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    plot_vs_steps(main_run, axes=axes)
    fig.suptitle(f"recall_latest, RoPE base {TOY_BASE:.2f}, L = {TRAIN_LENGTH}: "
                 f"mean of seeds {list(seeds)}", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_dir / "lab2_grid.png", dpi=110)

    (out_dir / "LAB2_GRID.md").write_text(render(record, workers=args.workers))
    print(f"wrote {out_dir / 'LAB2_GRID.md'} ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
