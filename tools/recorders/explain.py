"""Recorders for the position-plan inspector (notebook 11): the config-class defaults that the
plan of a stored released config takes for the keys its file omits.

Each record holds every default the inspector looked up in transformers' config class for that
file (``course_utils.explain._Defaults.get``), keyed ``key`` or ``key@layer_type``; notebook 11
passes it as ``position_plan(config, class_defaults=record)`` and so needs no transformers.
"""

from __future__ import annotations


def _class_defaults(config_name):
    from course_utils import explain
    from course_utils.data.released import released_config

    looked_up = {}
    original = explain._Defaults.get

    def get(self, key, layer_type=None):
        found, value = original(self, key, layer_type)
        if found:
            looked_up[f"{key}@{layer_type}" if layer_type else key] = value
        return found, value

    explain._Defaults.get = get
    try:
        rec = released_config(config_name)
        plan = explain.position_plan(rec, class_defaults=True)
    finally:
        explain._Defaults.get = original
    defaults = explain._Defaults(plan.model_type)
    booleans = sorted({k.split("@")[0] for k, v in looked_up.items() if isinstance(v, bool)})
    inputs = {"config": config_name, "model_type": plan.model_type,
              "config_class": defaults.cls.__name__, "booleans": booleans}
    module = defaults.cls.__module__
    source = "src/" + module.replace(".", "/") + ".py"
    return f"{module}.{defaults.cls.__name__}", source, inputs, looked_up


def record_class_defaults_gemma3_4b():
    """The Gemma3TextConfig defaults behind Gemma 3 4B's plan (its file states no head_dim,
    bases or window pattern)."""
    return _class_defaults("gemma3_4b")


def record_class_defaults_llama4_scout_17b_16e():
    """The Llama4TextConfig defaults behind Llama 4 Scout's plan (its file states no NoPE
    interval and no attention-temperature settings)."""
    return _class_defaults("llama4_scout_17b_16e")
