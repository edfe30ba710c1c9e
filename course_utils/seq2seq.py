"""Seq2Seq: the encoder and the decoder that `ModelConfig.attention` names. Introduced in notebook 03 (assembled) and
05 (trained). `Translator`, what search, training, evaluation and checkpoints read, is Seq2Seq or TransformerSeq2Seq.
"""
from __future__ import annotations

from collections.abc import Sized
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

import torch
from torch import Tensor, nn

from course_utils.attention import ATTENTION_SCORES, check_key_size
from course_utils.decoder import AttnDecoderRNN, BahdanauDecoder, Decoder, DecoderRNN, LuongDecoder
from course_utils.encoder import EncoderRNN
from course_utils.vocab import MAX_LENGTH, SOS_ID

if TYPE_CHECKING:
    from course_utils.decoder import DecoderState, Memory, StepOutput

__all__ = ["LUONG_SCORES", "ATTENTION_KINDS", "ModelConfig", "Seq2SeqOutput", "StepDecoder", "Translator",
           "Seq2Seq", "teacher_forced_input", "count_parameters"]

LUONG_SCORES = tuple(kind for kind in ATTENTION_SCORES if kind != "bahdanau")  # the LuongDecoder's scores
ATTENTION_KINDS = ("none", *ATTENTION_SCORES, "location")  # every decoder a ModelConfig can name: the one list


@dataclass
class ModelConfig:
    """Everything needed to rebuild a Seq2Seq (checkpoints store it as a dict). Introduced in notebook 03."""
    src_vocab_size: int | None = None  # V_src, French, special tokens included; None in a recipe's template
    tgt_vocab_size: int | None = None  # V, English, special tokens included; None in a recipe's template
    attention: str = "bahdanau"  # one of ATTENTION_KINDS
    embedding_size: int = 256  # E for both embeddings (the location exhibit uses hidden_size, as the tutorial)
    hidden_size: int = 256  # H of the decoder GRU, and of each encoder direction
    bidirectional: bool = False  # bidirectional encoder: keys become 2H, a tanh bridge maps 2H -> H
    dropout: float = 0.1  # dropout probability on embeddings and before the output layer
    input_feeding: bool = False  # Luong decoders only: feed the previous attentional state into the GRU
    location_slots: int = MAX_LENGTH  # location only: its attention slots, the longest source it reads

    def __post_init__(self):
        if self.attention not in ATTENTION_KINDS:
            raise ValueError(f"unknown attention {self.attention!r}: choose one of {', '.join(ATTENTION_KINDS)}")
        for name in ("src_vocab_size", "tgt_vocab_size", "embedding_size", "hidden_size", "location_slots"):
            value = getattr(self, name)  # None vocabulary sizes: a template, filled from the vocabularies later
            if not (value is None and name.endswith("vocab_size")) and (not isinstance(value, int) or value < 1):
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
    """The decoder's side of a Translator: what search's loops call (see decoder.Decoder)."""

    def prepare_memory(self, keys: Tensor, mask: Tensor) -> Any: ...  # keys (B, S, K), mask (B, S) -> memory
    def init_state(self, encoder_final: Tensor) -> Any: ...  # (B, H) for a GRU, (B, S, H) for a Transformer
    def step(self, prev_tokens: Tensor, state: Any, memory: Any, weights: Tensor | None = None) -> StepOutput: ...
    def check_source_length(self, source_length: int) -> None: ...  # a one-line ValueError if it cannot be read


@runtime_checkable
class Translator(Protocol):
    """Seq2Seq or transformer.TransformerSeq2Seq: encode(src (B, S), src_lengths (B,)) -> (memory, state) for
    decoder.step; calling it with tgt (B, T) gives Seq2SeqOutput(log_probs (B, T, V), attention)."""

    config: Any
    decoder: StepDecoder

    @property
    def device(self) -> torch.device: ...
    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple[Any, Any]: ...
    def __call__(self, src: Tensor, src_lengths: Tensor, tgt: Tensor,
                 teacher_forcing_ratio: float = 1.0) -> Seq2SeqOutput: ...


def _build_decoder(c: ModelConfig, key_size: int) -> Decoder:
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
    """Encoder + decoder; inputs on the model's device (src_lengths may stay on the CPU). Introduced in notebook 03."""

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
        """src (B, S), src_lengths (B,) -> (Memory: keys (B, S, K), mask (B, S); the initial DecoderState)."""
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
    """The gold words shifted right: tgt (B, T) -> (B, T), SOS then tgt[:, :-1]. Introduced in notebook 03."""
    return torch.cat([torch.full_like(tgt[:, :1], SOS_ID), tgt[:, :-1]], dim=1)  # (B, 1) + (B, T - 1) -> (B, T)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters. Introduced in notebook 03."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
