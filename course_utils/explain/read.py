"""Reading the file: loading, the text part of a multimodal config, and labelled values."""

from __future__ import annotations

import json
import os
import pathlib

from .. import _validate as val
from . import defaults
from .defaults import _install_hint
from .values import FILE, UNKNOWN, Value

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
        tf = defaults._transformers()
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
