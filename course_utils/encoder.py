"""The encoder: source ids (B, S) -> one key per source word (B, S, K) and the decoder's initial state.

Batch-first; K = H, or 2H when bidirectional. The GRU reads a packed batch, so padding never reaches the final
state; `packed=False` reproduces the current PyTorch tutorial, whose GRU reads the PADs. Introduced in notebook 02.
"""
from typing import NamedTuple

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from course_utils.vocab import PAD_ID

__all__ = ["EncoderOutput", "EncoderRNN"]


class EncoderOutput(NamedTuple):
    """What the encoder hands to the decoder. Introduced in notebook 02."""

    outputs: Tensor  # (B, S, K) one key per source position, K = H or 2H; exactly zero at pads only when packed
    final: Tensor  # (B, H_dec) the decoder's initial state (through the bridge when there is one)


def _check_source(src: Tensor, src_lengths: Tensor) -> None:
    """Raise a ValueError naming the problem and the fix unless `src` (B, S) and `src_lengths` (B,) fit together."""
    if src.dim() != 2 or src.dtype != torch.long:
        raise ValueError(
            f"src must be a (B, S) LongTensor of token ids, got shape {tuple(src.shape)} and dtype {src.dtype}; "
            "for one sentence use ids.unsqueeze(0), for the tutorial's (S, 1) layout use ids.T")
    if src_lengths.dim() != 1 or src_lengths.shape[0] != src.shape[0]:
        raise ValueError(
            f"src_lengths must have shape (B,) = ({src.shape[0]},), got {tuple(src_lengths.shape)}; "
            "pass one length per row of src (Batch.src_lengths)")
    if src_lengths.numel() and (src_lengths.min() < 1 or src_lengths.max() > src.shape[1]):
        raise ValueError(
            f"src_lengths must lie in [1, S={src.shape[1]}], got {src_lengths.tolist()}; "
            "every sentence needs at least one token (its EOS) and no length may exceed the padded width")


class EncoderRNN(nn.Module):
    """Embedding (E) -> dropout -> GRU (H per direction) over a packed batch -> optional bridge: when bidirectional
    or decoder_hidden_size H_dec (default H) != H, `bridge` = tanh(Linear(D*H, H_dec)) maps the final state(s), else
    `bridge` is None. Introduced in notebook 02."""

    def __init__(self, vocab_size: int, embedding_size: int, hidden_size: int, bidirectional: bool = False,
                 dropout: float = 0.1, decoder_hidden_size: int | None = None):
        super().__init__()
        self.hidden_size, self.bidirectional = hidden_size, bidirectional
        self.decoder_hidden_size = decoder_hidden_size or hidden_size
        self.key_size = (2 if bidirectional else 1) * hidden_size  # K
        self.embedding = nn.Embedding(vocab_size, embedding_size, padding_idx=PAD_ID)
        self.dropout = nn.Dropout(dropout)
        self.gru = nn.GRU(embedding_size, hidden_size, batch_first=True, bidirectional=bidirectional)
        needs_bridge = bidirectional or self.decoder_hidden_size != hidden_size
        self.bridge = nn.Linear(self.key_size, self.decoder_hidden_size) if needs_bridge else None

    def forward(self, src: Tensor, src_lengths: Tensor, packed: bool = True) -> EncoderOutput:
        """src (B, S) long, src_lengths (B,) long (any device) -> EncoderOutput(outputs (B, S, K), final (B, H_dec)).

        `packed=False` is the tutorial's bug: the GRU reads the PADs too, so a short sentence's final state depends on
        its batch's padding and pad outputs are not zero. Raises ValueError when src and src_lengths do not fit.
        """
        _check_source(src, src_lengths)
        embedded = self.dropout(self.embedding(src))  # (B, S, E)
        if packed:
            packed_input = pack_padded_sequence(embedded, src_lengths.cpu(), batch_first=True, enforce_sorted=False)
            packed_outputs, final = self.gru(packed_input)  # final: (D, B, H), in the original row order
            outputs, _ = pad_packed_sequence(packed_outputs, batch_first=True, total_length=src.shape[1])  # (B, S, K)
        else:
            outputs, final = self.gru(embedded)  # (B, S, K), (D, B, H): the last step read PADs for short rows
        final = torch.cat(list(final), dim=-1)  # (B, D*H): forward and backward final states side by side
        if self.bridge is not None:
            final = torch.tanh(self.bridge(final))  # (B, H_dec)
        return EncoderOutput(outputs, final)
