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
``tests/test_explain_released_corpus.py`` does the same for 43 released files that the course
does not store, many of other families (``course_utils/data/config_corpus.json``, each with
its public source).

Command line::

    python -m course_utils.explain config.json [--plot layers.png]

Modules: ``values`` (the plan records), ``read`` (the file), ``defaults`` (class defaults),
``layers`` (layer kinds), ``rotary`` (RoPE parameters per layer kind), ``plan``, ``format``,
``plot``, ``cli``.
"""

from .cli import _HELP, main
from .defaults import _Defaults, _StoredDefaults, _transformers
from .format import fold_layers, format_plan, plan_summary
from .plan import position_plan
from .plot import draw_plan, plot_plan
from .values import FILE, LAYER_TYPES, RULES_READ_IN, UNKNOWN, LayerPlan, PositionPlan, Value

__all__ = ["LayerPlan", "PositionPlan", "Value", "position_plan", "format_plan", "plan_summary",
           "draw_plan", "plot_plan", "fold_layers", "main"]
# Names that tools and tests use besides the public API (the recorder patches _Defaults.get).
_INTERNAL = (FILE, UNKNOWN, RULES_READ_IN, LAYER_TYPES, _Defaults, _StoredDefaults, _transformers, _HELP)

# The public API is documented, fuzzed and reported under this package's name, as one module.
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
