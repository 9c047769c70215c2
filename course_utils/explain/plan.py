"""The position plan of a config: :func:`position_plan`."""

from __future__ import annotations

from . import defaults
from .defaults import _Defaults, _install_hint, _StoredDefaults
from .layers import _layer_types
from .read import _int, _load, _Reader, _text_part
from .rotary import _extras, _rope_plan
from .values import _ALIBI, _FAMILIES, _NO_ROPE, FILE, UNKNOWN, LayerPlan, PositionPlan, Value


def position_plan(config, *, class_defaults=True):
    """The position plan of a model config.

    Parameters
    ----------
    config : dict, str, os.PathLike or :class:`course_utils.data.released.ReleasedConfig`
        A ``config.json`` (parsed, or its path). A config with ``text_config`` is read through
        it (the outer keys are listed as not interpreted).
    class_defaults : bool or LibraryRecord
        True: look up the config class's default for a key the file omits (needs transformers).
        A stored record ``library_record("class_defaults_<config>")``: take those defaults from
        it instead, as transformers gave them when it was recorded (no transformers needed; how
        the notebooks read them). False, or True without transformers: such a key is unknown.

    Returns
    -------
    PositionPlan

    Raises
    ------
    TypeError
        If ``config`` is of none of those types, or ``class_defaults`` is not a bool or a
        stored record.
    ValueError
        Naming the field: a file that is not JSON, a missing head size or layer count, a
        ``layer_types`` or ``no_rope_layers`` list of the wrong length, an unknown scaling type,
        a parameter of the wrong kind.
    """
    raw = _load(config)
    text, outer, outer_type = _text_part(raw)
    model_type = _model_type(text)
    defaults = _make_defaults(class_defaults, model_type)
    r = _Reader(text, defaults)
    r.record("model_type", model_type, FILE if "model_type" in text else UNKNOWN)
    notes = _default_notes(model_type, class_defaults, defaults)

    scheme = _no_rope_scheme(model_type, r)
    if scheme is not None:
        return PositionPlan(model_type=model_type, layers=[], values=r.values,
                            not_interpreted=[], notes=notes, text_config=outer_type is not None,
                            scheme=scheme)
    n = _int(r.get("num_hidden_layers", required=True), "num_hidden_layers")
    max_pos = _optional_int(r, "max_position_embeddings")
    mla_rope = r.get("qk_rope_head_dim") if model_type in ("deepseek_v2", "deepseek_v3") \
        or "qk_rope_head_dim" in text else None
    head_dim = _head_dim(r, text, defaults, mla_rope)

    types, flags, rule = _layer_types(model_type, r, n)
    notes.append(rule)
    window, chunk = _spans(model_type, r, types, notes)
    layers = _layer_plans(model_type, r, types, flags, (window, chunk), head_dim, mla_rope, max_pos)

    if "attention_chunk_size" in text and "chunked_attention" not in types:
        r.get("attention_chunk_size")
        notes.append("attention_chunk_size is set but no layer is chunked")
    if outer_type is not None:
        notes.insert(0, f"read through text_config of a {outer_type!r} config")
    return PositionPlan(model_type=model_type, layers=layers, values=r.values,
                        not_interpreted=_not_interpreted(r, text, outer), notes=notes,
                        text_config=outer_type is not None or bool(outer))


def _not_interpreted(r, text, outer):
    read = r.read | {"model_type", "architectures", "_name_or_path"}
    not_interpreted = [k for k in text if k not in read]
    return not_interpreted + [f"(outside text_config) {k}" for k in outer if k not in read]


def _model_type(text):
    model_type = text.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise ValueError(f"model_type: must be a string, got {model_type!r:.40}")
    return model_type


def _optional_int(r, key):
    value = r.get(key)
    return None if value is None else _int(value, key)


def _make_defaults(class_defaults, model_type):
    from ..data import LibraryRecord

    if isinstance(class_defaults, LibraryRecord):
        return _StoredDefaults(class_defaults, model_type)
    if isinstance(class_defaults, bool):
        return _Defaults(model_type, enabled=class_defaults)
    raise TypeError("class_defaults must be True, False or a stored record "
                    "(library_record('class_defaults_<config>')), got "
                    f"{type(class_defaults).__name__}")


def _default_notes(model_type, class_defaults, defaults):
    if model_type is None:
        return ["no model_type: every value not in the file is unknown"]
    if not class_defaults:
        return ["class defaults not looked up: a value not in the file is unknown"]
    if defaults.cls is None:
        return [f"model_type {model_type!r}: no config class found (transformers missing or "
                "unknown type); values not in the file are unknown"]
    return []


def _head_dim(r, text, defaults, mla_rope):
    """The head size: MLA's nope + rope parts, head_dim, or hidden_size // num_attention_heads."""
    head_dim = None
    if mla_rope is not None:
        nope = _int(r.get("qk_nope_head_dim", required=True), "qk_nope_head_dim")
        head_dim = nope + _int(mla_rope, "qk_rope_head_dim")
        r.values["head_dim"] = Value(head_dim, "derived: qk_nope_head_dim + qk_rope_head_dim (MLA)")
    elif "head_dim" in text or defaults.get("head_dim")[1] is not None:
        head_dim = r.get("head_dim")
    if head_dim is None:
        hidden = r.get("hidden_size")
        heads = r.get("num_attention_heads")
        if hidden is None or heads is None:
            missing = "hidden_size" if hidden is None else "num_attention_heads"
            raise ValueError(f"head_dim: not in the file, and it cannot be derived as hidden_size / "
                             f"num_attention_heads ({missing} missing)" + _install_hint(r.defaults))
        hidden = _int(hidden, "hidden_size")
        heads = _int(heads, "num_attention_heads")
        if hidden % heads:
            raise ValueError(f"hidden_size: {hidden} is not a multiple of num_attention_heads {heads}")
        head_dim = hidden // heads
        r.values["head_dim"] = Value(head_dim, "derived: hidden_size // num_attention_heads")
    return _int(head_dim, "head_dim")


def _spans(model_type, r, types, notes):
    """``(window, chunk)``: the sliding window and the chunk size, where a layer uses them."""
    window = r.get("sliding_window") if "sliding_attention" in types and \
        model_type != "modernbert" else None
    if model_type == "modernbert" and "sliding_attention" in types:
        window = _int(r.get("local_attention", required=True), "local_attention")
        notes.append(f"modernbert is an encoder: its local layers see {window // 2} positions on "
                     "either side (local_attention is the whole window)")
    chunk = r.get("attention_chunk_size", required=True) if "chunked_attention" in types else None
    return window, chunk


def _layer_plans(model_type, r, types, flags, spans, head_dim, mla_rope, max_pos):
    """One :class:`LayerPlan` per layer; the RoPE plan computed once per layer type."""
    window, chunk = spans
    plans_by_type = {}
    layers = []
    for i, lt in enumerate(types):
        rope = lt != "linear_attention" and (flags is None or bool(flags[i]))
        attention = {"full_attention": "full", "sliding_attention": "sliding",
                     "chunked_attention": "chunked", "linear_attention": "none"}[lt]
        span = {"sliding": window, "chunked": chunk}.get(attention)
        if span is not None:
            span = _int(span, "sliding_window" if attention == "sliding" else "attention_chunk_size")
        layer = LayerPlan(index=i, layer_type=lt, attention=attention, span=span, rope=rope,
                          head_dim=head_dim, context=max_pos,
                          context_source=None if max_pos is None else "max_position_embeddings")
        if rope:
            if model_type == "gemma4_text" and lt == "full_attention":
                # Gemma4TextConfig.__post_init__ gives the full layers head_dim global_head_dim
                layer.head_dim = _int(r.get("global_head_dim", required=True), "global_head_dim")
            if lt not in plans_by_type:
                plans_by_type[lt] = _rope_plan(model_type, r, lt, layer.head_dim, mla_rope, max_pos)
            for k, v in plans_by_type[lt].items():
                setattr(layer, k, v)
        _extras(model_type, r, layer)
        if model_type == "modernbert" and span is not None:
            layer.extras["reach"] = span // 2  # ModernBertModel: |i - j| <= local_attention // 2
        layers.append(layer)
    return layers


def _no_rope_scheme(model_type, r):
    """What a family without RoPE uses (``"<scheme>; taught in notebooks/<chapter>"``), None
    for a RoPE family; a family without a rule is refused, the reason named."""
    if model_type is None:
        raise ValueError("model_type: not in the file, so which family's rules apply is "
                         "unknown (add the checkpoint's model_type)")
    kind = _NO_ROPE.get(model_type)
    if model_type == "falcon" and r.get("alibi", default=False):
        kind = _ALIBI
    if model_type == "mpt":
        attn = r.cfg.get("attn_config") or {}
        if isinstance(attn, dict) and attn.get("alibi") is False:
            raise ValueError("attn_config.alibi: false, and MPT without ALiBi uses no position "
                             "signal the inspector has a rule for")
    if kind is not None:
        return f"{kind[0]}, no RoPE; taught in notebooks/{kind[1]}"
    if model_type in _FAMILIES:
        return None
    tf = defaults._transformers()
    if tf is None:
        raise ValueError(f"model_type {model_type!r}: unknown to the inspector's rules, and "
                         "transformers, which may know it, is not installed "
                         "(pip install 'course-utils[reference]')")
    from transformers import CONFIG_MAPPING

    if model_type in CONFIG_MAPPING:
        raise ValueError(f"model_type {model_type!r}: unknown to the inspector (no rule read "
                         "for this family's layer kinds and RoPE use)")
    raise ValueError(f"model_type {model_type!r}: unknown to the inspector and to transformers "
                     f"{tf.__version__} (a checkpoint that ships its own modeling code)")
