"""A released LLM (SmolLM2-135M-Instruct, 4-bit GGUF) run in numpy by the course's own code.

``load_model()`` reads the file ``make model`` fetched; ``model_available()`` says cheaply
whether it is there, ``text_available()`` whether the text the chapter reads is.
:mod:`course_utils.real_model.measures` holds chapter 13's experiments.
"""

from .files import (
    GGUF_NAME,
    ModelUnavailable,
    cache_dir,
    fetch_model,
    model_available,
    model_path,
    text_available,
)
from .model import ForwardResult, Model, ModelConfig, load_model, read_config

__all__ = ["GGUF_NAME", "ModelUnavailable", "cache_dir", "fetch_model", "model_available",
           "model_path", "text_available", "ForwardResult", "Model", "ModelConfig", "load_model",
           "read_config"]
