"""Scores for translations and statistics for attention maps.

Two kinds of numbers live here:

* corpus-level translation quality with sacreBLEU (BLEU and chrF, with the signature string that says exactly
  how they were computed, so numbers from different runs can be compared honestly);
* two statistics that help read an attention heatmap: how spread out each row is (entropy) and how far the
  whole map is from a monotone, left-to-right alignment (diagonal deviation);
* how well the words a classifier selects match a gold rationale (precision, recall, fraction kept).

BLEU is also written out by hand (clipped n-gram precisions, brevity penalty) so that notebook 05 can check it
against sacreBLEU.

Introduced in notebook 05 (scores), notebook 06 (attention statistics) and notebook 08 (rationales).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
from sacrebleu.metrics import BLEU, CHRF

__all__ = ["Scores", "corpus_scores", "NgramCounts", "ngram_precisions", "brevity_penalty", "bleu_by_hand",
           "attention_entropy", "diagonal_deviation", "max_entropy", "RationaleScores",
           "rationale_scores"]


class Scores(NamedTuple):
    """Corpus scores of a list of translations against one reference each.

    bleu: corpus BLEU, 0..100.  chrf: corpus chrF2, 0..100.
    signature: sacreBLEU's signatures of both metrics, e.g. "BLEU nrefs:1|case:mixed|...|version:2.6.0 /
    chrF2 nrefs:1|...". Report it with the numbers: BLEU computed with another tokeniser is another number.
    Introduced in notebook 05.
    """

    bleu: float
    chrf: float
    signature: str


def _check_sentences(name: str, sentences) -> list[str]:
    if isinstance(sentences, str):
        raise TypeError(f"{name} must be a list of sentences, got one string; wrap it in a list: [{sentences!r}]")
    sentences = list(sentences)
    for i, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise TypeError(
                f"{name}[{i}] is {type(sentence).__name__}, expected a str; join token lists with "
                f"' '.join(tokens) (without <eos>) before scoring"
            )
    return sentences


def corpus_scores(hypotheses: Sequence[str], references: Sequence[str]) -> Scores:
    """Corpus BLEU and chrF of `hypotheses` against `references` (one reference per hypothesis).

    Both are lists of N sentences as plain text (tokens joined by spaces, no <sos>/<eos>), in the same order.
    Uses sacreBLEU's defaults (BLEU: 13a tokeniser, exp smoothing; chrF: character 6-grams, beta 2). The 13a
    tokeniser splits punctuation off words, which the course's normalised text ("i m cold .") already has, so it
    passes unchanged. Both sides are tokenised the same way on purpose, so sacreBLEU's "you forgot to detokenize"
    warning is switched off (force). Returns Scores(bleu, chrf, signature); raises TypeError for a single string
    or non-string sentences and ValueError for lists of different lengths or no sentences.
    Introduced in notebook 05.
    """
    hypotheses = _check_sentences("hypotheses", hypotheses)
    references = _check_sentences("references", references)
    if len(hypotheses) != len(references):
        raise ValueError(
            f"got {len(hypotheses)} hypotheses but {len(references)} references; pass exactly one reference "
            f"per hypothesis, in the same order"
        )
    if not hypotheses:
        raise ValueError("no sentences to score; pass at least one (hypothesis, reference) pair")
    bleu, chrf = BLEU(force=True), CHRF()
    bleu_score = bleu.corpus_score(hypotheses, [references])
    chrf_score = chrf.corpus_score(hypotheses, [references])
    signature = f"BLEU {bleu.get_signature()} / chrF2 {chrf.get_signature()}"
    return Scores(bleu=float(bleu_score.score), chrf=float(chrf_score.score), signature=signature)


class NgramCounts(NamedTuple):
    """BLEU's sufficient statistics of a corpus, summed over its sentences. Introduced in notebook 05.

    matches[n-1]: clipped matches of the hypotheses' n-grams (each n-gram counted at most as often as it occurs in
    the reference); totals[n-1]: the hypotheses' n-grams; hyp_len, ref_len: tokens of all hypotheses and references.
    """

    matches: list[int]
    totals: list[int]
    hyp_len: int
    ref_len: int


def _ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def ngram_precisions(hypotheses: Sequence[str], references: Sequence[str], max_n: int = 4) -> NgramCounts:
    """Clipped ("modified") n-gram counts of `hypotheses` against one reference each, for n = 1..max_n.

    Both are lists of N tokenised sentences (tokens separated by spaces, as the course's normalised text; sacreBLEU's
    13a tokeniser leaves such text unchanged). A hypothesis n-gram counts as a match at most as many times as it
    occurs in its reference: "the the the" against "the cat" matches one unigram of three. The counts are summed
    over the corpus BEFORE any division (corpus BLEU, not an average of sentence scores).
    Returns NgramCounts(matches, totals, hyp_len, ref_len). Introduced in notebook 05.
    """
    hypotheses = _check_sentences("hypotheses", hypotheses)
    references = _check_sentences("references", references)
    if len(hypotheses) != len(references):
        raise ValueError(f"got {len(hypotheses)} hypotheses but {len(references)} references; pass exactly one "
                         f"reference per hypothesis, in the same order")
    if max_n < 1:
        raise ValueError(f"max_n must be at least 1 (BLEU uses 4), got {max_n}")
    matches, totals, hyp_len, ref_len = [0] * max_n, [0] * max_n, 0, 0
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        hyp, ref = hypothesis.split(), reference.split()
        hyp_len, ref_len = hyp_len + len(hyp), ref_len + len(ref)
        for n in range(1, max_n + 1):
            hyp_counts, ref_counts = _ngrams(hyp, n), _ngrams(ref, n)
            matches[n - 1] += sum(min(count, ref_counts[gram]) for gram, count in hyp_counts.items())  # clipped
            totals[n - 1] += sum(hyp_counts.values())
    return NgramCounts(matches, totals, hyp_len, ref_len)


def brevity_penalty(hyp_len: int, ref_len: int) -> float:
    """BLEU's brevity penalty BP = min(1, exp(1 - r / c)) for c hypothesis and r reference tokens (0 when c = 0).

    Precision alone rewards saying little ("i ." scores p1 = 1 against "i m cold ."); BP punishes a corpus of
    hypotheses shorter than its references, and never rewards a longer one. Introduced in notebook 05.
    """
    if hyp_len <= 0:
        return 0.0
    return min(1.0, math.exp(1 - ref_len / hyp_len))


def bleu_by_hand(hypotheses: Sequence[str], references: Sequence[str], max_n: int = 4) -> float:
    """Corpus BLEU (0..100) written out: BP * exp(mean over n of log p_n), p_n = matches_n / totals_n.

    Equal to sacreBLEU's default corpus BLEU (corpus_scores) on tokenised text that its 13a tokeniser leaves
    unchanged, including its default "exp" smoothing: an order n with no match at all would make log p_n = -inf,
    so the k-th such order gets p_n = 1 / (2^k * totals_n) instead. No match of any order, or no n-grams of some
    order in the whole corpus: 0. Introduced in notebook 05.
    """
    counts = ngram_precisions(hypotheses, references, max_n)
    if not any(counts.matches) or not all(counts.totals):
        return 0.0
    log_precisions, zero_orders = [], 0
    for matched, total in zip(counts.matches, counts.totals, strict=True):
        if matched == 0:
            zero_orders += 1
            matched = 1 / 2 ** zero_orders  # sacreBLEU's "exp" smoothing
        log_precisions.append(math.log(matched / total))
    return 100 * brevity_penalty(counts.hyp_len, counts.ref_len) * math.exp(sum(log_precisions) / max_n)


def _as_attention_matrix(weights, name: str = "weights") -> torch.Tensor:
    """Validate a (T, S) attention matrix (tensor or array) and return it as a float64 CPU tensor."""
    if weights is None:
        raise ValueError(f"{name} is None: this model has no attention (attention='none'); pick an attention model")
    matrix = torch.as_tensor(np.asarray(weights.detach().cpu() if torch.is_tensor(weights) else weights),
                             dtype=torch.float64)
    if matrix.dim() != 2:
        raise ValueError(
            f"{name} must be one sentence's (T, S) matrix, got shape {tuple(matrix.shape)}; "
            f"index a batch first, e.g. attention[0, :T, :S]"
        )
    if matrix.numel() == 0:
        raise ValueError(f"{name} is empty, shape {tuple(matrix.shape)}; it needs at least one output step "
                         f"and one source token")
    if (matrix < 0).any():
        raise ValueError(f"{name} has negative entries; pass attention weights (after softmax), not scores")
    row_sums = matrix.sum(dim=-1)  # (T,)
    if not torch.allclose(row_sums, torch.ones_like(row_sums), atol=1e-3):
        raise ValueError(
            f"each row of {name} must sum to 1, got row sums {row_sums.tolist()[:5]}...; pass weights after "
            f"softmax, sliced to the sentence's real length (no extra output steps)"
        )
    return matrix


def attention_entropy(weights) -> torch.Tensor:
    """Entropy (in nats) of each output step's attention distribution.

    weights: (T, S) one sentence's attention, rows summing to 1 (tensor or array).
    Returns a (T,) float tensor. 0 means the step looks at exactly one source token; log(S) means it spreads
    evenly over all S tokens (it learnt nothing about where to look). Zero weights (pads) contribute 0.
    Introduced in notebook 06.
    """
    matrix = _as_attention_matrix(weights)
    plogp = torch.where(matrix > 0, matrix * matrix.clamp_min(1e-300).log(), torch.zeros_like(matrix))  # (T, S)
    return (0.0 - plogp.sum(dim=-1)).to(torch.float32)  # (T,)  0.0 - x: no -0.0 for one-hot rows


def diagonal_deviation(weights) -> float:
    """How far an attention map is from a monotone, diagonal alignment: 0 on the diagonal, up to 1.

    weights: (T, S) one sentence's attention, rows summing to 1 (tensor or array).

    Read output step t and source token j as relative positions in the sentence, taking cell centres:
    p_t = (t + 0.5) / T and q_j = (j + 0.5) / S. A translation that keeps the word order (typical of the short
    "je suis ..." -> "i am ..." pairs) looks at q close to p at every step: the diagonal of the heatmap. This
    returns the expected distance from it, averaged over steps:

        deviation = (1 / T) * sum_t sum_j weights[t, j] * |q_j - p_t|

    0 for an identity map (S == T); small (under 0.1) for a monotone map of slightly different lengths;
    about 1/3 for uniform attention (it learnt nothing about where to look); about 1/2 for the anti-diagonal
    (the sentence read backwards); at most 1. A diffuse row counts as far from the diagonal even
    if its mass is centred on it, which a "distance of the expected position" would hide.
    Returns a Python float. Introduced in notebook 06.
    """
    matrix = _as_attention_matrix(weights)
    T, S = matrix.shape
    output_pos = (torch.arange(T, dtype=torch.float64) + 0.5) / T  # (T,)
    source_pos = (torch.arange(S, dtype=torch.float64) + 0.5) / S  # (S,)
    distance = (source_pos[None, :] - output_pos[:, None]).abs()  # (T, S)
    return float((matrix * distance).sum(dim=-1).mean())


def max_entropy(num_source_tokens: int) -> float:
    """The entropy of uniform attention over `num_source_tokens` tokens, log(S): the top of the entropy scale.

    Introduced in notebook 06.
    """
    if num_source_tokens < 1:
        raise ValueError(f"num_source_tokens must be at least 1, got {num_source_tokens}")
    return math.log(num_source_tokens)


class RationaleScores(NamedTuple):
    """How the selected words of a batch match the gold rationale. Introduced in notebook 08.

    precision: selected gold words / selected words; recall: selected gold words / gold words, both counted over
    the sentences that have a gold rationale (0.0 when nothing is selected there). kept: selected words / words,
    over all sentences. sentences: how many sentences have a gold rationale.
    """

    precision: float
    recall: float
    kept: float
    sentences: int


def rationale_scores(selected: torch.Tensor, gold: torch.Tensor, mask: torch.Tensor) -> RationaleScores:
    """Precision and recall of a selection of words against the gold rationale, micro-averaged over words.

    selected, gold, mask: (B, S) bool; mask True on words (padding never counts, even if selected).
    Sentences without a gold word (gold all False) count for `kept` only: there precision and recall are undefined.
    Introduced in notebook 08.
    """
    if not (selected.shape == gold.shape == mask.shape) or selected.dim() != 2:
        raise ValueError(f"selected, gold and mask must be (B, S) of one shape, got {tuple(selected.shape)}, "
                         f"{tuple(gold.shape)} and {tuple(mask.shape)}")
    selected, gold, mask = selected.bool() & mask.bool(), gold.bool() & mask.bool(), mask.bool()
    has_gold = gold.any(dim=1, keepdim=True)  # (B, 1)
    chosen = selected & has_gold  # (B, S): selections in sentences with a gold rationale
    hits = int((chosen & gold).sum())
    precision = hits / int(chosen.sum()) if chosen.any() else 0.0
    recall = hits / int(gold.sum()) if gold.any() else 0.0
    kept = int(selected.sum()) / max(int(mask.sum()), 1)
    return RationaleScores(precision, recall, kept, int(has_gold.sum()))
