"""Figures a reader can move, in Jupyter and on the static web site, with no kernel running.

Each function below draws one figure for every setting of its controls (sliders), with the
course's own functions, and returns an :class:`Explorer`. In Jupyter and on the site it displays
as HTML: one image and a slider per control; moving a slider swaps in the precomputed picture for
the new setting, with a few lines of JavaScript embedded in the output (no kernel, no widget
library, nothing fetched from another host). Without JavaScript, and in print, the picture for
the default setting stays (``Explorer.still_png()`` returns it as a PNG file for other uses).

Frames are PNGs reduced to a 64-colour palette, so each explorer stays well under 1 MB, and the
HTML is the same on every run (no random ids, no time stamps) and whatever plotting style is in
force (the figures use matplotlib's defaults with a few settings of their own).

- :func:`rope_base_explorer`: RoPE's per-pair wavelengths ``lambda_i = 2 pi / theta_i`` as the base
  ``b`` changes (:func:`course_utils.rope.rope_inv_freq`).
- :func:`rope_scaling_explorer`: the wavelengths after Position Interpolation, NTK-aware scaling
  and YaRN as the factor ``s`` changes (:func:`course_utils.scaling.rope_scaling`).
- :func:`alibi_explorer`: ALiBi's slopes and biases as the number of heads changes
  (:func:`course_utils.alibi.alibi_slopes`, :func:`course_utils.alibi.alibi_bias`).
- :func:`mrope_explorer`: Qwen2-VL's temporal, height and width ids of a video's tokens, frame by
  frame, for several grid sizes (:func:`course_utils.multimodal.mrope_position_ids`).
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import re

import matplotlib as mpl
import numpy as np
from matplotlib.figure import Figure

from . import _validate as val
from .alibi import alibi_bias, alibi_slopes
from .multimodal import mrope_position_ids
from .rope import rope_inv_freq
from .scaling import rope_scaling

__all__ = ["Explorer", "rope_base_explorer", "rope_scaling_explorer", "alibi_explorer",
           "mrope_explorer", "MAX_BYTES"]

MAX_BYTES = 1_000_000  # the largest HTML an explorer may produce
_DPI = 150  # image pixels per inch; shown at 100 CSS pixels per inch (1.5x for sharp screens)
_SHOWN_DPI = 100
_COLOURS = 64
_STYLE = {
    "font.size": 10.5, "axes.titlesize": 11.5, "axes.titleweight": "bold",
    "axes.labelsize": 10.5, "xtick.labelsize": 9.5, "ytick.labelsize": 9.5,
    "legend.fontsize": 9.5, "figure.facecolor": "white", "savefig.facecolor": "white",
    "axes.grid": True, "grid.color": "#dddddd", "axes.edgecolor": "#444444",
    "axes.prop_cycle": mpl.cycler(color=["#0173b2", "#de8f05", "#029e73", "#d55e00",
                                         "#cc78bc", "#ca9161"]),
    "svg.hashsalt": "course",
}


class Explorer:
    """A precomputed figure with sliders: ``frames[k]`` is the PNG for the k-th setting.

    Settings are numbered in :func:`itertools.product` order of the controls' values (the last
    control varies fastest). Displays as HTML in Jupyter (``_repr_html_``); :attr:`html` is the
    same text, :meth:`still_png` the picture for the default setting.
    """

    def __init__(self, name, frames, controls, *, alt, width_px):
        if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9-]*", name):
            raise ValueError(f"name must be lower-case letters, digits and hyphens, got {name!r}")
        if isinstance(controls, (str, bytes)) or not isinstance(controls, (list, tuple)) \
                or not controls:
            raise ValueError("controls must be a non-empty list of (label, values, default) "
                             f"entries, got {controls!r:.60}")
        checked = []
        for entry in controls:
            if not isinstance(entry, (list, tuple)) or len(entry) != 3:
                raise ValueError("controls must hold (label, values, default) entries, got "
                                 f"{entry!r:.60}")
            label, values, default = entry
            if not isinstance(label, str) or isinstance(values, (str, bytes)) \
                    or not isinstance(values, (list, tuple)) or not values:
                raise ValueError("controls must hold (label, values, default) with a string "
                                 f"label and a non-empty list of values, got {entry!r:.60}")
            if isinstance(default, bool) or not isinstance(default, (int, np.integer)) \
                    or not 0 <= default < len(values):
                raise ValueError(f"controls: default must index the values (0 .. "
                                 f"{len(values) - 1}), got {default!r:.60}")
            checked.append((label, [str(v) for v in values], int(default)))
        self.name = name
        self.controls = checked
        count = int(np.prod([len(values) for _, values, _ in self.controls]))
        if isinstance(frames, (str, bytes)) or not isinstance(frames, (list, tuple)) \
                or not all(isinstance(f, bytes) for f in frames):
            raise TypeError(f"frames must be a list of PNG bytes, got {frames!r:.60}")
        if len(frames) != count:
            raise ValueError(f"frames must hold one PNG per setting ({count}), got {len(frames)}")
        if not isinstance(alt, str) or not alt:
            raise TypeError(f"alt must be a non-empty string, got {alt!r:.60}")
        self.frames = list(frames)
        self.alt = alt
        self.width_px = val.positive_int(width_px, "width_px")

    @property
    def default_index(self) -> int:
        index = 0
        for _, values, default in self.controls:
            index = index * len(values) + default
        return index

    def still_png(self) -> bytes:
        """The PNG shown for the default setting (what prints, and what shows without scripts)."""
        return self.frames[self.default_index]

    @property
    def html(self) -> str:
        encoded = [base64.b64encode(frame).decode("ascii") for frame in self.frames]
        sizes = [len(values) for _, values, _ in self.controls]
        element = f"course-explorer-{self.name}"
        rows = []
        for axis, (label, values, default) in enumerate(self.controls):
            rows.append(
                f'<label class="course-explorer-control">'
                f'<span class="course-explorer-label">{html.escape(label)}</span> '
                f'<input type="range" min="0" max="{len(values) - 1}" step="1" '
                f'value="{default}" data-axis="{axis}" aria-label="{html.escape(label)}"> '
                f'<output>{html.escape(values[default])}</output></label>')
        values_js = json.dumps([values for _, values, _ in self.controls])
        script = (
            "(function () {\n"
            f"  var root = document.getElementById({json.dumps(element)});\n"
            "  if (!root || root.dataset.ready) { return; }\n"
            "  root.dataset.ready = '1';\n"
            f"  var frames = {json.dumps(encoded)};\n"
            f"  var sizes = {json.dumps(sizes)}, values = {values_js};\n"
            "  var image = root.querySelector('img');\n"
            "  var inputs = root.querySelectorAll('input[type=range]');\n"
            "  function update() {\n"
            "    var index = 0;\n"
            "    inputs.forEach(function (input, axis) {\n"
            "      var k = parseInt(input.value, 10);\n"
            "      index = index * sizes[axis] + k;\n"
            "      input.parentNode.querySelector('output').textContent = values[axis][k];\n"
            "    });\n"
            "    image.src = 'data:image/png;base64,' + frames[index];\n"
            "    root.dataset.frame = String(index);\n"
            "  }\n"
            "  inputs.forEach(function (input) { input.addEventListener('input', update); });\n"
            "})();")
        style = ("<style>.course-explorer img{max-width:100%;height:auto}"
                 ".course-explorer-control{display:flex;align-items:center;gap:.5rem;"
                 "flex-wrap:wrap;margin:.25rem 0}.course-explorer-control input{flex:1 1 10rem;"
                 "max-width:24rem}.course-explorer-label{min-width:6rem}"
                 "@media print{.course-explorer-controls{display:none}}</style>")
        return (f'<div class="course-explorer" id="{element}" '
                f'data-frame="{self.default_index}">{style}'
                f'<img alt="{html.escape(self.alt)}" width="{self.width_px}" '
                f'src="data:image/png;base64,{encoded[self.default_index]}">'
                f'<div class="course-explorer-controls">{"".join(rows)}</div>'
                f"<script>{script}</script></div>")

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        controls = ", ".join(f"{label}: {len(values)} values" for label, values, _ in self.controls)
        return f"<Explorer {self.name!r}: {len(self.frames)} frames ({controls})>"


def _png(fig) -> bytes:
    """``fig`` as a 64-colour PNG, identical on every run.

    The figure is laid out (constrained layout) and drawn once, at the saving resolution, straight
    into an RGBA buffer: ``savefig`` would draw it twice (once to lay it out, once to render) and
    then encode a full-colour PNG only for it to be decoded again before the colours are reduced.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    fig.set_dpi(_DPI)
    fig.set_facecolor("white")
    canvas = FigureCanvasAgg(fig)
    engine = fig.get_layout_engine()
    if engine is not None:
        engine.execute(fig)
        fig.set_layout_engine("none")
    canvas.draw()
    image = Image.frombuffer("RGBA", canvas.get_width_height(physical=True),
                             canvas.buffer_rgba(), "raw", "RGBA", 0, 1).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=_COLOURS, method=Image.Quantize.MEDIANCUT).save(out, format="PNG",
                                                                           optimize=True)
    return out.getvalue()


def _explorer(name, draw, controls, *, alt, size=(7.0, 3.6)):
    """Draw ``draw(fig, *setting)`` for every setting of ``controls`` into an :class:`Explorer`."""
    frames = []
    with mpl.rc_context():
        # The same pictures whatever style the caller has set (use_course_style, seaborn).
        mpl.rcdefaults()
        mpl.rcParams.update(_STYLE)
        for setting in itertools.product(*(control[1] for control in controls)):
            fig = Figure(figsize=size, layout="constrained")
            draw(fig, *setting)
            frames.append(_png(fig))
    labels = []
    for control in controls:
        label, values, default = control[:3]
        fmt = control[3] if len(control) > 3 else str
        labels.append((label, [fmt(v) for v in values], list(values).index(default)))
    return Explorer(name, frames, labels, alt=alt, width_px=int(size[0] * _SHOWN_DPI))


def _values(values, arg, convert):
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__") \
            or (isinstance(values, np.ndarray) and values.ndim == 0):
        raise TypeError(f"{arg} must be a sequence of values, got {values!r}")
    converted = [convert(v, arg) for v in values]
    if not 2 <= len(converted) <= 16:
        raise ValueError(f"{arg} must hold 2 to 16 values (one picture each), got {len(converted)}")
    if len(set(converted)) != len(converted):
        raise ValueError(f"{arg} must not repeat a value, got {converted}")
    return converted


def _default(value, values, arg, values_arg):
    if value not in values:
        raise ValueError(f"{arg} must be one of the {values_arg} {values}, got {value!r}")
    return value


def _base_label(base):
    return f"{base:,.0f}"


def rope_base_explorer(*, head_dim=128, bases=(500.0, 10_000.0, 100_000.0, 500_000.0,
                                               1_000_000.0), default=10_000.0, context=4096):
    """RoPE's wavelength ``lambda_i = 2 pi b^(2i/d)`` of every pair ``i``, one picture per base ``b``.

    The dashed line is a context of ``context`` tokens: pairs above it do not complete one turn
    within the context. Frequencies from :func:`course_utils.rope.rope_inv_freq` (Su et al. 2021,
    eq. 15).
    """
    head_dim = val.positive_int(head_dim, "head_dim", even=True)
    context = val.positive_int(context, "context")
    bases = _values(bases, "bases", lambda v, a: val.positive_float(v, a, minimum=1.0))
    default = _default(val.positive_float(default, "default", minimum=1.0), bases, "default",
                       "bases")
    pairs = np.arange(head_dim // 2)
    largest = 2 * np.pi * max(bases)

    def draw(fig, base):
        ax = fig.add_subplot()
        wavelength = 2 * np.pi / rope_inv_freq(head_dim, base=base)
        slow = int(np.sum(wavelength > context))
        ax.semilogy(pairs, wavelength, marker=".", lw=1.5, label="wavelength of pair i")
        ax.axhline(context, color="#d55e00", ls="--", lw=1.2, label=f"context {context:,} tokens")
        ax.set_ylim(1, largest * 2)
        ax.set_xlabel("pair index i")
        ax.set_ylabel("wavelength (tokens)")
        ax.set_title(f"Base b = {_base_label(base)}: {slow} of {head_dim // 2} pairs "
                     "turn less than once")
        ax.legend(loc="upper left")

    return _explorer("rope-base", draw, [("base b", bases, default, _base_label)],
                     alt=(f"RoPE wavelengths of the {head_dim // 2} pairs on a log scale, rising "
                          "from 2 pi tokens for pair 0; a slider changes the base, and a larger "
                          "base lifts the slow pairs above the dashed context line"))


def rope_scaling_explorer(*, head_dim=128, base=10_000.0, original_max_position_embeddings=4096,
                          factors=(1.0, 2.0, 4.0, 8.0, 16.0, 32.0), default=4.0):
    """Wavelengths of every pair after Position Interpolation, NTK-aware scaling and YaRN.

    One picture per factor ``s``; frequencies from :func:`course_utils.scaling.rope_scaling`
    (methods ``"linear"``, ``"ntk"`` and ``"yarn"`` with its default ``beta_fast=32``,
    ``beta_slow=1``). Dashed lines: the training context ``L`` and the extended one ``s L``.
    """
    head_dim = val.positive_int(head_dim, "head_dim", even=True)
    base = val.positive_float(base, "base", minimum=1.0)
    length = val.positive_int(original_max_position_embeddings,
                              "original_max_position_embeddings")
    factors = _values(factors, "factors", lambda v, a: val.positive_float(v, a, minimum=1.0))
    default = _default(val.positive_float(default, "default", minimum=1.0), factors, "default",
                       "factors")
    pairs = np.arange(head_dim // 2)
    original = 2 * np.pi / rope_inv_freq(head_dim, base=base)
    top = original.max() * max(factors) * 2

    def draw(fig, factor):
        ax = fig.add_subplot()
        ax.semilogy(pairs, original, color="#444444", lw=2.5, alpha=0.5, label="unscaled")
        for method, label in (("linear", "PI (linear)"), ("ntk", "NTK-aware"), ("yarn", "YaRN")):
            inv_freq, _ = rope_scaling(method, head_dim, base=base, factor=factor,
                                       original_max_position_embeddings=length)
            ax.semilogy(pairs, 2 * np.pi / inv_freq, lw=1.5, label=label)
        ax.axhline(length, color="#777777", ls="--", lw=1)
        ax.axhline(factor * length, color="#d55e00", ls="--", lw=1)
        ax.text(0, length * 1.15, f"L = {length:,}", fontsize=9.5, color="#555555")
        if factor > 1:
            ax.text(0, factor * length * 1.15, f"s L = {factor * length:,.0f}", fontsize=9.5,
                    color="#d55e00")
        ax.set_ylim(1, top)
        ax.set_xlabel("pair index i")
        ax.set_ylabel("wavelength (tokens)")
        ax.set_title(f"Scale factor s = {factor:g}")
        ax.legend(loc="lower right", ncols=2)

    return _explorer("rope-scaling", draw, [("factor s", factors, default, lambda v: f"{v:g}")],
                     alt=("RoPE wavelengths per pair, unscaled and after PI, NTK-aware scaling "
                          "and YaRN; a slider changes the factor s: PI lifts every pair by s, "
                          "NTK-aware every pair but the first, slower pairs more, YaRN the pairs "
                          "past its ramp fully and those in it partly"))


def alibi_explorer(*, head_counts=(1, 2, 4, 6, 8, 12, 16, 32), default=8, length=24):
    """ALiBi's slopes (left) and the bias ``-mu_h (m - n)`` of the last query (right), per head count.

    Slopes from :func:`course_utils.alibi.alibi_slopes` (Press et al. 2022, section 3, and the
    reference code's rule for head counts that are not powers of two); biases from
    :func:`course_utils.alibi.alibi_bias` for a query at position ``length - 1``.
    """
    head_counts = _values(head_counts, "head_counts", val.positive_int)
    default = _default(val.positive_int(default, "default"), head_counts, "default",
                       "head_counts")
    length = val.positive_int(length, "length")
    if length < 2:
        raise ValueError(f"length must be at least 2, got {length}")
    floor = -length  # the most negative bias shown: slope 1 at distance `length`

    def draw(fig, n_heads):
        left, right = fig.subplots(1, 2, width_ratios=[1, 1.6])
        slopes = alibi_slopes(n_heads)
        heads = np.arange(1, n_heads + 1)
        left.semilogy(heads, slopes, marker="o", ls="-", lw=1)
        left.set_ylim(2.0 ** -9, 2)
        left.set_xlabel("head h")
        left.set_ylabel(r"slope $\mu_h$")
        left.set_title(f"{n_heads} head{'s' if n_heads > 1 else ''}: slopes")
        bias = alibi_bias(n_heads, 1, length)[:, 0, :]
        image = right.imshow(bias, aspect="auto", cmap="viridis", vmin=floor, vmax=0,
                             interpolation="nearest",
                             extent=(-0.5, length - 0.5, n_heads + 0.5, 0.5))
        right.grid(False)
        right.set_xlabel(f"key position n (query m = {length - 1})")
        right.set_ylabel("head h")
        right.set_title(r"bias $-\mu_h\,(m - n)$")
        fig.colorbar(image, ax=right, label="bias")

    return _explorer("alibi-heads", draw, [("heads H", head_counts, default)],
                     size=(7.2, 3.4),
                     alt=("ALiBi slopes per head on a log scale and a heat map of each head's "
                          "bias for the last query; a slider changes the number of heads, and "
                          "more heads fill the same range of slopes more densely"))


def mrope_explorer(*, grids=((2, 3), (3, 3), (3, 5)), default_grid=(3, 3), frames=4,
                   text_before=3):
    """Qwen2-VL's M-RoPE ids (temporal, height, width) of one video frame's tokens.

    Controls: the video's grid of tokens per frame (``(rows, cols)`` after 2x2 merging) and the
    frame. The video has ``frames`` temporal patches and follows ``text_before`` text tokens; ids
    from :func:`course_utils.multimodal.mrope_position_ids` (Wang et al. 2024, section 2.1).
    """
    if isinstance(grids, (str, bytes)) or not hasattr(grids, "__iter__"):
        raise TypeError(f"grids must be a sequence of (rows, cols) pairs, got {grids!r}")
    def pair(grid, arg):
        if isinstance(grid, (str, bytes)) or not hasattr(grid, "__iter__") \
                or (isinstance(grid, np.ndarray) and grid.ndim != 1) or len(grid) != 2:
            raise ValueError(f"{arg} must be (rows, cols) pairs of positive integers, got "
                             f"{grid!r:.60}")
        return (val.positive_int(grid[0], arg), val.positive_int(grid[1], arg))

    grids = _values(grids, "grids", pair)
    default_grid = _default(pair(default_grid, "default_grid"), grids, "default_grid", "grids")
    frames = val.positive_int(frames, "frames")
    if frames < 2:
        raise ValueError(f"frames must be at least 2 (a slider needs two frames), got {frames}")
    text_before = val.positive_int(text_before, "text_before", allow_zero=True)
    merge = 2

    def ids_for(rows, cols):
        video = frames * rows * cols
        types = np.array([0] * text_before + [2] * video + [0] * 2)
        ids = mrope_position_ids(types, video_grid_thw=[[frames, rows * merge, cols * merge]],
                                 spatial_merge_size=merge)
        return ids[:, text_before:text_before + video].reshape(3, frames, rows, cols), ids

    top = max(int(ids_for(r, c)[1].max()) for r, c in grids)
    tallest, widest = max(r for r, _ in grids), max(c for _, c in grids)

    def draw(fig, grid, frame):
        rows, cols = grid
        video, ids = ids_for(rows, cols)
        axes = fig.subplots(1, 3)
        for axis, (ax, name) in enumerate(zip(axes, ("temporal", "height", "width"),
                                              strict=True)):
            values = video[axis, frame]
            ax.imshow(values, cmap="viridis", vmin=0, vmax=top, interpolation="nearest")
            for (r, c), v in np.ndenumerate(values):
                ax.text(c, r, str(v), ha="center", va="center", fontsize=10,
                        color="white" if v < 0.6 * top else "black")
            ax.grid(False)
            ax.set_xticks(range(cols))
            ax.set_yticks(range(rows))
            ax.set_xlim(-0.5, widest - 0.5)
            ax.set_ylim(tallest - 0.5, -0.5)
            ax.set_xlabel("column")
            ax.set_title(f"{name} id")
        axes[0].set_ylabel("row")
        after = int(ids[0, -2])
        fig.suptitle(f"Frame {frame} of a {frames}x{rows}x{cols} video after {text_before} text "
                     f"tokens; the next text token gets id {after}", fontsize=10.5)

    controls = [("grid (rows x cols)", grids, default_grid, lambda g: f"{g[0]} x {g[1]}"),
                ("frame", list(range(frames)), 0)]
    return _explorer("mrope-video", draw, controls, size=(7.2, 3.0),
                     alt=("Three grids of numbers, the temporal, height and width ids of the "
                          "tokens of one video frame under M-RoPE; sliders change the grid size "
                          "and the frame: only the temporal ids change from frame to frame"))
