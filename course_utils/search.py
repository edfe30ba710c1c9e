"""Decoding algorithms: a trained `Seq2Seq` into output ids (greedy, sampling, beam search); scoring a given output.

They use only `model.encode` and `model.decoder.step` (`course_utils.decoder`), so they work for every attention
variant and for the model without attention. Text in, text out is `course_utils.translate`. Attention matrices are
(T, S) per sentence: one row per output token, one column per source token (EOS included on both sides).
Introduced in notebook 05 (greedy), 06 (beam search, forced decoding) and 07 (sampling).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor

from course_utils.runtime import eval_mode
from course_utils.vocab import EOS_ID, PAD_ID, SOS_ID

__all__ = ["default_max_steps", "forbid_special_tokens", "DecodedBatch", "greedy_decode", "sample_decode",
           "Hypothesis", "beam_step", "beam_search", "ForcedDecode", "force_decode"]

# Output length cap: at most `_LENGTH_RATIO * source length + _LENGTH_MARGIN` tokens (EOS included). Course
# translations are about as long as their sources, so this cuts no sensible one yet stops a looping model quickly.
_LENGTH_RATIO = 2.0
_LENGTH_MARGIN = 5


def default_max_steps(src_lengths: Tensor) -> Tensor:
    """Per-sentence output length cap, EOS included: (B,) source lengths -> (B,) long
    `ceil(_LENGTH_RATIO * S_b) + _LENGTH_MARGIN`. Introduced in notebook 07."""
    return (src_lengths.float() * _LENGTH_RATIO).ceil().long() + _LENGTH_MARGIN  # (B,)


def _check_source_fits(model, source_length: int) -> None:
    """Raise ValueError, with the fix, when the decoder cannot read `source_length` positions (location attention)."""
    try:
        model.decoder.check_source_length(source_length)
    except ValueError as error:
        raise ValueError(
            f"this model uses the 2017 tutorial's location attention, which cannot read a sentence of {source_length} "
            f"tokens (EOS included): {error}. Shorten the sentence, or use a model with content-based attention "
            "(bahdanau, dot, general, concat), which handles any length") from None


def forbid_special_tokens(log_probs: Tensor) -> Tensor:
    """Set PAD and SOS (never targets) to -inf: log_probs (..., V) -> (..., V). Introduced in notebook 07."""
    return log_probs.index_fill(-1, torch.tensor([PAD_ID, SOS_ID], device=log_probs.device), -math.inf)  # (B, V)


def _step_weights(weights: Tensor | None, source_length: int) -> Tensor | None:
    """One step's attention weights on the real source positions: (B, S) or None (location attention has more)."""
    return None if weights is None else weights[..., :source_length]  # (B, S)


# ------------------------------------------------------------------------------------------ greedy and sampling
class DecodedBatch(NamedTuple):
    """Result of `greedy_decode` and `sample_decode`. Introduced in notebook 05."""

    tokens: Tensor  # (B, T) long output ids; EOS included where produced, PAD after it
    lengths: Tensor  # (B,) long, tokens per row (EOS included when produced)
    attention: Tensor | None  # (B, T, S), 0 in rows after a sentence ended; None for a model without attention
    log_prob: Tensor  # (B,) total log-probability of each row's tokens


@torch.no_grad()
def greedy_decode(model, src: Tensor, src_lengths: Tensor, max_steps: int | None = None) -> DecodedBatch:
    """Batched greedy decoding: feed back the most probable token (never PAD or SOS); stop each row at EOS.

    src (B, S) PAD-padded ids, each row ending with EOS; src_lengths (B,) EOS included. max_steps caps every row's
    output (EOS included); None gives each sentence `default_max_steps`. The model's mode is restored afterwards.
    Introduced in notebook 05.
    """
    return _decode_loop(model, src, src_lengths, max_steps, lambda log_probs: log_probs.argmax(dim=-1))


@torch.no_grad()
def sample_decode(model, src: Tensor, src_lengths: Tensor, temperature: float = 1.0, top_k: int | None = None,
                  generator: torch.Generator | None = None, max_steps: int | None = None) -> DecodedBatch:
    """Batched sampling: draw each token from softmax(log_probs / temperature), cut to the `top_k` best when given.

    Arguments as for `greedy_decode`; temperature >= 0 (0 is greedy), top_k None or >= 1 (1 is greedy). PAD and SOS
    are never drawn. `log_prob` is the model's (untempered) log-probability of the drawn tokens. Draws come from
    `generator` (seeded, on the model's device: reproducible), else from torch's global random state.
    Introduced in notebook 07.
    """
    if temperature < 0 or (top_k is not None and top_k < 1):
        raise ValueError(f"temperature must be >= 0 and top_k None or >= 1, got {temperature} and {top_k}")

    def draw(log_probs: Tensor) -> Tensor:  # (B, V) with PAD and SOS at -inf -> (B,)
        if temperature == 0:
            return log_probs.argmax(dim=-1)
        scaled = log_probs / temperature  # (B, V)
        if top_k is not None and top_k < scaled.size(-1):
            kth_best = scaled.topk(top_k, dim=-1).values[:, -1:]  # (B, 1)
            scaled = scaled.masked_fill(scaled < kth_best, -math.inf)  # only the k best stay possible
        return torch.multinomial(scaled.softmax(dim=-1), 1, generator=generator).squeeze(1)  # (B,)

    return _decode_loop(model, src, src_lengths, max_steps, draw)


def _decode_loop(model, src: Tensor, src_lengths: Tensor, max_steps: int | None,
                 choose: Callable[[Tensor], Tensor]) -> DecodedBatch:
    """The batched loop of greedy and sampling: `choose(log_probs (B, V)) -> next tokens (B,)` at every step."""
    if src.dim() != 2:
        raise ValueError(f"src must be (B, S) ids, got shape {tuple(src.shape)}; add a batch dimension with "
                         "src.unsqueeze(0)")
    _check_source_fits(model, src.size(1))
    with eval_mode(model):
        device = model.device
        src, src_lengths = src.to(device), src_lengths.cpu()
        batch_size, source_length = src.shape
        caps = (default_max_steps(src_lengths) if max_steps is None
                else torch.full((batch_size,), int(max_steps), dtype=torch.long)).to(device)  # (B,)

        memory, state = model.encode(src, src_lengths)
        prev_tokens = torch.full((batch_size,), SOS_ID, dtype=torch.long, device=device)  # (B,)
        finished = torch.zeros(batch_size, dtype=torch.bool, device=device)  # (B,)
        lengths = torch.zeros(batch_size, dtype=torch.long, device=device)  # (B,)
        log_prob = torch.zeros(batch_size, device=device)  # (B,)
        tokens, weights = [], []
        for _ in range(int(caps.max())):
            step = model.decoder.step(prev_tokens, state, memory)
            log_probs = forbid_special_tokens(step.log_probs)  # (B, V)
            next_tokens = choose(log_probs)  # (B,)
            chosen_log_probs = log_probs.gather(1, next_tokens.unsqueeze(1)).squeeze(1)  # (B,)
            next_tokens = next_tokens.masked_fill(finished, PAD_ID)  # (B,) rows that ended keep emitting PAD
            log_prob += chosen_log_probs.masked_fill(finished, 0.0)
            step_weights = _step_weights(step.weights, source_length)
            if step_weights is not None:
                weights.append(step_weights.masked_fill(finished.unsqueeze(1), 0.0))  # (B, S)
            tokens.append(next_tokens)
            lengths += (~finished).long()
            finished = finished | (next_tokens == EOS_ID) | (lengths >= caps)  # (B,)
            prev_tokens, state = next_tokens, step.state
            if bool(finished.all()):
                break
    attention = torch.stack(weights, dim=1) if weights else None  # (B, T, S)
    return DecodedBatch(torch.stack(tokens, dim=1), lengths.cpu(), attention, log_prob.cpu())  # tokens (B, T)


# ------------------------------------------------------------------------------------------------------ beam
class Hypothesis(NamedTuple):
    """One beam-search hypothesis. Introduced in notebook 06."""

    tokens: list[int]  # output ids (no SOS), EOS included when finished
    score: float  # log_prob / len(tokens) ** length_penalty: what ranks the hypotheses
    attention: Tensor | None  # (T, S), T = len(tokens)
    log_prob: float  # total log-probability of tokens (unnormalised)
    finished: bool  # ended with EOS; False: cut by the length cap


def beam_step(alive_log_probs: Tensor, step_log_probs: Tensor, open_slots: int) -> tuple[Tensor, Tensor, Tensor]:
    """One beam step: of all N x V extensions keep the `open_slots` best by total log-probability.

    alive_log_probs (N,) and step_log_probs (N, V) -> (top_log_probs, parents, tokens), each (n,), best first:
    hypothesis `parents[i]` extended by `tokens[i]`; n = min(open_slots, N * V). Introduced in notebook 07.
    """
    vocab_size = step_log_probs.size(-1)
    candidates = (alive_log_probs.unsqueeze(1) + step_log_probs).reshape(-1)  # (N, 1) + (N, V) -> (N * V,)
    top_log_probs, index = candidates.topk(min(open_slots, candidates.numel()))  # (n,)
    return top_log_probs, torch.div(index, vocab_size, rounding_mode="floor"), index % vocab_size


@torch.no_grad()
def beam_search(model, src: Tensor, beam_width: int = 5, max_steps: int | None = None,
                length_penalty: float = 1.0) -> list[Hypothesis]:
    """Beam search for one sentence, src (S,) ending with EOS; returns `beam_width` hypotheses, best score first.

    A candidate ending with EOS leaves the beam, which shrinks by one; those still open at the length cap
    (max_steps, None: `default_max_steps`) come back with `finished=False`. Scores are
    `log_prob / length ** length_penalty` (0: raw log-probability). beam_width=1 is greedy decoding.
    Introduced in notebook 07.
    """
    if src.dim() != 1:
        raise ValueError(f"beam_search takes one sentence of shape (S,), got {tuple(src.shape)}; for a batch use "
                         "greedy_decode or call beam_search once per sentence")
    if beam_width < 1:
        raise ValueError(f"beam_width must be >= 1, got {beam_width}")
    _check_source_fits(model, src.size(0))
    with eval_mode(model):
        device, source_length = model.device, src.size(0)
        src_lengths = torch.tensor([source_length])  # (1,)
        cap = int(default_max_steps(src_lengths)[0]) if max_steps is None else int(max_steps)

        memory, state = model.encode(src.to(device).unsqueeze(0), src_lengths)  # batch of one
        alive_tokens = torch.empty(1, 0, dtype=torch.long, device=device)  # (N, t) N open hypotheses
        alive_weights: Tensor | None = None  # (N, t, S)
        alive_log_probs = torch.zeros(1, device=device)  # (N,)
        prev_tokens = torch.full((1,), SOS_ID, dtype=torch.long, device=device)  # (N,)
        done: list[Hypothesis] = []

        def store(tokens: Tensor, weights: Tensor | None, log_prob: Tensor, finished: bool) -> None:
            ids = tokens.tolist()
            score = float(log_prob) / (max(len(ids), 1) ** length_penalty)  # length-normalised
            done.append(Hypothesis(ids, score, None if weights is None else weights.cpu(), float(log_prob), finished))

        for _ in range(cap):
            step = model.decoder.step(prev_tokens, state, memory)
            top_log_probs, parents, next_tokens = beam_step(
                alive_log_probs, forbid_special_tokens(step.log_probs), beam_width - len(done))  # (n,) each
            tokens = torch.cat([alive_tokens[parents], next_tokens.unsqueeze(1)], dim=1)  # (n, t+1)
            weights = _step_weights(step.weights, source_length)  # (N, S) or None
            if weights is not None:  # each survivor's rows: its parent's (N, t, S) plus the parent's new row
                weights = weights[parents].unsqueeze(1)  # (n, 1, S)
                weights = weights if alive_weights is None else torch.cat([alive_weights[parents], weights], dim=1)

            ended = next_tokens == EOS_ID  # (n,)
            for i in ended.nonzero().flatten().tolist():
                store(tokens[i], None if weights is None else weights[i], top_log_probs[i], finished=True)
            keep = (~ended).nonzero().flatten()  # (N',)
            if keep.numel() == 0:
                break
            alive_tokens, alive_log_probs = tokens[keep], top_log_probs[keep]  # (N', t+1), (N',)
            alive_weights = None if weights is None else weights[keep]  # (N', t+1, S)
            prev_tokens = next_tokens[keep]  # (N',)
            rows = parents[keep]  # (N',)
            state = step.state.index_select(rows)
            memory = memory.index_select(torch.zeros_like(rows))  # every open hypothesis reads the one sentence
        else:
            for i in range(alive_tokens.size(0)):  # length cap reached: keep the open hypotheses too
                store(alive_tokens[i], None if alive_weights is None else alive_weights[i], alive_log_probs[i],
                      finished=False)
    return sorted(done, key=lambda hypothesis: hypothesis.score, reverse=True)


# ------------------------------------------------------------------------------------------------ forced decoding
class ForcedDecode(NamedTuple):
    """Result of `force_decode`. Introduced in notebook 06."""

    log_probs: Tensor  # (T, V) next-token distribution at each step, given the previous output tokens
    attention: Tensor | None  # (T, S)


@torch.no_grad()
def force_decode(model, src_ids: Tensor, output_ids: Tensor) -> ForcedDecode:
    """Teacher-forced pass over a given output: what the model predicted at each step of it.

    src_ids (S,) ending with EOS; output_ids (T,), no SOS, typically ending with EOS. Row t of `log_probs` is the
    distribution of output token t given the source and output_ids[:t]. Introduced in notebook 06.
    """
    if src_ids.dim() != 1 or output_ids.dim() != 1:
        raise ValueError(f"force_decode takes one sentence: src_ids (S,) and output_ids (T,), got "
                         f"{tuple(src_ids.shape)} and {tuple(output_ids.shape)}")
    if output_ids.numel() == 0:
        raise ValueError("output_ids is empty; pass at least one token (e.g. the EOS id)")
    _check_source_fits(model, src_ids.size(0))
    with eval_mode(model):
        device = model.device
        src = src_ids.to(device).unsqueeze(0)  # (1, S)
        tgt = output_ids.to(device).unsqueeze(0)  # (1, T)
        output = model(src, torch.tensor([src_ids.size(0)]), tgt, teacher_forcing_ratio=1.0)
    attention = None if output.attention is None else output.attention[0, :, :src_ids.size(0)].cpu()  # (T, S)
    return ForcedDecode(output.log_probs[0].cpu(), attention)  # (T, V)
