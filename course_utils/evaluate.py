"""Evaluation: how good a trained model is on a split (loss, perplexity, BLEU, chrF). Introduced in notebook 05."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch

from course_utils.data import Pair, TranslationDataset, collate_batch, length_batches
from course_utils.loss import masked_nll_loss, perplexity
from course_utils.metrics import corpus_scores
from course_utils.runtime import cpu_turn, eval_mode
from course_utils.search import beam_search, greedy_decode
from course_utils.seq2seq import Seq2Seq
from course_utils.vocab import Vocab

__all__ = ["SentenceRow", "Evaluation", "evaluate"]


class SentenceRow(NamedTuple):
    """One line of the per-sentence table. Introduced in notebook 05."""

    source: str
    reference: str
    hypothesis: str


class Evaluation(NamedTuple):
    """`evaluate`'s result. Introduced in notebook 05."""

    loss: float  # mean NLL per target token, teacher forced
    perplexity: float  # exp(loss)
    bleu: float  # sacreBLEU corpus scores of the model's translations, 0..100; nan when bleu=False
    chrf: float
    signature: str  # sacreBLEU's; "" when bleu=False
    rows: list[SentenceRow]  # one per pair; empty when bleu=False

    def table(self, n: int | None = 10, width: int = 40) -> str:
        """The first `n` rows as a plain-text table: source | reference | hypothesis."""
        head = f"{'source':<{width}} | {'reference':<{width}} | hypothesis"
        lines = [f"{row.source[:width]:<{width}} | {row.reference[:width]:<{width}} | {row.hypothesis}"
                 for row in (self.rows if n is None else self.rows[:n])]
        return "\n".join([head, "-" * len(head), *lines])


@torch.no_grad()
def evaluate(model: Seq2Seq, pairs: Sequence[Pair], src_vocab: Vocab, tgt_vocab: Vocab, batch_size: int = 256,
             bleu: bool = True, beam_width: int = 1, length_penalty: float = 1.0) -> Evaluation:
    """Teacher-forced loss and perplexity; with bleu=True also BLEU and chrF of the model's translations.

    Hypotheses are greedy (beam_width=1) or the best beam-search hypothesis; references are the pairs' target text,
    words unknown to tgt_vocab included. The model's mode is restored afterwards. Introduced in notebook 05."""
    if not pairs:
        raise ValueError("evaluate got no pairs; pass a non-empty split such as data.splits.dev")
    dataset = TranslationDataset(pairs, src_vocab, tgt_vocab)
    total_loss, total_tokens = 0.0, 0
    hypotheses: dict[int, str] = {}
    with eval_mode(model):
        for chunk in length_batches([len(dataset[i][0]) for i in range(len(dataset))], batch_size):
            batch = collate_batch([dataset[i] for i in chunk]).to(model.device)
            with cpu_turn(model.device):  # as a training step: a training beside it keeps its share of the cores
                log_probs = model(batch.src, batch.src_lengths, batch.tgt).log_probs  # (B, T, V)
                total_loss += float(masked_nll_loss(log_probs, batch.tgt, reduction="sum"))
            total_tokens += int(batch.tgt_lengths.sum())
            if bleu and beam_width > 1:
                for row, index in enumerate(chunk):
                    source = batch.src[row, :int(batch.src_lengths[row])]  # (S,)
                    with cpu_turn(model.device):
                        best = beam_search(model, source, beam_width=beam_width, length_penalty=length_penalty)[0]
                    hypotheses[index] = " ".join(tgt_vocab.decode(best.tokens))
            elif bleu:
                with cpu_turn(model.device):
                    output = greedy_decode(model, batch.src, batch.src_lengths)
                for row, index in enumerate(chunk):
                    hypotheses[index] = " ".join(tgt_vocab.decode(output.tokens[row, :int(output.lengths[row])]))
    loss = total_loss / max(total_tokens, 1)
    if not bleu:
        return Evaluation(loss, perplexity(loss), math.nan, math.nan, "", [])
    hyps = [hypotheses[i] for i in range(len(pairs))]
    scores = corpus_scores(hyps, [pair.target for pair in pairs])
    rows = [SentenceRow(pair.source, pair.target, hyp) for pair, hyp in zip(pairs, hyps)]
    return Evaluation(loss, perplexity(loss), scores.bleu, scores.chrf, scores.signature, rows)
