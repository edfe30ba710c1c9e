"""Seq2Seq: the encoder and one of the decoders, built from a ModelConfig.

Introduced in notebook 03 (assembled) and 05 (trained). `config.attention` picks the decoder:
"none" -> DecoderRNN, "location" -> AttnDecoderRNN (2017 exhibit), "bahdanau" -> BahdanauDecoder,
"dot" | "general" | "concat" | "scaled_dot" | "scaled_general" -> LuongDecoder with that score.
`Translator` is the interface that search, training, evaluation and checkpoints read; Seq2Seq and
transformer.TransformerSeq2Seq both satisfy it.
"""
from __future__ import annotations

from collections.abc import Sized
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

import torch
from torch import Tensor, nn

from course_utils.attention import ATTENTION_SCORES, check_key_size
from course_utils.decoder import (
    AttnDecoderRNN,
    BahdanauDecoder,
    Decoder,
    DecoderRNN,
    DecoderState,
    LuongDecoder,
    Memory,
    StepOutput,
)
from course_utils.encoder import EncoderRNN
from course_utils.vocab import MAX_LENGTH, SOS_ID

__all__ = ["LUONG_SCORES", "ATTENTION_KINDS", "ModelConfig", "Seq2SeqOutput", "StepDecoder", "Translator",
           "Seq2Seq", "teacher_forced_input", "count_parameters"]

LUONG_SCORES = tuple(kind for kind in ATTENTION_SCORES if kind != "bahdanau")  # the LuongDecoder's scores
ATTENTION_KINDS = ("none", *ATTENTION_SCORES, "location")  # every decoder a ModelConfig can name: the one list


@dataclass
class ModelConfig:
    """Everything needed to rebuild a Seq2Seq (checkpoints store it as a plain dict). Introduced in notebook 03.

    The vocabulary sizes may be left as None in a recipe's template, which fills them from
    the data's vocabularies; a Seq2Seq needs them set.
    """

    src_vocab_size: int | None = None  # V_src: size of the source (French) vocabulary, special tokens included
    tgt_vocab_size: int | None = None  # V: size of the target (English) vocabulary, special tokens included
    attention: str = "bahdanau"  # one of ATTENTION_KINDS
    embedding_size: int = 256  # E for both embeddings (the location exhibit uses hidden_size, as the tutorial)
    hidden_size: int = 256  # H of the decoder GRU, and of each encoder direction
    bidirectional: bool = False  # bidirectional encoder: keys become 2H, a tanh bridge maps 2H -> H
    dropout: float = 0.1  # dropout probability on embeddings and before the output layer
    input_feeding: bool = False  # Luong decoders only: feed the previous attentional state into the GRU
    location_slots: int = MAX_LENGTH  # location only: its attention slots, the longest source it reads (the
    # tutorial's max_length, which is its corpus filter too: that coupling is what the exhibit shows)

    def __post_init__(self):
        if self.attention not in ATTENTION_KINDS:
            raise ValueError(f"unknown attention {self.attention!r}: choose one of {', '.join(ATTENTION_KINDS)}")
        sizes = dict(src_vocab_size=self.src_vocab_size, tgt_vocab_size=self.tgt_vocab_size,
                     embedding_size=self.embedding_size, hidden_size=self.hidden_size,
                     location_slots=self.location_slots)
        for name, value in sizes.items():
            if value is None and name.endswith("vocab_size"):
                continue  # a template: filled in from the vocabularies later
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout}")
        if self.input_feeding and self.attention not in LUONG_SCORES:
            raise ValueError(f"input_feeding is a Luong decoder option ({', '.join(LUONG_SCORES)}); "
                             f"attention={self.attention!r} has none: set input_feeding=False")
        check_key_size(self.attention, self.hidden_size, self.key_size)  # dot needs keys of the decoder's size

    @property
    def key_size(self) -> int:
        """K, the size of the encoder's keys: H, or 2H when bidirectional (EncoderRNN.key_size)."""
        return 2 * self.hidden_size if self.bidirectional else self.hidden_size

    def check_vocabularies(self, src_vocab: Sized, tgt_vocab: Sized) -> None:
        """Raise ValueError unless this config's vocabulary sizes are those of `src_vocab` and `tgt_vocab`."""
        if (self.src_vocab_size, self.tgt_vocab_size) != (len(src_vocab), len(tgt_vocab)):
            raise ValueError(f"the model expects vocabularies of {self.src_vocab_size} source and "
                             f"{self.tgt_vocab_size} target words but got {len(src_vocab):,} and {len(tgt_vocab):,}; "
                             "build the ModelConfig from these vocabularies (recipe.model_config(data.src_vocab, "
                             "data.tgt_vocab))")


class Seq2SeqOutput(NamedTuple):
    """The model's forward result. Introduced in notebook 03."""

    log_probs: Tensor  # (B, T, V)
    attention: Tensor | None  # (B, T, S); (B, T, location_slots) for "location"; None for "none"


@runtime_checkable
class StepDecoder(Protocol):
    """The decoder's side of a Translator: what search's loops call."""

    def prepare_memory(self, keys: Tensor, mask: Tensor) -> Any:
        """keys (B, S, K), mask (B, S) -> the memory every step reads."""

    def init_state(self, encoder_final: Tensor) -> Any:
        """The encoder's result ((B, H) for a GRU; (B, S, H) for a Transformer) -> the state before step 0."""

    def step(self, prev_tokens: Tensor, state: Any, memory: Any, weights: Tensor | None = None) -> StepOutput:
        """prev_tokens (B,) -> StepOutput(log_probs (B, V), state, weights (B, S) or None)."""

    def check_source_length(self, source_length: int) -> None:
        """Raise a one-line ValueError when a source this long cannot be read."""


@runtime_checkable
class Translator(Protocol):
    """A translator: Seq2Seq and transformer.TransformerSeq2Seq.

    encode(src (B, S), src_lengths (B,)) -> (memory, state), which decoder.step reads; calling it with
    (src, src_lengths, tgt (B, T), teacher_forcing_ratio) gives Seq2SeqOutput(log_probs (B, T, V), attention).
    """

    config: Any
    decoder: StepDecoder

    @property
    def device(self) -> torch.device: ...

    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple[Any, Any]: ...

    def __call__(self, src: Tensor, src_lengths: Tensor, tgt: Tensor,
                 teacher_forcing_ratio: float = 1.0) -> Seq2SeqOutput: ...


def _build_decoder(config: ModelConfig, key_size: int) -> Decoder:
    """The decoder that `config.attention` names, reading keys of size `key_size`."""
    c = config
    if c.attention == "none":
        return DecoderRNN(c.embedding_size, c.hidden_size, c.tgt_vocab_size, c.dropout, key_size=key_size)
    if c.attention == "location":
        return AttnDecoderRNN(c.hidden_size, c.tgt_vocab_size, c.dropout, c.location_slots, key_size=key_size)
    if c.attention == "bahdanau":
        return BahdanauDecoder(c.embedding_size, c.hidden_size, key_size, c.tgt_vocab_size, c.dropout)
    assert c.attention in ATTENTION_SCORES
    return LuongDecoder(c.embedding_size, c.hidden_size, key_size, c.tgt_vocab_size, score=c.attention,
                        dropout=c.dropout, input_feeding=c.input_feeding)


class Seq2Seq(nn.Module):
    """Encoder + decoder. Attributes: config, encoder, decoder.

    encode(src (B, S), src_lengths (B,)) -> (Memory, DecoderState): what greedy and beam search start from.
    forward(src (B, S), src_lengths (B,), tgt (B, T), teacher_forcing_ratio=1.0) -> Seq2SeqOutput:
        the decoder reads SOS + tgt[:, :-1] and predicts tgt; teacher forcing is decided per step, once for the
        whole batch (see Decoder.forward). Inputs must be on the parameters' device (src_lengths may stay on CPU).
    Introduced in notebook 03.
    """

    def __init__(self, config: ModelConfig):
        super().__init__()
        if config.src_vocab_size is None or config.tgt_vocab_size is None:
            raise ValueError("this ModelConfig has no vocabulary sizes (a recipe's template): build the model from "
                             "recipe.model_config(data.src_vocab, data.tgt_vocab)")
        self.config = config
        self.encoder = EncoderRNN(config.src_vocab_size, config.embedding_size, config.hidden_size,
                                  config.bidirectional, config.dropout, decoder_hidden_size=config.hidden_size)
        self.decoder = _build_decoder(config, self.encoder.key_size)

    @property
    def device(self) -> torch.device:
        return self.encoder.embedding.weight.device

    def _check_device(self, name: str, tensor: Tensor) -> None:
        if tensor.device != self.device:
            raise ValueError(f"{name} is on {tensor.device} but the model is on {self.device}: move the batch "
                             "first (batch.to(device)) or the model (model.to(device))")

    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple[Memory, DecoderState]:
        """src (B, S), src_lengths (B,) -> (Memory with keys (B, S, K) and mask (B, S), initial DecoderState)."""
        self._check_device("src", src)
        encoded = self.encoder(src, src_lengths)
        from course_utils.data import lengths_to_mask  # here: importing the models loads no data pipeline

        mask = lengths_to_mask(src_lengths.to(src.device), src.shape[1])  # (B, S) True on real tokens
        return self.decoder.prepare_memory(encoded.outputs, mask), self.decoder.init_state(encoded.final)

    def forward(self, src: Tensor, src_lengths: Tensor, tgt: Tensor,
                teacher_forcing_ratio: float = 1.0) -> Seq2SeqOutput:
        self._check_device("tgt", tgt)
        if tgt.dim() != 2 or tgt.shape[0] != src.shape[0]:
            raise ValueError(f"tgt must be (B, T) with B = {src.shape[0]} like src, got {tuple(tgt.shape)}")
        memory, state = self.encode(src, src_lengths)
        decoded = self.decoder(teacher_forced_input(tgt), state, memory, teacher_forcing_ratio)
        return Seq2SeqOutput(decoded.log_probs, decoded.weights)


def teacher_forced_input(tgt: Tensor) -> Tensor:
    """What the decoder reads when it is fed the gold words: tgt (B, T) -> (B, T), SOS, then tgt[:, :-1] (the gold
    words shifted right by one step). Introduced in notebook 03."""
    sos = torch.full_like(tgt[:, :1], SOS_ID)  # (B, 1)
    return torch.cat([sos, tgt[:, :-1]], dim=1)  # (B, T)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters. Introduced in notebook 03."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
