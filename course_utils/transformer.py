"""A small pre-LN encoder-decoder Transformer, a seq2seq.Translator as Seq2Seq is. Introduced in notebook 09, which
reads it top to bottom. Masks are True where attending is allowed; H is the model width, h heads of Dh = H / h each.
The decoder's state is its cache of earlier target positions' keys and values per layer, so a `step` costs one
position. Choosing between the two architectures is course_utils.zoo's (build_model).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from course_utils.attention import AttentionOutput
from course_utils.decoder import DecoderOutput, StepOutput
from course_utils.runtime import eval_mode
from course_utils.seq2seq import ModelConfig, Seq2SeqOutput, teacher_forced_input

__all__ = ["TransformerConfig", "scaled_dot_attention", "causal_mask", "MultiHeadAttention", "sinusoidal_positions",
           "TransformerSeq2Seq", "plot_heads"]


@dataclass
class TransformerConfig:
    """Everything needed to rebuild a TransformerSeq2Seq (checkpoints store it as a dict). Introduced in notebook 09."""
    src_vocab_size: int | None = None  # None in a recipe's template, filled from the vocabularies
    tgt_vocab_size: int | None = None
    architecture: str = "transformer"  # what a checkpoint's config names (course_utils.zoo)
    hidden_size: int = 256  # H (d_model): embeddings, attention and the residual stream
    heads: int = 4  # h; each head works in Dh = H / h dimensions
    layers: int = 2  # encoder layers, and as many decoder layers
    ff_size: int = 512  # the feed-forward block's inner width
    dropout: float = 0.1  # on embeddings, attention outputs and the feed-forward block
    positions: str = "sinusoidal"  # "sinusoidal", or "none" (notebook 09: a model blind to word order)

    def __post_init__(self):
        if self.architecture != "transformer":
            raise ValueError(f"a TransformerConfig has architecture 'transformer', got {self.architecture!r}")
        for name in ("hidden_size", "heads", "layers", "ff_size"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive int, got {getattr(self, name)!r}")
        if self.hidden_size % self.heads:
            raise ValueError(f"hidden_size {self.hidden_size} must be a multiple of heads {self.heads}: each head "
                             "gets H / h dimensions")
        if self.positions not in ("sinusoidal", "none"):
            raise ValueError(f"positions must be 'sinusoidal' or 'none', got {self.positions!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout}")

    attention = property(lambda self: "transformer")  # the name the command line and the tables show

    check_vocabularies = ModelConfig.check_vocabularies


def scaled_dot_attention(query: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None = None) -> AttentionOutput:
    """softmax(q k^T / sqrt(Dh)) v: query (..., T, Dh), keys (..., S, Dh), values (..., S, Dv), mask broadcastable
    to (..., T, S) -> AttentionOutput(context (..., T, Dv), weights (..., T, S)). Introduced in notebook 09."""
    scores = query @ keys.transpose(-2, -1) / math.sqrt(query.shape[-1])  # (..., T, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-1)  # (..., T, S)
    return AttentionOutput(weights @ values, weights)  # (..., T, Dv)


def causal_mask(queries: int, keys: int, device: torch.device | None = None) -> Tensor:
    """(T, T0 + T) bool: each of the T newest positions sees itself and every earlier one. Introduced in notebook 09."""
    first = keys - queries  # absolute position of the first query (T0 positions are already cached)
    return torch.arange(keys, device=device) <= first + torch.arange(queries, device=device).unsqueeze(1)


class MultiHeadAttention(nn.Module):
    """h scaled dot attentions over learned projections, concatenated and projected back (Vaswani et al., 2017);
    torch.nn.MultiheadAttention's parameters, in four Linear layers. Introduced in notebook 09."""

    def __init__(self, hidden_size: int, heads: int):
        super().__init__()
        self.heads, self.head_size = heads, hidden_size // heads
        self.query, self.key, self.value, self.out = (nn.Linear(hidden_size, hidden_size) for _ in range(4))

    def split_heads(self, x: Tensor) -> Tensor:
        """(B, L, H) -> (B, h, L, Dh): view the last axis as h x Dh, then move heads before positions."""
        batch, length, _ = x.shape
        return x.view(batch, length, self.heads, self.head_size).transpose(1, 2)  # (B, h, L, Dh)

    @staticmethod
    def merge_heads(x: Tensor) -> Tensor:
        """(B, h, L, Dh) -> (B, L, H): the inverse of split_heads."""
        batch, heads, length, head_size = x.shape
        return x.transpose(1, 2).reshape(batch, length, heads * head_size)  # (B, L, H)

    def project_kv(self, keys_values: Tensor) -> tuple[Tensor, Tensor]:
        """(B, S, H) -> keys and values split into heads, (B, h, S, Dh) each: done once per source sentence."""
        return self.split_heads(self.key(keys_values)), self.split_heads(self.value(keys_values))

    def forward(self, query: Tensor, keys_values: Tensor | tuple[Tensor, Tensor],
                mask: Tensor | None = None) -> AttentionOutput:
        """query (B, T, H), keys_values (B, S, H) or project_kv's pair, mask broadcastable to (B, T, S) ->
        AttentionOutput(context (B, T, H), weights (B, h, T, S))."""
        keys, values = self.project_kv(keys_values) if isinstance(keys_values, Tensor) else keys_values
        if mask is not None:
            mask = mask.unsqueeze(-3)  # (B, 1, T, S): the same mask for every head
        context, weights = scaled_dot_attention(self.split_heads(self.query(query)), keys, values, mask)
        return AttentionOutput(self.out(self.merge_heads(context)), weights)  # (B, T, H), (B, h, T, S)


def sinusoidal_positions(length: int, size: int, device: torch.device | None = None) -> Tensor:
    """(L, H): sin(p / 10000^(2i/H)) in even columns, cos in odd ones (Vaswani et al.). Introduced in notebook 09."""
    position = torch.arange(length, device=device, dtype=torch.float32).unsqueeze(1)  # (L, 1)
    rate = torch.exp(torch.arange(0, size, 2, device=device) * (-math.log(10000.0) / size))  # (H/2,)
    table = torch.zeros(length, size, device=device)
    table[:, 0::2], table[:, 1::2] = torch.sin(position * rate), torch.cos(position * rate)[:, :size // 2]
    return table  # (L, H)


def _feed_forward(config: TransformerConfig) -> nn.Sequential:
    return nn.Sequential(nn.Linear(config.hidden_size, config.ff_size), nn.ReLU(), nn.Dropout(config.dropout),
                         nn.Linear(config.ff_size, config.hidden_size))


class _EncoderLayer(nn.Module):
    """Pre-LN: x + SelfAttention(LN(x)), then x + FF(LN(x)). forward(x (B, S, H), mask (B, S)) -> (B, S, H)."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(config.hidden_size), nn.LayerNorm(config.hidden_size)
        self.attention = MultiHeadAttention(config.hidden_size, config.heads)
        self.feed_forward, self.dropout = _feed_forward(config), nn.Dropout(config.dropout)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        normed = self.norm1(x)
        x = x + self.dropout(self.attention(normed, normed, mask.unsqueeze(1)).context)  # (B, S, H)
        return x + self.dropout(self.feed_forward(self.norm2(x)))  # (B, S, H)


class _DecoderLayer(nn.Module):
    """Pre-LN: causal self-attention over the cache and the new positions, cross-attention, feed-forward.
    forward(x (B, T, H), cache (k, v) (B, h, T0, Dh), cross (k, v) (B, h, S, Dh), src_mask (B, S)) ->
    (x (B, T, H), new cache (B, h, T0 + T, Dh) each, cross weights (B, h, T, S))."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(config.hidden_size) for _ in range(3))
        self.self_attention = MultiHeadAttention(config.hidden_size, config.heads)
        self.cross_attention = MultiHeadAttention(config.hidden_size, config.heads)
        self.feed_forward, self.dropout = _feed_forward(config), nn.Dropout(config.dropout)

    def forward(self, x: Tensor, cache: tuple[Tensor, Tensor], cross: tuple[Tensor, Tensor],
                src_mask: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor], Tensor]:
        normed = self.norm1(x)
        new_keys, new_values = self.self_attention.project_kv(normed)  # (B, h, T, Dh) each
        keys, values = torch.cat([cache[0], new_keys], dim=2), torch.cat([cache[1], new_values], dim=2)  # (B,h,T0+T,Dh)
        mask = causal_mask(x.shape[1], keys.shape[2], x.device)  # (T, T0 + T)
        x = x + self.dropout(self.self_attention(normed, (keys, values), mask.unsqueeze(0)).context)  # (B, T, H)
        crossed = self.cross_attention(self.norm2(x), cross, src_mask.unsqueeze(1))  # (B, T, H), (B, h, T, S)
        x = x + self.dropout(crossed.context)
        return x + self.dropout(self.feed_forward(self.norm3(x))), (keys, values), crossed.weights


class _TransformerMemory(NamedTuple):
    """What the decoder reads of one source batch, prepared once (the seq2seq Memory's role)."""
    keys: Tensor  # (B, S, H) the encoder's output
    mask: Tensor  # (B, S) bool, True on real source tokens
    cross: tuple[tuple[Tensor, Tensor], ...]  # per decoder layer: its cross-attention keys, values (B, h, S, Dh)

    def index_select(self, index: Tensor) -> _TransformerMemory:  # index (N,) long: pick or repeat batch rows
        pick = lambda t: t.index_select(0, index)  # noqa: E731
        return _TransformerMemory(pick(self.keys), pick(self.mask), tuple((pick(k), pick(v)) for k, v in self.cross))


class _TransformerState(NamedTuple):
    """The decoder's cache: per layer, the self-attention keys and values of the T0 target positions so far."""
    cache: tuple[tuple[Tensor, Tensor], ...]  # (B, h, T0, Dh) each; T0 = 0 before the first step

    @property
    def position(self) -> int:
        return self.cache[0][0].shape[2]  # T0, the number of target positions already decoded

    def index_select(self, index: Tensor) -> _TransformerState:  # index (N,) long: pick or repeat batch rows
        return _TransformerState(tuple((k.index_select(0, index), v.index_select(0, index)) for k, v in self.cache))


class _Embed(nn.Module):
    """Token embedding * sqrt(H) + positions (from position `start`), then dropout: (B, L) -> (B, L, H)."""

    def __init__(self, vocab_size: int, config: TransformerConfig):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, config.hidden_size)
        nn.init.normal_(self.embedding.weight, std=config.hidden_size ** -0.5)
        self.positions, self.dropout = config.positions == "sinusoidal", nn.Dropout(config.dropout)

    def forward(self, ids: Tensor, start: int = 0) -> Tensor:
        size = self.embedding.embedding_dim
        x = self.embedding(ids) * math.sqrt(size)  # (B, L, H)
        if self.positions:
            x = x + sinusoidal_positions(start + ids.shape[1], size, ids.device)[start:]  # (B, L, H)
        return self.dropout(x)


class _TransformerDecoder(nn.Module):
    """Embedding + positions, `layers` _DecoderLayers, a final LayerNorm, an output layer tied to the embedding;
    the GRU decoders' interface. All T positions run at once, so teacher forcing is 1.0 or an error."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config, self.output_size = config, config.tgt_vocab_size
        self.embed = _Embed(config.tgt_vocab_size, config)
        self.layers = nn.ModuleList(_DecoderLayer(config) for _ in range(config.layers))
        self.norm = nn.LayerNorm(config.hidden_size)
        self.out = nn.Linear(config.hidden_size, config.tgt_vocab_size)
        self.out.weight = self.embed.embedding.weight  # tied: one (V, H) matrix reads and writes English words

    def check_source_length(self, source_length: int) -> None:
        """Any length: sinusoidal positions have no table to run out of."""

    def prepare_memory(self, keys: Tensor, mask: Tensor) -> _TransformerMemory:
        """keys (B, S, H), mask (B, S) -> _TransformerMemory with every layer's cross keys and values computed once."""
        return _TransformerMemory(keys, mask, tuple(layer.cross_attention.project_kv(keys) for layer in self.layers))

    def init_state(self, encoder_final: Tensor) -> _TransformerState:
        """The encoder's output (B, S, H) -> an empty cache, (B, h, 0, Dh) keys and values per layer."""
        empty = encoder_final.new_zeros(encoder_final.shape[0], self.config.heads, 0,
                                        self.config.hidden_size // self.config.heads)
        return _TransformerState(tuple((empty, empty) for _ in self.layers))

    def run(self, tgt_in: Tensor, state: _TransformerState,
            memory: _TransformerMemory) -> tuple[Tensor, _TransformerState, Tensor]:
        """tgt_in (B, T) -> (log_probs (B, T, V), state, cross weights (layers, B, h, T, S))."""
        x = self.embed(tgt_in, start=state.position)  # (B, T, H)
        caches, weights = [], []
        for layer, cache, cross in zip(self.layers, state.cache, memory.cross):
            x, cache, cross_weights = layer(x, cache, cross, memory.mask)  # (B, T, H), ..., (B, h, T, S)
            caches.append(cache)
            weights.append(cross_weights)
        log_probs = F.log_softmax(self.out(self.norm(x)), dim=-1)  # (B, T, V)
        return log_probs, _TransformerState(tuple(caches)), torch.stack(weights)  # weights (layers, B, h, T, S)

    def forward(self, tgt_in: Tensor, state: _TransformerState, memory: _TransformerMemory,
                teacher_forcing_ratio: float = 1.0) -> DecoderOutput:
        if teacher_forcing_ratio != 1.0:
            raise ValueError("a Transformer decoder reads the gold prefix at every position (teacher forcing 1.0); got "
                             f"teacher_forcing_ratio={teacher_forcing_ratio}: set it to 1.0")
        log_probs, state, weights = self.run(tgt_in, state, memory)  # (B, T, V), ..., (layers, B, h, T, S)
        return DecoderOutput(log_probs, weights[-1].mean(dim=1), state)  # weights (B, T, S)

    def step(self, prev_tokens: Tensor, state: _TransformerState, memory: _TransformerMemory,
             weights: Tensor | None = None) -> StepOutput:
        if weights is not None:
            raise ValueError("a Transformer attends with h heads in every layer, not one (B, S) row: replace the "
                             "weights of a Bahdanau or Luong decoder")
        log_probs, state, weights = self.run(prev_tokens.unsqueeze(1), state, memory)  # (B, 1, V)
        return StepOutput(log_probs.squeeze(1), state, weights[-1, :, :, 0].mean(dim=1))  # (B, V), (B, S)


class TransformerSeq2Seq(nn.Module):
    """Encoder + decoder, a seq2seq.Translator as Seq2Seq is; forward's attention (B, T, S) is the last layer's
    cross-attention averaged over heads, with teacher forcing 1.0 only. Introduced in notebook 09."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        if config.src_vocab_size is None or config.tgt_vocab_size is None:
            raise ValueError("this TransformerConfig has no vocabulary sizes (a recipe's template): build the model "
                             "from recipe.model_config(data.src_vocab, data.tgt_vocab)")
        self.config = config
        self.embed = _Embed(config.src_vocab_size, config)
        self.encoder_layers = nn.ModuleList(_EncoderLayer(config) for _ in range(config.layers))
        self.encoder_norm = nn.LayerNorm(config.hidden_size)
        self.decoder = _TransformerDecoder(config)

    @property
    def device(self) -> torch.device:
        return self.embed.embedding.weight.device

    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple[_TransformerMemory, _TransformerState]:
        if src.device != self.device:
            raise ValueError(f"src is on {src.device} but the model is on {self.device}: move the batch first")
        from course_utils.data import lengths_to_mask  # here: importing the models loads no data pipeline
        mask = lengths_to_mask(src_lengths.to(src.device), src.shape[1])  # (B, S)
        x = self.embed(src)  # (B, S, H)
        for layer in self.encoder_layers:
            x = layer(x, mask)  # (B, S, H)
        keys = self.encoder_norm(x)  # (B, S, H)
        return self.decoder.prepare_memory(keys, mask), self.decoder.init_state(keys)

    def forward(self, src: Tensor, src_lengths: Tensor, tgt: Tensor,
                teacher_forcing_ratio: float = 1.0) -> Seq2SeqOutput:
        memory, state = self.encode(src, src_lengths)
        decoded = self.decoder(teacher_forced_input(tgt), state, memory, teacher_forcing_ratio)  # (B, T, V)
        return Seq2SeqOutput(decoded.log_probs, decoded.weights)  # attention (B, T, S)

    @torch.no_grad()
    def cross_attention_heads(self, src_ids: Tensor, output_ids: Tensor) -> Tensor:
        """One sentence, teacher-forced: src_ids (S,), output_ids (T,) -> cross weights (layers, h, T, S)."""
        with eval_mode(self):
            memory, state = self.encode(src_ids.to(self.device).unsqueeze(0), torch.tensor([src_ids.numel()]))
            tgt_in = teacher_forced_input(output_ids.to(self.device).unsqueeze(0))  # (1, T)
            _, _, weights = self.decoder.run(tgt_in, state, memory)  # (layers, 1, h, T, S)
        return weights[:, 0].cpu()  # (layers, h, T, S)


def plot_heads(weights: Tensor, source_tokens: list[str], output_tokens: list[str], title: str | None = None,
               ncols: int = 4):
    """A Figure, a heatmap per head: weights (h, T, S), a layer of cross_attention_heads. Introduced in notebook 09."""
    from course_utils.viz import AttentionPanel, plot_attention_grid
    panels = [AttentionPanel(f"head {i}", head, list(source_tokens), list(output_tokens))
              for i, head in enumerate(weights)]
    return plot_attention_grid(panels, ncols=min(ncols, len(panels)), title=title, show_stats=False)
