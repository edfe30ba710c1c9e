"""Does attention explain? Probes to check a trained translator's attention weights against: gradients, leave-one-out,
erasure, replaced weights, attention sinks. Introduced in notebook 10."""
from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor, nn

from course_utils.data import lengths_to_mask, pad_ids
from course_utils.decoder import Decoder, DecoderState, Memory, StepOutput
from course_utils.metrics import corpus_scores
from course_utils.runtime import eval_mode
from course_utils.seq2seq import Seq2Seq, Seq2SeqOutput, Translator, teacher_forced_input
from course_utils.translate import translate_batch
from course_utils.vocab import EOS_TOKEN

__all__ = ["forced_batch", "attributions", "kendall_tau", "Erasure", "erasure_effects",
           "REPLACEMENTS", "sink_mass", "EosMaskedSeq2Seq", "rank_agreements", "bleu_with_attention", "mean_sink_mass"]


class _ForcedBatch(NamedTuple):
    """Teacher-forced results, one entry per sentence."""
    token_log_probs: list[Tensor]  # (T_i,) log p(y_t | y_<t, x) of each output token
    attention: list[Tensor | None]  # (T_i, S_i) weights, or None for a model without attention


@torch.no_grad()
def forced_batch(model: Translator, sources: Sequence[Sequence[int]], outputs: Sequence[Sequence[int]],
                 batch_size: int = 128) -> _ForcedBatch:
    """Force-decode (source ids, output ids) pairs, each ending with EOS, in padded batches -> per sentence the
    log-probs (T_i,) and attention (T_i, S_i)."""
    if len(sources) != len(outputs):
        raise ValueError(f"got {len(sources)} sources and {len(outputs)} outputs: pass one output per source")
    logps, weights = [], []
    with eval_mode(model):
        for start in range(0, len(sources), batch_size):
            src, src_lengths = pad_ids([torch.tensor(s) for s in sources[start:start + batch_size]])  # (B, S)
            tgt, tgt_lengths = pad_ids([torch.tensor(o) for o in outputs[start:start + batch_size]])  # (B, T)
            out = model(src.to(model.device), src_lengths, tgt.to(model.device))
            picked = out.log_probs.gather(2, tgt.to(model.device).unsqueeze(2)).squeeze(2).cpu()  # (B, T)
            for row, (s_len, t_len) in enumerate(zip(src_lengths.tolist(), tgt_lengths.tolist())):
                logps.append(picked[row, :t_len])
                weights.append(None if out.attention is None else out.attention[row, :t_len, :s_len].cpu())
    return _ForcedBatch(logps, weights)


def attributions(model: Seq2Seq, src_ids: Sequence[int], out_ids: Sequence[int], steps: int = 0) -> Tensor:
    """How much each source position matters to each output token: src_ids (S,), out_ids (T,) -> (T, S) >= 0. steps 0:
    saliency |d log p(y_t) / d e_s|; steps m > 0: integrated gradients, |sum_E e_s * mean_k grad at (k / m) e|."""
    rows = len(out_ids) * max(steps, 1)
    src = torch.tensor(list(src_ids), device=model.device).repeat(rows, 1)  # (R, S)
    tgt = torch.tensor(list(out_ids), device=model.device).repeat(rows, 1)  # (R, T)
    embedded = model.encoder.embedding(src[:1]).detach()  # (1, S, E)
    alphas = torch.arange(1, steps + 1, device=model.device) / steps if steps else torch.ones(1, device=model.device)
    scaled = (alphas.repeat(len(out_ids)).view(rows, 1, 1) * embedded).requires_grad_(True)  # (R, S, E)
    handle = model.encoder.embedding.register_forward_hook(lambda module, inputs, output: scaled)
    try:
        with eval_mode(model):
            out = model(src, torch.full((rows,), len(src_ids)), tgt)  # log_probs (R, T, V)
    finally:
        handle.remove()
    step_of_row = torch.arange(len(out_ids), device=model.device).repeat_interleave(max(steps, 1))  # (R,)
    picked = out.log_probs[torch.arange(rows), step_of_row, tgt[0, step_of_row]]  # (R,) log p(y_t) of each row
    (grad,) = torch.autograd.grad(picked.sum(), scaled)  # (R, S, E)
    grad = grad.view(len(out_ids), max(steps, 1), len(src_ids), -1)  # (T, m, S, E)
    if not steps:
        return grad[:, 0].norm(dim=-1).cpu()  # (T, S)
    return (embedded[0] * grad.mean(dim=1)).sum(dim=-1).abs().cpu()  # (T, S)


def _leave_one_out(model: Translator, src_ids: Sequence[int], out_ids: Sequence[int]) -> Tensor:
    """The drop in log p(y_t) when source word s is deleted (EOS kept): src_ids (S,), out_ids (T,) -> (T, S - 1)."""
    if not (words := list(src_ids[:-1])):
        raise ValueError("_leave_one_out needs a source with at least one word before EOS")
    erased = [words[:s] + words[s + 1:] + [src_ids[-1]] for s in range(len(words))]
    full, *less = forced_batch(model, [list(src_ids)] + erased, [list(out_ids)] * (len(words) + 1)).token_log_probs
    return torch.stack([full - logp for logp in less], dim=1)  # (T, S - 1)


def kendall_tau(x: Tensor, y: Tensor) -> float:
    """Kendall's tau-b between two score vectors of one length; nan when undefined."""
    x, y = torch.as_tensor(x, dtype=torch.float64).flatten(), torch.as_tensor(y, dtype=torch.float64).flatten()
    if x.shape != y.shape:
        raise ValueError(f"kendall_tau needs two vectors of one length, got {tuple(x.shape)} and {tuple(y.shape)}")
    dx, dy = (torch.sign(v.unsqueeze(0) - v.unsqueeze(1)).triu(1) for v in (x, y))  # (n, n) signs of the pairs i < j
    denominator = math.sqrt(float((dx != 0).sum()) * float((dy != 0).sum()))
    return float((dx * dy).sum()) / denominator if denominator else float("nan")


def _rank_agreement(attention: Tensor, importance: Tensor) -> float:
    """Mean Kendall tau over the rows of attention (T, S) and importance (T, S), nan rows skipped."""
    if attention.shape != importance.shape:
        raise ValueError(f"attention {tuple(attention.shape)} and importance {tuple(importance.shape)} differ: "
                         "drop the <eos> column from both or from neither")
    taus = [tau for a, i in zip(attention, importance) if not math.isnan(tau := kendall_tau(a, i))]
    return sum(taus) / len(taus) if taus else float("nan")


class Erasure(NamedTuple):
    """What deleting one source word did, over the sentences tried."""
    changed: int  # translations that changed
    sentences: int  # sentences tried
    log_prob_drop: float  # mean drop of log P(original output | source) when the word is gone


def _erase_word(words: Sequence[str], position: int) -> str:
    """The sentence without the word at `position`."""
    return " ".join(list(words[:position]) + list(words[position + 1:]))


def _picks(received: Tensor, words: Sequence[str], rng: random.Random) -> dict[str, int] | None:
    """Positions of the most attended, a random and the least attended word (punctuation excluded)."""
    if len(positions := [j for j, word in enumerate(words) if word.isalpha()]) < 2:
        return None
    return {"most attended": max(positions, key=lambda j: float(received[j])), "random": rng.choice(positions),
            "least attended": min(positions, key=lambda j: float(received[j]))}


def erasure_effects(model: Translator, src_vocab, tgt_vocab, sentences: Sequence[str],
                    seed: int = 0) -> dict[str, Erasure]:
    """Delete the most attended (summed over the greedy output's rows), a random and the least attended source word and
    re-translate; sentences of fewer than two words (punctuation aside) are skipped."""
    rng = random.Random(seed)
    chosen = [(t, picks) for t in translate_batch(model, src_vocab, tgt_vocab, sentences)  # (original, picks)
              if (picks := _picks(t.attention[:, :-1].sum(0), t.source_tokens[:-1], rng)) is not None]
    out_ids = [[tgt_vocab[token] for token in t.output_tokens] for t, _ in chosen]
    full = forced_batch(model, [src_vocab.encode(" ".join(t.source_tokens[:-1])) for t, _ in chosen], out_ids)
    effects = {}
    for label in ("most attended", "random", "least attended"):
        erased = [_erase_word(t.source_tokens[:-1], picks[label]) for t, picks in chosen]
        outputs = translate_batch(model, src_vocab, tgt_vocab, erased)
        less = forced_batch(model, [src_vocab.encode(sentence) for sentence in erased], out_ids)
        drops = [float(a.sum() - b.sum()) for a, b in zip(full.token_log_probs, less.token_log_probs)]
        changed = sum(new.text != t.text for new, (t, _) in zip(outputs, chosen))
        effects[label] = Erasure(changed, len(chosen), sum(drops) / max(len(drops), 1))
    return effects


REPLACEMENTS = ("uniform", "frozen")  # what _ReplacedAttention can put in place of the model's weights


class _ReplacedState(NamedTuple):
    """The model's decoder state, and the weights "frozen" keeps: (B, S) after the first step, None before it."""
    inner: DecoderState
    frozen: Tensor | None

    def index_select(self, index: Tensor) -> _ReplacedState:
        return _ReplacedState(self.inner.index_select(index),
                              None if self.frozen is None else self.frozen.index_select(0, index))  # frozen (N, S)


class _ReplacedDecoder(Decoder):
    """A Bahdanau or Luong decoder whose every step attends with `mode` weights, fed through its step's `weights`."""
    def __init__(self, inner: Decoder, mode: str):
        super().__init__()
        self.inner, self.mode = inner, mode
        self.hidden_size, self.key_size, self.output_size = inner.hidden_size, inner.key_size, inner.output_size

    def check_source_length(self, source_length: int) -> None:
        self.inner.check_source_length(source_length)

    def prepare_memory(self, keys: Tensor, mask: Tensor) -> Memory:
        return self.inner.prepare_memory(keys, mask)

    def init_state(self, encoder_final: Tensor) -> _ReplacedState:
        return _ReplacedState(self.inner.init_state(encoder_final), None)

    def step(self, prev_tokens: Tensor, state: _ReplacedState, memory: Memory, weights: Tensor | None = None
             ) -> StepOutput:
        if weights is None:  # uniform: (B, S), 1 / S on real tokens; frozen: None at the first step (the model's own)
            weights = memory.mask.float() / memory.mask.sum(1, keepdim=True) if self.mode == "uniform" else state.frozen
        out = self.inner.step(prev_tokens, state.inner, memory, weights)
        return out._replace(state=_ReplacedState(out.state, out.weights if self.mode == "frozen" else None))


class _ReplacedAttention(nn.Module):
    """`model` (left as it is, Bahdanau or Luong) decoding with `mode` weights at every step: "uniform" gives every
    real source position 1 / S; "frozen" keeps the first step's weights for every later step."""
    def __init__(self, model: Translator, mode: str):
        super().__init__()
        if mode not in REPLACEMENTS:
            raise ValueError(f"unknown replacement {mode!r}: choose one of {', '.join(REPLACEMENTS)}")
        if getattr(model.config, "attention", None) in ("none", "location", "transformer"):
            raise ValueError(f"attention={model.config.attention!r} has no content attention to replace: use a "
                             "Bahdanau or Luong model")
        self.model, self.config, self.mode = model, model.config, mode
        self.decoder = _ReplacedDecoder(model.decoder, mode)

    @property
    def device(self) -> torch.device:
        return self.model.device

    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple[Memory, _ReplacedState]:
        memory, state = self.model.encode(src, src_lengths)
        return memory, _ReplacedState(state, None)

    def forward(self, src: Tensor, src_lengths: Tensor, tgt: Tensor,
                teacher_forcing_ratio: float = 1.0) -> Seq2SeqOutput:
        memory, state = self.encode(src, src_lengths)
        decoded = self.decoder(teacher_forced_input(tgt), state, memory, teacher_forcing_ratio)  # (B, T, V)
        return Seq2SeqOutput(decoded.log_probs, decoded.weights)  # attention (B, T, S)


class _SinkMass(NamedTuple):
    """Mean attention mass per output row on the source's <eos> and on its punctuation."""
    eos: float
    punctuation: float


def sink_mass(attention: Tensor, source_tokens: Sequence[str]) -> _SinkMass:
    """attention (T, S) over `source_tokens` (S, ending with <eos>) -> _SinkMass."""
    if attention.dim() != 2 or attention.shape[1] != (S := len(source_tokens)):
        raise ValueError(f"attention must be (T, S={S}) for these source tokens, got {tuple(attention.shape)}")
    eos = [j for j, token in enumerate(source_tokens) if token == EOS_TOKEN]
    punctuation = [j for j, token in enumerate(source_tokens) if token != EOS_TOKEN and not token.isalnum()]
    return _SinkMass(float(attention[:, eos].sum(1).mean()), float(attention[:, punctuation].sum(1).mean()))


class EosMaskedSeq2Seq(Seq2Seq):
    """A Seq2Seq that never attends to the source's <eos>: a remedy for the attention sink."""
    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple[Memory, object]:
        memory, state = super().encode(src, src_lengths)
        lengths = src_lengths.to(src.device)  # (B,)
        is_eos = lengths_to_mask(lengths, src.shape[1]) & ~lengths_to_mask(lengths - 1, src.shape[1])  # (B, S)
        return memory._replace(mask=memory.mask & ~is_eos), state  # a one-word source keeps its word


def rank_agreements(model: Seq2Seq, src_vocab, tgt_vocab, pairs: Sequence) -> dict[str, float]:
    """Mean Kendall tau between attention, saliency and leave-one-out importance (<eos> left out) on the references."""
    sources, outputs = [src_vocab.encode(p.source) for p in pairs], [tgt_vocab.encode(p.target) for p in pairs]
    sums = {"attention ~ leave-one-out": [], "attention ~ saliency": [], "saliency ~ leave-one-out": []}
    for src, out, weights in zip(sources, outputs, forced_batch(model, sources, outputs).attention):
        if len(src) < 3:  # one word: nothing to rank
            continue
        attention, loo = weights[:, :-1], _leave_one_out(model, src, out)  # (T, S - 1) each
        saliency = attributions(model, src, out)[:, :-1]  # (T, S - 1)
        for key, (a, b) in zip(sums, ((attention, loo), (attention, saliency), (saliency, loo))):
            sums[key].append(_rank_agreement(a, b))
    return {key: sum(values) / len(values) if values else float("nan") for key, values in sums.items()}


def bleu_with_attention(model: Translator, src_vocab, tgt_vocab, pairs: Sequence, mode: str | None = None) -> float:
    """Greedy corpus BLEU with the model's own attention (mode None) or a REPLACEMENTS `mode`."""
    translator = model if mode is None else _ReplacedAttention(model, mode)
    outputs = translate_batch(translator, src_vocab, tgt_vocab, [p.source for p in pairs])
    return corpus_scores([o.text for o in outputs], [p.target for p in pairs]).bleu


def mean_sink_mass(model: Translator, src_vocab, tgt_vocab, pairs: Sequence) -> _SinkMass:
    """_SinkMass averaged over `pairs`, each force-decoded on its reference."""
    sources, outputs = [src_vocab.encode(p.source) for p in pairs], [tgt_vocab.encode(p.target) for p in pairs]
    masses = [sink_mass(weights, p.source.split() + [EOS_TOKEN])
              for p, weights in zip(pairs, forced_batch(model, sources, outputs).attention)]
    return _SinkMass(*(sum(values) / len(values) for values in zip(*masses)))
