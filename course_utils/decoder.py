"""Decoders: one target word per step, with or without attention over the encoder's keys. Introduced in notebooks 03
and 04. All share one step interface (`fast` holds faster teacher-forced forms, pinned to these loops by tests):

    memory = decoder.prepare_memory(keys (B, S, K), mask (B, S))   # once per sentence
    state = decoder.init_state(encoder_final (B, H))
    out = decoder.step(prev_tokens (B,), state, memory)           # -> log_probs (B, V), state, weights (B, S)
    out = decoder(tgt_in (B, T), state, memory, teacher_forcing_ratio)  # all T steps -> (B, T, V), (B, T, S)
"""
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from course_utils.attention import AttentionOutput, BahdanauAttention, make_attention
from course_utils.vocab import MAX_LENGTH, PAD_ID

__all__ = ["Memory", "DecoderState", "StepOutput", "DecoderOutput", "Decoder", "DecoderRNN",
           "AttnDecoderRNN", "BahdanauDecoder", "LuongDecoder"]


class Memory(NamedTuple):
    """What the decoder attends to, prepared once per sentence. Introduced in notebook 03."""
    keys: Tensor  # (B, S, K) encoder outputs
    mask: Tensor  # (B, S) bool, True on real source tokens
    projected_keys: Tensor | None  # (B, S, A) Bahdanau's U k, projected once per sentence; None for other scorers

    def index_select(self, index: Tensor) -> "Memory":
        """Pick or repeat batch rows, index (N,) long (beam search): (N, S, K), (N, S), (N, S, A) or None."""
        return Memory(*(None if x is None else x.index_select(0, index) for x in self))


class DecoderState(NamedTuple):
    """The decoder's recurrent state between steps. Introduced in notebook 03."""
    hidden: Tensor  # (B, H) GRU state
    input_feed: Tensor | None  # (B, H) Luong's previous attentional state when input feeding, else None

    def index_select(self, index: Tensor) -> "DecoderState":
        """Pick or repeat batch rows, index (N,) long (beam search): (N, H), (N, H) or None."""
        return DecoderState(*(None if x is None else x.index_select(0, index) for x in self))


class StepOutput(NamedTuple):
    """One decoder step. Introduced in notebook 03."""
    log_probs: Tensor  # (B, V)
    state: DecoderState
    weights: Tensor | None  # (B, S) attention weights; (B, max_length) for AttnDecoderRNN; None without attention


class DecoderOutput(NamedTuple):
    """All T steps of a decoder. Introduced in notebook 03."""
    log_probs: Tensor  # (B, T, V)
    weights: Tensor | None  # (B, T, S); (B, T, max_length) for AttnDecoderRNN; None without attention
    state: DecoderState  # after the last step


class Decoder(nn.Module):
    """Input checks, default memory and state, the step loop; subclasses implement `step`. Introduced in notebook 03."""

    hidden_size: int
    key_size: int
    output_size: int
    max_source_length: int | None = None  # the longest source (S, EOS included) it can read; None: any length

    def check_source_length(self, source_length: int) -> None:
        """Raise ValueError when a source this long (EOS included) cannot be read; by default any length can."""

    def prepare_memory(self, keys: Tensor, mask: Tensor) -> Memory:
        """keys (B, S, K) encoder outputs, mask (B, S) bool -> Memory (nothing precomputed by default)."""
        self._check_memory(keys, mask)
        return Memory(keys, mask, None)

    def init_state(self, encoder_final: Tensor) -> DecoderState:
        """encoder_final (B, H) -> the state before the first step."""
        if encoder_final.dim() != 2 or encoder_final.shape[1] != self.hidden_size:
            raise ValueError(f"encoder_final must be (B, H={self.hidden_size}), got {tuple(encoder_final.shape)}: "
                             "build the encoder with decoder_hidden_size equal to the decoder's hidden_size")
        return DecoderState(encoder_final, None)

    def step(self, prev_tokens: Tensor, state: DecoderState, memory: Memory,
             weights: Tensor | None = None) -> StepOutput:
        """prev_tokens (B,) -> StepOutput; given weights (B, S), rows summing to 1, they replace the scorer's."""
        raise NotImplementedError

    def decode_steps(self, tgt_in: Tensor, state: DecoderState, memory: Memory,
                     teacher_forcing_ratio: float = 1.0) -> DecoderOutput:
        """`step` per position: tgt_in (B, T), SOS first -> DecoderOutput. After step 0 one coin per step (one
        torch.rand up front, none at ratio 1 or 0) picks for the batch the gold tgt_in[:, t] or the previous argmax."""
        self._check_target(tgt_in, teacher_forcing_ratio)
        steps = tgt_in.shape[1]
        if 0.0 < teacher_forcing_ratio < 1.0:
            coins = torch.rand(steps - 1, device=tgt_in.device) < teacher_forcing_ratio  # (T - 1,) True: gold word
        log_probs, weights = [], []
        for t in range(steps):
            if t == 0 or teacher_forcing_ratio == 1.0:
                prev_tokens = tgt_in[:, t]  # (B,) the gold previous word (SOS at step 0)
            elif teacher_forcing_ratio == 0.0:
                prev_tokens = log_probs[-1].argmax(dim=-1)  # (B,) the decoder's own previous word
            else:  # the coin chooses on the device: `if coins[t - 1]` would read it back to Python
                prev_tokens = torch.where(coins[t - 1], tgt_in[:, t], log_probs[-1].argmax(dim=-1))  # (B,)
            step_log_probs, state, step_weights = self.step(prev_tokens, state, memory)  # (B, V), ..., (B, S)
            log_probs.append(step_log_probs)
            weights.append(step_weights)
        stacked_weights = None if weights[0] is None else torch.stack(weights, dim=1)  # (B, T, S)
        return DecoderOutput(torch.stack(log_probs, dim=1), stacked_weights, state)  # (B, T, V)

    forward = decode_steps  # calling a decoder runs its step loop

    @staticmethod
    def _check_target(tgt_in: Tensor, teacher_forcing_ratio: float) -> None:
        if tgt_in.dim() != 2 or tgt_in.dtype != torch.long or tgt_in.shape[1] == 0:
            raise ValueError(f"tgt_in must be a non-empty (B, T) LongTensor starting with SOS, got shape "
                             f"{tuple(tgt_in.shape)} and dtype {tgt_in.dtype}")
        if not 0.0 <= teacher_forcing_ratio <= 1.0:
            raise ValueError(f"teacher_forcing_ratio must lie in [0, 1], got {teacher_forcing_ratio}")

    def _check_memory(self, keys: Tensor, mask: Tensor) -> None:
        if keys.dim() != 3 or keys.shape[2] != self.key_size:
            raise ValueError(f"keys must be (B, S, K={self.key_size}), got {tuple(keys.shape)}: pass the encoder's "
                             "outputs and build the decoder with key_size = encoder.key_size")
        if mask.dtype != torch.bool or mask.shape != keys.shape[:2]:
            raise ValueError(f"mask must be a (B, S) = {tuple(keys.shape[:2])} bool tensor, got "
                             f"{tuple(mask.shape)} {mask.dtype}: True on real tokens, e.g. src != PAD_ID")

    def _attend(self, query: Tensor, memory: Memory, weights: Tensor | None) -> AttentionOutput:
        """The scorer's context and weights for query (B, Hq); given weights (B, S), the context they give."""
        if weights is None:
            return self.attention(query, memory.keys, memory.mask, memory.projected_keys)  # (B, K), (B, S)
        return AttentionOutput(torch.bmm(weights.unsqueeze(1), memory.keys).squeeze(1), weights)  # (B, K), (B, S)

    def _gru_step(self, rnn_input: Tensor, hidden: Tensor) -> Tensor:
        """self.gru, one step: (B, I), (B, H) -> (B, H); torch.gru_cell on a GPU (no cuDNN setup per step)."""
        if hidden.is_cuda:  # all_weights[0]: weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0
            return torch.gru_cell(rnn_input, hidden, *self.gru.all_weights[0])  # (B, H)
        _, new_hidden = self.gru(rnn_input.unsqueeze(1), hidden.unsqueeze(0))  # (1, B, H)
        return new_hidden.squeeze(0)  # (B, H)


class DecoderRNN(Decoder):
    """No attention: the encoder's final state is all it knows of the source (Cho et al., 2014); the memory is
    checked (key_size) and ignored, weights are None. Introduced in notebook 03."""

    def __init__(self, embedding_size: int, hidden_size: int, output_size: int, dropout: float = 0.1,
                 key_size: int | None = None):
        super().__init__()
        self.hidden_size, self.output_size, self.key_size = hidden_size, output_size, key_size or hidden_size
        self.embedding = nn.Embedding(output_size, embedding_size, padding_idx=PAD_ID)
        self.dropout = nn.Dropout(dropout)
        self.gru = nn.GRU(embedding_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)

    def step(self, prev_tokens: Tensor, state: DecoderState, memory: Memory,
             weights: Tensor | None = None) -> StepOutput:
        if weights is not None:
            raise ValueError("DecoderRNN has no attention whose weights could be replaced: use an attention decoder")
        embedded = self.dropout(self.embedding(prev_tokens))  # (B, E)
        hidden = self._gru_step(embedded, state.hidden)  # (B, H)
        log_probs = F.log_softmax(self.out(self.dropout(hidden)), dim=-1)  # (B, V)
        return StepOutput(log_probs, DecoderState(hidden, None), None)


class AttnDecoderRNN(Decoder):
    """The 2017 PyTorch tutorial's "location-based" attention decoder. Introduced in notebook 03.
    weights = softmax(Linear(2H, max_length)([embedded; hidden])): one score per slot, never looking at the keys,
    applied to the keys zero-padded to max_length; nothing masks the padding, a longer source cannot be read."""

    def __init__(self, hidden_size: int, output_size: int, dropout: float = 0.1, max_length: int = MAX_LENGTH,
                 key_size: int | None = None):
        super().__init__()
        self.hidden_size, self.output_size, self.max_length = hidden_size, output_size, max_length
        self.key_size = key_size or hidden_size
        self.embedding, self.dropout = nn.Embedding(output_size, hidden_size, padding_idx=PAD_ID), nn.Dropout(dropout)
        self.attn = nn.Linear(2 * hidden_size, max_length)
        self.attn_combine = nn.Linear(hidden_size + self.key_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)

    max_source_length = property(lambda self: self.max_length)  # one attention slot per source position

    def check_source_length(self, source_length: int) -> None:
        if source_length > self.max_length:
            raise ValueError(  # notebook 03 shows this message (a checked output): change both together
                f"AttnDecoderRNN has one attention slot per position up to max_length={self.max_length} "
                f"(MAX_LENGTH), but the source has S={source_length} positions: filter sentences to MAX_LENGTH, or "
                "build it with a larger max_length (this hard limit is what the exhibit shows)")

    def prepare_memory(self, keys: Tensor, mask: Tensor) -> Memory:
        """Zero-pad keys (B, S, K) to (B, max_length, K), as the tutorial's encoder_outputs buffer does."""
        self._check_memory(keys, mask)
        self.check_source_length(keys.shape[1])
        padding = self.max_length - keys.shape[1]
        return Memory(F.pad(keys, (0, 0, 0, padding)), F.pad(mask, (0, padding), value=False), None)

    def step(self, prev_tokens: Tensor, state: DecoderState, memory: Memory,
             weights: Tensor | None = None) -> StepOutput:
        """As Decoder.step; given weights are (B, max_length), one per slot."""
        embedded = self.dropout(self.embedding(prev_tokens))  # (B, H)
        if weights is None:
            scores = self.attn(torch.cat([embedded, state.hidden], dim=-1))  # (B, max_length)
            weights = torch.softmax(scores, dim=-1)  # (B, max_length): no mask, no look at the keys
        context = torch.bmm(weights.unsqueeze(1), memory.keys).squeeze(1)  # (B, K)
        rnn_input = F.relu(self.attn_combine(torch.cat([embedded, context], dim=-1)))  # (B, H)
        hidden = self._gru_step(rnn_input, state.hidden)  # (B, H)
        log_probs = F.log_softmax(self.out(hidden), dim=-1)  # (B, V)
        return StepOutput(log_probs, DecoderState(hidden, None), weights)


class BahdanauDecoder(Decoder):
    """Bahdanau et al. (2015): attend with the previous state, then step the GRU. Introduced in notebook 03.
    c_i = attention(s_{i-1}, keys); s_i = GRU([E y_{i-1}; c_i], s_{i-1}); t_i = tanh(W_o [s_i; c_i; E y_{i-1}])
    (a tanh layer for the paper's maxout); log_softmax(Linear(H, V)(dropout(t_i))). A defaults to H."""

    def __init__(self, embedding_size: int, hidden_size: int, key_size: int, output_size: int, dropout: float = 0.1,
                 attention_size: int | None = None):
        super().__init__()
        self.hidden_size, self.key_size, self.output_size = hidden_size, key_size, output_size
        self.embedding = nn.Embedding(output_size, embedding_size, padding_idx=PAD_ID)
        self.dropout = nn.Dropout(dropout)
        self.attention = BahdanauAttention(hidden_size, key_size, attention_size or hidden_size)
        self.gru = nn.GRU(embedding_size + key_size, hidden_size, batch_first=True)
        self.pre_output = nn.Linear(hidden_size + key_size + embedding_size, hidden_size, bias=False)
        self.out = nn.Linear(hidden_size, output_size)

    def prepare_memory(self, keys: Tensor, mask: Tensor) -> Memory:
        """keys (B, S, K), mask (B, S) -> Memory with the scorer's projection of the keys, U k (B, S, A), made once."""
        self._check_memory(keys, mask)
        return Memory(keys, mask, self.attention.project_keys(keys))  # projected: (B, S, A)

    def step(self, prev_tokens: Tensor, state: DecoderState, memory: Memory,
             weights: Tensor | None = None) -> StepOutput:
        embedded = self.dropout(self.embedding(prev_tokens))  # (B, E)
        hidden, context, weights = self.recur(embedded, state.hidden, memory, weights)  # (B, H), (B, K), (B, S)
        return StepOutput(self.output_layer(hidden, context, embedded), DecoderState(hidden, None), weights)

    def recur(self, embedded: Tensor, previous: Tensor, memory: Memory,
              weights: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """Attend with the state *before* the step: E y_{i-1} (B, E), s_{i-1} (B, H) -> s_i, c_i, weights (B, S)."""
        context, weights = self._attend(previous, memory, weights)  # (B, K), (B, S)
        return self._gru_step(torch.cat([embedded, context], dim=-1), previous), context, weights  # s_i (B, H)

    def output_layer(self, hidden: Tensor, context: Tensor, embedded: Tensor) -> Tensor:
        """t_i = tanh(W_o [s_i; c_i; E y_{i-1}]) -> log-probs: (B, [T,] H), (B, [T,] K), (B, [T,] E) -> (B, [T,] V)."""
        pre_output = torch.tanh(self.pre_output(torch.cat([hidden, context, embedded], dim=-1)))  # (B, [T,] H)
        return F.log_softmax(self.out(self.dropout(pre_output)), dim=-1)  # (B, [T,] V)

    def forward(self, tgt_in: Tensor, state: DecoderState, memory: Memory,
                teacher_forcing_ratio: float = 1.0) -> DecoderOutput:
        """As Decoder.forward; with teacher forcing 1.0, the output layer runs once after the loop."""
        self._check_target(tgt_in, teacher_forcing_ratio)
        if teacher_forcing_ratio != 1.0:  # a step may read the previous step's argmax: the step loop
            return self.decode_steps(tgt_in, state, memory, teacher_forcing_ratio)
        embedded = self.dropout(self.embedding(tgt_in))  # (B, T, E): every input word is the gold one
        hidden, steps = state.hidden, []
        for words in embedded.unbind(dim=1):  # T x (B, E)
            hidden, context, weights = self.recur(words, hidden, memory)  # (B, H), (B, K), (B, S)
            steps.append((hidden, context, weights))
        hiddens, contexts, weights = (torch.stack(outputs, dim=1) for outputs in zip(*steps))  # (B, T, H|K|S)
        log_probs = self.output_layer(hiddens, contexts, embedded)  # (B, T, V): all steps in one matmul
        return DecoderOutput(log_probs, weights, DecoderState(hidden, None))


class LuongDecoder(Decoder):
    """Luong et al. (2015): step the GRU, then attend with the *current* state. Introduced in notebook 04.
    h_t = GRU(E y_{t-1} [; h~_{t-1} with input feeding], h_{t-1}); c_t = attention(h_t, keys); h~_t = tanh(W_c [c_t;
    h_t]); log_softmax(Linear(H, V)(dropout(h~_t))). Additive scorers use A = H; input feeding keeps h~ in the state."""

    def __init__(self, embedding_size: int, hidden_size: int, key_size: int, output_size: int,
                 score: str = "general", dropout: float = 0.1, input_feeding: bool = False):
        super().__init__()
        self.hidden_size, self.key_size, self.output_size = hidden_size, key_size, output_size
        self.score, self.input_feeding = score, input_feeding
        self.embedding = nn.Embedding(output_size, embedding_size, padding_idx=PAD_ID)
        self.dropout = nn.Dropout(dropout)
        self.gru = nn.GRU(embedding_size + (hidden_size if input_feeding else 0), hidden_size, batch_first=True)
        self.attention = make_attention(score, hidden_size, key_size, attention_size=hidden_size)
        self.combine = nn.Linear(key_size + hidden_size, hidden_size, bias=False)  # W_c
        self.out = nn.Linear(hidden_size, output_size)

    prepare_memory = BahdanauDecoder.prepare_memory  # with the scorer's projection of the keys, if it has one

    def init_state(self, encoder_final: Tensor) -> DecoderState:
        """encoder_final (B, H) -> state; with input feeding h~_0 starts as zeros (B, H)."""
        state = super().init_state(encoder_final)
        return state._replace(input_feed=torch.zeros_like(encoder_final) if self.input_feeding else None)

    def step(self, prev_tokens: Tensor, state: DecoderState, memory: Memory,
             weights: Tensor | None = None) -> StepOutput:
        embedded = self.dropout(self.embedding(prev_tokens))  # (B, E)
        rnn_input = torch.cat([embedded, state.input_feed], dim=-1) if self.input_feeding else embedded  # (B, E[+H])
        hidden = self._gru_step(rnn_input, state.hidden)  # (B, H)
        context, weights = self._attend(hidden, memory, weights)  # (B, K), (B, S)
        attentional = self.attentional_state(context, hidden)  # (B, H)
        log_probs = self.output_layer(attentional)  # (B, V)
        return StepOutput(log_probs, DecoderState(hidden, attentional if self.input_feeding else None), weights)

    def attentional_state(self, context: Tensor, hidden: Tensor) -> Tensor:
        """h~ = tanh(W_c [c; h]): (B, [T,] K), (B, [T,] H) -> (B, [T,] H)."""
        return torch.tanh(self.combine(torch.cat([context, hidden], dim=-1)))  # (B, [T,] H)

    def output_layer(self, attentional: Tensor) -> Tensor:
        """log_softmax(Linear(H, V)(dropout(h~))): attentional (B, [T,] H) -> (B, [T,] V)."""
        return F.log_softmax(self.out(self.dropout(attentional)), dim=-1)
