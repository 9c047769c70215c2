"""The full grid of the context-extension lab (notebook 12), written into the repository.

    python tools/lab2_grid.py [--seeds 0 1 ... 9] [--lr-variants 3e-4 3e-3] [--variant-seeds 0 ... 4]
                              [--workers N] [--quick] [--render] [--add-variants]

Trains the notebook's RoPE model once per seed at L = 16 tokens on ``recall_latest``, extends it
to 2L and 4L with every method (unchanged RoPE, PI, NTK-aware, dynamic NTK, YaRN with and
without its temperature), fine-tunes each once for 200 steps (evaluated after 0, 25, 50, 100 and
200 steps) on the same fine-tune data for every method, and trains the from-scratch model at 4L.
Every accuracy is split by how far back the answer lies (``near``: < L, ``far``: >= L), beside
two baselines computed exactly on the test sequences (position-blind, and an ideal reader of the
last L tokens). Every claim of notebook 12 gets a paired percentile bootstrap interval over the
seeds (10 000 resamples, 95 %) and a verdict. Then it repeats the fine-tunes with other
fine-tune learning rates on five seeds (no from-scratch model); ``--add-variants`` runs only
these, beside the stored main grid. Writes:

* ``benchmarks/LAB2_GRID.md``: the tables, the claims with their intervals, the seeds, the
  settings and the versions;
* ``course_utils/data/records/lab2_grid.json``: the same numbers, which notebook 12 reads
  (package data, so the chapter finds it outside a clone too);
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
RECORD = ROOT / "course_utils" / "data" / "records" / "lab2_grid.json"  # read by notebook 12
sys.path.insert(0, str(ROOT))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from course_utils.lab.extension import (  # noqa: E402
    METHOD_LABELS,
    claim_table,
    format_table,
    plot_vs_steps,
    run_context_extension,
    steps_claim,
    steps_to_threshold,
    summarise,
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
SEEDS = tuple(range(10))
VARIANT_SEEDS = tuple(range(5))  # the learning-rate variants: five seeds fit the time budget


def _table(run, split):
    acc = run["accuracy"][split]["per_seed"]
    scratch = run.get("scratch_accuracy", {}).get(split, {}).get("per_seed")
    headers, rows = table_rows(run["methods"], run["checkpoints"], run["multipliers"], acc,
                               scratch)
    n_check = len(run["checkpoints"])
    for name, label in (("blind", "position-blind"), ("window", "window < L")):
        values = run["baselines"][name][split]
        rows.append([label] + [f"{v:.2f}" for v in values for _ in range(n_check)])
    return format_table(headers, rows, markdown=True)


def _claims(run):
    lines = ["| claim (A - B > 0), far split | mean | 95 % interval | verdict |",
             "|---|---|---|---|"]
    for name, mean, low, high, word in claim_table(run, "far"):
        lines.append(f"| {name} | {mean:+.3f} | [{low:+.3f}, {high:+.3f}] | {word} |")
    return "\n".join(lines)


def _steps(run):
    """Steps until each method's far accuracy reaches the position-blind reader's (fixed by
    the test data before any model is trained), per seed, and YaRN against PI, paired."""
    lines = ["| length | threshold | " + " | ".join(METHOD_LABELS[m] for m in run["methods"])
             + " | PI - YaRN steps: mean [95 %] | verdict (YaRN fewer) |",
             "|---" * (len(run["methods"]) + 4) + "|"]
    for mult in run["multipliers"]:
        cells = []
        for m in run["methods"]:
            st = steps_to_threshold(run, m, mult)
            ok = st[np.isfinite(st)]
            cells.append(f"{np.median(ok):.0f} ({ok.size}/{st.size})" if ok.size else
                         f"never (0/{st.size})")
        mean, low, high, word, never = steps_claim(run, "yarn", "pi", mult)
        thr = run["baselines"]["blind"]["far"][run["multipliers"].index(mult)]
        lines.append(f"| {mult}L | {thr:.2f} | " + " | ".join(cells)
                     + f" | {mean:+.0f} [{low:+.0f}, {high:+.0f}] | {word} |")
    return "\n".join(lines)


def render(record, *, workers=None):
    """``LAB2_GRID.md`` from the JSON record (so the two never disagree)."""
    main = record["main"]
    s, v, task = main["settings"], record["versions"], record["task"]
    lines = [
        "# Context-extension lab: the full grid",
        "",
        "Written by `python tools/lab2_grid.py` (`make lab2-grid`; notebook 12 reads this record",
        "and runs a three-seed core of it). Scored: the labelled positions at or beyond the",
        f"training length L = {s['train_length']}, split by the distance from the query to the "
        "latest earlier copy of its key: `near` (< L, distances met in training) and `far` (>= L).",
        "Cells: mean over seeds (worst-best seed); column `4L 25`: at 4L after 25 fine-tune steps.",
        "Every method of a seed fine-tunes on the same data (paired). Baselines, exact",
        "expectations on the same test sequences: *position-blind* outputs the value after a",
        "uniformly random earlier copy of the key; *window < L* is right whenever the key's latest",
        "copy lies less than L back and guesses (chance) otherwise.",
        "",
        f"- command: `{record.get('command', 'python tools/lab2_grid.py')}`",
        f"- task: `{task['name']}` {task['settings']}",
        f"- model: 2 layers, d_model 32, 4 heads of 8, RoPE base {record['toy_base']:.4f}",
        f"- seeds: {main['seeds']}; pre-training {s['steps']} steps of {s['batch']} sequences, "
        f"lr {s['lr']}",
        f"- fine-tune: batch {s['tune_batch']}, lr {s['tune_lr']} (constant after "
        f"{s['tune_warmup']} warm-up steps), checkpoints {main['checkpoints']}",
        f"- from scratch: at {max(s['multipliers']) * s['train_length']} tokens, {s['steps']} "
        f"steps of {s['scratch_batch']} sequences",
        f"- test: {s['n_test']} sequences per length, the same for every model and seed",
        "- intervals: paired percentile bootstrap over seeds, 10 000 resamples, 95 %; a verdict",
        "  is *agrees* when the interval lies above 0, *disagrees* below, *unclear* otherwise",
        f"- versions: Python {v['python']}, numpy {v['numpy']}, {v['platform']}; "
        f"{record['seconds']} s" + (f" with {workers} workers" if workers else ""),
        "",
        record.get("note", ""),
        "",
        f"## Claims, far split (fine-tune lr {s['tune_lr']:g})",
        "",
        _claims(main),
        "",
        f"## Steps to the position-blind reader, far split (fine-tune lr {s['tune_lr']:g})",
        "",
        "Per method: the median over the seeds that reach it of the first checkpoint at which",
        "far accuracy reaches the position-blind reader's (exact, from the test data), and how",
        "many seeds reach it by 200 steps. The paired difference counts a seed that never",
        "reaches it as 400 steps (a lower bound).",
        "",
        _steps(main),
        "",
    ]
    for split in ("far", "near", "all"):
        lines += [f"## Accuracy, {split} split (fine-tune lr {s['tune_lr']:g})", "",
                  _table(main, split), ""]
    for lr, run in record["lr_variants"].items():
        lines += [f"## Fine-tune lr {float(lr):g}: claims, far split", "",
                  f"Seeds {run['seeds']}; pre-training and test data as the main grid; "
                  f"command `{record.get('variants_command', record.get('command'))}`"
                  + (f", {record['variants_seconds']} s" if "variants_seconds" in record
                     else "") + ".", "", _claims(run), "",
                  f"## Fine-tune lr {float(lr):g}: steps to the position-blind reader", "",
                  _steps(run), "",
                  f"## Fine-tune lr {float(lr):g}: accuracy, far split", "",
                  _table(run, "far"), ""]
    lines += ["![accuracy against fine-tune steps](lab2_grid.png)", "",
              "Methods: " + ", ".join(METHOD_LABELS[m] for m in main["methods"]) + "."]
    return "\n".join(lines) + "\n"


def _write(out_dir, record, main_run, seeds, workers):
    json_path = RECORD if out_dir == ROOT / "benchmarks" else out_dir / "lab2_grid.json"
    json_path.write_text(json.dumps(record, indent=1) + "\n")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    plot_vs_steps(main_run, axes=axes, split="far")
    fig.suptitle(f"recall_latest, far split (answer >= L back), RoPE base {TOY_BASE:.2f}, "
                 f"L = {TRAIN_LENGTH}: mean of seeds {list(seeds)}", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_dir / "lab2_grid.png", dpi=110)
    plt.close(fig)
    (out_dir / "LAB2_GRID.md").write_text(render(record, workers=workers))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--lr-variants", type=float, nargs="*", default=list(LR_VARIANTS))
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--add-variants", action="store_true",
                        help="keep the stored main grid; run only the learning-rate variants")
    parser.add_argument("--variant-seeds", type=int, nargs="+", default=None,
                        help="seeds of the learning-rate variants (default: 0 1 2 3 4)")
    parser.add_argument("--render", action="store_true",
                        help="only rewrite LAB2_GRID.md from the stored lab2_grid.json")
    args = parser.parse_args(argv)
    if args.render:
        record = json.loads(RECORD.read_text())
        (ROOT / "benchmarks" / "LAB2_GRID.md").write_text(render(record))
        return 0
    seeds = tuple(args.seeds[:2] if args.quick else args.seeds)
    checkpoints = (0, 25, 50) if args.quick else (0, 25, 50, 100, 200)
    out_dir = pathlib.Path(tempfile.mkdtemp()) if args.quick else ROOT / "benchmarks"
    task = make_task("recall_latest", n_keys=4, n_values=8)
    config = ModelConfig(scheme="rope", vocab_size=task.vocab_size, rope_base=TOY_BASE)
    command = "python tools/lab2_grid.py " + " ".join(argv if argv is not None else sys.argv[1:])
    start = time.perf_counter()
    variant_seeds = tuple(args.variant_seeds or (seeds if args.quick else VARIANT_SEEDS))
    if args.add_variants:
        path = RECORD
        record = json.loads(path.read_text())
        record["variants_command"] = command.strip()
        for lr in args.lr_variants:
            run = run_context_extension(task, config, seeds=variant_seeds,
                                        checkpoints=checkpoints, workers=args.workers,
                                        scratch=False, **(SETTINGS | {"tune_lr": lr}))
            record["lr_variants"][str(lr)] = summarise(run)
            record["variants_seconds"] = round(time.perf_counter() - start)
            path.write_text(json.dumps(record, indent=1) + "\n")
            (ROOT / "benchmarks" / "LAB2_GRID.md").write_text(render(record))
        print(f"added {args.lr_variants} ({record['variants_seconds']} s)")
        return 0
    main_run = run_context_extension(task, config, seeds=seeds, checkpoints=checkpoints,
                                     workers=args.workers, **SETTINGS)
    record = {"command": command.strip(), "task": {"name": task.name,
                                                   "settings": dict(task.settings)},
              "toy_base": TOY_BASE, "main": summarise(main_run), "lr_variants": {},
              "versions": main_run.settings["versions"],
              "seconds": round(time.perf_counter() - start),
              "note": (f"The learning-rate variants run on seeds {list(variant_seeds)}, with no "
                       "model trained at 4L, so that they fit in the time budget.")}
    _write(out_dir, record, main_run, seeds, args.workers)   # the main grid first
    for lr in args.lr_variants:
        run = run_context_extension(task, config, seeds=variant_seeds, checkpoints=checkpoints,
                                    workers=args.workers, scratch=False,
                                    **(SETTINGS | {"tune_lr": lr}))
        record["lr_variants"][str(lr)] = summarise(run)
        record["seconds"] = round(time.perf_counter() - start)
        _write(out_dir, record, main_run, seeds, args.workers)
    print(f"wrote {out_dir / 'LAB2_GRID.md'} ({record['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
