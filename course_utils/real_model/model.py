"""SmolLM2-135M-Instruct, read from its GGUF file and run in numpy with the course's pieces.

The forward pass is Llama's (transformers ``models/llama/modeling_llama.py``): token embedding,
then per layer ``x += o(attn(rope(q(n(x))), rope(k(n(x))), v(n(x))))`` and
``x += down(silu(gate(n(x))) * up(n(x)))`` with RMSNorm ``n``, grouped-query attention (each
key/value head serves ``n_heads / n_kv_heads`` consecutive query heads, transformers
``repeat_kv``), a final RMSNorm and the output projection tied to the embedding. Everything is
float32, as transformers runs the dequantized file; the rotation angles are formed in float64 by
:func:`course_utils.rope.apply_rope`.

Weights: :func:`gguf.quants.dequantize` (llama.cpp's ``gguf-py``) turns the 4-bit Q4_1 blocks
and the 8-bit Q8_0 embedding into float32 arrays. GGUF lists a tensor's shape fastest axis first,
so the numpy array of a ``[576, 192]`` key projection is ``(192, 576)`` = (out, in), the layout
of a torch ``Linear.weight``. llama.cpp's converter reorders the query and key rows of each head
for its interleaved rotation (ggml-org/llama.cpp ``convert_hf_to_gguf.py``, ``LlamaModel.permute``:
half-layout row ``j * d/2 + i`` becomes row ``2 i + j``). The course undoes it with
:func:`course_utils.rope.permute_qk_weight_for_half_layout` (even rows, then odd, per head) and
rotates in the half layout, as transformers does after its own reverse permutation
(``modeling_gguf_pytorch_utils.py``, ``LlamaTensorProcessor._reverse_permute_weights``); the
tests check that rotating the file's rows in the interleaved layout gives the same scores.

Tokenizer: byte-level BPE from the file's ``tokenizer.ggml.tokens`` and ``tokenizer.ggml.merges``
with the ``tokenizers`` package, GPT-2's pre-tokenizer (``tokenizer.ggml.model = "gpt2"``), the
control tokens (``token_type`` 3) as special tokens.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib

import numpy as np

from .. import _validate as val
from ..rope import apply_rope, permute_qk_weight_for_half_layout, rope_inv_freq
from .files import require_model

__all__ = ["ModelConfig", "ForwardResult", "Model", "load_model", "read_config"]


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """The architecture as the GGUF metadata states it (``llama.*`` keys)."""

    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate_size: int
    rope_theta: float
    max_position_embeddings: int
    vocab_size: int
    rms_norm_eps: float
    bos_token_id: int
    eos_token_id: int

    def __post_init__(self):
        for name in ("n_layers", "d_model", "n_heads", "n_kv_heads", "intermediate_size",
                     "max_position_embeddings", "vocab_size"):
            val.positive_int(getattr(self, name), name)
        val.positive_int(self.head_dim, "head_dim", even=True)
        val.positive_float(self.rope_theta, "rope_theta", minimum=1.0)
        val.positive_float(self.rms_norm_eps, "rms_norm_eps")
        for name in ("bos_token_id", "eos_token_id"):
            if val.positive_int(getattr(self, name), name, allow_zero=True) >= self.vocab_size:
                raise ValueError(f"{name} must be a token id below vocab_size = "
                                 f"{self.vocab_size}, got {getattr(self, name)}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads must divide n_heads = {self.n_heads}, got "
                             f"{self.n_kv_heads}")

    @property
    def inv_freq(self) -> np.ndarray:
        """The trained frequencies ``rope_theta^(-2i/head_dim)``, shape (head_dim/2,)."""
        return rope_inv_freq(self.head_dim, base=self.rope_theta)


@dataclasses.dataclass
class ForwardResult:
    """What :meth:`Model.forward` returns (see there)."""

    logits: np.ndarray
    attention: dict
    qk: dict
    sink_share: np.ndarray | None


def _field(reader, key):
    field = reader.fields.get(key)
    if field is None:
        raise ValueError(f"the GGUF file has no metadata key {key!r}")
    return field.contents()


def read_config(reader) -> ModelConfig:
    """:class:`ModelConfig` from a :class:`gguf.GGUFReader`'s metadata."""
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ValueError(f"general.architecture must be 'llama', got {arch!r}")
    n_heads = int(_field(reader, "llama.attention.head_count"))
    d_model = int(_field(reader, "llama.embedding_length"))
    tokens = reader.fields["tokenizer.ggml.tokens"]
    vocab = int(_field(reader, "llama.vocab_size")) if "llama.vocab_size" in reader.fields \
        else len(tokens.data)
    return ModelConfig(
        n_layers=int(_field(reader, "llama.block_count")),
        d_model=d_model,
        n_heads=n_heads,
        n_kv_heads=int(_field(reader, "llama.attention.head_count_kv")),
        head_dim=int(_field(reader, "llama.rope.dimension_count")),
        intermediate_size=int(_field(reader, "llama.feed_forward_length")),
        rope_theta=float(_field(reader, "llama.rope.freq_base")),
        max_position_embeddings=int(_field(reader, "llama.context_length")),
        vocab_size=vocab,
        rms_norm_eps=float(_field(reader, "llama.attention.layer_norm_rms_epsilon")),
        bos_token_id=int(_field(reader, "tokenizer.ggml.bos_token_id")),
        eos_token_id=int(_field(reader, "tokenizer.ggml.eos_token_id")),
    )


def _open_gguf(path):
    """A :class:`gguf.GGUFReader` of ``path`` whose arrays are plain numpy views of the mapped file.

    The reader maps the file with ``np.memmap``; every one of the ~250 000 slices it takes while
    parsing the vocabulary would then run ``memmap``'s Python-level hooks (7 s of the 12 s a load
    took). Viewing the map as a plain array keeps the same bytes and skips them."""
    from gguf import GGUFReader

    class _PlainReader(GGUFReader):
        @property
        def data(self):
            return self._plain

        @data.setter
        def data(self, mapped):
            self._plain = mapped.view(np.ndarray)  # still backed by the map

    return _PlainReader(str(path))


def _dequantized(tensor) -> np.ndarray:
    """A GGUF tensor as float32 numpy, shape (slowest .. fastest) = reversed GGUF shape."""
    from gguf.quants import dequantize

    shape = tuple(int(n) for n in reversed(tensor.shape))
    return np.ascontiguousarray(dequantize(tensor.data, tensor.tensor_type).reshape(shape),
                                dtype=np.float32)


def build_tokenizer(reader):
    """A ``tokenizers.Tokenizer`` from the file's vocabulary and merges (byte-level BPE)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    model_type = _field(reader, "tokenizer.ggml.model")
    if model_type != "gpt2":
        raise ValueError(f"tokenizer.ggml.model must be 'gpt2' (byte-level BPE), got {model_type!r}")
    tokens = list(_field(reader, "tokenizer.ggml.tokens"))
    merges = [tuple(m.split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges")]
    types = list(_field(reader, "tokenizer.ggml.token_type"))
    tokenizer = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    control = [AddedToken(t, special=True, normalized=False)
               for t, kind in zip(tokens, types, strict=True) if int(kind) == 3]
    tokenizer.add_special_tokens(control)
    return tokenizer


def rms_norm(x, weight, eps):
    """``weight * x / sqrt(mean(x^2) + eps)`` over the last axis (Zhang & Sennrich 2019;
    transformers ``LlamaRMSNorm``), float32."""
    variance = np.mean(np.square(x), axis=-1, keepdims=True, dtype=np.float32)
    return weight * (x / np.sqrt(variance + np.float32(eps)))


def silu(x):
    """``x * sigmoid(x)``, the gate of SwiGLU (Shazeer 2020)."""
    return x / (1.0 + np.exp(-x))


def _layer_set(value, arg, n_layers):
    if value is None:
        return ()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    try:
        layers = tuple(value)
    except TypeError:
        raise TypeError(f"{arg} must be a sequence of layer indices, got {value!r:.60}") from None
    for layer in layers:
        if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) \
                or not 0 <= layer < n_layers:
            raise ValueError(f"{arg} must hold layer indices in 0..{n_layers - 1}, got {layer!r}")
    return tuple(sorted({int(layer) for layer in layers}))


def _visible_keys(start, stop, window, n_sink):
    """Keys seen by queries ``start .. stop-1`` and the additive mask (0 or -inf), (c, nk).

    Query ``t`` sees key ``j`` when ``j <= t`` (causal, in the order of the tokens) and, with a
    ``window``, ``j > t - window`` or ``j < n_sink`` (StreamingLLM's sinks)."""
    first = 0 if window is None else max(0, start - window + 1)
    keys = np.arange(first, stop)
    if n_sink and first > 0:
        keys = np.concatenate([np.arange(min(n_sink, first)), keys])
    rows = np.arange(start, stop)[:, None]
    seen = keys[None, :] <= rows
    if window is not None:
        seen &= (keys[None, :] > rows - window) | (keys[None, :] < n_sink)
    return keys, np.where(seen, np.float32(0.0), np.float32(-np.inf))


def _softmax_inplace(scores):
    """Softmax over the last axis, written over ``scores`` (float32): the stable formula of
    :func:`course_utils.attention.softmax` without its input checks, which cost a pass each
    over the largest array of the forward pass. Every row has at least one finite entry (a
    query always sees itself)."""
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return scores


#: Up to this many tokens the products run on one BLAS thread: with a few dozen rows, thread
#: start-up and hand-over cost more than they save, and far more on a busy machine (a 60-token
#: forward pass: 2 s on one thread, 16 s on two, measured with other jobs on both cores).
ONE_THREAD_MAX_TOKENS = 256


def _blas_threads(n_tokens):
    import contextlib

    if n_tokens > ONE_THREAD_MAX_TOKENS:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


class Model:
    """SmolLM2-135M-Instruct in numpy. Build it with :func:`load_model`."""

    def __init__(self, path, *, layout="half"):
        #: Channel layout of the rotation: "half" (the file's query/key rows put back in
        #: transformers' order) or "interleaved" (the file's rows as stored, llama.cpp's rotation).
        self.layout = val.choice(layout, "layout", ("half", "interleaved"))
        self.path = pathlib.Path(path)
        reader = _open_gguf(self.path)
        self.config = cfg = read_config(reader)
        self.tokenizer = build_tokenizer(reader)
        tensors = {t.name: t for t in reader.tensors}

        def weight(name):
            if name not in tensors:
                raise ValueError(f"the GGUF file has no tensor {name!r}")
            return _dequantized(tensors[name])

        self.embedding = weight("token_embd.weight")  # (vocab, d_model)
        self.output = weight("output.weight") if "output.weight" in tensors else self.embedding
        self.final_norm = weight("output_norm.weight")
        self.layers = []
        for i in range(cfg.n_layers):
            q, k = weight(f"blk.{i}.attn_q.weight"), weight(f"blk.{i}.attn_k.weight")
            if self.layout == "half":
                q = permute_qk_weight_for_half_layout(q, cfg.n_heads)
                k = permute_qk_weight_for_half_layout(k, cfg.n_kv_heads)
            v = weight(f"blk.{i}.attn_v.weight")
            self.layers.append({
                "attn_norm": weight(f"blk.{i}.attn_norm.weight"),
                # (in, out) for x @ w; q, k and v side by side: one product per layer.
                "qkv": np.ascontiguousarray(np.concatenate([q, k, v]).T),
                "o": np.ascontiguousarray(weight(f"blk.{i}.attn_output.weight").T),
                "ffn_norm": weight(f"blk.{i}.ffn_norm.weight"),
                "gate_up": np.ascontiguousarray(np.concatenate(
                    [weight(f"blk.{i}.ffn_gate.weight"), weight(f"blk.{i}.ffn_up.weight")]).T),
                "down": np.ascontiguousarray(weight(f"blk.{i}.ffn_down.weight").T),
            })

    # ---------------------------------------------------------------- tokens
    def encode(self, text) -> np.ndarray:
        """Token ids of ``text`` (int64), no BOS added (the file's ``add_bos_token`` is false)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        return np.array(self.tokenizer.encode(text, add_special_tokens=False).ids, dtype=np.int64)

    def decode(self, ids) -> str:
        """The text of token ids (special tokens kept)."""
        ids = self._check_ids(ids, allow_empty=True)
        return self.tokenizer.decode(ids.tolist(), skip_special_tokens=False)

    # ---------------------------------------------------------------- checks
    def _check_ids(self, ids, *, allow_empty=False):
        ids = val.numeric_array(ids, "ids", integer=True)
        if ids.ndim != 1 or (ids.size == 0 and not allow_empty):
            raise ValueError(f"ids must be a non-empty 1-D array of token ids, got shape {ids.shape}")
        if ids.size and (ids.min() < 0 or ids.max() >= self.config.vocab_size):
            raise ValueError(f"ids must be token ids in 0..{self.config.vocab_size - 1}, got "
                             f"values from {int(ids.min())} to {int(ids.max())}")
        return ids.astype(np.int64)

    def _check_forward(self, ids, position_ids, inv_freq, attention_factor, window, n_sink,
                       nope_layers, return_attention, return_qk, sink_keys, chunk):
        cfg = self.config
        ids = self._check_ids(ids)
        T = ids.size
        if position_ids is None:
            positions = np.arange(T, dtype=np.int64)
        else:
            positions = val.numeric_array(position_ids, "position_ids", integer=True)
            if positions.shape != (T,):
                raise ValueError(f"position_ids must have shape (len(ids),) = ({T},), got "
                                 f"{positions.shape}")
            positions = positions.astype(np.int64)
        if inv_freq is None:
            inv = cfg.inv_freq
        else:
            inv = val.numeric_array(inv_freq, "inv_freq").astype(np.float64)
            if inv.shape != (cfg.head_dim // 2,):
                raise ValueError(f"inv_freq must have shape (head_dim/2,) = ({cfg.head_dim // 2},),"
                                 f" got {inv.shape}")
        factor = val.positive_float(attention_factor, "attention_factor")
        if window is not None:
            window = val.positive_int(window, "window")
        n_sink = val.positive_int(n_sink, "n_sink", allow_zero=True)
        if n_sink and window is None:
            raise ValueError("n_sink needs a window: with window=None every key is seen anyway")
        sink_keys = val.positive_int(sink_keys, "sink_keys", allow_zero=True)
        if sink_keys >= T:
            raise ValueError(f"sink_keys must be below len(ids) = {T}, got {sink_keys}")
        chunk = val.positive_int(chunk, "chunk")
        layers = {
            "nope_layers": _layer_set(nope_layers, "nope_layers", cfg.n_layers),
            "return_attention": _layer_set(return_attention, "return_attention", cfg.n_layers),
            "return_qk": _layer_set(return_qk, "return_qk", cfg.n_layers),
        }
        return ids, positions, inv, factor, window, n_sink, layers, sink_keys, chunk

    # ---------------------------------------------------------------- forward
    def _hidden(self, ids, position_ids=None, inv_freq=None, attention_factor=1.0, window=None,
                n_sink=0, nope_layers=(), return_attention=(), return_qk=(), sink_keys=0,
                chunk=512):
        """Final hidden states (T, d_model) after the last norm, and the requested extras."""
        (ids, positions, inv, factor, window, n_sink, layers, sink_keys,
         chunk) = self._check_forward(ids, position_ids, inv_freq, attention_factor, window,
                                      n_sink, nope_layers, return_attention, return_qk,
                                      sink_keys, chunk)
        cfg = self.config
        T, H, G, d = ids.size, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        group = H // G
        scale = np.float32(1.0 / np.sqrt(d))
        x = self.embedding[ids]
        attention, qk = {}, {}
        sink_share = np.zeros((cfg.n_layers, H)) if sink_keys else None
        for i, w in enumerate(self.layers):
            h = rms_norm(x, w["attn_norm"], cfg.rms_norm_eps)
            qkv = h @ w["qkv"]
            q = qkv[:, :H * d].reshape(T, H, d).transpose(1, 0, 2)
            k = qkv[:, H * d:(H + G) * d].reshape(T, G, d).transpose(1, 0, 2)
            v = np.ascontiguousarray(qkv[:, (H + G) * d:].reshape(T, G, d).transpose(1, 0, 2))
            if i in layers["return_qk"]:
                qk[i] = (q.copy(), k.copy())
            if i not in layers["nope_layers"]:
                q = apply_rope(q, positions, layout=self.layout, inv_freq=inv)
                k = apply_rope(k, positions, layout=self.layout, inv_freq=inv)
            if factor != 1.0:  # cos and sin times the factor (transformers' attention_scaling)
                q, k = q * np.float32(factor), k * np.float32(factor)
            # Query heads grouped by the key/value head they share: (G, group, T, d).
            qg = q.reshape(G, group, T, d)
            out = np.empty((G, group, T, d), dtype=np.float32)
            keep = i in layers["return_attention"]
            if keep:
                attention[i] = np.zeros((H, T, T), dtype=np.float32)
            for start in range(0, T, chunk):
                stop = min(start + chunk, T)
                keys, bias = _visible_keys(start, stop, window, n_sink)
                c, nk = stop - start, keys.size
                # One (group * c, d) @ (d, nk) product per key/value head.
                qc = qg[:, :, start:stop].reshape(G, group * c, d)
                kc = k[:, keys] if n_sink else k[:, keys[0]:keys[-1] + 1]
                vc = v[:, keys] if n_sink else v[:, keys[0]:keys[-1] + 1]
                scores = np.matmul(qc, kc.transpose(0, 2, 1)).reshape(G, group, c, nk)
                scores *= scale
                scores += bias
                weights = _softmax_inplace(scores)
                out[:, :, start:stop] = np.matmul(weights.reshape(G, group * c, nk),
                                                  vc).reshape(G, group, c, d)
                if keep:
                    attention[i][:, start:stop][..., keys] = weights.reshape(H, c, nk)
                if sink_keys and stop > sink_keys:
                    lo = max(start, sink_keys) - start
                    share = weights[:, :, lo:, keys < sink_keys].sum(axis=-1, dtype=np.float64)
                    sink_share[i] += share.reshape(H, -1).sum(axis=-1)
            attn = out.reshape(H, T, d).transpose(1, 0, 2).reshape(T, H * d)
            x = x + attn @ w["o"]
            h = rms_norm(x, w["ffn_norm"], cfg.rms_norm_eps)
            gate_up = h @ w["gate_up"]
            n = cfg.intermediate_size
            x = x + (silu(gate_up[:, :n]) * gate_up[:, n:]) @ w["down"]
        if sink_keys:
            sink_share /= T - sink_keys
        return rms_norm(x, self.final_norm, cfg.rms_norm_eps), attention, qk, sink_share

    def forward(self, ids, *, position_ids=None, inv_freq=None, attention_factor=1.0,
                window=None, n_sink=0, nope_layers=(), return_attention=(), return_qk=(),
                sink_keys=0, chunk=512) -> ForwardResult:
        """Run the model on token ids.

        Parameters
        ----------
        ids : int array (T,)
        position_ids : int array (T,), optional
            Positions the rotation uses (default ``0 .. T-1``); shifted or gapped ids are fine.
            The causal mask follows the order of the tokens, not their position ids.
        inv_freq : array (head_dim/2,), optional
            Rotation frequencies (default the trained ``rope_theta^(-2i/d)``), e.g. from
            :func:`course_utils.scaling.rope_scaling`.
        attention_factor : float
            Multiplies cos and sin (so the scores by its square), as transformers'
            ``attention_scaling`` does.
        window : int, optional
            Each query sees only its last ``window`` keys (itself included) ...
        n_sink : int
            ... plus the first ``n_sink`` tokens (StreamingLLM's attention sinks; needs ``window``).
        nope_layers : sequence of int
            Layers whose queries and keys are not rotated.
        return_attention, return_qk : sequence of int
            Layers whose attention weights (heads, T, T), or whose queries (heads, T, d) and keys
            (kv_heads, T, d) before rotation (half layout), are returned.
        sink_keys : int
            If > 0, ``sink_share[layer, head]`` is the attention weight on the first
            ``sink_keys`` keys, averaged over queries ``sink_keys .. T-1``.
        chunk : int
            Queries per block of the attention (memory ~ heads * chunk * T floats).

        Returns
        -------
        :class:`ForwardResult` with ``logits`` (T, vocab) float32, ``attention``, ``qk`` (dicts
        keyed by layer) and ``sink_share`` ((layers, heads) float64, or None).
        """
        with _blas_threads(np.size(ids)):
            hidden, attention, qk, sink_share = self._hidden(
                ids, position_ids, inv_freq, attention_factor, window, n_sink, nope_layers,
                return_attention, return_qk, sink_keys, chunk)
            logits = hidden @ self.output.T
        return ForwardResult(logits=logits, attention=attention, qk=qk, sink_share=sink_share)

    def loss(self, ids, **forward_kwargs) -> np.ndarray:
        """Next-token negative log-likelihood per token, (T-1,) float64, in nats: entry ``t`` is
        ``-log p(ids[t+1] | ids[:t+1])``. Takes :meth:`forward`'s keyword arguments; the logits
        are formed ``chunk`` rows at a time, so long inputs need no (T, vocab) array."""
        unknown = set(forward_kwargs) - {"position_ids", "inv_freq", "attention_factor", "window",
                                         "n_sink", "nope_layers", "sink_keys", "chunk"}
        if unknown:
            raise TypeError(f"loss() got unexpected keyword argument(s) {sorted(unknown)}")
        ids = self._check_ids(ids)
        if ids.size < 2:
            raise ValueError(f"ids must hold at least 2 tokens for a next-token loss, got {ids.size}")
        with _blas_threads(ids.size):
            hidden = self._hidden(ids, **forward_kwargs)[0]
            step = int(forward_kwargs.get("chunk", 512))
            nll = np.empty(ids.size - 1)
            for start in range(0, ids.size - 1, step):
                stop = min(start + step, ids.size - 1)
                nll[start:stop] = next_token_nll(hidden[start:stop] @ self.output.T,
                                                 ids[start + 1:stop + 1])
        return nll


#: Rows of logits turned to float64 at a time by :func:`next_token_nll`: 32 rows of a 49 152-token
#: vocabulary are 12 MB, which the allocator reuses; a (512, vocab) float64 copy (200 MB) is
#: mapped afresh each time, and its page faults took most of the loss's time.
NLL_ROWS = 32


def next_token_nll(logits, targets) -> np.ndarray:
    """``-log softmax(logits[t])[targets[t]]`` per row, (n,) float64, ``logits`` (n, vocab).

    Each row's log-sum-exp is formed in float64 (``max + log(sum(exp(row - max)))``); rows are
    independent, so doing them :data:`NLL_ROWS` at a time gives the same bits as all at once."""
    out = np.empty(len(targets))
    for start in range(0, len(targets), NLL_ROWS):
        stop = min(start + NLL_ROWS, len(targets))
        block = logits[start:stop].astype(np.float64)
        top = block.max(axis=-1)
        target = block[np.arange(stop - start), targets[start:stop]]
        block -= top[:, None]
        np.exp(block, out=block)
        out[start:stop] = top + np.log(block.sum(axis=-1)) - target
    return out


@functools.lru_cache(maxsize=2)
def _load(path: str) -> Model:
    return Model(path)


def load_model(path=None) -> Model:
    """The model from ``path`` (default: the cached file ``make model`` fetched), loaded once
    per process. Raises :class:`~course_utils.real_model.files.ModelUnavailable` naming the
    command to run when the file is missing."""
    return _load(str(require_model(path).resolve()))
