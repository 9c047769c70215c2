"""The command line: ``python -m course_utils.explain config.json [--plot layers.png]``."""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import sys

from . import defaults
from .format import _fill, format_plan
from .plan import position_plan
from .plot import plot_plan

_HELP = """\
what the plan says:
  L              the context a layer's pairs are counted within: the scaling parameters'
                 original_max_position_embeddings where the file gives it, else the file's
                 max_position_embeddings (under linear scaling the file does not say
                 whether that is the length before or after the factor: Gemma 3 gives the
                 scaled one, Vicuna v1.5 16k the one before)
  turning pairs  pairs (i) whose wavelength 2 pi / theta_i is at most L positions: they
                 complete at least one full turn inside the context; the others do not
  labels         file: the value is in the file; class default (transformers X.Y): the file
                 omits it and transformers' config class supplies it; rule of ...: a rule of
                 transformers' code, named by file and function; unknown: none of these
example:
  python -m course_utils.explain gemma3_4b --plot gemma3_4b.png
  python -m course_utils.explain path/to/model_folder      (reads its config.json)
"""


def _resolve(source, class_defaults):
    """``(config, title, class_defaults)`` for a path, a model folder or a stored name."""
    if os.path.isdir(source):
        path = pathlib.Path(source) / "config.json"
        if not path.is_file():
            raise ValueError(f"config: the folder {source!r} has no config.json")
        return path, None, class_defaults
    if os.path.exists(source):
        return source, None, class_defaults
    from ..data import library_record, library_record_names
    from ..data.released import released_config, released_config_names

    names = released_config_names()
    if source not in names:
        import difflib

        key = re.sub(r"[^a-z0-9]+", "_", source.lower().split("/")[-1]).strip("_")
        close = difflib.get_close_matches(key, names, n=4, cutoff=0.5)
        hint = f"; close stored names: {', '.join(close)}" if close else ""
        raise ValueError(f"config: {source!r} is neither a file, a model folder nor a stored "
                         f"name (the inspector reads no model hub){hint}; "
                         f"stored: {', '.join(names)}")
    rec = released_config(source)
    title = f"{rec.name} ({rec.checkpoint})"
    stored = f"class_defaults_{source}"
    if class_defaults and defaults._transformers() is None and stored in library_record_names():
        # Without transformers, a stored file's class defaults come from their record.
        class_defaults = library_record(stored)
    return rec.config, title, class_defaults


def _stored_copy_note(name):
    """For a stored config read from a re-serialized copy, a line saying so (values labelled
    "file" are that copy's); for an early revision of a released file, its note; else None."""
    from ..data.released import released_config, released_config_names

    if os.path.exists(name) or name not in released_config_names():
        return None
    source = released_config(name).source
    if source.get("copy") == "early revision":
        return f"note: the stored file is {source['note']}"
    if source.get("copy") != "re-serialized":
        return None
    return (f"note: read from a re-serialized copy ({source['repo']} {source['path']}), not "
            f"the released file, so \"file\" means that copy: {source['note']}")


def _plot_path(path):
    """The figure's path: a missing suffix becomes .png; refuse formats matplotlib lacks."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backend_bases import FigureCanvasBase

    if os.path.isdir(path):
        raise ValueError(f"--plot {path}: is a folder; give a file name such as plan.png")
    suffix = pathlib.Path(path).suffix.lower().lstrip(".")
    if not suffix:
        return path + ".png"
    formats = FigureCanvasBase.get_supported_filetypes()
    if suffix not in formats:
        raise ValueError(f"--plot {path}: unknown figure format {suffix!r}; accepted: "
                         f"{', '.join(sorted(formats))}")
    return path


def _run(args):
    source, title, class_defaults = _resolve(args.config, not args.no_class_defaults)
    plan = position_plan(source, class_defaults=class_defaults)
    plot = _plot_path(args.plot) if args.plot else None
    print(format_plan(plan, title=title))
    copy = _stored_copy_note(args.config)
    if copy:
        print(_fill(copy, width=88, subsequent_indent="    "))
    if plot and plan.scheme is not None:
        raise ValueError(f"--plot {args.plot}: {plan.model_type} has no rotary pairs to draw "
                         f"({plan.scheme.split(';')[0]})")
    if plot:
        try:
            plot_plan(plan, plot, title=title)
        except OSError as exc:
            raise ValueError(f"--plot {args.plot}: cannot write the figure "
                             f"({exc.strerror})") from None
        print(f"figure saved to {plot}")


def main(argv=None):
    """``python -m course_utils.explain CONFIG [--plot FILE] [--no-class-defaults]``."""
    if argv is not None and (not isinstance(argv, (list, tuple))
                             or not all(isinstance(a, str) for a in argv)):
        raise TypeError(f"argv must be a list of strings (command-line arguments) or None, "
                        f"got {argv!r:.60}")
    parser = argparse.ArgumentParser(
        prog="python -m course_utils.explain",
        description="Print the position plan of a model config.json, layer by layer.",
        epilog=_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", help="a config.json, a model folder holding one, or the "
                        "name of a stored config (e.g. gemma3_4b)")
    parser.add_argument("--plot", metavar="FILE", help="also save a figure of layers by pairs "
                        "(.png unless FILE names another format)")
    parser.add_argument("--no-class-defaults", action="store_true",
                        help="do not look up the config class's defaults for omitted keys")
    args = parser.parse_args(argv)
    try:
        _run(args)
    except (TypeError, ValueError) as exc:
        try:
            print(_fill(f"error: {exc}", width=88, subsequent_indent="    "), file=sys.stderr)
        except BrokenPipeError:  # stderr piped to a reader that stopped too
            pass
        return 2
    except BrokenPipeError:  # output piped to a reader that stopped (head)
        _silence_stdout()
        return 0
    return 0


def _silence_stdout():
    """After a broken pipe, point stdout at devnull so Python's exit flush does not fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # pragma: no cover - no real stdout
        pass
