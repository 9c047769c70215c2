"""The RoPE parameters of one layer kind: base, rotated width, scaling, frequencies."""

from __future__ import annotations

import numpy as np

from ..modern import deepseek_softmax_scale, partial_rotary_dim
from ..rope import rope_inv_freq
from ..scaling import METHODS, rope_scaling
from .read import _int
from .values import _ROPE_KEYS, _ROTARY_DIM, _SCALING_PARAMS, _SINKS, FILE, Value, _config_rule, _is_nested, _rule

#: Where L comes from under linear scaling when the file gives no original length.
LINEAR_SOURCE = ("max_position_embeddings; with linear scaling the file does not say whether "
                 "this is the length before or after the factor")
#: Families whose config class reads ``rotary_pct`` (transformers ``configuration_gpt_neox.py``,
#: ``configuration_gpt_neox_japanese.py``).
_ROTARY_PCT_FAMILIES = ("gpt_neox", "gpt_neox_japanese")


def _rope_params(model_type, r, layer_type):
    """The RoPE parameters of ``layer_type``, the dotted field they were read from, and the
    source of that field (the file, or a class default)."""
    if model_type == "gemma4_text" and r.cfg.get("rope_parameters") is None \
            and r.cfg.get("rope_scaling") is None:
        # Gemma4TextConfig.__post_init__ sets per-layer-type parameters when the file has none
        found, params = r.defaults.get("rope_parameters")
        if not found or not _is_nested(params) or not isinstance(params.get(layer_type), dict):
            where = "use (class defaults not looked up)" if not r.defaults.enabled else \
                "the config class"
            raise ValueError(f"rope_parameters: not in the file and no default in {where}")
        r.record("rope_parameters", params, r.defaults.label)
        return dict(params[layer_type]), f"rope_parameters['{layer_type}']", r.defaults.label
    if "rope_parameters" in r.cfg and r.cfg["rope_parameters"] is not None:
        params = r.cfg["rope_parameters"]
        r.read.add("rope_parameters")
        r.record("rope_parameters", params, FILE)
        if not isinstance(params, dict):
            raise ValueError("rope_parameters: must be a JSON object")
        if _is_nested(params):
            if layer_type not in params or not isinstance(params[layer_type], dict):
                raise ValueError(f"rope_parameters: no entry for layer type {layer_type!r}")
            return dict(params[layer_type]), f"rope_parameters['{layer_type}']", FILE
        return dict(params), "rope_parameters", FILE
    scaling = r.cfg.get("rope_scaling")
    if "rope_scaling" in r.cfg:
        r.read.add("rope_scaling")
        r.record("rope_scaling", scaling, FILE)
    if scaling is not None and not isinstance(scaling, dict):
        raise ValueError("rope_scaling: must be a JSON object or null")
    scaling = dict(scaling or {})
    if model_type in ("gemma3_text", "olmo3") and layer_type == "sliding_attention":
        # Gemma 3 and OLMo 3 put a flat rope_scaling on the full_attention layers only.
        if scaling:
            model, cls = {"gemma3_text": ("gemma3", "Gemma3TextConfig"),
                          "olmo3": ("olmo3", "Olmo3Config")}[model_type]
            r.values.setdefault("rope_scaling on sliding_attention layers", Value(
                "not applied", _config_rule(model, cls, "convert_rope_params_to_dict")))
        scaling = {}
    if model_type == "gemma3_text" and layer_type == "sliding_attention":
        scaling["__theta_key"] = "rope_local_base_freq"
        if "rope_local_base_freq" in r.cfg:
            scaling["rope_theta"] = r.get("rope_local_base_freq")
        else:
            found, theta = r.defaults.get("rope_theta", "sliding_attention")
            if not found:
                raise ValueError("rope_local_base_freq: not in the file and no class default")
            scaling["rope_theta"] = r.record("rope_local_base_freq", theta, r.defaults.label)
    elif model_type == "modernbert":
        key = "local_rope_theta" if layer_type == "sliding_attention" else "global_rope_theta"
        if key in r.cfg:
            scaling["rope_theta"] = r.get(key)
            scaling["__theta_key"] = key
    return scaling, "rope_scaling", FILE


def _scaling_type(model_type, params, field):
    kind = params.get("rope_type", params.get("type", "default"))
    if model_type == "phi3" and kind in ("su", "yarn"):
        kind = "longrope"  # transformers models/phi3/configuration_phi3.py (backward compatibility)
    if kind == "mrope":
        kind = "default"  # Qwen2-VL / Qwen2.5-VL: M-RoPE's frequencies are RoPE's
    if kind != "default" and kind not in METHODS and kind != "proportional":
        known = ["default", *[m for m in METHODS if m != "ntk"], "proportional"]
        raise ValueError(f"{field}: unknown scaling type {kind!r}; known: {known}")
    if kind == "ntk":
        raise ValueError(f"{field}: 'ntk' is not a transformers scaling type; use 'dynamic'")
    return kind


def _number(value, field, *, positive=True):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{field}: must be a number, got {value!r:.40}")
    if value != value:  # NaN
        raise ValueError(f"{field}: must be a finite number, got {value!r}")
    if positive and not value > 0:
        raise ValueError(f"{field}: must be positive, got {value!r}")
    return value


def _mrope_section(params, field, rotary):
    """M-RoPE's pairs per axis (t, h, w): integers that share out the rotated pairs exactly
    (transformers ``modeling_qwen2_vl.py``, ``Qwen2VLRotaryEmbedding.recomposition_frequencies``
    splits the frequencies by these counts; torch refuses counts that do not add up)."""
    section = params["mrope_section"]
    if not isinstance(section, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in section):
        raise ValueError(f"{field}.mrope_section: must be a list of pair counts, got {section!r:.60}")
    if sum(section) != rotary // 2:
        raise ValueError(f"{field}.mrope_section: {section} sums to {sum(section)} pairs, but "
                         f"the head rotates {rotary // 2} pairs")
    return section


def _rope_plan(model_type, r, layer_type, head_dim, mla_rope, max_pos):
    params, field, params_source = _rope_params(model_type, r, layer_type)
    theta_key = params.pop("__theta_key", None)
    unknown = sorted(set(params) - _ROPE_KEYS)
    if unknown:
        raise ValueError(f"{field}: key(s) {unknown} not understood; known: {sorted(_ROPE_KEYS)}")
    kind = _scaling_type(model_type, params, field)
    if model_type in _ROTARY_DIM:
        return _rotary_dim_plan(model_type, r, head_dim)
    base = _rope_base(model_type, r, layer_type, params, field, params_source, theta_key)
    if mla_rope is not None:
        rotary = _int(mla_rope, "qk_rope_head_dim")
    else:
        rotary = _rotated_width(r, layer_type, params, field, head_dim)
    out = {"base": float(base), "rotary_dim": rotary, "scaling": None if kind == "default" else kind,
           "scaling_params": {}, "attention_factor": 1.0}
    if "mrope_section" in params:
        out["scaling_params"]["mrope_section"] = _mrope_section(params, field, rotary)
    if kind == "default":
        out["inv_freq"] = rope_inv_freq(rotary, base=base)
        return out
    if kind == "proportional":
        return _proportional(out, params, field, base, rotary, head_dim)
    original, source = _original_length(model_type, r, kind, params, field, max_pos)
    factor = _scaling_factor(r, kind, params, field, max_pos, original)
    out["context_source"] = source
    return _scaled(out, kind, params, field, base, rotary, factor, original)


def _rope_base(model_type, r, layer_type, params, field, params_source, theta_key):
    """The RoPE base of a layer kind, from its rope dict or the top level, recorded and checked."""
    base = params.get("rope_theta")
    base_field = f"{field}.rope_theta"
    if base is None:
        base_field = "rope_theta"
        legacy = "rotary_emb_base" if model_type == "gpt_neox" else "rope_theta"
        base = r.get("rope_theta", legacy, layer_type=layer_type, required=True,
                     name="rope_theta" if layer_type != "sliding_attention" or model_type not in (
                         "gemma3_text", "modernbert") else f"rope_theta ({layer_type})")
    elif theta_key is not None:
        base_field = theta_key
    else:
        r.record(f"{field}.rope_theta", base, params_source)
        if "rope_theta" in r.cfg:  # read too; the dict's value wins in transformers
            r.read.add("rope_theta")
            if r.cfg["rope_theta"] != base:
                r.record("rope_theta (top level, overridden)", r.cfg["rope_theta"], FILE)
    base = _number(base, base_field)
    if not np.isfinite(base) or base <= 1:
        raise ValueError(f"{base_field}: must be a finite number above 1 (the RoPE base), "
                         f"got {base!r}")
    return base


def _rotated_width(r, layer_type, params, field, head_dim):
    """Channels rotated per head: head_dim times partial_rotary_factor (or rotary_pct)."""
    factor = params.get("partial_rotary_factor")
    # rotary_pct is read by GPT-NeoX's config classes only (GPTNeoXConfig.__init__ pops it);
    # in another family's file it does nothing and is listed as not interpreted.
    pct = ("rotary_pct",) if r.values["model_type"].value in _ROTARY_PCT_FAMILIES else ()
    if factor is None and ("partial_rotary_factor" in r.cfg or (pct and pct[0] in r.cfg)):
        factor = r.get("partial_rotary_factor", *pct)
    if factor is None and not field.startswith("rope_parameters"):
        found, factor = r.defaults.get("partial_rotary_factor", layer_type)
        if found:
            r.record("partial_rotary_factor", factor, r.defaults.label)
    if factor is None:
        factor = 1.0
        name = ("partial_rotary_factor" if not field.startswith("rope_parameters[")
                else f"{field}.partial_rotary_factor")
        r.values.setdefault(name, Value(1.0, "absent (every channel of a head is rotated)"))
    if factor == 1 and head_dim % 2:
        raise ValueError(f"head_dim: RoPE rotates pairs of channels, so it must be even, got {head_dim}")
    try:
        return partial_rotary_dim(head_dim, _number(factor, "partial_rotary_factor"))
    except ValueError as exc:
        raise ValueError(f"partial_rotary_factor: {exc}") from None


def _proportional(out, params, field, base, rotary, head_dim):
    # Gemma 4's global layers: the first pairs keep the frequencies of the whole head,
    # theta_i = b^(-2i/head_dim), the others do not turn (theta_i = 0); all divided by
    # the optional factor (transformers modeling_rope_utils._compute_proportional_rope_parameters).
    factor = _number(params.get("factor", 1.0), f"{field}.factor")
    turning = rotary // 2
    inv_freq = np.zeros(head_dim // 2)
    inv_freq[:turning] = rope_inv_freq(head_dim, base=base)[:turning]
    out["inv_freq"] = inv_freq / factor
    if factor != 1.0:
        out["scaling_params"]["factor"] = factor
    return out


def _original_length(model_type, r, kind, params, field, max_pos):
    """``(L, its source)`` for a scaled layer kind."""
    original = params.get("original_max_position_embeddings")
    source = None
    if "original_max_position_embeddings" in r.cfg and (original is None or model_type == "phi3"):
        original = r.get("original_max_position_embeddings")  # Phi-3's top-level value wins
    if original is not None:
        source = (f"{field}.original_max_position_embeddings"
                  if params.get("original_max_position_embeddings") is not None
                  else "original_max_position_embeddings")
    elif kind == "linear" and max_pos is not None:
        # Position interpolation (Chen et al. 2023) states no pre-scaling length: L is the
        # file's max_position_embeddings, which releases fill either way (Gemma 3: the scaled
        # 131 072; Vicuna v1.5 16k: the 4 096 before its factor 4).
        original, source = max_pos, LINEAR_SOURCE
    elif max_pos is not None:
        original, source = max_pos, "max_position_embeddings"
        r.values.setdefault("original_max_position_embeddings", Value(max_pos, _rule(
            "modeling_rope_utils.py", "RotaryEmbeddingConfigMixin.standardize_rope_params")
            + ": max_position_embeddings"))
    if original is None and max_pos is None:
        raise ValueError(f"{field}.original_max_position_embeddings: not in the file, and no "
                         "max_position_embeddings to take it from")
    if original is not None:
        original = _int(original, f"{field}.original_max_position_embeddings")
    return original, source


def _scaling_factor(r, kind, params, field, max_pos, original):
    """The scaling factor, from the file or (YaRN, LongRoPE) derived as transformers does."""
    factor = params.get("factor")
    if kind == "yarn" and "factor" not in params:  # null is derived below; absent is refused
        raise ValueError(f"{field}.factor: missing; transformers requires the key for yarn "
                         "(modeling_rope_utils._compute_yarn_parameters reads it; null derives it)")
    if factor is None and kind in ("yarn", "longrope"):
        if max_pos is None:
            raise ValueError(f"{field}.factor: missing, and no max_position_embeddings to derive it")
        factor = max_pos / original
        r.values.setdefault(f"{field}.factor", Value(factor, _rule(
            "modeling_rope_utils.py", f"_compute_{kind}_parameters")
            + ": max_position_embeddings / original_max_position_embeddings"))
    if factor is None:
        raise ValueError(f"{field}.factor: missing for scaling type {kind!r}")
    factor = _number(factor, f"{field}.factor")
    if factor < 1:
        raise ValueError(f"{field}.factor: must be at least 1 (a context extension), got {factor!r}")
    return factor


def _scaled(out, kind, params, field, base, rotary, factor, original):
    """Fill ``out`` with the scaled frequencies and attention factor of a scaling type."""
    kwargs = {k: params[k] for k in _SCALING_PARAMS[kind] if params.get(k) is not None}
    if kind == "yarn" and "truncate" in kwargs and not isinstance(kwargs["truncate"], bool):
        raise ValueError(f"{field}.truncate: must be true or false")
    if kind == "llama3" and kwargs.get("low_freq_factor") is not None and \
            kwargs.get("low_freq_factor") == kwargs.get("high_freq_factor"):
        # Llama 4 Scout gives both factors 1: the blended band is empty, so transformers'
        # _compute_llama3_parameters divides by the factor exactly the pairs whose wavelength
        # exceeds L / low_freq_factor and keeps the others.
        low = _number(kwargs["low_freq_factor"], f"{field}.low_freq_factor")
        theta = rope_inv_freq(rotary, base=base)
        divided, _ = rope_scaling("linear", rotary, base=base, factor=factor,
                                  original_max_position_embeddings=original)
        out.update(inv_freq=np.where(2 * np.pi / theta > original / low, divided, theta),
                   attention_factor=1.0, context=original,
                   scaling_params={**out["scaling_params"], "factor": factor, **kwargs})
        return out
    try:
        inv_freq, attention = rope_scaling(kind, rotary, base=base, factor=factor,
                                           original_max_position_embeddings=original, **kwargs)
        if kind == "longrope":
            long_inv, _ = rope_scaling(kind, rotary, base=base, factor=factor,
                                       original_max_position_embeddings=original,
                                       seq_len=original + 1, **kwargs)
            out["extras_long"] = long_inv
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{field}: {exc}") from None
    out.update(inv_freq=inv_freq, attention_factor=float(attention), context=original,
               scaling_params={**out["scaling_params"], "factor": factor, **{
                   k: v for k, v in kwargs.items() if k not in ("short_factor", "long_factor")}})
    if kind == "dynamic":
        out["scaling_params"]["note"] = "base grows once a sequence passes L"
    return out


def _rotary_dim_plan(model_type, r, head_dim):
    """GPT-J and CodeGen: the first ``rotary_dim`` channels of a head rotate in pairs
    (2i, 2i+1) with base 10 000 (modeling_<family>.create_sinusoidal_positions)."""
    rotary = r.get("rotary_dim", required=True)
    if rotary is None:
        raise ValueError("rotary_dim: null: transformers then builds frequencies for hidden_size "
                         "channels, not a head's; the inspector has no rule for it")
    rotary = _int(rotary, "rotary_dim")
    if rotary % 2 or rotary > head_dim:
        raise ValueError(f"rotary_dim: must be even and at most head_dim {head_dim}, got {rotary}")
    r.values.setdefault("rope_theta", Value(10000.0, _rule(
        f"models/{model_type}/modeling_{model_type}.py", "create_sinusoidal_positions")))
    r.values.setdefault("layout", Value("pairs (2i, 2i+1)", _rule(
        f"models/{model_type}/modeling_{model_type}.py", "rotate_every_two")))
    return {"base": 10000.0, "rotary_dim": rotary, "scaling": None, "scaling_params": {},
            "attention_factor": 1.0, "inv_freq": rope_inv_freq(rotary, base=10000.0)}


def _extras(model_type, r, layer):
    long_inv = layer.__dict__.pop("extras_long", None)
    if long_inv is not None:
        layer.extras["past L"] = "long_factor frequencies (shortest wavelength %.3g)" % float(
            (2 * np.pi / long_inv).min())
    if model_type in _SINKS:
        layer.extras["sinks"] = _SINKS[model_type]
    if model_type == "llama4_text" and not layer.rope:
        if r.get("attn_temperature_tuning"):
            floor = r.get("floor_scale")
            scale = r.get("attn_scale")
            layer.extras["temperature"] = (f"queries x (1 + {scale} ln(1 + floor((m + 1) / {floor})))"
                                           " (attn_temperature_tuning)")
    if layer.rope and model_type in ("deepseek_v2", "deepseek_v3"):
        nope = r.get("qk_nope_head_dim", required=True)
        params = r.cfg.get("rope_parameters") or r.cfg.get("rope_scaling") or {}
        params = {**params}
        if "type" in params and "rope_type" not in params:
            params["rope_type"] = params.pop("type")
        qk = _int(nope, "qk_nope_head_dim") + layer.rotary_dim
        scale = deepseek_softmax_scale(qk, {k: v for k, v in params.items()
                                            if k in ("rope_type", "factor", "mscale_all_dim")})
        layer.extras["softmax scale"] = round(scale, 8)
    if layer.attention != "none" and ("query_pre_attn_scalar" in r.cfg or model_type in (
            "gemma2", "gemma3_text")) and r.get("query_pre_attn_scalar") is not None:
        q = _number(r.get("query_pre_attn_scalar"), "query_pre_attn_scalar")
        layer.extras["softmax scale"] = round(q ** -0.5, 8)
