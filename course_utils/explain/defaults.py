"""Class defaults, looked up in the installed transformers (or in a stored record)."""

from __future__ import annotations

import dataclasses

from .values import _ALIASES, _is_nested

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
