"""The course's figure style and the few figure helpers the notebooks share.

Figures use seaborn's colour-blind-safe palette on an opaque white background, so they read the
same on a light or a dark page. In a notebook, :func:`use_course_style` makes every figure display
as a PNG rendered at twice its size in pixels, marked with its width at 100 dpi (the "retina"
format): sharp on high-resolution screens, the usual size in Jupyter and on the web site. The
output's metadata also records the height of the figure's smallest text in CSS pixels at that
width, which the site's browser test uses to check that no text is shown below 9 px.
"""

from __future__ import annotations

import io
import struct

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from . import _validate as val

__all__ = ["use_course_style", "heatmap", "plot_curves", "figure_png", "smallest_text_points",
           "PALETTE", "DISPLAY_DPI", "PNG_SCALE", "MAX_FIGURE_WIDTH"]

PALETTE = "colorblind"
DISPLAY_DPI = 100  # CSS pixels per inch of a figure as displayed
PNG_SCALE = 2  # the PNG has PNG_SCALE times as many pixels across as it is displayed wide
MAX_FIGURE_WIDTH = 8.0  # inches: wider figures shrink on the site and their text gets too small


def use_course_style():
    """Apply the course's plotting theme and print options (call once in each notebook's setup).

    Sets seaborn's ``whitegrid`` theme with the ``colorblind`` palette, opaque white figure
    backgrounds, a fixed DPI, no metadata that changes between runs (so PNGs are reproducible), and
    numpy print options with 4 decimals.
    """
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE)
    mpl.rcParams.update({
        "figure.figsize": (7.0, 4.0),
        "figure.dpi": DISPLAY_DPI,
        "savefig.dpi": DISPLAY_DPI * PNG_SCALE,
        "figure.facecolor": "white",
        "savefig.facecolor": "white",
        "axes.titlesize": 12,
        "axes.titleweight": "bold",
        "image.cmap": "viridis",
        "svg.hashsalt": "course",
    })
    np.set_printoptions(precision=4, suppress=True)
    _register_png_formatter()


def smallest_text_points(fig) -> float | None:
    """The font size in points of the smallest visible, non-empty text in ``fig`` (None if none)."""
    if not isinstance(fig, mpl.figure.Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    sizes = [text.get_fontsize() for text in fig.findobj(mpl.text.Text)
             if text.get_visible() and text.get_text().strip()]
    return float(min(sizes)) if sizes else None


def figure_png(fig):
    """Render ``fig`` for display: ``(png_bytes, metadata)``.

    The PNG is drawn at ``DISPLAY_DPI * PNG_SCALE`` dpi (tight bounding box, white background, no
    time stamp), and ``metadata`` holds ``width`` (its display width in CSS pixels, which Jupyter
    and MyST-NB use as the image's width) and ``smallest_text_px`` (the height of the smallest
    text at that width, from :func:`smallest_text_points`).
    """
    if not isinstance(fig, mpl.figure.Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DISPLAY_DPI * PNG_SCALE, bbox_inches="tight",
                facecolor="white", metadata={"Software": None})
    data = buffer.getvalue()
    width_px = struct.unpack(">I", data[16:20])[0]  # the IHDR chunk's width
    metadata = {"width": int(round(width_px / PNG_SCALE))}
    points = smallest_text_points(fig)
    if points is not None:
        metadata["smallest_text_px"] = round(points * DISPLAY_DPI / 72, 1)
    return data, metadata


def _register_png_formatter():
    """In IPython, display figures with :func:`figure_png` instead of the inline backend's PNG."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    # The inline backend sets its own PNG formatter when it is loaded, at the first figure:
    # load it now (a figure opened and closed at once is never shown), then replace its formatter.
    plt.close(plt.figure())
    formatter = shell.display_formatter.formatters["image/png"]
    formatter.for_type(mpl.figure.Figure, figure_png)


def _check_labels(**labels):
    for arg, text in labels.items():
        if not isinstance(text, str):
            raise TypeError(f"{arg} must be a string, got {text!r}")


def _axes(ax):
    """``ax`` itself, or a new figure's axes when ``ax`` is None."""
    if ax is None:
        return plt.subplots()[1]
    if not isinstance(ax, mpl.axes.Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
    return ax


def heatmap(data, *, title, xlabel, ylabel, colorbar_label, ax=None, cmap=None, center=None,
            extent=None):
    """Draw a 2-D array as an image with labelled axes and colour bar; returns the ``Axes``.

    Parameters
    ----------
    data : 2-D array (``-inf`` entries, such as masked attention biases, are drawn blank).
    title : str
        Say the finding, not the variable name.
    xlabel, ylabel, colorbar_label : str
        With units where there are any (position, dimension index, radians).
    center : float, optional
        Centre a diverging colour map at this value (uses ``"vlag"``).
    extent : (x0, x1, y0, y1), optional
        Data coordinates of the image edges, as in :func:`matplotlib.pyplot.imshow`.
    """
    data = val.numeric_array(data, "data", allow_neginf=True).astype(np.float64)
    if data.ndim != 2:
        raise ValueError(f"data must be a 2-D array, got shape {data.shape}")
    _check_labels(title=title, xlabel=xlabel, ylabel=ylabel, colorbar_label=colorbar_label)
    if center is not None:
        center = val.real_float(center, "center")
    if extent is not None:
        extent = val.numeric_array(extent, "extent").astype(np.float64)
        if extent.shape != (4,):
            raise ValueError(f"extent must be four numbers (x0, x1, y0, y1), got {extent.shape}")
        extent = tuple(extent)
    if cmap is not None and not isinstance(cmap, (str, mpl.colors.Colormap)):
        raise TypeError(f"cmap must be a colour map name or a Colormap, got {cmap!r}")
    ax = _axes(ax)
    shown = np.ma.masked_invalid(data)
    kwargs = {}
    if center is not None:
        span = float(np.max(np.abs(shown - center))) if shown.count() else 1.0
        kwargs = {"vmin": center - span, "vmax": center + span}
        cmap = cmap or "vlag"
    image = ax.imshow(shown, aspect="auto", interpolation="nearest", cmap=cmap,
                      extent=extent, origin="upper", **kwargs)
    ax.grid(False)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.figure.colorbar(image, ax=ax, label=colorbar_label)
    return ax


def plot_curves(x, curves, *, title, xlabel, ylabel, ax=None, logx=False, logy=False, styles=None):
    """Plot several named curves over the same ``x``; returns the ``Axes``.

    Parameters
    ----------
    x : 1-D array
    curves : dict mapping a legend label to a 1-D array of ``len(x)``
    title, xlabel, ylabel : str
    logx, logy : bool
        Logarithmic axes.
    styles : dict mapping a label to extra keyword arguments for ``ax.plot``, optional
    """
    x = val.numeric_array(x, "x")
    if x.ndim != 1:
        raise ValueError(f"x must be 1-D, got shape {x.shape}")
    if not isinstance(curves, dict) or not curves:
        raise TypeError("curves must be a non-empty dict mapping labels to arrays")
    _check_labels(title=title, xlabel=xlabel, ylabel=ylabel)
    logx, logy = val.boolean(logx, "logx"), val.boolean(logy, "logy")
    styles = {} if styles is None else styles
    if not isinstance(styles, dict) or not all(isinstance(v, dict) for v in styles.values()):
        raise TypeError("styles must be a dict mapping a curve's label to a dict of keyword "
                        f"arguments for ax.plot, got {styles!r:.80}")
    arrays = {}
    for label, y in curves.items():
        y = val.numeric_array(y, f"curves[{label!r}]")
        if y.shape != x.shape:
            raise ValueError(f"curves[{label!r}] must have the shape of x {x.shape}, got {y.shape}")
        arrays[label] = y
    ax = _axes(ax)
    for label, y in arrays.items():
        try:
            ax.plot(x, y, label=str(label), **styles.get(label, {}))
        except (AttributeError, TypeError, ValueError) as exc:
            raise TypeError(f"styles[{label!r}] is not valid for ax.plot: {exc}") from exc
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    if len(curves) > 1:
        ax.legend(frameon=True)
    return ax
