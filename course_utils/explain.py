"""The position plan of a model config: what each layer does with token positions.

:func:`position_plan` reads a Hugging Face ``config.json`` (a dict or a path; a multimodal file
is read through its ``text_config``) and returns, per layer: the attention kind (full, sliding
window ``W``, chunked ``C``, or ``none`` for linear-attention layers, which attend over no
positions), RoPE or NoPE, the base, the scaling type and its parameters, the rotated width per
head (partial factor, MLA's ``qk_rope_head_dim``), the per-pair wavelengths after scaling, how
many pairs complete a turn within the original context, the attention factor on cos and sin
and the other temperatures (DeepSeek's mscale, Llama 4's NoPE-layer tuning, Gemma's
``query_pre_attn_scalar``), and attention sinks.

Every value is labelled with where it came from: the file, or, for a key the file omits, the
default of the config class that transformers instantiates for it (``"class default
(transformers X.Y)"``, looked up in the installed transformers at run time). A value the plan
derives from a rule hard-coded in a model's transformers code (Gemma 2's alternating layers,
OLMo 3's three sliding layers to one global, ...) is labelled with the file and function the
rule was read from (``"rule of transformers 5.23 models/gemma2/configuration_gemma2.py
(Gemma2Config.__post_init__)"``), with or without class defaults. A value neither in the file,
nor in the class, nor given by such a rule is unknown; where the plan needs it, that is an error
naming the key. Keys the plan does not interpret are listed as such.

The original context ``L`` of a layer is labelled too: ``original_max_position_embeddings``
where the file gives it, ``max_position_embeddings`` for a layer without scaling, and, for linear
scaling (position interpolation, Chen et al. 2023, where the extended length is ``s L``) in a
file that states no original length, ``max_position_embeddings / factor``.

The frequencies come from :func:`course_utils.rope.rope_inv_freq` and
:func:`course_utils.scaling.rope_scaling`; ``tests/test_reference_configs.py`` compares them,
layer type by layer type, with transformers' rotary classes for every stored configuration.

Command line::

    python -m course_utils.explain config.json [--plot layers.png]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import numbers
import os
import pathlib
import re
import sys
import textwrap

import numpy as np

from . import _validate as val
from .modern import deepseek_softmax_scale, partial_rotary_dim
from .rope import rope_inv_freq
from .scaling import METHODS, rope_scaling

__all__ = ["LayerPlan", "PositionPlan", "Value", "position_plan", "format_plan", "plan_summary",
           "draw_plan", "plot_plan", "fold_layers", "main"]

FILE = "file"
UNKNOWN = "unknown"
RULES_READ_IN = "transformers 5.23"  # the version whose code the hard-coded rules were read from
LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention")

# Keys of a rope_scaling / rope_parameters dict the plan reads.
_ROPE_KEYS = {"rope_type", "type", "rope_theta", "factor", "original_max_position_embeddings",
              "partial_rotary_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
              "attention_factor", "truncate", "low_freq_factor", "high_freq_factor",
              "short_factor", "long_factor", "mrope_section", "mrope_interleaved"}
_SCALING_PARAMS = {  # rope_scaling's keyword arguments per method (course_utils.scaling)
    "linear": (), "dynamic": (),
    "yarn": ("beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor", "truncate"),
    "llama3": ("low_freq_factor", "high_freq_factor"),
    "longrope": ("short_factor", "long_factor", "attention_factor"),
}
_SINKS = {"gpt_oss": "a learned sink logit per head (transformers models/gpt_oss/modeling_gpt_oss.py, "
                     "GptOssAttention.sinks)"}
# Qwen configs: a window from layer max_window_layers on, when use_sliding_window (the config
# class's __post_init__ builds layer_types so).
_QWEN_WINDOW = {"qwen2": ("qwen2", "Qwen2Config"), "qwen3": ("qwen3", "Qwen3Config"),
                "qwen2_vl_text": ("qwen2_vl", "Qwen2VLTextConfig"),
                "qwen2_5_vl_text": ("qwen2_5_vl", "Qwen2_5_VLTextConfig"),
                # A flat multimodal file (text keys at the top): its text config reads them.
                "qwen2_vl": ("qwen2_vl", "Qwen2VLTextConfig"),
                "qwen2_5_vl": ("qwen2_5_vl", "Qwen2_5_VLTextConfig")}
# No layer_types: the model's forward builds a sliding-window mask for every layer when
# sliding_window is set (Qwen3-MoE: its config sets sliding_window to None unless
# use_sliding_window).
_EVERY_LAYER_WINDOW = {"mistral": "MistralModel", "mixtral": "MixtralModel", "phi3": "Phi3Model",
                       "starcoder2": "Starcoder2Model", "qwen3_moe": "Qwen3MoeModel"}

# Families whose attention uses no RoPE: what they use, and the chapter that teaches it.
_LEARNED = ("learned absolute position embeddings", "03_learned.ipynb")
_ALIBI = ("ALiBi (linear biases on the attention logits)", "06_alibi.ipynb")
_BUCKETS = ("relative position buckets (a learned bias per bucket)", "04_relative.ipynb")
_NOPE = ("no position signal in attention (Mamba layers carry order)",
         "01_position_problem.ipynb")
_NO_ROPE = {"gpt2": _LEARNED, "gpt_bigcode": _LEARNED, "opt": _LEARNED, "bert": _LEARNED,
            "roberta": _LEARNED, "distilbert": _LEARNED, "xlm-roberta": _LEARNED,
            "electra": _LEARNED, "gpt_neo": _LEARNED, "bloom": _ALIBI, "mpt": _ALIBI,
            "t5": _BUCKETS, "mt5": _BUCKETS, "umt5": _BUCKETS, "jamba": _NOPE}
# Families whose layer kinds and RoPE use the plan has a rule for (read in transformers'
# models/<family>/ code): every attention layer rotates unless a rule below says otherwise.
_FAMILIES = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
             "qwen3_next", "qwen2_vl", "qwen2_5_vl", "qwen2_vl_text", "qwen2_5_vl_text",
             "phi", "phi3", "stablelm", "starcoder2", "gpt_neox", "gptj", "codegen", "olmo",
             "olmo2", "olmo3", "gemma", "gemma2", "gemma3_text", "gemma4_text", "deepseek_v2",
             "deepseek_v3", "cohere", "cohere2", "exaone4", "granite", "falcon", "smollm3",
             "llama4_text", "modernbert", "gpt_oss", "persimmon", "mistral3"}
# Older keys for the same values, for files read without transformers (a config class, when
# installed, gives its own attribute_map instead).
_ALIASES = {"num_hidden_layers": ("n_layer", "num_layers", "n_layers"),
            "num_attention_heads": ("n_head", "num_heads"),
            "hidden_size": ("n_embd", "d_model"), "max_position_embeddings": ("n_positions",)}
# GPT-J and CodeGen: rotary_dim channels rotate, in pairs (2i, 2i+1), base 10 000 fixed in
# transformers models/gptj/modeling_gptj.py (create_sinusoidal_positions).
_ROTARY_DIM = {"gptj": "gptj", "codegen": "codegen"}


@dataclasses.dataclass(frozen=True)
class Value:
    """A value the plan used, and where it came from: ``"file"`` (or ``"file: <key>"`` when read
    under another name), ``"class default (transformers X.Y)"``, ``"derived: ..."``, or
    ``"unknown"``."""

    value: object
    source: str


@dataclasses.dataclass
class LayerPlan:
    """What one layer does with positions.

    ``layer_type`` uses transformers' names (``"full_attention"``, ``"sliding_attention"``,
    ``"chunked_attention"``, ``"linear_attention"``); ``attention`` is ``"full"``,
    ``"sliding"``, ``"chunked"`` or ``"none"``; ``span`` the window or chunk length.
    ``inv_freq`` is ``None`` in a layer without RoPE. ``context`` is the original context ``L``
    and ``context_source`` says where it came from: ``original_max_position_embeddings`` (in the
    scaling parameters or at the top level) when the layer's RoPE is scaled and the file gives it,
    ``max_position_embeddings / factor`` for linear scaling without it, else
    ``max_position_embeddings``.
    """

    index: int
    layer_type: str
    attention: str
    span: int | None
    rope: bool
    base: float | None = None
    scaling: str | None = None
    scaling_params: dict = dataclasses.field(default_factory=dict)
    head_dim: int | None = None
    rotary_dim: int | None = None
    inv_freq: np.ndarray | None = None
    attention_factor: float | None = None
    context: int | None = None
    extras: dict = dataclasses.field(default_factory=dict)
    context_source: str | None = None

    def __post_init__(self):
        _require_int(self.index, "index", minimum=0)
        if self.layer_type not in LAYER_TYPES:
            raise ValueError(f"layer_type must be one of {LAYER_TYPES}, got {self.layer_type!r:.60}")
        if self.attention not in ("full", "sliding", "chunked", "none"):
            raise ValueError("attention must be 'full', 'sliding', 'chunked' or 'none', got "
                             f"{self.attention!r:.60}")
        if not isinstance(self.rope, (bool, np.bool_)):
            raise TypeError(f"rope must be a bool, got {self.rope!r:.60}")
        for name in ("span", "head_dim", "rotary_dim", "context"):
            if getattr(self, name) is not None:
                _require_int(getattr(self, name), name, minimum=1)
        for name in ("base", "attention_factor"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)
                                      or not np.isfinite(value) or value <= 0):
                raise ValueError(f"{name} must be a positive finite number or None, got "
                                 f"{value!r:.60}")
        for name in ("scaling", "context_source"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a string or None, got {getattr(self, name)!r:.60}")
        for name in ("scaling_params", "extras"):
            if not isinstance(getattr(self, name), dict):
                raise TypeError(f"{name} must be a dict, got {getattr(self, name)!r:.60}")
        if self.inv_freq is not None:
            try:
                inv = np.asarray(self.inv_freq, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"inv_freq must be a 1-D array of numbers or None, got "
                                f"{self.inv_freq!r:.60}") from exc
            if inv.ndim != 1 or not np.all(np.isfinite(inv)) or np.any(inv < 0):
                raise ValueError(f"inv_freq must be a 1-D array of finite non-negative numbers, "
                                 f"got {self.inv_freq!r:.60}")
            self.inv_freq = inv

    @property
    def wavelengths(self):
        """``2 pi / theta_i`` per pair, in positions (``inf`` for a pair that does not turn,
        ``None`` without RoPE)."""
        if self.inv_freq is None:
            return None
        with np.errstate(divide="ignore"):
            return np.where(self.inv_freq > 0, 2 * np.pi / self.inv_freq, np.inf)

    @property
    def turning_pairs(self):
        """How many pairs complete at least one turn within ``context`` positions."""
        if self.inv_freq is None or self.context is None:
            return None
        return int(np.sum(self.wavelengths <= self.context))

    @property
    def turning_pairs_in_span(self):
        """How many pairs complete a turn within the window or chunk (``None`` if none); an
        encoder's window (``extras["reach"]``) counts the distance it reaches to either side."""
        if self.inv_freq is None or self.span is None:
            return None
        return int(np.sum(self.wavelengths <= self.extras.get("reach", self.span)))

    def signature(self):
        """Everything but the index and the arrays: equal signatures fold into one run."""
        params = tuple(sorted((k, _hashable(v)) for k, v in self.scaling_params.items()))
        extras = tuple(sorted((k, _hashable(v)) for k, v in self.extras.items()))
        return (self.layer_type, self.attention, self.span, self.rope, self.base, self.scaling,
                params, self.head_dim, self.rotary_dim, self.attention_factor, self.context,
                self.context_source, extras)


@dataclasses.dataclass
class PositionPlan:
    """The plan of a whole config: ``layers`` (one :class:`LayerPlan` each), ``values`` (every
    value used, name to :class:`Value`), ``not_interpreted`` (keys read but not used),
    ``notes`` (sentences on how the plan read the file) and ``model_type``."""

    model_type: str | None
    layers: list
    values: dict
    not_interpreted: list
    notes: list
    text_config: bool
    scheme: str | None = None

    def __post_init__(self):
        if self.model_type is not None and not isinstance(self.model_type, str):
            raise TypeError(f"model_type must be a string or None, got {self.model_type!r:.60}")
        if not isinstance(self.layers, list) or not all(
                isinstance(layer, LayerPlan) for layer in self.layers):
            raise TypeError(f"layers must be a list of LayerPlan, got {self.layers!r:.60}")
        if not isinstance(self.values, dict) or not all(
                isinstance(v, Value) for v in self.values.values()):
            raise TypeError(f"values must be a dict of Value, got {self.values!r:.60}")
        for name in ("not_interpreted", "notes"):
            if not isinstance(getattr(self, name), list):
                raise TypeError(f"{name} must be a list, got {getattr(self, name)!r:.60}")
        if not isinstance(self.text_config, (bool, np.bool_)):
            raise TypeError(f"text_config must be a bool, got {self.text_config!r:.60}")
        if self.scheme is not None and not isinstance(self.scheme, str):
            raise TypeError(f"scheme must be a string or None, got {self.scheme!r:.60}")

    def layer_types(self):
        """The ``layer_type`` of every layer, as transformers names them."""
        return [layer.layer_type for layer in self.layers]

    def by_layer_type(self):
        """The first layer of each ``layer_type``, in order of appearance."""
        out = {}
        for layer in self.layers:
            out.setdefault(layer.layer_type, layer)
        return out


def _require_int(value, name, *, minimum):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) \
            or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r:.60}")


def _rule(path, where):
    """The label of a value given by a rule read in a transformers source file (``path``
    inside the ``transformers`` package)."""
    return f"rule of {RULES_READ_IN} {path} ({where})"


def _config_rule(model, cls, method="__post_init__"):
    return _rule(f"models/{model}/configuration_{model}.py", f"{cls}.{method}")


def _hashable(v):
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v


# --------------------------------------------------------------------------------------------
# Class defaults, looked up in the installed transformers.

def _transformers():
    try:
        import transformers
    except ImportError:  # pragma: no cover - exercised only without the reference extra
        return None
    return transformers


def _default_label():
    tf = _transformers()
    if tf is None:
        return None
    major_minor = ".".join(tf.__version__.split(".")[:2])
    return f"class default (transformers {major_minor})"


class _Defaults:
    """The defaults of the config class transformers uses for ``model_type``."""

    def __init__(self, model_type, enabled=True):
        self.model_type = model_type
        self.enabled = enabled
        self.cls = None
        self.label = None
        self._instance = None
        tf = _transformers() if enabled else None
        if tf is not None:
            from transformers import CONFIG_MAPPING
            if model_type in CONFIG_MAPPING:
                self.cls = CONFIG_MAPPING[model_type]
                # A multimodal class read from a flat file (Qwen2.5-VL): the text keys are the
                # text sub-config's, and so are their defaults.
                self.cls = getattr(self.cls, "sub_configs", {}).get("text_config") or self.cls
                self.label = _default_label()

    @property
    def instance(self):
        if self._instance is None and self.cls is not None:
            try:
                with _quiet():
                    self._instance = self.cls()
            except Exception:  # a class that needs arguments: no instance defaults
                self._instance = False
        return self._instance or None

    def aliases(self, key):
        """The file keys the class reads ``key`` from (its ``attribute_map``); without a class,
        the older names listed in ``_ALIASES``."""
        if self.cls is None:
            return _ALIASES.get(key, ())
        amap = getattr(self.cls, "attribute_map", None) or {}
        return tuple(v for k, v in amap.items() if k == key and isinstance(v, str))

    def get(self, key, layer_type=None):
        """The class default of ``key`` (``(found, value)``); ``layer_type`` picks the entry of a
        per-type default (``default_theta`` of Gemma 3 and ModernBERT)."""
        if self.cls is None:
            return False, None
        fields = getattr(self.cls, "__dataclass_fields__", {})
        if key == "rope_theta" and fields:
            theta = getattr(self.cls, "default_theta", None)
            if isinstance(theta, dict):
                theta = theta["local" if layer_type == "sliding_attention" else "global"]
            return theta is not None, theta
        if key == "rope_theta" and layer_type == "sliding_attention" and \
                self.model_type == "gemma3_text":  # transformers 4.x: its own argument
            key = "rope_local_base_freq"
        if key == "partial_rotary_factor":
            params = getattr(self.instance, "rope_parameters", None) or {}
            if _is_nested(params):
                params = params.get(layer_type or "full_attention") or {}
            if "partial_rotary_factor" in params:
                return True, params["partial_rotary_factor"]
            return False, None
        if key == "rope_parameters":  # set by __post_init__ (Gemma 4), not a field default
            params = getattr(self.instance, "rope_parameters", None)
            return params is not None, params
        if key == "global_head_dim":  # Gemma 4: a keyword default of __post_init__, kept per layer
            per_layer = getattr(self.instance, "per_layer_config", None)
            try:
                return True, per_layer["full_attention"].head_dim
            except (TypeError, KeyError, AttributeError):
                return False, None
        if key == "sliding_window_pattern" and hasattr(self.instance, "_sliding_window_pattern"):
            return True, self.instance._sliding_window_pattern
        if key in ("full_attention_interval", "global_attn_every_n_layers"):
            types = getattr(self.instance, "layer_types", None) or []
            full = [i for i, t in enumerate(types) if t == "full_attention"]
            if key == "full_attention_interval" and full:
                return True, full[0] + 1
            if key == "global_attn_every_n_layers" and len(full) > 1:
                return True, full[1] - full[0]
            return False, None
        if key in fields and fields[key].default is not dataclasses.MISSING:
            return True, fields[key].default
        if not fields:  # transformers 4.x: config classes take their defaults as arguments
            import inspect

            param = inspect.signature(self.cls.__init__).parameters.get(key)
            if param is not None and param.default is not inspect.Parameter.empty:
                return True, param.default
        return False, None


def _install_hint(defaults):
    """A hint to install transformers when class defaults were wanted but none could be read."""
    if getattr(defaults, "enabled", False) and getattr(defaults, "cls", None) is None \
            and _transformers() is None:
        return ("; transformers, whose config class would give the default, is not installed "
                "(pip install 'course-utils[reference]')")
    return ""


def _quiet():
    """A context in which transformers' warnings and log lines are not printed."""
    import contextlib
    import logging
    import warnings

    @contextlib.contextmanager
    def quiet():
        logger = logging.getLogger("transformers")
        level = logger.level
        logger.setLevel(logging.ERROR)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield
        finally:
            logger.setLevel(level)
    return quiet()


class _StoredDefaults:
    """Class defaults read from a stored library record (``class_defaults_<config>``), so that a
    notebook needs no transformers: the record holds every default a plan of that config looked
    up, as transformers' config class gave it (``tools/recorders/explain.py``)."""

    enabled = True

    def __init__(self, record, model_type):
        inputs = record.inputs
        if inputs.get("model_type") != model_type:
            raise ValueError(f"class_defaults: the record {record.name!r} holds the defaults of "
                             f"model_type {inputs.get('model_type')!r}, the file is "
                             f"{model_type!r}")
        self.model_type = model_type
        self.cls = type(inputs["config_class"], (), {})
        self.label = ("class default (transformers "
                      + ".".join(record.version.split(".")[:2]) + ")")
        booleans = set(inputs.get("booleans", ()))
        self.values = {}
        self.instance = None
        for key, value in record.outputs.items():
            value = value.item() if value.ndim == 0 else value.tolist()
            self.values[key] = bool(value) if key.split("@")[0] in booleans else value

    def aliases(self, key):
        return ()

    def get(self, key, layer_type=None):
        for name in (f"{key}@{layer_type}", key):
            if name in self.values:
                return True, self.values[name]
        return False, None


# --------------------------------------------------------------------------------------------
# Reading the file.

def _load(config):
    if isinstance(config, (str, os.PathLike)):
        path = pathlib.Path(config)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"config: cannot read {str(path)!r} ({exc.strerror})") from None
        except UnicodeDecodeError:
            raise ValueError(f"config: {path.name} is not a UTF-8 text file (a config.json is "
                             "JSON text)") from None
        try:
            config = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"config: {path.name} is not JSON ({exc.msg} at line {exc.lineno}, "
                             f"column {exc.colno})") from None
    elif hasattr(config, "config") and isinstance(config.config, dict):
        config = config.config  # a ReleasedConfig
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict, a path to a JSON file or a ReleasedConfig, "
                        f"got {type(config).__name__}")
    return config


def _text_part(config):
    """``(text_config, outer_keys, outer_model_type)``."""
    if "text_config" not in config:
        return config, {}, None
    text = config["text_config"]
    if not isinstance(text, dict):
        raise ValueError(f"text_config must be a JSON object, got {type(text).__name__}")
    text = dict(text)
    outer = {k: v for k, v in config.items() if k != "text_config"}
    if "model_type" not in text and "model_type" in outer:
        tf = _transformers()
        if tf is not None:
            from transformers import CONFIG_MAPPING
            cls = CONFIG_MAPPING.get(outer["model_type"]) if outer["model_type"] in CONFIG_MAPPING else None
            sub = getattr(cls, "sub_configs", {}).get("text_config") if cls else None
            if sub is not None and getattr(sub, "model_type", None):
                text["model_type"] = sub.model_type
    return text, outer, outer.get("model_type")


class _Reader:
    """Values of the text config with their provenance."""

    def __init__(self, cfg, defaults):
        self.cfg = cfg
        self.defaults = defaults
        self.values = {}
        self.read = set()

    def record(self, name, value, source):
        self.values.setdefault(name, Value(value, source))
        return value

    def get(self, key, *aliases, layer_type=None, default=True, required=False, name=None):
        name = name or key
        aliases = (*aliases, *self.defaults.aliases(key))
        for k in (key, *aliases):
            if k in self.cfg:
                self.read.add(k)
                return self.record(name, self.cfg[k], FILE if k == key else f"{FILE}: {k}")
        if default:
            found, value = self.defaults.get(key, layer_type)
            if found:
                return self.record(name, value, self.defaults.label)
        if required:
            if self.defaults.cls is not None:
                where = f"the {self.defaults.cls.__name__} class"
            elif not self.defaults.enabled:
                where = "use (class defaults not looked up)"
            else:
                where = "any config class (transformers not installed, or an unknown model_type)"
            raise ValueError(f"{key}: not in the file and no default in {where}"
                             + _install_hint(self.defaults))
        self.record(name, None, UNKNOWN)
        return None


_LIMITS = {"num_hidden_layers": 10_000, "head_dim": 65_536, "global_head_dim": 65_536,
           "qk_rope_head_dim": 65_536, "qk_nope_head_dim": 65_536}


def _int(value, field, *, allow_none=False):
    if value is None and allow_none:
        return None
    try:
        value = val.positive_int(value, field)
    except (TypeError, ValueError) as exc:
        raise ValueError(str(exc) if str(exc).startswith(field) else f"{field}: {exc}") from None
    if value > _LIMITS.get(field, float("inf")):
        raise ValueError(f"{field}: {value} is beyond any model (at most {_LIMITS[field]})")
    return value


def _layer_types(model_type, r, n):
    """``(layer_types, rope_flags, note)``; rope_flags is None when every attention layer
    rotates. A pattern built by a rule of the model's transformers code is recorded in
    ``r.values`` under ``layer_types`` with the rule's file and function as its source."""

    def ruled(types, label):
        r.values["layer_types"] = Value(list(types), label)
        return types

    if "layer_types" in r.cfg:
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
    if model_type in ("cohere2", "exaone4"):
        return _sliding_pattern(model_type, r, n)
    if model_type in ("gemma2", "gpt_oss"):
        model, cls = {"gemma2": ("gemma2", "Gemma2Config"), "gpt_oss": ("gpt_oss", "GptOssConfig")}[
            model_type]
        types = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n)]
        return ruled(types, _config_rule(model, cls)), None, \
            f"{model_type}: every second layer global"
    if model_type == "gemma3_text":
        p = _int(r.get("sliding_window_pattern", required=True), "sliding_window_pattern")
        types = ["sliding_attention" if (i + 1) % p else "full_attention" for i in range(n)]
        return ruled(types, _config_rule("gemma3", "Gemma3TextConfig")), None, \
            f"gemma3_text: layers {p - 1}, {2 * p - 1}, ... global (sliding_window_pattern {p})"
    if model_type == "gemma4_text":
        types = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n)]
        types[-1] = "full_attention"
        return ruled(types, _config_rule("gemma4", "Gemma4TextConfig")), None, \
            "gemma4_text: layers 5, 11, ... and the last global (no layer_types in the file)"
    if model_type == "olmo3":
        types = ["sliding_attention" if (i + 1) % 4 else "full_attention" for i in range(n)]
        return ruled(types, _config_rule("olmo3", "Olmo3Config")), None, \
            "olmo3: every 4th layer global"
    if model_type == "modernbert":
        k = _int(r.get("global_attn_every_n_layers", required=True), "global_attn_every_n_layers")
        types = ["sliding_attention" if i % k else "full_attention" for i in range(n)]
        return ruled(types, _config_rule("modernbert", "ModernBertConfig")), None, \
            f"modernbert: layers 0, {k}, {2 * k}, ... global (global_attn_every_n_layers)"
    if model_type == "qwen3_next":
        k = _int(r.get("full_attention_interval", required=True), "full_attention_interval")
        types = ["linear_attention" if (i + 1) % k else "full_attention" for i in range(n)]
        return ruled(types, _config_rule("qwen3_next", "Qwen3NextConfig")), None, (
            f"qwen3_next: layers {k - 1}, {2 * k - 1}, ... attend, the others are linear "
            f"(full_attention_interval {k})")
    if model_type == "llama4_text":
        flags = _rope_flags(model_type, r, n)
        types = ["chunked_attention" if f else "full_attention" for f in flags]
        return ruled(types, _config_rule("llama4", "Llama4TextConfig")), flags, \
            "llama4_text: RoPE layers chunked, NoPE layers global (no_rope_layers)"
    if model_type == "smollm3":
        flags = _rope_flags(model_type, r, n)
        use = r.get("use_sliding_window")
        window = r.get("sliding_window")
        types = ["sliding_attention" if use and window is not None and not f else "full_attention"
                 for f in flags]
        return ruled(types, _config_rule("smollm3", "SmolLM3Config")), flags, \
            "smollm3: NoPE every no_rope_layer_interval-th layer (no_rope_layers)"
    if model_type in _QWEN_WINDOW or model_type == "qwen2_moe":
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
        return ruled(types, label), None, note
    if model_type in _EVERY_LAYER_WINDOW:
        window = r.get("sliding_window")
        if model_type == "qwen3_moe" and not r.get("use_sliding_window"):
            window = None
        kind = "full_attention" if window is None else "sliding_attention"
        model = model_type
        types = ruled([kind] * n, _rule(f"models/{model}/modeling_{model}.py",
                                       f"{_EVERY_LAYER_WINDOW[model_type]}.forward"))
        return types, None, f"{model_type}: sliding_window, when set, applies to every layer"
    types = ["full_attention"] * n
    r.values["layer_types"] = Value(types, "absent (no layer_types, no window): every layer full")
    return types, None, "every layer attends to all earlier positions"


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
    else:
        flags = [int(t == "sliding_attention" and window is not None) for t in types]
    r.values["RoPE layers"] = Value(fold_layers([i for i, f in enumerate(flags) if f]) or "none",
                                    _rule(f"models/{model_type}/modeling_{model_type}.py",
                                          f"{model}.forward"))
    return flags, "RoPE only in the sliding-window layers, the global layers are NoPE"


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


def _is_nested(params):
    return isinstance(params, dict) and any(isinstance(v, dict) for k, v in params.items()
                                           if k in LAYER_TYPES)


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
    if positive and not value > 0:
        raise ValueError(f"{field}: must be positive, got {value!r}")
    return value


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
    model_type = text.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise ValueError(f"model_type: must be a string, got {model_type!r:.40}")
    from .data import LibraryRecord

    if isinstance(class_defaults, LibraryRecord):
        defaults = _StoredDefaults(class_defaults, model_type)
    elif isinstance(class_defaults, bool):
        defaults = _Defaults(model_type, enabled=class_defaults)
    else:
        raise TypeError("class_defaults must be True, False or a stored record "
                        "(library_record('class_defaults_<config>')), got "
                        f"{type(class_defaults).__name__}")
    r = _Reader(text, defaults)
    r.record("model_type", model_type, FILE if "model_type" in text else UNKNOWN)
    notes = []
    if model_type is None:
        notes.append("no model_type: every value not in the file is unknown")
    elif not class_defaults:
        notes.append("class defaults not looked up: a value not in the file is unknown")
    elif defaults.cls is None:
        notes.append(f"model_type {model_type!r}: no config class found (transformers missing or "
                     "unknown type); values not in the file are unknown")

    scheme = _no_rope_scheme(model_type, r)
    if scheme is not None:
        return PositionPlan(model_type=model_type, layers=[], values=r.values,
                            not_interpreted=[], notes=notes, text_config=outer_type is not None,
                            scheme=scheme)
    n = _int(r.get("num_hidden_layers", required=True), "num_hidden_layers")
    max_pos = r.get("max_position_embeddings")
    if max_pos is not None:
        max_pos = _int(max_pos, "max_position_embeddings")
    mla_rope = r.get("qk_rope_head_dim") if model_type in ("deepseek_v2", "deepseek_v3") \
        or "qk_rope_head_dim" in text else None
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
    head_dim = _int(head_dim, "head_dim")

    types, flags, rule = _layer_types(model_type, r, n)
    notes.append(rule)
    window = r.get("sliding_window") if "sliding_attention" in types and \
        model_type != "modernbert" else None
    if model_type == "modernbert" and "sliding_attention" in types:
        window = _int(r.get("local_attention", required=True), "local_attention")
        notes.append(f"modernbert is an encoder: its local layers see {window // 2} positions on "
                     "either side (local_attention is the whole window)")
    chunk = r.get("attention_chunk_size", required=True) if "chunked_attention" in types else None

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

    if "attention_chunk_size" in text and "chunked_attention" not in types:
        r.get("attention_chunk_size")
        notes.append("attention_chunk_size is set but no layer is chunked")
    read = r.read | {"model_type", "architectures", "_name_or_path"}
    not_interpreted = [k for k in text if k not in read]
    not_interpreted += [f"(outside text_config) {k}" for k in outer if k not in read]
    if outer_type is not None:
        notes.insert(0, f"read through text_config of a {outer_type!r} config")
    return PositionPlan(model_type=model_type, layers=layers, values=r.values,
                        not_interpreted=not_interpreted, notes=notes,
                        text_config=outer_type is not None or bool(outer))


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
    tf = _transformers()
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


def _rope_plan(model_type, r, layer_type, head_dim, mla_rope, max_pos):
    params, field, params_source = _rope_params(model_type, r, layer_type)
    theta_key = params.pop("__theta_key", None)
    unknown = sorted(set(params) - _ROPE_KEYS)
    if unknown:
        raise ValueError(f"{field}: key(s) {unknown} not understood; known: {sorted(_ROPE_KEYS)}")
    kind = _scaling_type(model_type, params, field)
    if model_type in _ROTARY_DIM:
        return _rotary_dim_plan(model_type, r, head_dim)
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
    if mla_rope is not None:
        rotary = _int(mla_rope, "qk_rope_head_dim")
    else:
        factor = params.get("partial_rotary_factor")
        if factor is None and ("partial_rotary_factor" in r.cfg or "rotary_pct" in r.cfg):
            factor = r.get("partial_rotary_factor", "rotary_pct")
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
            rotary = partial_rotary_dim(head_dim, _number(factor, "partial_rotary_factor"))
        except ValueError as exc:
            raise ValueError(f"partial_rotary_factor: {exc}") from None
    out = {"base": float(base), "rotary_dim": rotary, "scaling": None if kind == "default" else kind,
           "scaling_params": {}, "attention_factor": 1.0}
    if "mrope_section" in params:
        out["scaling_params"]["mrope_section"] = params["mrope_section"]
    if kind == "default":
        out["inv_freq"] = rope_inv_freq(rotary, base=base)
        return out
    if kind == "proportional":
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
    original = params.get("original_max_position_embeddings")
    if "original_max_position_embeddings" in r.cfg and (original is None or model_type == "phi3"):
        original = r.get("original_max_position_embeddings")  # Phi-3's top-level value wins
    if original is not None:
        source = (f"{field}.original_max_position_embeddings"
                  if params.get("original_max_position_embeddings") is not None
                  else "original_max_position_embeddings")
    elif kind == "linear" and max_pos is not None:
        # Position interpolation (Chen et al. 2023) states no pre-scaling length: L is the
        # file's max_position_embeddings, the length the divided frequencies are run on.
        original, source = max_pos, "max_position_embeddings, the scaled context"
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
    factor = params.get("factor")
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
    out["context_source"] = source
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
        out.append(f"{finite.size} rotating pairs{f' (+{still} that do not turn)' if still else ''}, "
                   f"wavelengths {_num(finite.min())} to "
                   f"{_num(finite.max())}; {layer.turning_pairs} complete a turn within "
                   f"L = {_num(layer.context)}"
                   + (f" ({layer.context_source})" if layer.context_source else ""))
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


def draw_plan(plan, ax, *, title=None):
    """Draw layers (rows) by pairs (columns) on ``ax``, coloured by log10 of the wavelength
    in positions. Rows of layers without RoPE are light grey ("no RoPE"), pairs that never
    turn (infinite wavelength) dark grey ("does not turn"); a white bar marks where each
    layer's pairs stop turning within L, an orange one within its window or chunk. Returns
    the image (for a colorbar)."""
    _require_plan(plan)
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
    fig.savefig(path, dpi=150)
    plt.close(fig)


_HELP = """\
what the plan says:
  L              the context a layer's pairs are counted within: the scaling parameters'
                 original_max_position_embeddings where the file gives it, else the file's
                 max_position_embeddings (for linear scaling that is the scaled length: the
                 file does not state the length the model was pre-trained on)
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
    from .data import library_record, library_record_names
    from .data.released import released_config, released_config_names

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
    if class_defaults and _transformers() is None and stored in library_record_names():
        # Without transformers, a stored file's class defaults come from their record.
        class_defaults = library_record(stored)
    return rec.config, title, class_defaults


def _stored_copy_note(name):
    """For a stored config read from a re-serialized copy, a line saying so (values labelled
    "file" are that copy's), else None."""
    from .data.released import released_config, released_config_names

    if os.path.exists(name) or name not in released_config_names():
        return None
    source = released_config(name).source
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
        print(_fill(f"error: {exc}", width=88, subsequent_indent="    "), file=sys.stderr)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
