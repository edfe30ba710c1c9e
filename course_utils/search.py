"""Decoding algorithms: a trained `Seq2Seq` into output ids (greedy, sampling, beam search); scoring a given output.

Every decoder of the course shares one step interface (`course_utils.decoder`):

    memory, state = model.encode(src, src_lengths)               # Memory(keys (B, S, K), mask (B, S), ...)
    step = model.decoder.step(prev_tokens, state, memory)        # log_probs (B, V), state, weights (B, S) | None

so the functions below work for every attention variant, and for the model without attention.

    greedy_decode   batched argmax decoding that stops at EOS; length cap derived from each source length
    sample_decode   batched random sampling with a temperature and an optional top-k cut; seeded by a Generator
    beam_search     one sentence, width k, length-normalised scores; returns every hypothesis, best first
    force_decode    teacher-forced pass over a given output: the distribution at every step (for the explorer)

Text in, text out (normalising, unknown words, `Translation`, `translate`) lives in `course_utils.translate`.
Attention matrices are `(T, S)` per sentence: one row per output token (the EOS step included), one column per
source token (the source EOS included).

Introduced in notebook 05 (greedy decoding), 06 (beam search, forced decoding) and 07 (sampling, beam search
taken apart).
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

# Default output length cap: a translation may be at most `_LENGTH_RATIO * source length + _LENGTH_MARGIN` tokens
# (EOS included). French->English sentences of the course are about as long as their sources, so this never cuts a
# sensible translation, yet stops a model that loops ("i i i i ...") quickly. Any source length works.
_LENGTH_RATIO = 2.0
_LENGTH_MARGIN = 5


def default_max_steps(src_lengths: Tensor) -> Tensor:
    """Per-sentence output length cap `ceil(_LENGTH_RATIO * S_b) + _LENGTH_MARGIN`.

    Args:
        src_lengths: (B,) source lengths, EOS included.
    Returns:
        (B,) long tensor: the most tokens (EOS included) decoding may produce for each sentence.

    Introduced in notebook 07 (the length cap of every decoder; greedy decoding of notebook 05 applies it).
    """
    return (src_lengths.float() * _LENGTH_RATIO).ceil().long() + _LENGTH_MARGIN  # (B,)


def _check_source_fits(model, source_length: int) -> None:
    """Ask the decoder whether it can read `source_length` positions (the decoder owns the limit: only the 2017
    tutorial's location attention has one) and, if not, say what someone decoding a sentence can do about it."""
    try:
        model.decoder.check_source_length(source_length)
    except ValueError as error:
        raise ValueError(
            f"this model uses the 2017 tutorial's location attention, which cannot read a sentence of {source_length} "
            f"tokens (EOS included): {error}. Shorten the sentence, or use a model with content-based attention "
            "(bahdanau, dot, general, concat), which handles any length") from None


def forbid_special_tokens(log_probs: Tensor) -> Tensor:
    """Forbid the tokens no translation may contain: PAD and SOS are never targets. log_probs (..., V) -> (..., V).

    Greedy, sampling and beam search pick from this; the explorer ranks its next-token candidates with it.
    Introduced in notebook 07 (dissected there; notebook 05's greedy decoding relies on it).
    """
    return log_probs.index_fill(-1, torch.tensor([PAD_ID, SOS_ID], device=log_probs.device), -math.inf)  # (B, V)


def _step_weights(weights: Tensor | None, source_length: int) -> Tensor | None:
    """Attention weights of one step restricted to the real source positions: (B, S) or None."""
    if weights is None:
        return None
    return weights[..., :source_length]  # (B, S) location attention has location_slots slots; keep the first S


# ------------------------------------------------------------------------------------------ greedy and sampling
class DecodedBatch(NamedTuple):
    """Result of the batched loop that `greedy_decode` and `sample_decode` share (they differ only in how the next
    token is chosen).

    tokens:    (B, T) long, output ids; EOS included where produced, PAD after it.
    lengths:   (B,) long, tokens per row (EOS included when produced).
    attention: (B, T, S) float or None (model without attention); rows after a sentence ended are 0.
    log_prob:  (B,) float, total log-probability of each row's tokens.

    Introduced in notebook 05.
    """

    tokens: Tensor
    lengths: Tensor
    attention: Tensor | None
    log_prob: Tensor


@torch.no_grad()
def greedy_decode(model, src: Tensor, src_lengths: Tensor, max_steps: int | None = None) -> DecodedBatch:
    """Batched greedy decoding: at every step feed back the most probable token; stop each row at EOS.

    PAD and SOS are never chosen (they are never targets). The model runs in eval mode (its previous mode is
    restored afterwards).

    Args:
        model: a `Seq2Seq` (anything with `encode` and `decoder.step`).
        src: (B, S) source ids, PAD-padded, each row ending with EOS.
        src_lengths: (B,) source lengths (EOS included).
        max_steps: cap on output tokens (EOS included) for every row; None derives one cap per sentence from its
            source length (`default_max_steps`), so long sentences are not cut at the corpus' MAX_LENGTH.
    Returns:
        DecodedBatch(tokens (B, T), lengths (B,), attention (B, T, S) or None, log_prob (B,)).

    Introduced in notebook 05.
    """
    return _decode_loop(model, src, src_lengths, max_steps, lambda log_probs: log_probs.argmax(dim=-1))


@torch.no_grad()
def sample_decode(model, src: Tensor, src_lengths: Tensor, temperature: float = 1.0, top_k: int | None = None,
                  generator: torch.Generator | None = None, max_steps: int | None = None) -> DecodedBatch:
    """Batched random sampling: at every step draw the next token from softmax(log_probs / temperature), cut to
    the `top_k` most probable tokens when given; feed it back; stop each row at EOS.

    temperature < 1 sharpens the distribution (towards greedy; 0 is exactly greedy), > 1 flattens it; top_k=1 is
    greedy decoding. PAD and SOS are never drawn. `log_prob` is the MODEL's log-probability of the drawn tokens
    (not the tempered one), so it is comparable with greedy's. Draws come from `generator` (a seeded
    `torch.Generator` on the model's device makes a batch reproducible), else from torch's global random state.

    Args:
        model, src, src_lengths, max_steps: as for `greedy_decode`.
        temperature: >= 0.
        top_k: None (the whole vocabulary) or k >= 1.
        generator: the random source.
    Returns:
        DecodedBatch(tokens (B, T), lengths (B,), attention (B, T, S) or None, log_prob (B,)).

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
        src = src.to(device)
        src_lengths = src_lengths.cpu()
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
    """One beam-search hypothesis.

    tokens:    output ids, EOS included when the hypothesis finished (no SOS).
    score:     length-normalised log-probability `log_prob / len(tokens) ** length_penalty` (used for ranking).
    attention: (T, S) float or None, T = len(tokens).
    log_prob:  total log-probability of `tokens` (unnormalised).
    finished:  True when the hypothesis ended with EOS, False when it was cut by the length cap.

    Introduced in notebook 06.
    """

    tokens: list[int]
    score: float
    attention: Tensor | None
    log_prob: float
    finished: bool


def beam_step(alive_log_probs: Tensor, step_log_probs: Tensor, open_slots: int) -> tuple[Tensor, Tensor, Tensor]:
    """One step of the beam: score all N x V extensions by total log-probability and keep the `open_slots` best.

    Args:
        alive_log_probs: (N,) total log-probability of each open hypothesis.
        step_log_probs: (N, V) next-token log-probabilities after each of them.
        open_slots: how many extensions survive (fewer when there are fewer than N x V candidates).
    Returns:
        (top_log_probs (n,), parents (n,), tokens (n,)), best first: hypothesis `parents[i]` extended by `tokens[i]`.

    Introduced in notebook 07 (the exercise "one beam step" is checked against it).
    """
    vocab_size = step_log_probs.size(-1)
    candidates = (alive_log_probs.unsqueeze(1) + step_log_probs).reshape(-1)  # (N, 1) + (N, V) -> (N * V,)
    top_log_probs, index = candidates.topk(min(open_slots, candidates.numel()))  # (n,)
    return top_log_probs, torch.div(index, vocab_size, rounding_mode="floor"), index % vocab_size


def _normalised(log_prob: float, length: int, length_penalty: float) -> float:
    """Length normalisation: divide the summed log-probability by length ** length_penalty (0 = none)."""
    return log_prob / (max(length, 1) ** length_penalty)


def _extend_weights(alive_weights: Tensor | None, step_weights: Tensor | None, parents: Tensor) -> Tensor | None:
    """Each surviving hypothesis's attention rows: its parent's (N, t, S) plus the parent's new row -> (n, t+1, S)."""
    if step_weights is None:  # a model without attention
        return None
    new_row = step_weights[parents].unsqueeze(1)  # (n, 1, S)
    return new_row if alive_weights is None else torch.cat([alive_weights[parents], new_row], dim=1)


@torch.no_grad()
def beam_search(model, src: Tensor, beam_width: int = 5, max_steps: int | None = None,
                length_penalty: float = 1.0) -> list[Hypothesis]:
    """Beam search for one sentence; returns every hypothesis it completed, best (highest score) first.

    The beam keeps the `k` best partial outputs by total log-probability. A candidate that ends with EOS leaves the
    beam and is stored; the beam then shrinks by one, so exactly `beam_width` hypotheses come back (those still
    open at the length cap are returned with `finished=False`). Ranking uses length-normalised scores
    `log_prob / length ** length_penalty` (length_penalty=0 ranks by raw log-probability, which favours short
    outputs). With `beam_width=1` this is greedy decoding.

    Args:
        model: a `Seq2Seq`.
        src: (S,) source ids ending with EOS (no padding).
        beam_width: k >= 1.
        max_steps: cap on output tokens (EOS included); None derives it from the source length.
        length_penalty: exponent of the length normalisation.
    Returns:
        list of `Hypothesis(tokens, score, attention (T, S) or None, log_prob, finished)`, sorted by score.

    Introduced in notebook 06.
    """
    if src.dim() != 1:
        raise ValueError(f"beam_search takes one sentence of shape (S,), got {tuple(src.shape)}; for a batch use "
                         "greedy_decode or call beam_search once per sentence")
    if beam_width < 1:
        raise ValueError(f"beam_width must be >= 1, got {beam_width}")
    _check_source_fits(model, src.size(0))
    with eval_mode(model):
        device = model.device
        source_length = src.size(0)
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
            done.append(Hypothesis(ids, _normalised(float(log_prob), len(ids), length_penalty),
                                   None if weights is None else weights.cpu(), float(log_prob), finished))

        for _ in range(cap):
            step = model.decoder.step(prev_tokens, state, memory)
            top_log_probs, parents, next_tokens = beam_step(
                alive_log_probs, forbid_special_tokens(step.log_probs), beam_width - len(done))  # (n,) each
            tokens = torch.cat([alive_tokens[parents], next_tokens.unsqueeze(1)], dim=1)  # (n, t+1)
            weights = _extend_weights(alive_weights, _step_weights(step.weights, source_length), parents)

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
    """Result of `force_decode`.

    log_probs: (T, V) next-token log-probabilities at each step, given the previous output tokens.
    attention: (T, S) or None.

    Introduced in notebook 06.
    """

    log_probs: Tensor
    attention: Tensor | None


@torch.no_grad()
def force_decode(model, src_ids: Tensor, output_ids: Tensor) -> ForcedDecode:
    """Teacher-forced pass over a given output: what the model predicted at each step of it.

    Row t of `log_probs` is the distribution over the t-th output token given the source and output_ids[:t], so
    `log_probs.topk(5)` shows the runner-ups at each step of any hypothesis (greedy, beam, or typed by hand).

    Args:
        model: a `Seq2Seq`.
        src_ids: (S,) source ids ending with EOS.
        output_ids: (T,) output ids (typically ending with EOS; no SOS).
    Returns:
        ForcedDecode(log_probs (T, V), attention (T, S) or None).

    Introduced in notebook 06.
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
    attention = None
    if output.attention is not None:
        attention = output.attention[0, :, :src_ids.size(0)].cpu()  # (T, S)
    return ForcedDecode(output.log_probs[0].cpu(), attention)  # (T, V)
