"""Recorders for notebook 11 (positions in modern models): what transformers' config classes and
modelling code compute for partial RoPE, NoPE layers, Llama 4's attention temperature, Gemma 3's
two bases, DeepSeek-V3's YaRN and rotary layout, GPT-OSS's YaRN and its sinks.

Models are built from the config classes' defaults or from tiny configs; nothing is downloaded.
"""

from __future__ import annotations

import importlib

import numpy as np

#: Positions at which Llama 4's query factor is recorded: both sides of the first steps
#: (m + 1 = 8192 k) and a few long-context positions.
_LLAMA4_POSITIONS = [0, 1, 8190, 8191, 8192, 16382, 16383, 65535, 131071, 10**7 - 1]


def _modeling(name):
    return importlib.import_module(f"transformers.models.{name}.modeling_{name}")


def record_partial_rotary_widths():
    """Rotated width ``2 * len(inv_freq)`` that the rotary embeddings of GPT-NeoX, Phi and
    Qwen3-Next compute from their config classes' defaults (``compute_default_rope_parameters``)."""
    import transformers

    models = {"gpt_neox": ("GPTNeoXConfig", "GPTNeoXRotaryEmbedding"),
              "phi": ("PhiConfig", "PhiRotaryEmbedding"),
              "qwen3_next": ("Qwen3NextConfig", "Qwen3NextRotaryEmbedding")}
    widths, heads = [], []
    for name, (config_class, rotary_class) in models.items():
        config = getattr(transformers, config_class)()
        rotary = getattr(_modeling(name), rotary_class)(config)
        widths.append(2 * rotary.inv_freq.numel())
        heads.append(getattr(config, "head_dim", None)
                     or config.hidden_size // config.num_attention_heads)
    return ("transformers.models.*.modeling_*.{GPTNeoX,Phi,Qwen3Next}RotaryEmbedding",
            "src/transformers/models/{gpt_neox,phi,qwen3_next}/modeling_*.py",
            {"config_classes": [c for c, _ in models.values()]},
            {"rotated_width": np.array(widths), "head_dim": np.array(heads)})


def record_partial_rope_gpt_neox():
    """GPT-NeoX-20B's rotation (class default: 96-channel heads, 24 rotated) of five fixed rows."""
    import torch
    from transformers import GPTNeoXConfig

    module = _modeling("gpt_neox")
    config = GPTNeoXConfig()
    rotary = module.GPTNeoXRotaryEmbedding(config).double()
    x = np.random.default_rng(11).normal(size=(5, 96)).round(6)
    positions = [0, 1, 7, 100, 2047]
    t = torch.tensor(x)[None, None]
    with torch.no_grad():
        cos, sin = rotary(t, torch.tensor([positions]))
        out, _ = module.apply_rotary_pos_emb(t, t, cos, sin)
    return ("transformers.models.gpt_neox.modeling_gpt_neox.apply_rotary_pos_emb",
            "src/transformers/models/gpt_neox/modeling_gpt_neox.py",
            {"config": "GPTNeoXConfig()", "x": x, "positions": positions},
            {"rotated": out[0, 0].numpy()})


def record_nope_layers_llama4_smollm3():
    """``no_rope_layers`` and ``layer_types`` of Llama4TextConfig (48 layers) and SmolLM3Config
    (36 layers; and with use_sliding_window=True, sliding_window=4096)."""
    from transformers import Llama4TextConfig, SmolLM3Config

    llama4 = Llama4TextConfig(num_hidden_layers=48)
    smol = SmolLM3Config(num_hidden_layers=36)
    smol_w = SmolLM3Config(num_hidden_layers=36, use_sliding_window=True, sliding_window=4096)
    return ("transformers.models.*.configuration_*.{Llama4Text,SmolLM3}Config",
            "src/transformers/models/{llama4,smollm3}/configuration_*.py",
            {"llama4": {"num_hidden_layers": 48},
             "smollm3": {"num_hidden_layers": 36},
             "smollm3_windowed": {"num_hidden_layers": 36, "use_sliding_window": True,
                                  "sliding_window": 4096}},
            {"llama4_no_rope_layers": np.array(llama4.no_rope_layers),
             "llama4_full_attention": np.array([t == "full_attention" for t in llama4.layer_types]),
             "smollm3_no_rope_layers": np.array(smol.no_rope_layers),
             "smollm3_sliding": np.array([t == "sliding_attention" for t in smol.layer_types]),
             "smollm3_windowed_sliding": np.array(
                 [t == "sliding_attention" for t in smol_w.layer_types])})


class _SeenTokens:
    """A stand-in cache that reports ``seen`` earlier tokens and stores nothing."""

    def __init__(self, seen):
        self.seen = seen

    def get_seq_length(self, layer_idx=0):
        return self.seen

    def update(self, key, value, layer_idx, *args, **kwargs):
        return key, value


def record_llama4_attn_temperature():
    """The factor Llama4TextAttention (a NoPE layer, class defaults floor_scale 8192 and
    attn_scale 0.1) multiplies each query by, read off the query it passes to attention, for one
    new token at each position m (m earlier tokens in the cache)."""
    import torch
    from transformers import Llama4TextConfig

    module = _modeling("llama4")
    config = Llama4TextConfig(hidden_size=8, num_attention_heads=1, num_key_value_heads=1,
                              head_dim=8, num_hidden_layers=4, intermediate_size=8,
                              intermediate_size_mlp=8, vocab_size=8, attn_implementation="eager")
    layer = module.Llama4TextAttention(config, layer_idx=3).double().eval()
    assert not layer.use_rope and layer.attn_temperature_tuning
    captured = []

    def capture(mod, query, key, value, attention_mask, **kwargs):
        captured.append(query.detach().clone())
        return torch.zeros_like(query).transpose(1, 2), None

    x = torch.ones(1, 1, 8, dtype=torch.float64)
    original = module.eager_attention_forward
    module.eager_attention_forward = capture
    try:
        scales = []
        with torch.no_grad():
            plain = layer.q_proj(x).view(1, 1, 1, 8).transpose(1, 2)
            for m in _LLAMA4_POSITIONS:
                layer(x, position_embeddings=None, attention_mask=None,
                      past_key_values=_SeenTokens(m))
                scales.append(float((captured[-1] / plain).mean()))
    finally:
        module.eager_attention_forward = original
    return ("transformers.models.llama4.modeling_llama4.Llama4TextAttention",
            "src/transformers/models/llama4/modeling_llama4.py",
            {"layer_idx": 3, "floor_scale": config.floor_scale, "attn_scale": config.attn_scale,
             "positions": _LLAMA4_POSITIONS},
            {"positions": np.array(_LLAMA4_POSITIONS), "query_factor": np.array(scales)})


def record_gemma3_two_bases():
    """Gemma3RotaryEmbedding's frequencies per layer type for the Gemma 3 report's settings:
    local base 10 000, global base 1 000 000 with linear scaling by 8, head_dim 256."""
    from transformers import Gemma3TextConfig

    module = _modeling("gemma3")
    config = Gemma3TextConfig(head_dim=256, rope_theta=1e6, rope_local_base_freq=1e4,
                              sliding_window=1024,
                              rope_scaling={"rope_type": "linear", "factor": 8.0})
    rotary = module.Gemma3RotaryEmbedding(config)
    return ("transformers.models.gemma3.{Gemma3TextConfig,Gemma3RotaryEmbedding}",
            "src/transformers/models/gemma3/{configuration,modeling}_gemma3.py",
            {"head_dim": 256, "rope_theta": 1e6, "rope_local_base_freq": 1e4,
             "sliding_window": 1024, "rope_scaling": {"rope_type": "linear", "factor": 8.0}},
            {"sliding_inv_freq": rotary.sliding_attention_inv_freq.double().numpy(),
             "full_inv_freq": rotary.full_attention_inv_freq.double().numpy(),
             "full_attention": np.array([t == "full_attention" for t in config.layer_types])})


#: DeepSeek-V3's rope settings as its config.json on the hub writes them (``rope_scaling``).
_DEEPSEEK_V3_ROPE = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                     "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                     "original_max_position_embeddings": 4096}


def _deepseek_config(rope, qk_rope_head_dim=64, qk_nope_head_dim=128, interleave=True):
    from transformers import DeepseekV3Config

    return DeepseekV3Config(hidden_size=16, num_attention_heads=2, num_key_value_heads=2,
                            q_lora_rank=None, kv_lora_rank=8, qk_nope_head_dim=qk_nope_head_dim,
                            qk_rope_head_dim=qk_rope_head_dim, v_head_dim=8, num_hidden_layers=1,
                            intermediate_size=8, moe_intermediate_size=8, vocab_size=16,
                            max_position_embeddings=163840, rope_interleave=interleave,
                            rope_parameters=dict(rope), attn_implementation="eager")


def record_deepseek_v3_yarn():
    """DeepSeek-V3's YaRN as transformers runs it: the rotary part's frequencies and cos/sin factor
    (DeepseekV3RotaryEmbedding) and the softmax scale (DeepseekV3Attention.scaling), for the
    rope settings of DeepSeek-V3's config.json and its 128 + 64 query-key channels."""
    module = _modeling("deepseek_v3")
    config = _deepseek_config(_DEEPSEEK_V3_ROPE)
    rotary = module.DeepseekV3RotaryEmbedding(config)
    layer = module.DeepseekV3Attention(config, 0)
    return ("transformers.models.deepseek_v3.modeling_deepseek_v3.DeepseekV3RotaryEmbedding",
            "src/transformers/models/deepseek_v3/modeling_deepseek_v3.py",
            {"rope_parameters": _DEEPSEEK_V3_ROPE, "qk_rope_head_dim": 64,
             "qk_nope_head_dim": 128},
            {"inv_freq": rotary.inv_freq.double().numpy(),
             "attention_factor": float(rotary.attention_scaling),
             "softmax_scale": float(layer.scaling)})


def record_deepseek_rope_interleave():
    """apply_rotary_pos_emb_interleave on a 4-channel rotary part (base 10 000) at positions
    40..45: the rotated query and key as transformers returns them."""
    import torch

    module = _modeling("deepseek_v3")
    config = _deepseek_config({"rope_type": "default", "rope_theta": 10000.0},
                              qk_rope_head_dim=4, qk_nope_head_dim=8)
    rotary = module.DeepseekV3RotaryEmbedding(config).double()
    rng = np.random.default_rng(12)
    q, k = rng.normal(size=(2, 6, 4)).round(6)
    positions = list(range(40, 46))
    with torch.no_grad():
        cos, sin = rotary(torch.tensor(q)[None], torch.tensor([positions]))
        q_out, k_out = module.apply_rotary_pos_emb_interleave(
            torch.tensor(q)[None, None], torch.tensor(k)[None, None], cos, sin)
    return ("transformers.models.deepseek_v3.modeling_deepseek_v3."
            "apply_rotary_pos_emb_interleave",
            "src/transformers/models/deepseek_v3/modeling_deepseek_v3.py",
            {"q": q, "k": k, "positions": positions, "rope_theta": 10000.0},
            {"q_rotated": q_out[0, 0].numpy(), "k_rotated": k_out[0, 0].numpy()})


def record_gpt_oss_yarn():
    """GPT-OSS's YaRN frequencies and cos/sin factor from the GptOssConfig defaults
    (head_dim 64, base 150 000, factor 32, beta 32/1, truncate False, from 4096)."""
    from transformers import GptOssConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config = GptOssConfig()
    inv, factor = ROPE_INIT_FUNCTIONS["yarn"](config, "cpu")
    params = {k: config.rope_parameters[k] for k in sorted(config.rope_parameters)}
    return ("transformers.modeling_rope_utils._compute_yarn_parameters",
            "src/transformers/modeling_rope_utils.py",
            {"config": "GptOssConfig()", "head_dim": config.head_dim, **params},
            {"inv_freq": inv.double().numpy(), "attention_factor": float(factor)})


def record_gpt_oss_sinks():
    """GPT-OSS's eager_attention_forward with two heads' sink logits, 7 tokens, a causal
    4-token sliding window, on fixed queries, keys and values."""
    import torch

    module = _modeling("gpt_oss")
    heads, n, d, window = 2, 7, 8, 4
    rng = np.random.default_rng(13)
    q, k, v = rng.normal(size=(3, heads, n, d)).round(6)
    sinks = [1.5, -0.5]

    class Holder(torch.nn.Module):
        num_key_value_groups = 1

    holder = Holder().eval()
    holder.sinks = torch.nn.Parameter(torch.tensor(sinks, dtype=torch.float64))
    distance = np.arange(n)[:, None] - np.arange(n)[None, :]
    allowed = (distance >= 0) & (distance < window)
    mask = torch.tensor(np.where(allowed, 0.0, -np.inf))[None, None]
    with torch.no_grad():
        out, weights = module.eager_attention_forward(
            holder, torch.tensor(q)[None], torch.tensor(k)[None], torch.tensor(v)[None], mask,
            scaling=d ** -0.5)
    return ("transformers.models.gpt_oss.modeling_gpt_oss.eager_attention_forward",
            "src/transformers/models/gpt_oss/modeling_gpt_oss.py",
            {"q": q, "k": k, "v": v, "sinks": sinks, "window": window, "scaling": d ** -0.5},
            {"output": out[0].numpy().transpose(1, 0, 2), "weights": weights[0].numpy()})
