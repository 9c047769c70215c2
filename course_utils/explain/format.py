"""Printing a plan: :func:`format_plan`, :func:`fold_layers`, :func:`plan_summary`."""

from __future__ import annotations

import json
import re
import textwrap

import numpy as np

from .values import FILE, PositionPlan, _require_int

# --------------------------------------------------------------------------------------------
# Printing and plotting.

def fold_layers(indices):
    """Runs of consecutive layer indices: ``[0, 1, 2, 4]`` -> ``"0-2, 4"``."""
    if isinstance(indices, (str, bytes)) or not hasattr(indices, "__iter__") \
            or (isinstance(indices, np.ndarray) and indices.ndim == 0):
        raise TypeError(f"indices must be a sequence of layer indices, got {indices!r:.60}")
    indices = list(indices)
    for i in indices:
        _require_int(i, "indices", minimum=0)
    indices = sorted(int(i) for i in indices)
    runs = []
    for i in indices:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    parts = [f"{a}-{b}" if b > a else f"{a}" for a, b in runs]
    if len(parts) > 6:
        parts = parts[:4] + ["...", parts[-1]]
    return ", ".join(parts)


def _num(x):
    if x is None:
        return "?"
    if float(x).is_integer() and abs(x) < 1e15:
        return f"{int(x):,}".replace(",", " ")
    return f"{x:.6g}"


def _describe(layer):
    if layer.attention == "none":
        head = "no attention over positions (linear attention)"
    elif layer.attention == "full":
        head = "full attention"
    else:
        head = f"{layer.attention} {_num(layer.span)}"
    if not layer.rope:
        return f"{head}, NoPE" if layer.attention != "none" else head
    parts = [head, f"RoPE base {_num(layer.base)}"]
    if layer.rotary_dim != layer.head_dim:
        parts.append(f"rotates {layer.rotary_dim} of {layer.head_dim} channels")
    else:
        parts.append(f"head dim {layer.head_dim}")
    if layer.scaling:
        params = ", ".join(f"{k} {v}" for k, v in layer.scaling_params.items()
                           if k not in ("mrope_section",))
        parts.append(f"{layer.scaling} ({params})" if params else layer.scaling)
    return ", ".join(parts)


def _details(layer):
    out = []
    if layer.rope:
        lam = layer.wavelengths
        finite = lam[np.isfinite(lam)]
        still = lam.size - finite.size
        within = (f"{layer.turning_pairs} complete a turn within L = {_num(layer.context)}"
                  + (f" ({layer.context_source})" if layer.context_source else "")
                  if layer.context is not None else
                  "how many turn within the context is unknown (no max_position_embeddings)")
        out.append(f"{finite.size} rotating pairs{f' (+{still} that do not turn)' if still else ''}, "
                   f"wavelengths {_num(finite.min())} to {_num(finite.max())}; {within}")
        if layer.span is not None:
            reach = layer.extras.get("reach")
            span = f"+-{_num(reach)} window" if reach else f"{layer.attention} span {_num(layer.span)}"
            out.append(f"{layer.turning_pairs_in_span} complete a turn within the {span}")
        if layer.attention_factor not in (None, 1.0):
            out.append(f"attention factor on cos and sin {layer.attention_factor:.6g}")
        if "mrope_section" in layer.scaling_params:
            out.append(f"M-RoPE sections (t, h, w pairs) {layer.scaling_params['mrope_section']}")
    out += [f"{k}: {v}" for k, v in layer.extras.items()]
    return out


def _fill(text, **kwargs):
    """``textwrap.fill`` that never breaks a number written with spaces (``32 768``)."""
    protected = re.sub(r"(?<=\d) (?=\d{3}\b)", "\u00a0", text)
    return textwrap.fill(protected, **kwargs).replace("\u00a0", " ")


def format_plan(plan, *, title=None):
    """The plan as text: runs of equal layers folded, then the values and their sources."""
    _require_plan(plan)
    _require_title(title)
    lines = []
    if title:
        lines.append(title)
    if plan.scheme is not None:
        lines.append(_fill(f"model_type {plan.model_type}: {plan.scheme}", width=88,
                           subsequent_indent="    "))
        return "\n".join(lines)
    lines.append(f"model_type {plan.model_type}, {len(plan.layers)} layers")
    for note in plan.notes:
        lines.append(_fill(f"({note})", width=88, initial_indent="  ",
                                   subsequent_indent="   "))
    groups = {}
    for layer in plan.layers:
        groups.setdefault(layer.signature(), []).append(layer)
    for members in sorted(groups.values(), key=lambda g: g[0].index):
        first = members[0]
        label = "layer" if len(members) == 1 else "layers"
        lines.append(_fill(
            f"{label} {fold_layers([m.index for m in members])}: {_describe(first)}",
            width=88, subsequent_indent="    "))
        lines += [_fill(d, width=88, initial_indent="    ", subsequent_indent="      ")
                  for d in _details(first)]
    by_source = {}
    for name, value in plan.values.items():
        by_source.setdefault(value.source, []).append((name, value.value))
    for source in sorted(by_source, key=lambda s: (s != FILE, s)):
        items = ", ".join(f"{k} {_short(v)}" for k, v in by_source[source])
        lines.append(_fill(f"{source}: {items}", width=88, subsequent_indent="    "))
    if plan.not_interpreted:
        lines.append(_fill("not interpreted: " + ", ".join(plan.not_interpreted),
                                   width=88, subsequent_indent="    "))
    return "\n".join(lines)


def _short(value):
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:37] + "..."


def _short_base(base):
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if base >= size and (base / size) == round(base / size, 3):
            return f"{base / size:g}{unit}"
    return f"{base:g}"


def plan_summary(plan):
    """Two short strings for a table row: ``"attention"`` (layer counts by kind, in order of
    appearance, e.g. ``"22 sliding 512, 4 full"``) and ``"rope"`` (each distinct RoPE setting:
    base, scaling and factor, rotated width when partial, and the layer kind it belongs to when
    there are several; ``NoPE in k`` for layers without RoPE)."""
    _require_plan(plan)
    counts = {}
    for layer in plan.layers:
        kind = {"none": "linear"}.get(layer.attention, layer.attention)
        if layer.span is not None:
            kind = f"{kind} {layer.span}"
        counts[kind] = counts.get(kind, 0) + 1
    attention = ", ".join(f"{k_count} {kind}" for kind, k_count in counts.items())
    settings = {}
    for layer in plan.layers:
        if not layer.rope:
            continue
        text = _short_base(layer.base)
        if layer.scaling:
            factor = layer.scaling_params.get("factor")
            text += f", {layer.scaling}" + (f" x{factor:g}" if factor else "")
        if layer.rotary_dim != layer.head_dim:
            text += f", {layer.rotary_dim} of {layer.head_dim} ch."
        settings.setdefault(text, layer.attention)
    kinds = set(settings.values())
    rope = " / ".join(f"{t} ({kind})" if len(kinds) > 1 else t for t, kind in settings.items())
    if plan.scheme is not None:
        return {"attention": "?", "rope": "none: " + plan.scheme.split(",")[0]}
    nope = sum(1 for layer in plan.layers if not layer.rope and layer.attention != "none")
    if nope:
        rope = f"{rope}; NoPE in {nope}" if rope else f"NoPE in {nope}"
    return {"attention": attention, "rope": rope or "none"}


def _require_plan(plan):
    if not isinstance(plan, PositionPlan):
        raise TypeError(f"plan must be a PositionPlan (from explain_config), got "
                        f"{type(plan).__name__}")


def _require_title(title):
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a string or None, got {type(title).__name__}")
