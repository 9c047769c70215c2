"""Plotting a plan: :func:`draw_plan`, :func:`plot_plan`."""

from __future__ import annotations

import os

import numpy as np

from .format import _require_plan, _require_title


def draw_plan(plan, ax, *, title=None):
    """Draw layers (rows) by pairs (columns) on ``ax``, coloured by log10 of the wavelength
    in positions. Rows of layers without RoPE are light grey ("no RoPE"), pairs that never
    turn (infinite wavelength) dark grey ("does not turn"); a white bar marks where each
    layer's pairs stop turning within L, an orange one within its window or chunk. Returns
    the image (for a colorbar)."""
    _require_plan(plan)
    if plan.scheme is not None:
        raise ValueError(f"plan: {plan.model_type} has no rotary pairs to draw "
                         f"({plan.scheme.split(';')[0]})")
    if not hasattr(ax, "imshow"):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    _require_title(title)
    # One column per entry of inv_freq: a proportional layer (Gemma 4's global layers) lists
    # the pairs that do not turn too, so it can be wider than rotary_dim // 2.
    width = max((layer.inv_freq.size for layer in plan.layers if layer.inv_freq is not None),
                default=0) or 1
    grid = np.full((len(plan.layers), width), np.nan)
    overlay = np.zeros((len(plan.layers), width, 4))
    for layer in plan.layers:
        if not layer.rope:
            overlay[layer.index] = (0.85, 0.85, 0.85, 1.0)  # no RoPE
            continue
        lam = layer.wavelengths
        grid[layer.index, : lam.size] = np.where(np.isfinite(lam), np.log10(lam), np.nan)
        overlay[layer.index, : lam.size][~np.isfinite(lam)] = (0.3, 0.3, 0.3, 1.0)
    im = ax.imshow(grid, aspect="auto", interpolation="nearest", cmap="viridis")
    ax.imshow(overlay, aspect="auto", interpolation="nearest")
    _mark_counts(plan, ax)
    ax.grid(False)
    ax.set_xlabel("pair i")
    ax.set_ylabel("layer l")
    ax.set_title(title or f"{plan.model_type}: wavelength per layer and pair")
    return im


def _mark_counts(plan, ax):
    """Bars after the last pair that turns within L (white) and within the window (orange),
    and a legend naming them and the grey rows and cells."""
    from matplotlib.patches import Patch

    rows = [layer for layer in plan.layers if layer.rope]
    for attr, colour in (("turning_pairs", "white"), ("turning_pairs_in_span", "orange")):
        marks = [(getattr(layer, attr), layer.index) for layer in rows
                 if getattr(layer, attr) is not None]
        if marks:
            x, y = zip(*marks, strict=True)
            ax.scatter(np.array(x) - 0.5, y, marker="|", s=40, color=colour, linewidths=1.5)
    handles = [Patch(facecolor="white", edgecolor="grey",
                     label="turns within L: left of the white bar"),
               Patch(color="orange", label="turns within the window: left of orange"),
               Patch(color=(0.85, 0.85, 0.85), label="no RoPE"),
               Patch(color=(0.3, 0.3, 0.3), label="does not turn (wavelength infinite)")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2,
              fontsize=8, frameon=False)


def plot_plan(plan, path, *, title=None):
    """Save :func:`draw_plan`'s figure to ``path`` (a PNG, with a colorbar)."""
    _require_plan(plan)
    _require_title(title)
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise TypeError(f"path must be a file path (str or os.PathLike), got {path!r:.60}")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 2 + 0.12 * len(plan.layers)))
    im = draw_plan(plan, ax, title=title)
    fig.colorbar(im, ax=ax, label="log10 wavelength (positions)")
    fig.tight_layout()
    # Laid out above: without this, savefig would draw the figure once more only to lay it out
    # again (a colorbar leaves a placeholder layout engine behind); the pixels are the same.
    fig.set_layout_engine(None)
    fig.savefig(path, dpi=150)
    plt.close(fig)
