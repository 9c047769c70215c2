"""Layer kinds and RoPE/NoPE flags, from the file or from the rules read in transformers' code."""

from __future__ import annotations

import json

from .format import fold_layers
from .read import _int
from .values import _EVERY_LAYER_WINDOW, _QWEN_WINDOW, LAYER_TYPES, Value, _config_rule, _rule


def _layer_types(model_type, r, n):
    """``(layer_types, rope_flags, note)``; rope_flags is None when every attention layer
    rotates. A pattern built by a rule of the model's transformers code is recorded in
    ``r.values`` under ``layer_types`` with the rule's file and function as its source."""
    if "layer_types" in r.cfg:
        return _file_layer_types(model_type, r, n)
    if model_type in ("cohere2", "exaone4"):
        return _sliding_pattern(model_type, r, n)
    found = _periodic_pattern(model_type, r, n)
    if found is not None:
        return found
    if model_type in ("llama4_text", "smollm3"):
        return _nope_pattern(model_type, r, n)
    if model_type in _QWEN_WINDOW or model_type == "qwen2_moe":
        return _qwen_pattern(model_type, r, n)
    if model_type in _EVERY_LAYER_WINDOW:
        return _every_layer_window(model_type, r, n)
    types = ["full_attention"] * n
    r.values["layer_types"] = Value(types, "absent (no layer_types, no window): every layer full")
    return types, None, "every layer attends to all earlier positions"


def _ruled(r, types, label):
    r.values["layer_types"] = Value(list(types), label)
    return types


def _file_layer_types(model_type, r, n):
    """The file's ``layer_types``, checked; Gemma 4's last layer made full as transformers
    does; the NoPE flags of Llama 4, SmolLM3, Cohere2 and EXAONE 4."""
    types = r.get("layer_types")
    if not isinstance(types, list) or len(types) != n:
        got = len(types) if isinstance(types, list) else type(types).__name__
        raise ValueError(f"layer_types: must list one type per layer (num_hidden_layers = {n}), "
                         f"got {got}")
    bad = sorted({t for t in types if not isinstance(t, str) or t not in LAYER_TYPES},
                 key=str)
    if bad:
        raise ValueError(f"layer_types: unknown layer type(s) {bad}; known: {list(LAYER_TYPES)}")
    types = list(types)
    note = "layer_types from the file"
    if model_type == "gemma4_text" and types[-1] != "full_attention":
        types[-1] = "full_attention"
        r.values["layer_types"] = Value(list(types), "file, last layer made full by the " + _config_rule(
            "gemma4", "Gemma4TextConfig"))
        note += "; the last layer is made full_attention, as transformers does for Gemma 4"
    flags = _rope_flags(model_type, r, n) if model_type in ("llama4_text", "smollm3") else None
    if model_type in ("cohere2", "exaone4"):
        flags, rule = _sliding_rope_flags(model_type, r, types)
        note += "; " + rule
    return types, flags, note


def _periodic_pattern(model_type, r, n):
    """Families whose config class builds a periodic pattern of layer kinds; None otherwise."""
    if model_type in ("gemma2", "gpt_oss"):
        model, cls = {"gemma2": ("gemma2", "Gemma2Config"), "gpt_oss": ("gpt_oss", "GptOssConfig")}[
            model_type]
        types = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n)]
        return _ruled(r, types, _config_rule(model, cls)), None, \
            f"{model_type}: every second layer global"
    if model_type == "gemma3_text":
        p = _int(r.get("sliding_window_pattern", required=True), "sliding_window_pattern")
        types = ["sliding_attention" if (i + 1) % p else "full_attention" for i in range(n)]
        return _ruled(r, types, _config_rule("gemma3", "Gemma3TextConfig")), None, \
            f"gemma3_text: layers {p - 1}, {2 * p - 1}, ... global (sliding_window_pattern {p})"
    if model_type == "gemma4_text":
        types = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n)]
        types[-1] = "full_attention"
        return _ruled(r, types, _config_rule("gemma4", "Gemma4TextConfig")), None, \
            "gemma4_text: layers 5, 11, ... and the last global (no layer_types in the file)"
    if model_type == "olmo3":
        types = ["sliding_attention" if (i + 1) % 4 else "full_attention" for i in range(n)]
        return _ruled(r, types, _config_rule("olmo3", "Olmo3Config")), None, \
            "olmo3: every 4th layer global"
    if model_type == "modernbert":
        k = _int(r.get("global_attn_every_n_layers", required=True), "global_attn_every_n_layers")
        types = ["sliding_attention" if i % k else "full_attention" for i in range(n)]
        return _ruled(r, types, _config_rule("modernbert", "ModernBertConfig")), None, \
            f"modernbert: layers 0, {k}, {2 * k}, ... global (global_attn_every_n_layers)"
    if model_type == "qwen3_next":
        k = _int(r.get("full_attention_interval", required=True), "full_attention_interval")
        types = ["linear_attention" if (i + 1) % k else "full_attention" for i in range(n)]
        return _ruled(r, types, _config_rule("qwen3_next", "Qwen3NextConfig")), None, (
            f"qwen3_next: layers {k - 1}, {2 * k - 1}, ... attend, the others are linear "
            f"(full_attention_interval {k})")
    return None


def _nope_pattern(model_type, r, n):
    """Llama 4 and SmolLM3 without layer_types: the kinds follow the NoPE flags."""
    flags = _rope_flags(model_type, r, n)
    if model_type == "llama4_text":
        types = ["chunked_attention" if f else "full_attention" for f in flags]
        return _ruled(r, types, _config_rule("llama4", "Llama4TextConfig")), flags, \
            "llama4_text: RoPE layers chunked, NoPE layers global (no_rope_layers)"
    use = r.get("use_sliding_window")
    window = r.get("sliding_window")
    types = ["sliding_attention" if use and window is not None and not f else "full_attention"
             for f in flags]
    return _ruled(r, types, _config_rule("smollm3", "SmolLM3Config")), flags, \
        "smollm3: NoPE every no_rope_layer_interval-th layer (no_rope_layers)"


def _qwen_pattern(model_type, r, n):
    """Qwen configs: a window only with use_sliding_window, placed by max_window_layers."""
    use = r.get("use_sliding_window")
    window = r.get("sliding_window")
    first = r.get("max_window_layers")
    windowed = bool(use) and window is not None and window != 0
    if windowed:
        first = _int(first, "max_window_layers")
    if model_type == "qwen2_moe":  # odd-numbered layers below max_window_layers
        types = ["sliding_attention" if windowed and (i + 1) % 2 and i < first
                 else "full_attention" for i in range(n)]
        label, note = _config_rule("qwen2_moe", "Qwen2MoeConfig"), (
            "qwen2_moe: sliding window only with use_sliding_window, on layers 0, 2, ... "
            "below max_window_layers")
    else:
        types = ["sliding_attention" if windowed and i >= first else "full_attention"
                 for i in range(n)]
        label, note = _config_rule(*_QWEN_WINDOW[model_type]), (
            f"{model_type}: sliding window only with use_sliding_window, from layer "
            "max_window_layers on")
    return _ruled(r, types, label), None, note


def _every_layer_window(model_type, r, n):
    """Families whose forward applies sliding_window, when set, to every layer."""
    window = r.get("sliding_window")
    if model_type == "qwen3_moe" and not r.get("use_sliding_window"):
        window = None
    kind = "full_attention" if window is None else "sliding_attention"
    model = model_type
    types = _ruled(r, [kind] * n, _rule(f"models/{model}/modeling_{model}.py",
                                        f"{_EVERY_LAYER_WINDOW[model_type]}.forward"))
    return types, None, f"{model_type}: sliding_window, when set, applies to every layer"


def _sliding_pattern(model_type, r, n):
    """Cohere2 and EXAONE 4 without layer_types: sliding_window_pattern p (an integer) makes
    layers p-1, 2p-1, ... global (Cohere2Config / Exaone4Config.__post_init__)."""
    model, cls = {"cohere2": ("cohere2", "Cohere2Config"),
                  "exaone4": ("exaone4", "Exaone4Config")}[model_type]
    if model_type == "exaone4" and "sliding_window" in r.cfg and r.cfg["sliding_window"] is None:
        raise ValueError("sliding_window: null and no layer_types: Exaone4Config then divides "
                         "by a pattern of 0 (transformers cannot build the layers either)")
    if "sliding_window_pattern" in r.cfg:
        p = r.get("sliding_window_pattern")
    else:  # Cohere2Config pops it with default 4; Exaone4Config's field default is 4
        p = r.record("sliding_window_pattern", 4, _config_rule(model, cls))
    if isinstance(p, str):
        raise ValueError(f"sliding_window_pattern: {p!r} is a string (as in EXAONE 4's files), "
                         "which transformers' rule cannot use without layer_types")
    p = _int(p, "sliding_window_pattern")
    types = ["sliding_attention" if (i + 1) % p else "full_attention" for i in range(n)]
    r.values["layer_types"] = Value(list(types), _config_rule(model, cls))
    flags, rule = _sliding_rope_flags(model_type, r, types)
    return types, flags, (f"{model_type}: layers {p - 1}, {2 * p - 1}, ... global "
                          f"(sliding_window_pattern {p}); {rule}")


def _sliding_rope_flags(model_type, r, types):
    """Cohere2: RoPE only in layers with a window (Cohere2Attention.forward); EXAONE 4: RoPE in
    sliding layers, and in every layer when the file has no window (Exaone4Attention.forward)."""
    window = r.get("sliding_window")
    model = {"cohere2": "Cohere2Attention", "exaone4": "Exaone4Attention"}[model_type]
    if model_type == "exaone4" and window is None:
        flags = [1] * len(types)
        rule = "RoPE in every layer (the file gives no sliding window)"
    else:
        flags = [int(t == "sliding_attention" and window is not None) for t in types]
        rule = "RoPE only in the sliding-window layers, the global layers are NoPE"
    r.values["RoPE layers"] = Value(fold_layers([i for i, f in enumerate(flags) if f]) or "none",
                                    _rule(f"models/{model_type}/modeling_{model_type}.py",
                                          f"{model}.forward"))
    return flags, rule


def _rope_flags(model_type, r, n):
    flags = r.get("no_rope_layers", default=False)
    if not flags:  # absent, null or [] : the config class builds it from the interval
        interval = _int(r.get("no_rope_layer_interval", required=True), "no_rope_layer_interval")
        model, cls = {"llama4_text": ("llama4", "Llama4TextConfig"),
                      "smollm3": ("smollm3", "SmolLM3Config")}[model_type]
        rule = _config_rule(model, cls) + ": (l + 1) % no_rope_layer_interval != 0"
        if flags is not False:  # the file states it, empty: label the file's value too
            rule = f"file ({json.dumps(flags)}), {rule}"
        flags = [int((i + 1) % interval != 0) for i in range(n)]
        r.values["no_rope_layers"] = Value(flags, rule)
    if not isinstance(flags, list) or len(flags) != n or any(
            isinstance(f, bool) or f not in (0, 1) for f in flags):
        got = len(flags) if isinstance(flags, list) else type(flags).__name__
        raise ValueError(f"no_rope_layers: must list 0 or 1 for each of the {n} layers, got {got}")
    return list(flags)
