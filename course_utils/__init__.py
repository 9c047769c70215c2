"""course_utils: positional encodings in numpy, computed as production libraries compute them.

One module per topic of the course:

- :mod:`course_utils.checks`: ``check_close``, ``check_true``, ``check_raises``.
- :mod:`course_utils.attention`: softmax and scaled dot-product attention.
- :mod:`course_utils.sinusoidal`: the sinusoidal table and its shift rotations.
- :mod:`course_utils.learned`: a learned absolute position table.
- :mod:`course_utils.relative`: relative positions, Shaw clipping, Transformer-XL terms, T5 buckets.
- :mod:`course_utils.rope`: rotary embeddings in both channel layouts.
- :mod:`course_utils.alibi`: ALiBi slopes and biases.
- :mod:`course_utils.scaling`: RoPE context-length scaling (PI, NTK, dynamic, YaRN, Llama-3, LongRoPE).
- :mod:`course_utils.practice`: position ids from masks, packed sequences, a KV cache.
- :mod:`course_utils.plotting`: the course's figure style and shared figure helpers.
- :mod:`course_utils.interactive`: figures a reader moves with a slider, with no kernel (05, 06,
  07, 10).
- :mod:`course_utils.explain`: the position plan of a model's config, layer by layer
  (``python -m course_utils.explain config.json``).
- :mod:`course_utils.data`: values that belong to the world, as data with their sources: released
  configs (``data/configs``) and library outputs (``data/library``).
- :mod:`course_utils.lab`: the length-generalisation lab (a tiny numpy attention model, its
  hand-written backward pass, two tasks, training and evaluation at longer lengths).
"""

from .checks import check_close, check_raises, check_true

__version__ = "0.1.0"
__all__ = ["check_close", "check_true", "check_raises", "__version__"]
