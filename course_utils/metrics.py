"""Scores for translations (sacreBLEU's BLEU and chrF, and BLEU written out by hand), statistics that help read an
attention map (row entropy, distance from the diagonal), and how well selected words match a gold rationale.
Introduced in notebook 05 (scores), notebook 06 (attention statistics) and notebook 08 (rationales)."""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
from sacrebleu.metrics import BLEU, CHRF

__all__ = ["Scores", "corpus_scores", "NgramCounts", "ngram_precisions", "brevity_penalty", "bleu_by_hand",
           "attention_entropy", "diagonal_deviation", "max_entropy", "RationaleScores", "rationale_scores"]


class Scores(NamedTuple):
    """Corpus scores of translations against one reference each. Introduced in notebook 05."""

    bleu: float  # corpus BLEU, 0..100
    chrf: float  # corpus chrF2, 0..100
    signature: str  # sacreBLEU's of both, "BLEU nrefs:1|case:mixed|... / chrF2 nrefs:1|...": report it with them


def _check_pairs(hypotheses, references) -> tuple[list[str], list[str]]:
    """Both as lists of str, one reference per hypothesis; TypeError or ValueError with the fix otherwise."""
    checked = []
    for name, sentences in (("hypotheses", hypotheses), ("references", references)):
        if isinstance(sentences, str):
            raise TypeError(f"{name} must be a list of sentences, got one string; wrap it in a list: [{sentences!r}]")
        checked.append(list(sentences))
        for i, sentence in enumerate(checked[-1]):
            if not isinstance(sentence, str):
                raise TypeError(f"{name}[{i}] is {type(sentence).__name__}, expected a str; join token lists with "
                                f"' '.join(tokens) (without <eos>) before scoring")
    hypotheses, references = checked
    if len(hypotheses) != len(references):
        raise ValueError(f"got {len(hypotheses)} hypotheses but {len(references)} references; pass exactly one "
                         f"reference per hypothesis, in the same order")
    return hypotheses, references


def corpus_scores(hypotheses: Sequence[str], references: Sequence[str]) -> Scores:
    """Corpus BLEU and chrF with sacreBLEU's defaults (13a tokeniser, exp smoothing; chrF2). Introduced in notebook 05.

    N space-tokenised sentences each (no <sos>/<eos>), in the same order; 13a leaves them unchanged (force=True).
    Raises TypeError for one string or a non-str sentence, ValueError for lists of different lengths or none."""
    hypotheses, references = _check_pairs(hypotheses, references)
    if not hypotheses:
        raise ValueError("no sentences to score; pass at least one (hypothesis, reference) pair")
    bleu, chrf = BLEU(force=True), CHRF()
    bleu_score, chrf_score = bleu.corpus_score(hypotheses, [references]), chrf.corpus_score(hypotheses, [references])
    return Scores(float(bleu_score.score), float(chrf_score.score),
                  f"BLEU {bleu.get_signature()} / chrF2 {chrf.get_signature()}")


class NgramCounts(NamedTuple):
    """BLEU's sufficient statistics of a corpus, summed over its sentences. Introduced in notebook 05."""

    matches: list[int]  # [n-1]: clipped matches of the hypotheses' n-grams
    totals: list[int]  # [n-1]: the hypotheses' n-grams
    hyp_len: int  # tokens of all hypotheses
    ref_len: int  # tokens of all references


def _ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def ngram_precisions(hypotheses: Sequence[str], references: Sequence[str], max_n: int = 4) -> NgramCounts:
    """Clipped n-gram counts, n = 1..max_n, of space-tokenised hypotheses against one reference each, summed over the
    corpus. A hypothesis n-gram matches at most as often as it occurs in its reference. Introduced in notebook 05."""
    hypotheses, references = _check_pairs(hypotheses, references)
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
    """BLEU's brevity penalty min(1, exp(1 - r / c)) for c hypothesis and r reference tokens (0 when c = 0).
    Introduced in notebook 05."""
    return 0.0 if hyp_len <= 0 else min(1.0, math.exp(1 - ref_len / hyp_len))


def bleu_by_hand(hypotheses: Sequence[str], references: Sequence[str], max_n: int = 4) -> float:
    """Corpus BLEU (0..100) written out: BP * exp(mean over n of log p_n), p_n = matches_n / totals_n.

    Equals `corpus_scores`' BLEU on space-tokenised text, "exp" smoothing included: the k-th order without a match
    gets p_n = 1 / (2^k * totals_n). 0 when nothing matches or some order has no n-gram. Introduced in notebook 05."""
    counts = ngram_precisions(hypotheses, references, max_n)
    if not any(counts.matches) or not all(counts.totals):
        return 0.0
    log_precisions, zero_orders = [], 0
    for matched, total in zip(counts.matches, counts.totals, strict=True):
        zero_orders += matched == 0
        log_precisions.append(math.log((matched or 1 / 2 ** zero_orders) / total))  # 0 matches: "exp" smoothing
    return 100 * brevity_penalty(counts.hyp_len, counts.ref_len) * math.exp(sum(log_precisions) / max_n)


def _as_attention_matrix(weights, name: str = "weights") -> torch.Tensor:
    """A (T, S) attention matrix (tensor or array) as a float64 CPU tensor; ValueError with the fix if it is none."""
    if weights is None:
        raise ValueError(f"{name} is None: this model has no attention (attention='none'); pick an attention model")
    matrix = torch.as_tensor(np.asarray(weights.detach().cpu() if torch.is_tensor(weights) else weights),
                             dtype=torch.float64)
    if matrix.dim() != 2:
        raise ValueError(f"{name} must be one sentence's (T, S) matrix, got shape {tuple(matrix.shape)}; "
                         f"index a batch first, e.g. attention[0, :T, :S]")
    if matrix.numel() == 0:
        raise ValueError(f"{name} is empty, shape {tuple(matrix.shape)}; it needs at least one output step "
                         f"and one source token")
    if (matrix < 0).any():
        raise ValueError(f"{name} has negative entries; pass attention weights (after softmax), not scores")
    row_sums = matrix.sum(dim=-1)  # (T,)
    if not torch.allclose(row_sums, torch.ones_like(row_sums), atol=1e-3):
        raise ValueError(f"each row of {name} must sum to 1, got row sums {row_sums.tolist()[:5]}...; pass weights "
                         f"after softmax, sliced to the sentence's real length (no extra output steps)")
    return matrix


def attention_entropy(weights) -> torch.Tensor:
    """Entropy in nats of each row of one sentence's attention: (T, S), rows summing to 1 -> (T,) float32.
    0: one source token; log(S): spread evenly (`max_entropy`). Zero weights count 0. Introduced in notebook 06."""
    matrix = _as_attention_matrix(weights)
    plogp = torch.where(matrix > 0, matrix * matrix.clamp_min(1e-300).log(), torch.zeros_like(matrix))  # (T, S)
    return (0.0 - plogp.sum(dim=-1)).to(torch.float32)  # (T,)  0.0 - x: no -0.0 for one-hot rows


def diagonal_deviation(weights) -> float:
    """Expected distance of one sentence's attention (T, S) from the diagonal, 0..1. Introduced in notebook 06.

    With relative positions p_t = (t + 0.5) / T and q_j = (j + 0.5) / S:
    deviation = (1 / T) * sum_t sum_j weights[t, j] * |q_j - p_t|. 0 for the identity, about 1/3 for uniform
    attention, about 1/2 for the anti-diagonal; a diffuse row counts as far even when centred on the diagonal."""
    matrix = _as_attention_matrix(weights)
    T, S = matrix.shape
    output_pos = (torch.arange(T, dtype=torch.float64) + 0.5) / T  # (T,)
    source_pos = (torch.arange(S, dtype=torch.float64) + 0.5) / S  # (S,)
    distance = (source_pos[None, :] - output_pos[:, None]).abs()  # (T, S)
    return float((matrix * distance).sum(dim=-1).mean())


def max_entropy(num_source_tokens: int) -> float:
    """log(S), the entropy of uniform attention over S source tokens: the top. Introduced in notebook 06."""
    if num_source_tokens < 1:
        raise ValueError(f"num_source_tokens must be at least 1, got {num_source_tokens}")
    return math.log(num_source_tokens)


class RationaleScores(NamedTuple):
    """How the selected words of a batch match the gold rationale. Introduced in notebook 08. Precision and recall
    count only the sentences that have a gold rationale (0.0 when nothing is selected there)."""

    precision: float  # selected gold words / selected words
    recall: float  # selected gold words / gold words
    kept: float  # selected words / words, over all sentences
    sentences: int  # sentences with a gold rationale


def rationale_scores(selected: torch.Tensor, gold: torch.Tensor, mask: torch.Tensor) -> RationaleScores:
    """Precision and recall of selected words against the gold rationale, micro-averaged over words.

    selected, gold, mask: (B, S) bool, mask True on words (padding never counts). Sentences without a gold word count
    for `kept` only. Introduced in notebook 08."""
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
