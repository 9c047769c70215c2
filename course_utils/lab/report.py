"""Tables and figures of the length-generalisation experiment.

Where a model cannot read an input at all (a learned table beyond its ``max_len``), the accuracy
is undefined: tables print ``n/a`` and figures draw no point, never a zero.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from .. import _validate as val
from ..plotting import PALETTE
from .model import SCHEMES
from .train import Experiment

__all__ = ["SCHEME_LABELS", "scheme_style", "row_label", "row_style", "results_table",
           "plot_accuracy"]

SCHEME_LABELS = {
    "none": "NoPE",
    "sinusoidal": "sinusoidal",
    "learned": "learned absolute",
    "t5": "T5 bias",
    "rope": "RoPE",
    "alibi": "ALiBi",
}

_MARKERS = {"none": "o", "sinusoidal": "s", "learned": "X", "t5": "^", "rope": "D", "alibi": "v"}


def scheme_style(scheme):
    """Plot keywords for ``scheme``: the same colour, marker and label in every figure of the lab."""
    scheme = val.choice(scheme, "scheme", SCHEMES)
    colors = sns.color_palette(PALETTE, len(SCHEMES))
    return {"color": colors[SCHEMES.index(scheme)], "marker": _MARKERS[scheme],
            "label": SCHEME_LABELS[scheme]}


def row_label(experiment, name):
    """The label of a row of ``experiment``: the scheme's name, or a variant's own name."""
    _row(experiment, name)
    return SCHEME_LABELS.get(name, name)


def _row(experiment, name):
    experiment = _experiment(experiment)
    if not isinstance(name, str) or name not in experiment.schemes:
        raise ValueError(f"name must be a row of the experiment {experiment.schemes}, "
                         f"got {name!r:.60}")
    return experiment


def row_style(experiment, name):
    """Plot keywords for a row of ``experiment``: :func:`scheme_style` for a scheme; for a variant,
    its scheme's colour and marker with a dashed line, hollow markers and the variant's name."""
    experiment = _row(experiment, name)
    if name in SCHEMES:
        return scheme_style(name)
    config = experiment.models[name][0]
    return scheme_style(config.scheme) | {"linestyle": "--", "markerfacecolor": "white",
                                          "label": name}


def _experiment(experiment):
    if not isinstance(experiment, Experiment):
        raise TypeError(f"experiment must be an Experiment from run_experiment, got "
                        f"{type(experiment).__name__}")
    return experiment


def _cell(values, decimals):
    if np.isnan(values).all():
        return "n/a"
    if np.isnan(values).any():
        raise ValueError("a scheme cannot read an input for some seeds and not for others")
    mean = f"{values.mean():.{decimals}f}"
    if len(values) == 1:
        return mean
    return f"{mean} [{values.min():.{decimals}f}-{values.max():.{decimals}f}]"


def results_table(experiment, *, decimals=2):
    """Accuracy as a text table: one row per scheme, one column per test length.

    One seed: the accuracy. Several seeds: the mean over seeds and, in brackets, the smallest
    and the largest seed's accuracy. ``n/a`` where the model has no output for that length.
    """
    experiment = _experiment(experiment)
    decimals = val.positive_int(decimals, "decimals", allow_zero=True)
    train_length = experiment.train_length
    headers = ["scheme"] + [f"{n // train_length}x = {n}" for n in experiment.lengths]
    rows = [[row_label(experiment, s)] + [_cell(experiment.accuracy[a, m], decimals)
                                  for m in range(len(experiment.lengths))]
            for a, s in enumerate(experiment.schemes)]
    widths = [max(len(r[c]) for r in rows + [headers]) for c in range(len(headers))]
    lines = ["  ".join(h.ljust(w) if c == 0 else h.rjust(w)
                       for c, (h, w) in enumerate(zip(headers, widths, strict=True)))]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(x.ljust(w) if c == 0 else x.rjust(w)
                               for c, (x, w) in enumerate(zip(row, widths, strict=True))))
    return "\n".join(lines)


def plot_accuracy(experiment, *, ax=None, title=None):
    """Accuracy against test length, one line per row (mean over seeds, min-max band).

    A scheme with no output at a length gets no point there; a dashed vertical line marks the
    training length (the learned table's last row), a dotted horizontal line chance.
    Returns the ``Axes``.
    """
    experiment = _experiment(experiment)
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a string or None, got {title!r:.60}")
    if ax is None:
        _, ax = plt.subplots()
    elif not isinstance(ax, plt.Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
    lengths = np.array(experiment.lengths)
    for a, scheme in enumerate(experiment.schemes):
        acc = experiment.accuracy[a]
        style = row_style(experiment, scheme)
        if np.isnan(acc).any(axis=-1).any():
            style["label"] += f" (n/a beyond {experiment.train_length})"
            style["markersize"] = 9
        ax.plot(lengths, acc.mean(axis=-1), **style)
        if acc.shape[-1] > 1:
            ax.fill_between(lengths, acc.min(axis=-1), acc.max(axis=-1), alpha=0.15,
                            color=style["color"], linewidth=0)
    ax.axvline(experiment.train_length, color="0.4", linestyle="--", linewidth=1)
    ax.axhline(experiment.task.chance, color="0.4", linestyle=":", linewidth=1)
    ax.text(experiment.train_length * 0.97, 0.5, "training length", color="0.3", fontsize=9,
            rotation=90, ha="right", va="center")
    ax.text(experiment.train_length * 1.04, experiment.task.chance + 0.015, "chance", color="0.3",
            fontsize=9, ha="left", va="bottom")
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths, [str(n) for n in lengths])
    ax.minorticks_off()
    ax.set_ylim(0.0, 1.04)
    ax.set(xlabel="test length (tokens)", ylabel="accuracy (second half of each sequence)",
           title=title or experiment.task.name)
    return ax
