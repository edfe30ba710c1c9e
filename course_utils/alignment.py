"""Word alignment with a gold standard: a toy French-like -> English grammar whose rules are known traps for attention
as an aligner (swapped adjectives, one word for two, ne ... pas, a deleted and an inserted word), the alignment error
rate, IBM Model 1, and links read off a (T, S) matrix of weights. A link (t, s) joins target word t (a row) to source
word s (a column), 0-based, <eos> excluded; sure links S ⊆ possible links P. Introduced in notebook 10."""
from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from course_utils.data import CourseData, Pair, course_data_from_pairs
from course_utils.explanation import EosMaskedSeq2Seq, attributions, forced_batch
from course_utils.seq2seq import ModelConfig, Seq2Seq

__all__ = ["Link", "AlignedPair", "toy_pairs", "toy_course_data", "gold_by_pair", "AlignmentScores", "aer",
           "corpus_aer", "argmax_links", "shifted_rows", "word_block", "ibm_model1", "toy_model", "ALIGNERS",
           "model_links", "alignment_scores", "ibm1_scores", "plot_alignment"]

Link = tuple[int, int]  # (target word t, source word s), 0-based, <eos> excluded

_NOUNS = {"chat": ("cat", "m"), "chien": ("dog", "m"), "livre": ("book", "m"), "cheval": ("horse", "m"),
         "bateau": ("boat", "m"), "garcon": ("boy", "m"), "maison": ("house", "f"), "fleur": ("flower", "f"),
         "voiture": ("car", "f"), "pomme": ("apple", "f"), "table": ("table", "f"), "lettre": ("letter", "f")}
_ADJECTIVES = {  # masculine -> (feminine, English, goes before the noun in French)
    "rouge": ("rouge", "red", False), "noir": ("noire", "black", False), "vert": ("verte", "green", False),
    "petit": ("petite", "small", True), "grand": ("grande", "big", True), "vieux": ("vieille", "old", True)}
_VERBS = {  # present -> (future, English 3rd person, English base form: one or two words)
    "voit": ("verra", "sees", "see"), "mange": ("mangera", "eats", "eat"), "aime": ("aimera", "likes", "like"),
    "prend": ("prendra", "takes", "take"), "cherche": ("cherchera", "looks for", "look for")}
_REFLEXIVE_VERBS = {"lave": ("lavera", "washes", "wash"), "cache": ("cachera", "hides", "hide")}  # "se lave"


class AlignedPair(NamedTuple):
    """A sentence pair with its gold alignment."""
    source: str  # French-like words joined by spaces
    target: str  # English-like words
    sure: frozenset[Link]  # S: links every annotator would mark
    possible: frozenset[Link]  # P ⊇ S: links an annotator may mark


class _Builder:
    """Collects words on both sides and links by global position (each unit adds local links)."""
    def __init__(self):
        self.fr, self.en, self.sure, self.possible = [], [], set(), set()  # words; links (t, s)

    def add(self, fr: list[str], en: list[str], sure=(), possible=()) -> None:
        """Append a unit; `sure`/`possible` are local (en index, fr index) links."""
        for links, into in ((sure, self.sure), (possible, self.possible)):
            into.update((len(self.en) + t, len(self.fr) + s) for t, s in links)
        self.fr += fr
        self.en += en

    def pair(self) -> AlignedPair:
        return AlignedPair(" ".join(self.fr), " ".join(self.en), frozenset(self.sure),
                           frozenset(self.sure | self.possible))


def _noun_phrase(rng: random.Random, out: _Builder) -> None:
    noun = rng.choice(sorted(_NOUNS))
    english, gender = _NOUNS[noun]
    definite = rng.random() < 0.6
    det_fr = ("le" if gender == "m" else "la") if definite else ("un" if gender == "m" else "une")
    det_en = "the" if definite else "a"
    if rng.random() < 0.5:  # no adjective
        out.add([det_fr, noun], [det_en, english], sure=[(0, 0), (1, 1)])
        return
    adjective = rng.choice(sorted(_ADJECTIVES))
    feminine, adj_en, before = _ADJECTIVES[adjective]
    adj_fr = feminine if gender == "f" else adjective
    if before:  # le petit chat -> the small cat: same order
        out.add([det_fr, adj_fr, noun], [det_en, adj_en, english], sure=[(0, 0), (1, 1), (2, 2)])
    else:  # la voiture rouge -> the red car: swapped
        out.add([det_fr, noun, adj_fr], [det_en, adj_en, english], sure=[(0, 0), (1, 2), (2, 1)])


def _verb_group(rng: random.Random, out: _Builder, reflexive: bool) -> None:
    verb = rng.choice(sorted(_REFLEXIVE_VERBS if reflexive else _VERBS))
    future_fr, third_en, base_en = (_REFLEXIVE_VERBS if reflexive else _VERBS)[verb]
    future, negated = rng.random() < 0.35, rng.random() < 0.35
    fr = (["ne"] if negated else []) + (["se"] if reflexive else []) + [future_fr if future else verb]
    fr += ["pas"] if negated else []
    v = fr.index(future_fr if future else verb)  # the verb's position in the group
    if future:  # verra -> will see; ne verra pas -> will not see
        en = ["will"] + (["not"] if negated else []) + base_en.split()
        sure = [(0, v)] + [(t, v) for t in range(len(en) - len(base_en.split()), len(en))]
    elif negated:  # ne voit pas -> does not see: "does" is inserted
        en = ["does", "not"] + base_en.split()
        sure = [(t, v) for t in range(2, len(en))]
    else:
        en = third_en.split()
        sure = [(t, v) for t in range(len(en))]
    possible = []
    if negated:
        not_at = en.index("not")
        sure.append((not_at, len(fr) - 1))  # not - pas: sure
        possible.append((not_at, 0))  # not - ne: possible
        if en[0] == "does":
            possible.append((0, v))  # does - the verb: possible only
    out.add(fr, en, sure=sure, possible=possible)


def _toy_pair(rng: random.Random) -> AlignedPair:
    """One random toy sentence (subject, verb group, object unless reflexive, full stop) with its gold alignment."""
    out = _Builder()
    _noun_phrase(rng, out)
    reflexive = rng.random() < 0.25
    _verb_group(rng, out, reflexive)
    if not reflexive:
        _noun_phrase(rng, out)
    out.add(["."], ["."], sure=[(0, 0)])
    return out.pair()


def toy_pairs(count: int, seed: int = 0) -> list[AlignedPair]:
    """`count` distinct toy sentences (distinct sources; the target is a function of the source), seeded."""
    rng, seen, pairs = random.Random(seed), set(), []
    for _ in range(50 * count):
        pair = _toy_pair(rng)
        if pair.source not in seen:
            seen.add(pair.source)
            pairs.append(pair)
            if len(pairs) == count:
                return pairs
    raise ValueError(f"the toy grammar gave only {len(pairs)} distinct sentences; ask for fewer than {count}")


def toy_course_data(pairs: Sequence[AlignedPair], seed: int = 0) -> CourseData:
    """The toy pairs as a CourseData (split 80/10/10 by source, vocabularies from train), ready for `train`."""
    return course_data_from_pairs([Pair(p.source, p.target) for p in pairs], seed=seed)


def gold_by_pair(pairs: Iterable[AlignedPair]) -> dict[Pair, AlignedPair]:
    """Look up the gold alignment of a CourseData split's Pair."""
    return {Pair(p.source, p.target): p for p in pairs}


class AlignmentScores(NamedTuple):
    """Och & Ney's measures of predicted links A against sure S and possible P."""
    precision: float  # |A∩P| / |A|
    recall: float  # |A∩S| / |S|
    aer: float  # 1 - (|A∩S| + |A∩P|) / (|A| + |S|)


def _counts(predicted: Iterable[Link], sure: Iterable[Link], possible: Iterable[Link]) -> tuple[int, int, int, int]:
    a, s, p = set(predicted), set(sure), set(possible)
    if not s <= p:
        raise ValueError(f"sure links must be possible too (S ⊆ P); {sorted(s - p)} are not: pass P including S")
    return len(a & s), len(a & p), len(a), len(s)


def _scores(a_s: int, a_p: int, a: int, s: int) -> AlignmentScores:
    if a + s == 0:
        raise ValueError("no predicted and no sure links: AER is undefined; pass at least one sentence with links")
    return AlignmentScores(a_p / a if a else 0.0, a_s / s if s else 0.0, 1 - (a_s + a_p) / (a + s))


def aer(predicted: Iterable[Link], sure: Iterable[Link], possible: Iterable[Link]) -> float:
    """Alignment error rate of one sentence (Och & Ney 2003): links are (t, s) pairs, S ⊆ P; 0 is perfect."""
    return _scores(*_counts(predicted, sure, possible)).aer


def corpus_aer(predicted: Sequence[Iterable[Link]], gold: Sequence[AlignedPair]) -> AlignmentScores:
    """Precision, recall and AER over a corpus: the counts are summed over sentences first (as Och & Ney)."""
    if len(predicted) != len(gold):
        raise ValueError(f"got {len(predicted)} predicted alignments for {len(gold)} gold ones: pass one per pair")
    totals = [0, 0, 0, 0]
    for links, pair in zip(predicted, gold):
        totals = [x + y for x, y in zip(totals, _counts(links, pair.sure, pair.possible))]
    return _scores(*totals)


def _matrix(weights: Tensor) -> Tensor:
    if not isinstance(weights, Tensor) or weights.dim() != 2:
        raise ValueError(f"weights must be a (T, S) tensor, got {getattr(weights, 'shape', type(weights))}")
    return weights.detach().float().cpu()


def argmax_links(weights: Tensor) -> set[Link]:
    """weights (T, S) -> one link per row: (t, argmax_s weights[t, s])."""
    return {(t, int(s)) for t, s in enumerate(_matrix(weights).argmax(dim=1))}  # argmax (T,)


def _threshold_links(weights: Tensor, threshold: float) -> set[Link]:
    """weights (T, S) -> every (t, s) with weights[t, s] >= threshold (a row may get none, or several)."""
    rows, cols = torch.nonzero(_matrix(weights) >= threshold, as_tuple=True)
    return {(int(t), int(s)) for t, s in zip(rows, cols)}


def shifted_rows(weights: Tensor) -> Tensor:
    """Chen et al. (2020): the weights of step t + 1 (which reads output word t as input) align word t.
    weights (T + 1, S) with the <eos> step as its last row -> (T, S): rows 1..T."""
    matrix = _matrix(weights)
    if matrix.shape[0] < 2:
        raise ValueError("shifting needs the weights of at least two steps (a word and the <eos> step)")
    return matrix[1:]  # (T, S)


def word_block(weights: Tensor, target_words: int, source_words: int) -> Tensor:
    """The words-by-words block of a decoder's (T + 1, S + 1) weights (<eos> row and column dropped), renormalised
    per row -> (T, S)."""
    block = _matrix(weights)[:target_words, :source_words]  # (T, S)
    return block / block.sum(dim=1, keepdim=True).clamp_min(1e-12)


_NULL = "<null>"  # the empty source word of IBM Model 1: target words aligned to it stay unaligned


def ibm_model1(sentences: Sequence[tuple[Sequence[str], Sequence[str]]], iterations: int = 10,
               null: bool = True) -> dict[tuple[str, str], float]:
    """IBM Model 1 by EM (Brown et al. 1993): (source words, target words) pairs -> t[(e, f)] = t(e | f), from uniform;
    each iteration c(e, f) += t(e|f) / sum_f' t(e|f') (f' incl. NULL), t(e | f) = c(e, f) / sum_e c(e, f)."""
    if iterations < 0 or not sentences:
        raise ValueError("ibm_model1 needs at least one sentence pair and iterations >= 0")
    pairs = [(([_NULL] if null else []) + list(f), list(e)) for f, e in sentences]
    uniform = 1.0 / len({word for _, e in pairs for word in e})
    table: dict[tuple[str, str], float] = defaultdict(lambda: uniform)
    for _ in range(iterations):
        counts, totals = defaultdict(float), defaultdict(float)  # c(e, f) and its sum over e, per f
        for f_words, e_words in pairs:
            for e in e_words:
                norm = sum(table[e, f] for f in f_words)
                for f in f_words:
                    share = table[e, f] / norm
                    counts[e, f] += share
                    totals[f] += share
        table = defaultdict(float, {(e, f): c / totals[f] for (e, f), c in counts.items()})
    return dict(table) if iterations else {(e, f): uniform for f_words, e_words in pairs
                                           for e in e_words for f in f_words}


def _ibm1_links(table: dict[tuple[str, str], float], source: Sequence[str], target: Sequence[str]) -> set[Link]:
    """Each target word to its most probable source word under t(e | f); no link when NULL wins (it wins ties)."""
    links = set()
    for t, e in enumerate(target):
        p = [table.get((e, f), 0.0) for f in (_NULL, *source)]  # max() takes the first: NULL, then the first word
        if (best := max(range(len(p)), key=p.__getitem__)) > 0:
            links.add((t, best - 1))
    return links


def toy_model(kind: str, data: CourseData, mask_eos: bool = False, embedding_size: int = 32,
              hidden_size: int = 64) -> Seq2Seq:
    """A small Seq2Seq with attention `kind` for the toy task (a minute or two of CPU training); `mask_eos` builds
    the EosMaskedSeq2Seq remedy. Initialise under torch.manual_seed for a seeded model."""
    config = ModelConfig(len(data.src_vocab), len(data.tgt_vocab), attention=kind, embedding_size=embedding_size,
                         hidden_size=hidden_size, location_slots=16)
    return (EosMaskedSeq2Seq if mask_eos else Seq2Seq)(config)


ALIGNERS = ("attention argmax", "attention threshold", "shifted attention", "saliency", "integrated gradients")


def model_links(model: Seq2Seq, src_vocab, tgt_vocab, pair: AlignedPair, threshold: float = 0.3,
                ig_steps: int = 16) -> dict[str, set[Link]]:
    """Every ALIGNERS method's links for one gold pair, force-decoding its target -> {method: links}."""
    src_ids, out_ids = src_vocab.encode(pair.source), tgt_vocab.encode(pair.target)  # (S + 1,), (T + 1,)
    S, T = len(src_ids) - 1, len(out_ids) - 1
    weights = forced_batch(model, [src_ids], [out_ids]).attention[0]  # (T + 1, S + 1)
    block = word_block(weights, T, S)  # (T, S)
    return {"attention argmax": argmax_links(block),
            "attention threshold": _threshold_links(block, threshold),
            "shifted attention": argmax_links(word_block(shifted_rows(weights), T, S)),
            "saliency": argmax_links(attributions(model, src_ids, out_ids)[:T, :S]),
            "integrated gradients": argmax_links(attributions(model, src_ids, out_ids, ig_steps)[:T, :S])}


def alignment_scores(model: Seq2Seq, data: CourseData, gold: Sequence[AlignedPair], threshold: float = 0.3,
                     ig_steps: int = 16) -> dict[str, AlignmentScores]:
    """Corpus precision, recall and AER of every ALIGNERS method of `model` on the `gold` pairs."""
    links = [model_links(model, data.src_vocab, data.tgt_vocab, pair, threshold, ig_steps) for pair in gold]
    return {method: corpus_aer([row[method] for row in links], gold) for method in ALIGNERS}


def ibm1_scores(train: Sequence[AlignedPair], gold: Sequence[AlignedPair], iterations: int = 10) -> AlignmentScores:
    """IBM Model 1 (with NULL) trained, without links, on the `train` and `gold` sentences, scored on `gold`."""
    table = ibm_model1([(p.source.split(), p.target.split()) for p in [*train, *gold]], iterations)
    return corpus_aer([_ibm1_links(table, p.source.split(), p.target.split()) for p in gold], gold)


def plot_alignment(ax, weights: Tensor, source_words: Sequence[str], target_words: Sequence[str],
                   gold: AlignedPair | None = None, links: Iterable[Link] = (), title: str = ""):
    """Draw weights (T, S) over words on matplotlib `ax`, gold sure links as orange squares, possible ones as
    orange circles, `links` (a method's) as red crosses. Returns the image."""
    image = ax.imshow(_matrix(weights).numpy(), cmap="Blues", vmin=0)
    ax.set_xticks(range(len(source_words)), source_words, rotation=60, ha="right")
    ax.set_yticks(range(len(target_words)), target_words)
    if gold is not None:
        for marker, found in (("s", gold.sure), ("o", gold.possible - gold.sure)):
            if found:
                t, s = zip(*found)
                ax.scatter(s, t, marker=marker, s=90, facecolors="none", edgecolors="orange", linewidths=1.5)
    if links:
        t, s = zip(*links)
        ax.scatter(s, t, marker="x", s=30, color="red")
    ax.set_title(title, fontsize=9)
    return image
