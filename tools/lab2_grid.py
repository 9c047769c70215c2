"""The full grid of the context-extension lab (notebook 12), written into the repository.

    python tools/lab2_grid.py [--seeds 0 1 ... 9] [--lr-variants 3e-4 3e-3] [--workers N]
                              [--parts main lr base beta prefix ceiling
                                      long_base long_methods] [--quick] [--out DIR]
    python tools/lab2_grid.py --render
    python tools/lab2_grid.py --compare DIR/lab2_grid.json --where NAME

Trains the notebook's RoPE model once per seed at L = 16 tokens on ``recall_latest``, extends it
to 2L and 4L with every method (unchanged RoPE, PI, NTK-aware, dynamic NTK, YaRN with and
without its temperature), fine-tunes each once for 200 steps (evaluated after 0, 25, 50, 100 and
200 steps) on the same fine-tune data for every method, and trains the ceiling: the model with
the unchanged RoPE trained from scratch at 4L, and the same at other step counts to show that its
accuracy has flattened. Every accuracy is split by how far back the key's latest earlier copy
lies (``near``: < L, ``far``: >= L; the answer is the token after it), beside two baselines
computed exactly on the test sequences (position-blind, and an ideal reader of the last L
tokens); every model is also scored on a passkey test whose one query per sequence has its
key's only earlier copy L or more tokens back, with the attention the query pays to the answer
after it. Every claim of notebook 12 gets a paired percentile bootstrap interval over the
seeds (10 000 resamples, 95 %) and a verdict. The parts, all on the same ten seeds:

* ``main``: the grid above (fine-tune learning rate 1e-3);
* ``lr``: the same fine-tunes at the learning rates of ``--lr-variants`` (no ceiling);
* ``base``: everything again with Llama 2's own base 1e4 in place of the toy's (no ceiling);
* ``beta``: PI and YaRN with YaRN's ``beta_fast`` and ``beta_slow`` moved to the toy
  (:func:`yarn_betas_rescaled`), at the toy's base;
* ``prefix``: YaRN's section 3.3 dynamic rule scored prefix by prefix with no fine-tune, and
  static NTK-aware set for 2L scored at 4L (:func:`~course_utils.lab.extension.prefix_dynamic`),
  on the main grid's and the second base's pre-trained models (retrained from the same seeds;
  their NTK-aware scores in one pass must equal the stored row's, or the part stops);
* ``ceiling`` (not run by default; ``make lab2-ceiling``, about 35 minutes): the main grid's
  model trained from scratch at 4L for ``LONGER_CEILING`` steps
  (:func:`~course_utils.lab.extension.ceiling_curve`, the same jobs as the main grid's curve),
  added to the main grid's curve;
* ``long_base`` (not run by default; ``make lab2-ceiling``): the same model trained from scratch
  at 4L for ``LONG_BASE_STEPS`` steps at a base chosen for 4L (``BASE_FOR_4L``, the toy's rule
  applied at 4L) and at Llama 2's base 1e4, where the pairs turn within 4L as the toy's do
  within L or slower: the ceiling the toy's base does not give;
* ``long_methods`` (not run by default; ``make lab2-ceiling``): the model trained from scratch
  at 4L for ``LONG_BASE_STEPS`` steps at the toy's base with each method's own frequencies for
  4L (``LONG_METHODS``, :func:`~course_utils.lab.extension.method_config` with factor 4): the
  ceiling of each method itself, at its own base.

``--parts`` reruns some parts and keeps the others from the stored record; rerunning ``main``
or ``base`` reruns ``prefix`` too, and ``main`` keeps the longer ceiling's points while their
settings hold. ``--out DIR`` writes a rerun elsewhere (going on from ``DIR/lab2_grid.json`` when it exists),
and ``--compare`` stores what it changes (``compare``). Writes:

* ``benchmarks/LAB2_GRID.md``: the tables, the claims with their intervals, the seeds, the
  settings and the versions;
* ``course_utils/data/records/lab2_grid.json``: the same numbers, which notebook 12 reads
  (package data, so the chapter finds it outside a clone too);
* ``benchmarks/lab2_grid.png``: accuracy against fine-tune steps at 2L and 4L;
* with ``--compare``, ``course_utils/data/records/lab2_reruns.json``: the rerun's own runs.

``--render`` only rewrites ``LAB2_GRID.md`` from the JSON. ``--quick`` runs two seeds and
checkpoints up to 50 steps (a smoke test; it writes to a temporary directory, not into the
repository).
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
RERUNS = RECORD.with_name("lab2_reruns.json")   # the reruns' own runs, also read by it
TEST_SET = RECORD.with_name("lab2_test_set.json")   # the runs scored on a fresh test set
sys.path.insert(0, str(ROOT))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from course_utils.lab.extension import (  # noqa: E402
    METHOD_LABELS,
    _style,
    ceiling_curve,
    format_table,
    grid_runs,
    method_config,
    own_ceiling,
    path_steps,
    plot_vs_steps,
    prefix_dynamic,
    rerun_test,
    run_context_extension,
    run_fingerprint,
    stated_on_paths,
    stated_verdicts,
    steps_claim,
    steps_to_threshold,
    summarise,
    table_rows,
    test_set_check,
    verdict_matrix,
)
from course_utils.lab.model import ModelConfig, rope_frequencies  # noqa: E402
from course_utils.lab.tasks import make_task  # noqa: E402

TRAIN_LENGTH = 16
# The base at which the same share of RoPE's exponent range turns within L as for Llama 2
# (b = 1e4 turning within 4096 tokens): log_b(L / 2 pi) equal for both (notebook 12).
LLAMA2_SHARE = np.log(4096 / (2 * np.pi)) / np.log(1e4)
TOY_BASE = float((TRAIN_LENGTH / (2 * np.pi)) ** (1 / LLAMA2_SHARE))
SECOND_BASE = 1e4       # Llama 2's own base, unchanged: fewer of the toy's pairs turn within L
SETTINGS = {"train_length": TRAIN_LENGTH, "multipliers": (2, 4), "steps": 1000, "batch": 16,
            "lr": 1e-2, "tune_batch": 8, "tune_lr": 1e-3, "tune_warmup": 10, "n_test": 128,
            "scratch_batch": 8, "passkey": True}
CEILING = {"scratch_steps": 1000, "ceiling_steps": (2000, 4000)}   # the ceiling and its curve
LONGER_CEILING = (8000, 16000)   # part "ceiling": the same model trained longer
LR_VARIANTS = (3e-4, 3e-3)
SEEDS = tuple(range(10))
# The base whose share of pairs turning within 4L is Llama 2's within 4096 tokens: the toy's
# rule applied at the long length (part "long_base").
BASE_FOR_4L = float((4 * TRAIN_LENGTH / (2 * np.pi)) ** (1 / LLAMA2_SHARE))
LONG_BASE_STEPS = (250, 500, 1000, 2000)
LONG_METHODS = ("pi", "ntk", "yarn")   # part "long_methods": static rules, set for 4L
PARTS = ("main", "lr", "base", "beta", "prefix", "ceiling", "long_base", "long_methods")
DEFAULT_PARTS = ("main", "lr", "base", "beta", "prefix")   # "ceiling": make lab2-ceiling


def yarn_betas_rescaled(head_dim, base, train_length):
    """YaRN's ``beta_fast`` and ``beta_slow`` moved to the toy: the turns within ``L`` at the
    pair indices where Llama 2's ramp starts and ends, as shares of its pairs.

    In Llama 2 (d = 128, b = 1e4, L = 4096) the ramp of transformers' ``_compute_yarn_parameters``
    runs between ``dim(32) = 20.9`` and ``dim(1) = 45.0`` of 64 pairs, with
    ``dim(rho) = d ln(L / 2 pi rho) / (2 ln b)`` (Peng et al. 2023, eq. (17)). At the same
    shares of the toy's pairs, ``rho = (L / 2 pi) b^(-2 dim / d)`` gives the betas.
    """
    def dim(rho, d, b, length):
        return d * np.log(length / (2 * np.pi * rho)) / (2 * np.log(b))

    shares = [dim(rho, 128, 1e4, 4096) / 64 for rho in (32.0, 1.0)]
    return tuple(float(train_length / (2 * np.pi) * base ** (-2 * share * (head_dim // 2)
                                                               / head_dim))
                 for share in shares)


def _table(run, split):
    acc = run["accuracy"][split]["per_seed"]
    scratch = run.get("scratch_accuracy", {}).get(split, {}).get("per_seed")
    headers, rows = table_rows(run["methods"], run["checkpoints"], run["multipliers"], acc,
                               scratch)
    n_check = len(run["checkpoints"])
    for who, key in (("dynamic_prefix", "prefix"), ("ntk_short", "ntk_short")):
        if split in run.get("prefix_dynamic", {}).get(key, {}):   # no fine-tune: 0 steps only
            rows.append([METHOD_LABELS[who]] + [_cell(per_seed) if c == 0 else "-"
                                               for per_seed in run["prefix_dynamic"][key][split]
                                               for c in range(n_check)])
    for name, label in (("blind", "position-blind"), ("window", "window < L")):
        values = run["baselines"][name][split]
        rows.append([label] + [f"{v:.2f}" for v in values for _ in range(n_check)])
    return format_table(headers, rows, markdown=True)


def _claims(record, label, split="far"):
    """The claims of one run: its interval and verdict here, and the verdict stated over every
    recorded floating-point path (:func:`stated_verdicts`)."""
    lines = [f"| claim (A - B > 0), {split} | mean | 95 % interval | verdict here | "
             "stated (every path) |", "|---|---|---|---|---|"]
    for name, cells in stated_verdicts(record, split).items():
        if label in cells:
            c = cells[label]
            lines.append(f"| {name} | {c['mean']:+.3f} | [{c['low']:+.3f}, {c['high']:+.3f}] | "
                         f"{c['here']} | {c['stated']} |")
    return "\n".join(lines)


def _stored_reruns(record):
    """The reruns' own runs (``lab2_reruns.json``) when they are this record's reruns, else
    none (a rerun written elsewhere, or a record before any rerun)."""
    reruns = json.loads(RERUNS.read_text()) if RERUNS.exists() else {}
    return reruns if set(reruns) == set(record.get("reruns", {})) else {}


def _steps(record, label):
    """Steps until each method's far accuracy reaches the position-blind reader's (fixed by
    the test data before any model is trained), per seed, and YaRN against PI, paired, with
    the verdict stated over every floating-point path (:func:`stated_on_paths`)."""
    run = runs_of(record)[label]
    reruns = _stored_reruns(record)
    lines = ["| length | threshold | " + " | ".join(METHOD_LABELS[m] for m in run["methods"])
             + " | PI - YaRN steps: mean [95 %] | verdict (YaRN fewer) | stated (every path) |",
             "|---" * (len(run["methods"]) + 5) + "|"]
    for mult in run["multipliers"]:
        cells = []
        for m in run["methods"]:
            st = steps_to_threshold(run, m, mult)
            ok = st[np.isfinite(st)]
            cells.append(f"{np.median(ok):.0f} ({ok.size}/{st.size})" if ok.size else
                         f"never (0/{st.size})")
        mean, low, high, word, never = steps_claim(run, "yarn", "pi", mult)
        thr = run["baselines"]["blind"]["far"][run["multipliers"].index(mult)]
        paths = (path_steps(record, reruns, label, mult) if reruns
                 else {"here": (mean, low, high, word)})    # no reruns' runs: this path
        lines.append(f"| {mult}L | {thr:.2f} | " + " | ".join(cells)
                     + f" | {mean:+.0f} [{low:+.0f}, {high:+.0f}] | {word} | "
                     + stated_on_paths(paths) + (f" ({len(paths)} paths)" if len(paths) > 1
                                                 else "") + " |")
    return "\n".join(lines)


def _needle(run):
    """The passkey's answer: the largest weight a head of each layer puts on it, mean over seeds
    (worst-best seed), with no fine-tune and after the longest one."""
    att = np.array(run["needle_attention"]["per_seed"])   # (methods, mult, ckpt, layer, seed)
    last = len(run["checkpoints"]) - 1
    cols = [(k, c, layer) for layer in range(att.shape[3]) for k in range(att.shape[1])
            for c in (0, last)]
    headers = ["method"] + [f"layer {layer + 1}, {run['multipliers'][k]}L "
                            f"{run['checkpoints'][c]}" for k, c, layer in cols]
    rows = [[METHOD_LABELS[m]] + [_cell(att[a, k, c, layer]) for k, c, layer in cols]
            for a, m in enumerate(run["methods"])]
    if "scratch_needle_attention" in run:
        sc = np.array(run["scratch_needle_attention"]["per_seed"])   # (mult, layer, seed)
        rows.append([METHOD_LABELS["scratch"]] + [_cell(sc[k, layer]) for k, c, layer in cols])
    return format_table(headers, rows, markdown=True)


def _cell(values):
    values = np.asarray(values, dtype=float)
    return f"{values.mean():.2f} ({values.min():.2f}-{values.max():.2f})"


def _ceiling(run):
    curve = run.get("ceiling_curve", {})
    lines = ["| training steps at 4L | far split at 4L | passkey at 4L |", "|---|---|---|"]
    for steps, acc in sorted(curve.items(), key=lambda item: int(item[0])):
        lines.append(f"| {steps} | {_cell(acc['far'])} | {_cell(acc['passkey'])} |")
    return "\n".join(lines)


def _long_base_settings(main):
    """The settings part ``long_base`` trains with: the main grid's from-scratch recipe and seeds
    at the bases ``BASE_FOR_4L`` and 1e4 (stored with its curves, checked when main is rerun)."""
    s = main["settings"]
    return {"seeds": list(main["seeds"]), "bases": [BASE_FOR_4L, SECOND_BASE],
            **{k: s[k] for k in ("train_length", "multipliers", "scratch_batch", "lr", "n_test")}}


def _long_methods_settings(main):
    """The settings part ``long_methods`` trains with: ``long_base``'s, at the main grid's base,
    with ``LONG_METHODS`` in place of other bases."""
    ls = _long_base_settings(main)
    del ls["bases"]
    return ls | {"rope_base": main["settings"]["rope_base"], "methods": list(LONG_METHODS)}


LONG_PARTS = {"long_base": _long_base_settings, "long_methods": _long_methods_settings}


def _compare_long_base(record, other, where, part="long_base"):
    """Store a rerun's ``part`` curves (``long_base`` or ``long_methods``) under
    ``record[part]["reruns"][where]``, after checking that it trained the same models (seeds,
    bases or methods, steps, settings)."""
    mine, theirs = record.get(part), other[part]
    if mine is None:
        raise ValueError(f"the record holds no {part} part to compare with")
    if theirs["seeds"] != mine["seeds"] or theirs.get("settings", mine["settings"]) != \
            mine["settings"]:
        raise ValueError(f"the rerun's {part} was trained with other seeds or settings")
    if {b: list(c) for b, c in theirs["curves"].items()} != \
            {b: list(c) for b, c in mine["curves"].items()}:
        raise ValueError(f"the rerun's {part} holds other bases, methods or steps")
    if part == "long_methods":     # own_ceiling pairs it with the main grid its CPU ran
        main = next(iter(runs_of(record)))
        cpu = where.rsplit(", ", 1)[0]
        if not any(w.rsplit(", ", 1)[0] == cpu and main in d["runs"]
                   for w, d in record.get("reruns", {}).items()):
            raise ValueError(f"where must name the CPU of a compared main grid rerun (the text "
                             f"before its last comma), got {where!r}")
    reruns = mine.setdefault("reruns", {})
    reruns.pop(where, None)
    reruns[where] = theirs["curves"]


def _long_configs(record, part):
    """``{row name: (label, config)}`` of a ``long_base`` or ``long_methods`` part: the model
    each of its curves trained from scratch at 4L."""
    ls, task = record[part]["settings"], record["task"]
    vocab = make_task(task["name"], **task["settings"]).vocab_size
    if part == "long_base":
        return {b: (f"base {float(b):.2f}", ModelConfig(scheme="rope", vocab_size=vocab,
                                                        rope_base=float(b)))
                for b in record[part]["curves"]}
    toy = ModelConfig(scheme="rope", vocab_size=vocab, rope_base=ls["rope_base"])
    return {m: (METHOD_LABELS[m], method_config(toy, m, max(ls["multipliers"]), ls["train_length"]))
            for m in record[part]["curves"]}


def _long_curves(record, part):
    """The model trained from scratch at 4L at other bases (part ``long_base``) or with each
    method's frequencies (part ``long_methods``), by steps, on every path that trained it."""
    if part not in record:
        return "Not run (`make lab2-ceiling`)."
    main = record["main"]
    k = main["multipliers"].index(max(main["multipliers"]))
    blind = main["baselines"]["blind"]["far"][k]
    length = max(main["multipliers"]) * main["settings"]["train_length"]
    lines = ["| RoPE | slowest pair's turns within 4L | training steps at 4L | far split at 4L "
             "| seeds above position-blind | passkey at 4L |", "|---|---|---|---|---|---|"]
    configs = _long_configs(record, part)
    for name, curve in record[part]["curves"].items():
        label, config = configs[name]
        turns = length * rope_frequencies(config, length)[0].min() / (2 * np.pi)
        for steps, acc in sorted(curve.items(), key=lambda item: int(item[0])):
            above = int((np.array(acc["far"]) > blind).sum())
            lines.append(f"| {label} | {turns:.2f} | {steps} | {_cell(acc['far'])} | "
                         f"{above}/{len(acc['far'])} | {_cell(acc['passkey'])} |")
    for where, curves in record[part].get("reruns", {}).items():
        mine = [x for c in record[part]["curves"].values() for a in c.values() for x in a["far"]]
        same = sum(a == b for a, b in zip(mine, [x for c in curves.values() for a in c.values()
                                                 for x in a["far"]], strict=True))
        lines += ["", f"Rerun, {where}: far split at 4L (seeds above position-blind) by steps; "
                      f"{same} of {len(mine)} per-seed values are this machine's exactly:"]
        for name, curve in curves.items():
            lines.append(f"- {configs[name][0]}: " + "; ".join(
                f"{steps}: {_cell(acc['far'])} ({int((np.array(acc['far']) > blind).sum())}/"
                f"{len(acc['far'])})" for steps, acc in sorted(curve.items(),
                                                             key=lambda item: int(item[0]))))
    return "\n".join(lines)


def _own_ceilings(record):
    """Each method of part ``long_methods`` after the longest fine-tune minus its own ceiling
    (:func:`~course_utils.lab.extension.own_ceiling`), on every path, and the verdict stated."""
    if "long_methods" not in record:
        return ""
    reruns = json.loads(RERUNS.read_text()) if RERUNS.exists() else {}
    steps = record["main"]["checkpoints"][-1]
    top = max(int(n) for curve in record["long_methods"]["curves"].values() for n in curve)
    lines = [f"The method after {steps} fine-tune steps at 4L minus the same seed's model "
             f"trained from scratch with its frequencies for {top} steps (paired bootstrap over "
             "seeds, 95 %); stated only where every path that trained both gives it:", "",
             "| method | split | " + " | ".join(["here"] + list(record["long_methods"].get(
                 "reruns", {}))) + " | stated |", "|---" * (4 + len(record["long_methods"].get(
                     "reruns", {}))) + "|"]
    for method in record["long_methods"]["curves"]:
        for split in ("far", "passkey"):
            paths = own_ceiling(record, reruns, method, steps=steps, ceiling_steps=top,
                                split=split)
            lines.append(f"| {METHOD_LABELS[method]} | {split} | " + " | ".join(
                f"{m:+.2f} [{lo:+.2f}, {hi:+.2f}] {v}" for m, lo, hi, v in paths.values())
                + f" | {stated_on_paths(paths)} |")
    return "\n".join(lines)


runs_of = grid_runs   # the labels of every table


def _verdicts(record, split):
    """One row per claim, one column per run: the verdict stated (:func:`stated_verdicts`) and
    the mean difference; the t verdict where it differs, and each path's verdict where the
    paths differ."""
    runs = runs_of(record)
    lines = [f"| claim, {split} | " + " | ".join(runs) + " |", "|---" * (len(runs) + 1) + "|"]
    for name, cells in stated_verdicts(record, split).items():
        row = []
        for label in runs:
            if label not in cells:
                row.append("-")
                continue
            c = cells[label]
            text = f"{c['stated']} ({c['mean']:+.2f})"
            if c["t"] != c["here"]:
                text += f", t: {c['t']}"
            if c["stated"] != c["here"] or any(v != c["here"] for v in c["paths"].values()):
                by_cpu = {}      # one CPU's reruns of several parts are one path
                for where, v in c["paths"].items():
                    by_cpu.setdefault(where.split(",")[0], set()).add(v)
                text += "; here: " + c["here"] + "".join(
                    f", {cpu}: {'/'.join(sorted(v))}" for cpu, v in by_cpu.items())
            if c["same_as"]:
                text += f"; the cells of {c['same_as'].split(' (')[0]}"
            row.append(text)
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def render(record, *, workers=None):
    """``LAB2_GRID.md`` from the JSON record (so the two never disagree)."""
    main = record["main"]
    s, v, task = main["settings"], record["versions"], record["task"]
    lines = [
        "# Context-extension lab: the full grid",
        "",
        "Written by `python tools/lab2_grid.py` (`make lab2-grid`, and `make lab2-ceiling` for the",
        "model trained from scratch for 8000 and 16000 steps and at other bases; notebook 12",
        "reads this record and",
        "runs a three-seed core of it). Scored: the labelled positions at or beyond the",
        f"training length L = {s['train_length']}, split by the distance from the query to the "
        "latest earlier copy of its key: `near` (< L, distances met in training) and `far` (>= L);",
        "and `passkey`, a second test where each sequence has one query whose key occurs once "
        "before, L or more tokens back (`far_recall_batch`).",
        "Cells: mean over seeds (worst-best seed); column `4L 25`: at 4L after 25 fine-tune steps.",
        "Every method of a seed fine-tunes on the same data (paired). Baselines, exact",
        "expectations on the same test sequences: *position-blind* outputs the value after a",
        "uniformly random earlier copy of the key; *window < L* is right whenever the key's latest",
        "copy lies less than L back and guesses (chance) otherwise. On the passkey the",
        "position-blind reader is always right (one earlier copy) and the window always guesses.",
        "",
        "- commands: " + "; ".join(f"{part}: `{cmd}`" for part, cmd in record.get(
            "part_commands", {"all": record.get("command", "python tools/lab2_grid.py")}).items()),
        f"- task: `{task['name']}` {task['settings']}",
        f"- model: 2 layers, d_model 32, 4 heads of 8, RoPE base {record['toy_base']:.4f}",
        f"- seeds: {main['seeds']}; pre-training {s['steps']} steps of {s['batch']} sequences, "
        f"lr {s['lr']}",
        f"- fine-tune: batch {s['tune_batch']}, lr {s['tune_lr']} (constant after "
        f"{s['tune_warmup']} warm-up steps), checkpoints {main['checkpoints']}",
        f"- trained from scratch at the long length (at the toy's base no ceiling on far queries; "
        f"at a base for 4L a ceiling for models at that base, below): "
        f"{max(s['multipliers']) * s['train_length']} "
        f"tokens, {s.get('scratch_steps', s['steps'])} steps of {s['scratch_batch']} sequences, "
        f"lr {s.get('scratch_lr', s['lr'])}",
        f"- test: {s['n_test']} sequences per length, the same for every model and seed",
        "- intervals: paired percentile bootstrap over seeds, 10 000 resamples, 95 %; a verdict",
        "  is *agrees* when the interval lies above 0, *disagrees* below, *unclear* otherwise. With",
        "  ten seeds a percentile interval runs narrower than a Student-t interval (9 degrees of",
        "  freedom); where the two verdicts differ the tables add the t verdict (`t: unclear`).",
        "  Every seed is scored on the same test sequences, so test-set sampling is not in the",
        "  intervals; among about 90 verdicts at 95 % each a few are expected by chance.",
        "- floating-point paths: training is chaotic, and the grid rerun on an emulated CPU gives",
        "  other per-seed accuracies, so an interval that ends near 0 can cross it. The verdict",
        "  stated in the tables below is the one every recorded path gives; where the paths",
        "  differ it is *unclear*, and the cell names each path's (`here: disagrees, old CPU:",
        "  unclear`). This is a filter for verdicts that depend on the path, not a test with an",
        "  error rate of its own; a rerun marked *held out* was compared after the rule was",
        "  fixed, and how many stated verdicts it keeps is the rule's test. No-fine-tune cells",
        "  that a variant shares with the main grid are one measurement, counted once.",
        f"- versions: Python {v['python']}, numpy {v['numpy']}, {v['platform']}; "
        f"{record['seconds']} s" + (f" with {workers} workers" if workers else "")
        + (" (" + "; ".join(f"{k}: {v} s" for k, v in record["part_seconds"].items()) + ")"
           if len(record.get("part_seconds", {})) > 1 else ""),
        "",
        record.get("note", ""),
        "",
        "## Rerun on another floating-point path",
        "",
        _reruns(record),
        "",
        "## Rerun on a fresh test set",
        "",
        _test_set(record),
        "",
        "## Every verdict, far split",
        "",
        "Mean difference in brackets; runs: " + ", ".join(runs_of(record)) + ".",
        "",
        _verdicts(record, "far"),
        "",
        "## Every verdict, passkey",
        "",
        _verdicts(record, "passkey"),
        "",
        f"## Claims, far split (fine-tune lr {s['tune_lr']:g})",
        "",
        _claims(record, list(runs_of(record))[0]),
        "",
        f"## Steps to the position-blind reader, far split (fine-tune lr {s['tune_lr']:g})",
        "",
        "Per method: the median over the seeds that reach it of the first checkpoint at which",
        "far accuracy reaches the position-blind reader's (exact, from the test data), and how",
        "many seeds reach it by 200 steps. In the paired difference a seed that never reaches it",
        "counts as 400 steps, so where seeds never reach it the difference is censored, not exact.",
        "",
        _steps(record, list(runs_of(record))[0]),
        "",
        "![share of seeds at the position-blind reader's far accuracy by fine-tune steps]"
        "(lab2_steps.png)",
        "",
        "## Trained at 4L from scratch, by training steps",
        "",
        _ceiling(main),
        "",
        "## Trained at 4L from scratch at a base for 4L, by training steps",
        "",
        f"Base {record.get('long_base', {}).get('settings', {}).get('bases', [BASE_FOR_4L])[0]:.2f}: "
        "the toy's rule applied at 4L (the share of pairs turning within "
        "4L that Llama 2 has within 4096 tokens); base 1e4: Llama 2's own. Same recipe and",
        "seeds as above; the position-blind reader's far accuracy at 4L is the threshold.",
        "",
        _long_curves(record, "long_base"),
        "",
        "## Trained at 4L from scratch with each method's frequencies, by training steps",
        "",
        "The toy's base, with PI's, NTK-aware's and YaRN's frequencies (YaRN with its temperature)",
        "set for 4L from the first step: the ceiling of each method at its own base on far",
        "queries (the passkey still rises at 2000 steps, so its gap is a lower bound). Same",
        "recipe and seeds as above.",
        "",
        _long_curves(record, "long_methods"),
        "",
        _own_ceilings(record),
        "",
        "## Attention on the passkey's answer",
        "",
        "The weight the query puts on the answer token (the value after the only earlier copy",
        "of its key), for the head of each layer that puts the most there: mean over seeds",
        "(worst-best seed), with no fine-tune and after the longest.",
        "",
        _needle(main),
        "",
    ]
    for split in ("far", "passkey", "near", "all"):
        lines += [f"## Accuracy, {split} (fine-tune lr {s['tune_lr']:g})", "",
                  _table(main, split), ""]
    for label, run in list(runs_of(record).items())[1:]:
        lines += [f"## {label}: claims", "",
                  f"Seeds {run['seeds']}; methods {', '.join(run['methods'])}; settings "
                  f"{_differs(main, run)}.", "", _claims(record, label), "",
                  _claims(record, label, "passkey"), "",
                  f"## {label}: accuracy, far split", "", _table(run, "far"), "",
                  f"## {label}: accuracy, passkey", "", _table(run, "passkey"), ""]
        if "yarn" in run["methods"] and "pi" in run["methods"]:
            lines += [f"## {label}: steps to the position-blind reader", "",
                      _steps(record, label), ""]
    lines += ["![accuracy against fine-tune steps](lab2_grid.png)", "",
              "Methods: " + ", ".join(METHOD_LABELS[m] for m in main["methods"]) + "."]
    return "\n".join(lines) + "\n"


def _arrays(run):
    """``{name: per-seed array}`` of a run: accuracies, the model trained long, its curve and the
    prefix-by-prefix rows, each as stored."""
    out = {f"accuracy {split}": v["per_seed"] for split, v in run["accuracy"].items()}
    out |= {f"scratch {split}": v["per_seed"] for split, v in run.get("scratch_accuracy",
                                                                      {}).items()}
    out |= {f"ceiling {n} {split}": v for n, c in run.get("ceiling_curve", {}).items()
            for split, v in c.items()}
    out |= {f"{key} {split}": v for key, rows in run.get("prefix_dynamic", {}).items()
            for split, v in rows.items()}
    return {name: np.array(v, dtype=float) for name, v in out.items()}


def _labels_of_parts(record, parts):
    """The run labels of :func:`runs_of` that the given parts write."""
    labels = list(runs_of(record))
    keep = []
    for label in labels:
        part = ("lr" if label.startswith("lr ") else "base" if label.startswith("base ")
                else "beta" if label.startswith("YaRN beta") else "main")
        if part in parts:     # prefix and ceiling add to the runs of main and base
            keep.append(label)
    return keep


def compare(record, other, allow=()):
    """What a rerun (``other``, a record of this tool written elsewhere, e.g. on another
    floating-point path) changes, over the runs of the parts it ran (``other["parts_run"]``;
    the runs it copied from the stored record are left out): the per-seed values that differ
    (accuracies, the model trained long and its curve, the prefix-by-prefix rows), the
    largest difference, and per split the number of (claim, run) verdicts both hold, the
    rerun's verdict of each (``theirs``, read by :func:`stated_verdicts`) and those whose
    verdict differs (percentile and t). Settings named in ``allow`` may differ (a fresh test
    set: ``test_seed``, and no longer ceiling)."""
    parts = other.get("parts_run", PARTS)
    mine = {k: v for k, v in runs_of(record).items() if k in _labels_of_parts(other, parts)}
    theirs = {k: v for k, v in runs_of(other).items() if k in mine}
    mine = {k: v for k, v in mine.items() if k in theirs}
    if not mine:
        raise ValueError(f"the rerun holds none of the stored runs (parts {list(parts)})")
    out = {"runs": sorted(mine), "largest_accuracy_difference": 0.0, "cells_that_differ": 0,
           "cells": 0, "fingerprints": {k: run_fingerprint(v) for k, v in sorted(mine.items())}}
    for label in mine:
        if mine[label]["seeds"] != theirs[label]["seeds"]:
            raise ValueError(f"{label}: the rerun's seeds {theirs[label]['seeds']} are not the "
                             f"record's {mine[label]['seeds']}")
        settings = [{k: v for k, v in run["settings"].items()
                     if k != "versions" and k not in allow}
                    for run in (mine[label], theirs[label])]
        if settings[0] != settings[1]:
            raise ValueError(f"{label}: the rerun's settings differ from the record's: "
                             + ", ".join(k for k in sorted(set(settings[0]) | set(settings[1]))
                                         if settings[0].get(k) != settings[1].get(k)))
        a, b = _arrays(mine[label]), _arrays(theirs[label])
        for name in set(a) & set(b):
            out["largest_accuracy_difference"] = max(out["largest_accuracy_difference"],
                                                     float(np.abs(a[name] - b[name]).max()))
            out["cells_that_differ"] += int((a[name] != b[name]).sum())
            out["cells"] += a[name].size
    for split in ("far", "passkey"):
        a, b = verdict_matrix(mine, split), verdict_matrix(theirs, split)
        pairs = [(claim, label) for claim in a for label in a[claim]
                 if claim in b and label in b[claim]]
        out[split] = {"verdicts": len(pairs),
                      "theirs": {claim: {label: b[claim][label][3] for c2, label in pairs
                                         if c2 == claim} for claim in dict(pairs)}}
        for key, i in (("changed", 3), ("t_changed", 4)):
            out[split][key] = [{"claim": claim, "run": label, "from": a[claim][label][i],
                                "to": b[claim][label][i]} for claim, label in pairs
                               if a[claim][label][i] != b[claim][label][i]]
    return out


def _near_zero(stated, changed, margin=0.03):
    """``(near, kept)``: of the stated verdicts (one per measurement), how many have their
    interval's nearer end within ``margin`` of 0 here, and how many of those a rerun kept (it
    changed the ``changed`` ones): how hard the rerun tested the rule."""
    moved = {(claim, label) for claim, label, *_ in changed}
    near = [(claim, label) for claim, cells in stated.items() for label, c in cells.items()
            if not c["same_as"] and c["stated"] != "unclear"
            and (c["low"] if c["stated"] == "agrees" else -c["high"]) < margin]
    return len(near), sum(pair not in moved for pair in near)


def _reruns(record):
    lines = []
    for where, diff in record.get("reruns", {}).items():
        lines += [f"- **{where}** (`{diff['command']}`; runs {', '.join(diff['runs'])}): "
                  f"{diff['cells_that_differ']} of {diff['cells']} per-seed accuracies differ, "
                  f"by at most {diff['largest_accuracy_difference']:.4f}."]
        for split in ("far", "passkey"):
            d = {k: [f"{c['claim']} / {c['run']}: {c['from']} -> {c['to']}" for c in diff[split][k]]
                 for k in ("changed", "t_changed")}
            held, stated, changed = rerun_test(record, where, split)
            lines.append(f"  - {split}: {len(d['changed'])} of {diff[split]['verdicts']} verdicts "
                         "change" + (": " + "; ".join(d["changed"]) if d["changed"] else "")
                         + f"; under the t interval {len(d['t_changed'])} change"
                         + (": " + "; ".join(d["t_changed"]) if d["t_changed"] else "")
                         + f". Of the {stated} measurements whose verdict the paths recorded "
                         f"before it state (agrees or disagrees), it keeps {held}"
                         + (" (held out: the test of the rule)" if diff.get("held_out") else
                            " (in sample: the rule was fixed after it)")
                         + (": changed " + "; ".join(f"{c} / {lab}: {a} -> {b}"
                                                     for c, lab, a, b in changed)
                            if changed else "") + ".")
            if diff.get("held_out"):
                order = list(record["reruns"])
                before = {**record, "reruns": {w: record["reruns"][w]
                                               for w in order[:order.index(where)]}}
                near, kept = _near_zero(stated_verdicts(before, split), changed)
                lines[-1] += (f" Of those, {near} had an interval end within 0.03 of 0 here; "
                              f"it kept {kept}.")
    if not lines:
        return "No rerun recorded."
    return ("The grid rerun under emulated CPUs (`tools/lab2_grid.py --out DIR` with an "
            "environment of `tools/portability.py`), compared with this record (`tools/lab2_grid.py "
            "--compare DIR/lab2_grid.json --where NAME`), in the order they were compared:\n\n"
            + "\n".join(lines))


def _test_set(record):
    """The verdicts stated from the floating-point paths, read again on a fresh test set."""
    fresh = record.get("test_set")
    if fresh is None:
        return "Not run (`tools/lab2_grid.py --test-seed N --out DIR`, then `--compare-test-set`)."
    lines = [f"Every seed's models retrained from the same seeds on this machine (a model that "
             f"differed from the record's would only make the test stricter) and scored on "
             f"{record['main']['settings']['n_test']} other test sequences (test seed "
             f"{fresh['test_seed']}, passkey {fresh['test_seed'] + 1}; `{fresh['command']}`; "
             f"runs {', '.join(fresh['runs'])}): {fresh['cells_that_differ']} of "
             f"{fresh['cells']} per-seed accuracies differ, by at most "
             f"{fresh['largest_accuracy_difference']:.4f}. The intervals cover the seeds, not the "
             "test sequences; this reads how much the sequences move the verdicts.", ""]
    for split in ("far", "passkey"):
        held, stated, changed = test_set_check(record, split)
        near, kept = _near_zero(stated_verdicts(record, split), changed)
        lines.append(f"- {split}: of the {stated} measurements whose verdict the paths state "
                     f"(agrees or disagrees), the fresh test set gives the same for {held}"
                     + (": changed " + "; ".join(f"{c} / {lab}: {a} -> {b}"
                                                 for c, lab, a, b in changed) if changed else "")
                     + f". {near} of them had an interval end within 0.03 of 0; it kept {kept}.")
    return "\n".join(lines)


def _differs(main, run):
    keys = ("tune_lr", "rope_base", "yarn_params", "scratch")
    diff = {k: run["settings"].get(k) for k in keys
            if run["settings"].get(k) != main["settings"].get(k)}
    return "as the main grid but " + ", ".join(f"{k} = {v}" for k, v in diff.items())


def _drop_stale_reruns(record):
    """Drop the recorded reruns compared with runs the record no longer holds (a part rerun
    here since), from the record and from ``lab2_reruns.json``: their verdicts are not this
    record's."""
    runs = runs_of(record)
    stale = [where for where, diff in record.get("reruns", {}).items()
             if any(label in runs and run_fingerprint(runs[label]) != fingerprint
                    for label, fingerprint in diff.get("fingerprints", {}).items())]
    for where in stale:
        del record["reruns"][where]
        print(f"rerun {where!r} was compared with runs rerun since: dropped (compare again)")
    fresh = record.get("test_set", {}).get("fingerprints", {})
    if any(label not in runs or run_fingerprint(runs[label]) != f for label, f in fresh.items()):
        del record["test_set"]
        TEST_SET.unlink(missing_ok=True)
        print("the fresh test set was compared with runs rerun since: dropped (compare again)")
    # a long part's rerun is paired with the main grid its CPU ran (own_ceiling): without it,
    # the pairing is gone
    main = next(iter(runs))
    kept = [w.rsplit(", ", 1)[0] for w, d in record.get("reruns", {}).items() if main in d["runs"]]
    for part in LONG_PARTS:
        for where in list(record.get(part, {}).get("reruns", {})):
            if part == "long_methods" and where.rsplit(", ", 1)[0] not in kept:
                del record[part]["reruns"][where]
                print(f"{part} rerun {where!r} has no main grid rerun from its CPU: dropped")
    if stale and RERUNS.exists():
        kept = {w: r for w, r in json.loads(RERUNS.read_text()).items() if w not in stale}
        RERUNS.write_text(json.dumps(kept) + "\n")


def _write(out_dir, record):
    if out_dir == ROOT / "benchmarks":
        _drop_stale_reruns(record)
    else:    # a rerun elsewhere: the record's comparisons are not its own
        record.pop("reruns", None)
        record.pop("test_set", None)
    json_path = RECORD if out_dir == ROOT / "benchmarks" else out_dir / "lab2_grid.json"
    json_path.write_text(json.dumps(record, indent=1) + "\n")
    (out_dir / "LAB2_GRID.md").write_text(render(record))
    _plot_steps(out_dir, record)


def _plot_steps(out_dir, record):
    """Steps-to-threshold curves: the share of seeds whose far accuracy has reached the
    position-blind reader's by each checkpoint, per method, length and base."""
    runs = {f"base {record['toy_base']:.2f}": record["main"]}
    runs |= {f"base {float(b):g}": run for b, run in record.get("bases", {}).items()}
    fig, axes = plt.subplots(len(runs), 2, figsize=(10, 3.2 * len(runs)), sharex=True,
                             sharey=True, squeeze=False)
    for row, (label, run) in zip(axes, runs.items(), strict=True):
        for ax, mult in zip(row, run["multipliers"], strict=True):
            for a, m in enumerate(run["methods"]):
                st = steps_to_threshold(run, m, mult)
                # a step function of the checkpoints; equal curves offset by 0.012 a method
                share = np.array([(st <= c).mean() for c in run["checkpoints"]])
                ax.plot(run["checkpoints"], share + 0.012 * (a - 2.5), marker="o", markersize=3,
                        drawstyle="steps-post", **_style(m))
            ax.set_title(f"{label}, {mult}L: threshold "
                         f"{run['baselines']['blind']['far'][run['multipliers'].index(mult)]:.2f}",
                         fontsize=10)
            ax.set_xlabel("fine-tune steps")
        row[0].set_ylabel("share of seeds at or past it")
    axes[0, -1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle("Steps to the position-blind reader's far accuracy, "
                 f"{len(record['main']['seeds'])} seeds (curves offset by up to 0.03 so that "
                 "equal ones stay visible)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_dir / "lab2_steps.png", dpi=110)
    plt.close(fig)


def _plot(out_dir, main_run, seeds):
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    plot_vs_steps(main_run, axes=axes, split="far")
    fig.suptitle(f"recall_latest, far split (key's latest copy >= L back), RoPE base {TOY_BASE:.2f}, "
                 f"L = {TRAIN_LENGTH}: mean of seeds {list(seeds)}", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_dir / "lab2_grid.png", dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--lr-variants", type=float, nargs="*", default=list(LR_VARIANTS))
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(DEFAULT_PARTS),
                        help="run only these parts and keep the others from the stored record "
                             "(default: all but ceiling, which runs alone: make lab2-ceiling)")
    parser.add_argument("--out", type=pathlib.Path, default=None,
                        help="write LAB2_GRID.md, the JSON and the figure into this directory "
                             "instead of the repository (a rerun to compare with the record)")
    parser.add_argument("--compare", type=pathlib.Path, default=None,
                        help="a rerun's lab2_grid.json: store what it changes in the record "
                             "(under --where) and rewrite LAB2_GRID.md")
    parser.add_argument("--where", default=None, help="the rerun's floating-point path")
    parser.add_argument("--held-out", action="store_true",
                        help="with --compare: the rerun was compared after the rule of stated "
                             "verdicts was fixed, so its counts test the rule")
    parser.add_argument("--test-seed", type=int, default=None,
                        help="score every model on a fresh test set drawn from this seed "
                             "(needs --out; no longer ceiling)")
    parser.add_argument("--compare-test-set", type=pathlib.Path, default=None,
                        help="a --test-seed rerun's lab2_grid.json: store its verdicts in the "
                             "record (test_set) and rewrite LAB2_GRID.md")
    parser.add_argument("--render", action="store_true",
                        help="only rewrite LAB2_GRID.md from the stored lab2_grid.json")
    args = parser.parse_args(argv)
    if args.test_seed is not None and args.out is None:
        parser.error("--test-seed needs --out: a fresh test set is compared, not stored")
    if args.test_seed is not None and {"ceiling", *LONG_PARTS} & set(args.parts):
        parser.error("--test-seed scores the claims' runs (main lr base beta prefix), not the "
                     "from-scratch curves")
    if args.test_seed is not None and "prefix" in args.parts and \
            not {"main", "base"} <= set(args.parts):
        parser.error("--test-seed with --parts prefix needs main and base in --parts too: "
                     "prefix checks its models against theirs, on the same test set")
    if args.compare_test_set is not None:
        record = json.loads(RECORD.read_text())
        other = json.loads(args.compare_test_set.read_text())
        ran = _labels_of_parts(other, other.get("parts_run", PARTS))
        seeds = {runs_of(other)[label]["settings"].get("test_seed") for label in ran}
        if len(seeds) != 1 or None in seeds:
            raise SystemExit("--compare-test-set needs a rerun made with --test-seed")
        if other.get("versions") != record.get("versions"):
            raise SystemExit("--compare-test-set needs a rerun made with the record's versions "
                             f"{record.get('versions')}, got {other.get('versions')}")
        diff = compare(record, other, allow=("test_seed", "ceiling_steps"))
        record["test_set"] = diff | {"test_seed": seeds.pop(), "command": other.get("command")}
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
        # its runs, for differences that are not claims (notebook 12 reads them)
        TEST_SET.write_text(json.dumps({label: runs_of(other)[label]
                                        for label in diff["runs"]}) + "\n")
        (ROOT / "benchmarks" / "LAB2_GRID.md").write_text(render(record))
        for split in ("far", "passkey"):
            print(split, test_set_check(record, split))
        return 0
    if args.compare is not None:
        if not args.where:
            parser.error("--compare needs --where (the rerun's floating-point path)")
        record = json.loads(RECORD.read_text())
        other = json.loads(args.compare.read_text())
        for part in LONG_PARTS:
            if part in other.get("parts_run", ()) and part in other:
                _compare_long_base(record, other, args.where, part)
        if set(other.get("parts_run", PARTS)) <= set(LONG_PARTS):   # no run of the grid
            RECORD.write_text(json.dumps(record, indent=1) + "\n")
            (ROOT / "benchmarks" / "LAB2_GRID.md").write_text(render(record))
            return 0
        diff = compare(record, other)
        record.setdefault("reruns", {}).pop(args.where, None)     # to the end: the latest
        record["reruns"][args.where] = diff | {
            "command": other.get("command", "?"), "versions": other.get("versions"),
            "held_out": args.held_out}
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
        # the rerun's own runs, for differences that are not claims (notebook 12 reads them)
        reruns = json.loads(RERUNS.read_text()) if RERUNS.exists() else {}
        reruns.pop(args.where, None)
        reruns[args.where] = {label: runs_of(other)[label] for label in diff["runs"]}
        RERUNS.write_text(json.dumps(reruns) + "\n")
        (ROOT / "benchmarks" / "LAB2_GRID.md").write_text(render(record))
        for split in ("far", "passkey"):
            print(split, record["reruns"][args.where][split])
        return 0
    if args.render:
        record = json.loads(RECORD.read_text())
        (ROOT / "benchmarks" / "LAB2_GRID.md").write_text(render(record))
        _plot_steps(ROOT / "benchmarks", record)
        return 0
    prefix_of = {"main", "base"} if "prefix" in args.parts else set(args.parts)
    if {"main", "base"} & set(args.parts) and "prefix" not in args.parts:
        args.parts.append("prefix")   # it scores the pre-trained models of main and base
    seeds = tuple(args.seeds[:2] if args.quick else args.seeds)
    checkpoints = (0, 25, 50) if args.quick else (0, 25, 50, 100, 200)
    out_dir = pathlib.Path(tempfile.mkdtemp()) if args.quick else ROOT / "benchmarks"
    if args.out is not None:
        out_dir = args.out
        out_dir.mkdir(parents=True, exist_ok=True)
    task = make_task("recall_latest", n_keys=4, n_values=8)
    config = ModelConfig(scheme="rope", vocab_size=task.vocab_size, rope_base=TOY_BASE)
    command = "python tools/lab2_grid.py " + " ".join(argv if argv is not None else sys.argv[1:])
    keep = set(PARTS) - set(args.parts)
    # a rerun elsewhere goes on from its own record when it has one
    source = args.out / "lab2_grid.json" if args.out is not None else RECORD
    source = source if source.exists() else RECORD
    # a quick run of parts that add to the main grid starts from the stored one
    record = (json.loads(source.read_text())
              if keep and (not args.quick or "main" not in args.parts) else {})
    record |= {"command": command.strip(), "task": {"name": task.name,
                                                    "settings": dict(task.settings)},
               "toy_base": TOY_BASE, "lr_variants": record.get("lr_variants", {}),
               "bases": record.get("bases", {})}
    ceiling = CEILING if not args.quick else {"scratch_steps": 200, "ceiling_steps": (100,)}
    if args.test_seed is not None:    # the claims' models only: the curves are not claims
        ceiling = ceiling | {"ceiling_steps": ()}
        for part in LONG_PARTS:       # scored on the default test set: not this record's
            record.pop(part, None)
        for key in ("part_seconds", "part_commands"):
            for part in ("ceiling", *LONG_PARTS):
                record.get(key, {}).pop(part, None)

    def run(**changes):
        return run_context_extension(task, changes.pop("config", config), seeds=seeds,
                                     checkpoints=checkpoints, workers=args.workers,
                                     test_seed=args.test_seed, **(SETTINGS | changes))

    if "seconds" in record and "part_seconds" not in record:   # a record of the whole grid
        record["part_seconds"] = {"main lr base beta": record["seconds"]}
    record["part_seconds"] = {k: v for k, v in record.get("part_seconds", {}).items()
                              if not set(k.split()) & set(args.parts)}
    record["part_commands"] = {k: v for k, v in record.get("part_commands", {}).items()
                               if k in record["part_seconds"]}
    started = {}

    def begin(part):
        started[part] = time.perf_counter()
        return True

    # the parts this record's numbers come from (a rerun elsewhere: the parts it reran)
    # a rerun elsewhere that starts from the repository's record reran only its own parts
    fresh_rerun = args.out is not None and source == RECORD
    before = () if fresh_rerun else record.get("parts_run",
                                               ("main", "lr", "base", "beta") if record else ())
    record["parts_run"] = [p for p in PARTS if p in args.parts or p in before]

    def save(key, value, part):
        record[key] = value
        record["part_seconds"][part] = round(time.perf_counter() - started[part])
        record.setdefault("part_commands", {})[part] = command.strip()
        record["seconds"] = sum(record["part_seconds"].values())
        _write(out_dir, record)

    if "main" in args.parts and begin("main"):
        old = record.get("main", {})
        main_run = run(**ceiling)
        record["versions"] = main_run.settings["versions"]
        _plot(out_dir, main_run, seeds)
        new = summarise(main_run)
        # the longer ceiling's models depend only on the seeds and the from-scratch settings
        keys = ("seeds", "train_length", "multipliers", "scratch_batch", "lr", "n_test",
                "test_seed")
        longer = {n: v for n, v in old.get("ceiling_curve", {}).items()
                  if n not in new.get("ceiling_curve", {})}
        if longer and all(old["settings"].get(k) == new["settings"].get(k) for k in keys):
            new["ceiling_curve"] = dict(new.get("ceiling_curve", {})) | longer
        elif longer:
            record.get("part_seconds", {}).pop("ceiling", None)
            print("the longer ceiling's settings changed: its points are dropped "
                  "(make lab2-ceiling)")
        for part, settings_of in LONG_PARTS.items():
            if part in record and record[part]["settings"] != settings_of(new):
                del record[part]       # trained with other settings than the new main grid's
                record.get("part_seconds", {}).pop(part, None)
                print(f"the main grid's settings changed: {part} is dropped (make lab2-ceiling)")
        save("main", new, "main")
    if "lr" in args.parts and begin("lr"):
        record["lr_variants"] = {}
        for lr in args.lr_variants:
            record["lr_variants"][str(lr)] = summarise(run(tune_lr=lr, scratch=False))
            save("lr_variants", record["lr_variants"], "lr")
    if "base" in args.parts and begin("base"):
        second = ModelConfig(scheme="rope", vocab_size=task.vocab_size, rope_base=SECOND_BASE)
        save("bases", {str(SECOND_BASE): summarise(run(config=second, scratch=False))}, "base")
    if "beta" in args.parts and begin("beta"):
        fast, slow = yarn_betas_rescaled(config.head_dim, TOY_BASE, TRAIN_LENGTH)
        beta_run = run(methods=("pi", "yarn", "yarn_no_t"), scratch=False,
                       yarn_params=(("beta_fast", fast), ("beta_slow", slow)))
        save("yarn_beta", {"beta_fast": fast, "beta_slow": slow, "run": summarise(beta_run)}, "beta")
    if "ceiling" in args.parts and begin("ceiling"):
        s = SETTINGS
        longer = ceiling_curve(task, config, ceiling_steps=(200,) if args.quick else LONGER_CEILING,
                               train_length=TRAIN_LENGTH, multipliers=s["multipliers"],
                               seeds=tuple(record["main"]["seeds"]), batch=s["scratch_batch"],
                               lr=s["lr"], n_test=s["n_test"], workers=args.workers)
        curve = dict(record["main"].get("ceiling_curve", {}))
        curve |= {str(n): {"far": np.round(far, 4).tolist(), "passkey": np.round(key, 4).tolist()}
                  for n, (far, key) in sorted(longer.items())}
        record["main"]["ceiling_curve"] = curve
        save("main", record["main"], "ceiling")
    if "long_base" in args.parts and begin("long_base"):
        curves, ls = {}, _long_base_settings(record["main"])    # the main grid's recipe and seeds
        for base in ls["bases"]:
            cfg = ModelConfig(scheme="rope", vocab_size=task.vocab_size, rope_base=base)
            curve = ceiling_curve(task, cfg, ceiling_steps=(100,) if args.quick else LONG_BASE_STEPS,
                                  train_length=ls["train_length"], multipliers=ls["multipliers"],
                                  seeds=tuple(ls["seeds"]), batch=ls["scratch_batch"],
                                  lr=ls["lr"], n_test=ls["n_test"], workers=args.workers)
            curves[repr(base)] = {str(n): {"far": np.round(far, 4).tolist(),
                                           "passkey": np.round(key, 4).tolist()}
                                  for n, (far, key) in sorted(curve.items())}
        save("long_base", {"seeds": ls["seeds"], "settings": ls, "curves": curves}, "long_base")
    if "long_methods" in args.parts and begin("long_methods"):
        curves, ls = {}, _long_methods_settings(record["main"])   # the main grid's recipe
        if record["main"]["settings"].get("yarn_params"):
            raise SystemExit("long_methods trains YaRN with its default betas; the main grid "
                             f"has yarn_params {record['main']['settings']['yarn_params']}")
        for method in ls["methods"]:
            cfg = method_config(ModelConfig(scheme="rope", vocab_size=task.vocab_size,
                                            rope_base=ls["rope_base"]),
                                method, max(ls["multipliers"]), ls["train_length"])
            curve = ceiling_curve(task, cfg, ceiling_steps=(100,) if args.quick else LONG_BASE_STEPS,
                                  train_length=ls["train_length"], multipliers=ls["multipliers"],
                                  seeds=tuple(ls["seeds"]), batch=ls["scratch_batch"],
                                  lr=ls["lr"], n_test=ls["n_test"], workers=args.workers)
            curves[method] = {str(n): {"far": np.round(far, 4).tolist(),
                                       "passkey": np.round(key, 4).tolist()}
                              for n, (far, key) in sorted(curve.items())}
        save("long_methods", {"seeds": ls["seeds"], "settings": ls, "curves": curves},
             "long_methods")
    if "prefix" in args.parts and begin("prefix"):
        s = SETTINGS
        targets = {"main": (record["main"], config)} if "main" in prefix_of else {}
        for base, run_ in record.get("bases", {}).items() if "base" in prefix_of else ():
            targets[f"base {base}"] = (run_, ModelConfig(scheme="rope", vocab_size=task.vocab_size,
                                                         rope_base=float(base)))
        for label, (run_, cfg) in targets.items():
            scores = prefix_dynamic(task, cfg, seeds=tuple(run_["seeds"]),
                                    train_length=TRAIN_LENGTH, multipliers=s["multipliers"],
                                    steps=s["steps"], batch=s["batch"], lr=s["lr"],
                                    n_test=s["n_test"], test_seed=args.test_seed,
                                    workers=args.workers)
            ntk = run_["methods"].index("ntk")
            for split, one_pass in scores["ntk"].items():
                stored = np.array(run_["accuracy"][split]["per_seed"])[ntk, :, 0]
                if np.abs(np.round(one_pass, 4) - stored).max() > 0:
                    raise SystemExit(f"{label}: NTK-aware in one pass ({split}) differs from the "
                                     "stored grid: not the grid's pre-trained models")
            run_["prefix_dynamic"] = {key: {split: np.round(v, 4).tolist()
                                            for split, v in scores[key].items()}
                                      for key in ("prefix", "ntk_short")}
        save("main", record["main"], "prefix")
    print(f"wrote {out_dir / 'LAB2_GRID.md'} ({record['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
