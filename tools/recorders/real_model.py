"""Recorders for the released model of chapter 13: transformers' ``LlamaForCausalLM`` and its
tokenizer, both loaded from the same GGUF file the course reads (SmolLM2-135M-Instruct, Q4_1,
fetched by ``make model``).

transformers dequantizes the file to float32 and undoes llama.cpp's query/key row order
(``modeling_gguf_pytorch_utils.py``); loading a GGUF needs the ``gguf`` package (and
``accelerate``). The model runs in float32 with eager attention (matmul, softmax, matmul), so the
records are what the numpy forward pass should reproduce up to float32 rounding.
"""

from __future__ import annotations

import functools

import numpy as np

#: Text of the tokenizer record: prose, digits, punctuation, accents, a chat-template line with
#: control tokens, runs of spaces and newlines.
TOKENIZER_TEXT = ("Rotary embeddings turn pair i by m * theta_i; at m = 8192 and theta = 1e-5 "
                  "that is 0.08192 rad.\n\n  Caf\u00e9 na\u00efve \u2014 \u00fcber 42%!\n"
                  "<|im_start|>user\nWhat is 12345 + 678?<|im_end|>\n    def f(x):  return x**2\n")
#: Prompt of the logits record.
PROMPT = ("<|im_start|>user\nIn one sentence, what does a position encoding tell a transformer?"
          "<|im_end|>\n<|im_start|>assistant\nA position encoding tells the model")
#: Shift of the prompt's position ids in the second half of the logits record.
SHIFT = 1000
#: Vocabulary ids whose logits are stored at every position (a fixed sample; the row's
#: log-sum-exp, also stored, covers the rest of the row).
SAMPLE_SEED, N_SAMPLE, TOP = 13, 64, 20
#: The loss record's tokens: the first 512 of chapter 13's text (the docstring PEPs)
#: (``course_utils.real_model.measures.corpus_text``, a file with a checked sha256).
LOSS_TOKENS = 512


def _gguf():
    from course_utils.real_model.files import require_model

    path = require_model()
    return path.parent, path.name


@functools.lru_cache(maxsize=1)
def _hf_model():
    import torch
    from transformers import LlamaForCausalLM

    folder, name = _gguf()
    model = LlamaForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                             attn_implementation="eager")
    return model.eval()


@functools.lru_cache(maxsize=1)
def _hf_tokenizer():
    from transformers import AutoTokenizer

    folder, name = _gguf()
    return AutoTokenizer.from_pretrained(folder, gguf_file=name)


def _encode(text):
    return np.array(_hf_tokenizer()(text, add_special_tokens=False).input_ids, dtype=np.int64)


def _logits(ids, position_ids=None):
    import torch

    kwargs = {} if position_ids is None else {"position_ids": torch.tensor([position_ids])}
    with torch.no_grad():
        out = _hf_model()(input_ids=torch.tensor([ids]), use_cache=False, **kwargs)
    return out.logits[0].double().numpy()


def loss_text():
    """The loss record's text: the four docstring PEPs of chapter 13 (its first LOSS_TOKENS tokens are used)."""
    from course_utils.real_model.measures import corpus_text

    return corpus_text()


def record_smollm2_tokens():
    """Token ids of a fixed text from transformers' tokenizer built from the GGUF's vocabulary."""
    return ("transformers.AutoTokenizer.from_pretrained(gguf_file=...)",
            "src/transformers/integrations/gguf/gguf_tokenizer_mapping.py",
            {"text": TOKENIZER_TEXT, "add_special_tokens": False},
            {"ids": _encode(TOKENIZER_TEXT)})


def record_smollm2_logits():
    """Logits of a fixed prompt, positions 0..T-1 and shifted by SHIFT: the top-20 of the last
    row, a fixed sample of 64 vocabulary ids at every position, and every row's log-sum-exp."""
    ids = _encode(PROMPT)
    sample = np.sort(np.random.default_rng(SAMPLE_SEED).choice(49152, N_SAMPLE, replace=False))
    outputs = {"sample_ids": sample}
    for key, positions in (("", None), ("shifted_", list(range(SHIFT, SHIFT + ids.size)))):
        logits = _logits(ids.tolist(), positions)
        top = np.argsort(-logits[-1], kind="stable")[:TOP]
        peak = logits.max(axis=-1, keepdims=True)
        outputs.update({
            f"{key}last_top_ids": top,
            f"{key}last_top_logits": logits[-1, top],
            f"{key}sample_logits": logits[:, sample],
            f"{key}logsumexp": (peak + np.log(np.exp(logits - peak).sum(-1, keepdims=True)))[:, 0],
        })
    return ("transformers.LlamaForCausalLM.from_pretrained(gguf_file=..., dtype=float32), forward",
            "src/transformers/models/llama/modeling_llama.py",
            {"prompt": PROMPT, "ids": ids, "shift": SHIFT, "sample_seed": SAMPLE_SEED,
             "attn_implementation": "eager"}, outputs)


# The same computation on another CPU or thread count sums in another order: logits move by
# about 1e-5 (|logits| < 25), the loss by less. ``tools/library_records.py`` allows this much.
record_smollm2_logits.atol = 1e-4


def record_smollm2_loss():
    """Per-token next-token loss (nats) of the first 512 tokens of chapter 13's text (the docstring PEPs)."""
    import torch

    ids = _encode(loss_text())[:LOSS_TOKENS]
    logits = torch.tensor(_logits(ids.tolist()), dtype=torch.float32)
    nll = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(ids[1:]), reduction="none")
    nll = nll.double().numpy()
    return ("transformers.LlamaForCausalLM.from_pretrained(gguf_file=..., dtype=float32), forward; "
            "torch.nn.functional.cross_entropy",
            "src/transformers/models/llama/modeling_llama.py",
            {"text": "course_utils.real_model.measures.corpus_text(), first 512 tokens", "ids": ids,
             "attn_implementation": "eager"},
            {"nll": nll, "mean_nll": nll.mean()})


record_smollm2_loss.atol = 1e-4


#: Window of the window-loss record: each query sees its last WINDOW keys, itself included.
WINDOW, WINDOW_TOKENS = 128, 512


def record_smollm2_window_loss():
    """Per-token loss of the first 512 tokens of chapter 13's text when each query sees only its
    last 128 keys: transformers' ``MistralForCausalLM`` (Llama's layers plus a sliding window,
    ``masking_utils.sliding_window_overlay``: key j is seen by query i when i - 128 < j <= i)
    with the weights of the same GGUF, copied from ``LlamaForCausalLM``."""
    import torch
    from transformers import MistralConfig, MistralForCausalLM

    from course_utils.real_model.measures import corpus_text

    llama = _hf_model()
    fields = llama.config.to_dict()
    keep = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
            "num_attention_heads", "num_key_value_heads", "hidden_act", "max_position_embeddings",
            "rms_norm_eps", "tie_word_embeddings", "head_dim", "rope_parameters")
    config = MistralConfig(**{k: fields[k] for k in keep if k in fields}, sliding_window=WINDOW)
    config._attn_implementation = "eager"
    mistral = MistralForCausalLM(config).eval()
    missing, unexpected = mistral.load_state_dict(llama.state_dict(), strict=False)
    if unexpected or any(not name.startswith("lm_head") for name in missing):
        raise RuntimeError(f"weights do not map: missing {missing}, unexpected {unexpected}")
    mistral.tie_weights()
    ids = _encode(corpus_text())[:WINDOW_TOKENS]
    with torch.no_grad():
        logits = mistral(input_ids=torch.tensor(ids[None]), use_cache=False).logits[0]
    nll = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(ids[1:]), reduction="none")
    return ("transformers.MistralForCausalLM(sliding_window=128, eager) with LlamaForCausalLM's "
            "weights from the GGUF, forward; torch.nn.functional.cross_entropy",
            "src/transformers/masking_utils.py (sliding_window_overlay)",
            {"text": "course_utils.real_model.measures.corpus_text(), first 512 tokens",
             "ids": ids, "window": WINDOW, "attn_implementation": "eager"},
            {"nll": nll.double().numpy()})


record_smollm2_window_loss.atol = 1e-4
