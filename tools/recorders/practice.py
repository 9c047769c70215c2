"""Recorders for positions in practice (notebook 08): position ids, caches, packing, and the
frequencies of dynamic RoPE as transformers updates them while a sequence grows."""

from __future__ import annotations

#: Left-padded (and one unpadded) attention masks of notebook 08, 1 = real token.
MASK_8 = [[0, 0, 0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0, 1, 1]]
MASK_12 = [[0] * 7 + [1] * 5, [1] * 12]


def record_position_ids_generation():
    """Position ids that `generate` derives from left-padded attention masks."""
    import torch
    from transformers.generation.utils import GenerationMixin

    outputs = {}
    for key, mask in (("mask_8", MASK_8), ("mask_12", MASK_12)):
        mask_t = torch.tensor(mask)
        ids = GenerationMixin._prepare_position_ids_for_generation(
            None, torch.zeros_like(mask_t), {"attention_mask": mask_t})
        outputs[f"position_ids_{key[5:]}"] = ids.numpy()
    return ("transformers.generation.utils.GenerationMixin._prepare_position_ids_for_generation",
            "src/transformers/generation/utils.py", {"mask_8": MASK_8, "mask_12": MASK_12},
            outputs)


def record_llama_cache_positions():
    """Position ids a tiny LlamaModel gives a 5-token prompt and 7 cached one-token steps
    when the caller passes none (read from the ids its rotary embedding receives)."""
    import torch
    from transformers import DynamicCache, LlamaConfig, LlamaModel

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=64)
    model = LlamaModel(config).eval()
    seen = []
    model.rotary_emb.register_forward_hook(
        lambda module, args, kwargs, out: seen.append(kwargs["position_ids"].clone()),
        with_kwargs=True)
    cache = DynamicCache(config=config)
    tokens = torch.arange(12).remainder(32)[None]
    with torch.no_grad():
        model(input_ids=tokens[:, :5], past_key_values=cache, use_cache=True)
        lengths = [cache.get_seq_length()]
        for t in range(5, 12):
            model(input_ids=tokens[:, t:t + 1], past_key_values=cache, use_cache=True)
            lengths.append(cache.get_seq_length())
    return ("transformers.models.llama.modeling_llama.LlamaModel",
            "src/transformers/models/llama/modeling_llama.py",
            {"prompt_length": 5, "total_length": 12},
            {"prefill_position_ids": seen[0][0].numpy(),
             "step_position_ids": torch.cat([s[0] for s in seen[1:]]).numpy(),
             "cache_lengths": lengths})


def record_fa_packed_boundaries():
    """Document boundaries the flash-attention path reads from packed position ids."""
    import torch
    from transformers.modeling_flash_attention_utils import prepare_fa_kwargs_from_position_ids

    restarting = [0, 1, 2, 3, 0, 1, 2, 0, 1, 2, 3, 4]
    running = list(range(12))
    outputs = {}
    for key, ids in (("restarting", restarting), ("running", running)):
        (cu_q, _), _ = prepare_fa_kwargs_from_position_ids(torch.tensor([ids]))
        outputs[f"cu_seq_lens_{key}"] = cu_q.numpy()
    return ("transformers.modeling_flash_attention_utils.prepare_fa_kwargs_from_position_ids",
            "src/transformers/modeling_flash_attention_utils.py",
            {"restarting": restarting, "running": running}, outputs)


def record_roberta_position_ids_left_padded():
    """RoBERTa's position ids (fairseq offset, padding_idx 1) for a left-padded row and for
    a full row of 512 tokens."""
    import torch
    from transformers.models.roberta.modeling_roberta import RobertaEmbeddings

    left = [[1, 1, 1, 7, 7, 7]]
    make = RobertaEmbeddings.create_position_ids_from_input_ids
    return ("transformers.models.roberta.modeling_roberta.RobertaEmbeddings"
            ".create_position_ids_from_input_ids",
            "src/transformers/models/roberta/modeling_roberta.py",
            {"left_padded": left, "full_row": "512 tokens of id 7", "padding_idx": 1},
            {"left_padded": make(torch.tensor(left), 1).numpy(),
             "full_row": make(torch.full((1, 512), 7), 1).numpy()})


def record_rope_longrope_phi3_attention_factor():
    """LongRoPE's attention factor for Phi-3-mini-128k's lengths (4096 -> 131072, d = 96)."""
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    params = {"rope_type": "longrope", "rope_theta": 1e4, "short_factor": [1.0] * 48,
              "long_factor": [1.0] * 48, "factor": 32.0,
              "original_max_position_embeddings": 4096}
    config = LlamaConfig(hidden_size=192, num_attention_heads=2, head_dim=96,
                         max_position_embeddings=131072, rope_parameters=params)
    _, factor = ROPE_INIT_FUNCTIONS["longrope"](config, "cpu", seq_len=131072)
    inputs = {"head_dim": 96, "max_position_embeddings": 131072, **params}
    inputs["short_factor"] = inputs["long_factor"] = "48 ones"
    return ("transformers.modeling_rope_utils._compute_longrope_parameters",
            "src/transformers/modeling_rope_utils.py", inputs,
            {"attention_factor": float(factor)})


def _rotary(head_dim, max_position, rope_parameters):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = LlamaConfig(hidden_size=head_dim * 2, num_attention_heads=2, head_dim=head_dim,
                         max_position_embeddings=max_position,
                         rope_parameters={"rope_theta": 1e4, **rope_parameters})
    return LlamaRotaryEmbedding(config)


def _frequencies_while_growing(rotary, head_dim, steps):
    """inv_freq after the rotary embedding's forward pass at each length 1 .. steps, as
    `dynamic_rope_update` leaves it when a sequence grows one token per step."""
    import torch

    rows = []
    x = torch.zeros(1, 1, head_dim)
    for t in range(1, steps + 1):
        rotary(x, torch.tensor([[t - 1]]))  # the new token's id; max + 1 = t
        rows.append(rotary.inv_freq.double().clone())
    return torch.stack(rows).numpy()


def record_rope_dynamic_generation():
    """Dynamic NTK (d = 64, L = 32, factor 2): inv_freq at each length 1 .. 96 of generation."""
    params = {"rope_type": "dynamic", "factor": 2.0}
    rotary = _rotary(64, 32, params)
    return ("transformers.modeling_rope_utils.dynamic_rope_update",
            "src/transformers/modeling_rope_utils.py",
            {"head_dim": 64, "max_position_embeddings": 32, "steps": 96, **params},
            {"inv_freq": _frequencies_while_growing(rotary, 64, 96)})


def record_rope_longrope_generation():
    """LongRoPE (d = 64, L = 32, short factors 1, long factors 2^(2i/(d-2))): inv_freq at
    each length 1 .. 96 of generation."""
    long_factor = [2.0 ** (2 * i / 62) for i in range(32)]
    params = {"rope_type": "longrope", "short_factor": [1.0] * 32, "long_factor": long_factor,
              "original_max_position_embeddings": 32}
    rotary = _rotary(64, 64, params)
    inputs = {"head_dim": 64, "max_position_embeddings": 64, "steps": 96, **params}
    inputs["short_factor"], inputs["long_factor"] = "32 ones", "2 ** (2 i / 62), i = 0..31"
    return ("transformers.modeling_rope_utils.dynamic_rope_update",
            "src/transformers/modeling_rope_utils.py", inputs,
            {"inv_freq": _frequencies_while_growing(rotary, 64, 96)})


def record_rope_dynamic_batch():
    """Dynamic NTK (d = 8, L = 8, factor 2): inv_freq after one forward pass with a batch's
    position ids (a 5-token prompt left-padded to 12, and a 12-token prompt), and after one
    with the short row's ids alone."""
    import torch

    short = [0] * 7 + [0, 1, 2, 3, 4]
    batch = [short, list(range(12))]
    outputs = {}
    for key, ids in (("batch", batch), ("short_row", [short])):
        rotary = _rotary(8, 8, {"rope_type": "dynamic", "factor": 2.0})
        rotary(torch.zeros(1, 1, 8), torch.tensor(ids))
        outputs[f"inv_freq_{key}"] = rotary.inv_freq.double().numpy()
    return ("transformers.modeling_rope_utils.dynamic_rope_update",
            "src/transformers/modeling_rope_utils.py",
            {"head_dim": 8, "max_position_embeddings": 8, "rope_type": "dynamic",
             "factor": 2.0, "position_ids_batch": batch}, outputs)
