"""Constants and the records of a position plan: :class:`Value`, :class:`LayerPlan`, :class:`PositionPlan`."""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np

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
_SINUSOIDAL = ("sinusoidal absolute position embeddings (a fixed table)", "02_sinusoidal.ipynb")
_NOPE = ("no position signal in attention (Mamba layers carry order)",
         "01_position_problem.ipynb")
_NO_ROPE = {"gpt2": _LEARNED, "gpt_bigcode": _LEARNED, "opt": _LEARNED, "bert": _LEARNED,
            "roberta": _LEARNED, "distilbert": _LEARNED, "xlm-roberta": _LEARNED,
            "electra": _LEARNED, "gpt_neo": _LEARNED, "bloom": _ALIBI, "mpt": _ALIBI,
            # nn.Embedding(max_position_embeddings, ...) in transformers 5.23
            # models/albert/modeling_albert.py (AlbertEmbeddings), models/git/modeling_git.py
            "albert": _LEARNED, "git": _LEARNED,
            # MarianSinusoidalPositionalEmbedding, models/marian/modeling_marian.py (5.23)
            "marian": _SINUSOIDAL,
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

def _is_nested(params):
    return isinstance(params, dict) and any(isinstance(v, dict) for k, v in params.items()
                                           if k in LAYER_TYPES)
