"""Attention for classification: predict the English subject (i, he, she, you, we, they) of a French sentence; its
subject pronoun (je, il, elle, ...) is the gold rationale a selection should keep. Introduced in notebook 08."""
from __future__ import annotations

import html
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

from course_utils.attention import DotAttention, masked_softmax
from course_utils.data import Pair
from course_utils.metrics import RationaleScores, rationale_scores
from course_utils.runtime import cpu_turn, eval_mode
from course_utils.vocab import PAD_ID, UNK_ID, Vocab

__all__ = ["SUBJECTS", "subject_label", "gold_rationale", "SubjectBatch", "subject_batch", "ClassifierOutput",
           "AttentionClassifier", "SoftAttentionClassifier", "BagOfWordsClassifier",
           "ClassifierConfig", "NOTEBOOK_CLASSIFIERS", "build_classifier", "train_classifier", "ClassifierScores",
           "evaluate_classifier", "highlight_html"]

SUBJECTS = ("i", "he", "she", "you", "we", "they")  # the classes, in label order
_FRENCH_SUBJECTS = {"i": ("je", "j"), "he": ("il",), "she": ("elle",), "you": ("tu", "vous", "t"),
                   "we": ("nous", "on"), "they": ("ils", "elles")}  # normalised: "j'ai" -> "j ai", "t'es" -> "t es"


def subject_label(english: str) -> int:
    """The class id of a normalised English sentence from its first word ("you re ..." -> SUBJECTS.index("you"))."""
    if (first := english.split(" ")[0]) not in SUBJECTS:
        raise ValueError(f"{english!r} does not start with a subject of {SUBJECTS}; filter with data.ENG_PREFIXES")
    return SUBJECTS.index(first)


def gold_rationale(french: str, label: int) -> list[bool]:
    """True at the first French word that is a subject pronoun of class `label`; all False when there is none."""
    words, pronouns = french.split(" "), _FRENCH_SUBJECTS[SUBJECTS[label]]
    first = next((i for i, word in enumerate(words) if word in pronouns), None)
    return [i == first for i in range(len(words))]


class SubjectBatch(NamedTuple):
    """A padded batch of the subject task (no <eos>: every position is a word)."""
    words: Tensor   # (B, S) long, PAD_ID-padded
    mask: Tensor    # (B, S) bool, True on words
    labels: Tensor  # (B,) long, index into SUBJECTS
    gold: Tensor    # (B, S) bool, True on the gold rationale (the subject pronoun)


def subject_batch(pairs: Sequence[Pair], vocab: Vocab) -> SubjectBatch:
    """French sentences as ids (unknown words -> UNK_ID), labels and gold rationales."""
    sentences = [pair.source.split(" ") for pair in pairs]
    S = max(len(words) for words in sentences)
    labels = [subject_label(pair.target) for pair in pairs]
    ids = [[vocab.word2index.get(w, UNK_ID) for w in words] + [PAD_ID] * (S - len(words)) for words in sentences]
    gold = [gold_rationale(p.source, y) + [False] * (S - len(w)) for p, y, w in zip(pairs, labels, sentences)]
    words = torch.tensor(ids, dtype=torch.long)  # (B, S)
    return SubjectBatch(words, words != PAD_ID, torch.tensor(labels), torch.tensor(gold))  # labels (B,)


def _subject_batches(pairs: Sequence[Pair] | SubjectBatch, vocab: Vocab | None = None, batch_size: int = 64,
                    seed: int | None = None) -> Iterator[SubjectBatch]:
    """Batches in order, or shuffled with `seed`; each padded to its own longest sentence."""
    full = pairs if isinstance(pairs, SubjectBatch) else subject_batch(pairs, vocab)  # (N, S_max)
    N = len(full.labels)
    order = torch.arange(N) if seed is None else torch.randperm(N, generator=torch.Generator().manual_seed(seed))
    for rows in order.split(batch_size):  # (b,) each
        S = int(full.mask[rows].sum(dim=1).max())
        yield SubjectBatch(full.words[rows, :S], full.mask[rows, :S], full.labels[rows], full.gold[rows, :S])


class ClassifierOutput(NamedTuple):
    """What every classifier here returns."""
    logits: Tensor    # (B, C)
    weights: Tensor   # (B, S): the weight of each word, 0 on padding
    sparsity: Tensor  # scalar: the mean over sentences of the fraction of words kept (0 without gates)


def _run_gru(gru: nn.GRU, inputs: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """A packed GRU over (B, S, E): outputs (B, S, D*H), zero on padding, and the final state (B, D*H)."""
    outputs, final = gru(pack_padded_sequence(inputs, lengths, batch_first=True, enforce_sorted=False))  # (D, B, H)
    outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=inputs.shape[1])  # (B, S, D*H)
    return outputs, torch.cat(list(final), dim=-1)  # (B, D*H)


class AttentionClassifier(nn.Module):
    """The lecture's model, fixed: a bidirectional GRU gates each word, a packed GRU classifies the gated embeddings.
    selection "soft": gates sigmoid(score); "hard": exactly 0 or 1 (gate > 0.5), trained straight-through."""
    selects = "threshold"  # a word is selected when its weight is above 0.5

    def __init__(self, vocab_size: int, num_classes: int = len(SUBJECTS), embedding_size: int = 32,
                 hidden_size: int = 64, selection: str = "soft"):
        super().__init__()
        if selection not in ("soft", "hard"):
            raise ValueError(f"selection must be 'soft' or 'hard', got {selection!r}")
        self.selection = selection
        self.embedding = nn.Embedding(vocab_size, embedding_size, padding_idx=PAD_ID)
        self.attender = nn.GRU(embedding_size, hidden_size, batch_first=True, bidirectional=True)
        self.attention_score = nn.Linear(2 * hidden_size, 1)
        self.predictor = nn.GRU(embedding_size, hidden_size, batch_first=True)
        self.output = nn.Linear(hidden_size, num_classes)

    def forward(self, words: Tensor, mask: Tensor) -> ClassifierOutput:
        lengths = mask.sum(dim=1).cpu()  # (B,)
        embedded = self.embedding(words)  # (B, S, E)
        states, _ = _run_gru(self.attender, embedded, lengths)  # (B, S, 2H)
        gates = torch.sigmoid(self.attention_score(states)).squeeze(-1) * mask  # (B, S), 0 on padding
        if self.selection == "hard":
            gates = (gates > 0.5).float() + (gates - gates.detach())  # exactly 0/1, the soft gate's gradient
        _, final = _run_gru(self.predictor, embedded * gates.unsqueeze(-1), lengths)  # final (B, H)
        sparsity = (gates.sum(dim=1) / lengths.to(gates.device)).mean()  # per sentence, over its words only
        return ClassifierOutput(self.output(final), gates, sparsity)  # logits (B, C)


class SoftAttentionClassifier(nn.Module):
    """Soft attention pooling: a learned query attends (dot product) over bidirectional GRU states; weights sum to 1."""
    selects = "argmax"  # the selection is the word with the largest weight

    def __init__(self, vocab_size: int, num_classes: int = len(SUBJECTS), embedding_size: int = 32,
                 hidden_size: int = 64):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_size, padding_idx=PAD_ID)
        self.encoder = nn.GRU(embedding_size, hidden_size, batch_first=True, bidirectional=True)
        self.query = nn.Parameter(torch.randn(2 * hidden_size) / (2 * hidden_size) ** 0.5)  # (2H,)
        self.attention = DotAttention()
        self.output = nn.Linear(2 * hidden_size, num_classes)

    def forward(self, words: Tensor, mask: Tensor) -> ClassifierOutput:
        keys, _ = _run_gru(self.encoder, self.embedding(words), mask.sum(dim=1).cpu())  # (B, S, 2H)
        context, weights = self.attention(self.query.expand(len(words), -1), keys, mask)  # (B, 2H), (B, S)
        return ClassifierOutput(self.output(context), weights, keys.new_zeros(()))  # logits (B, C)


class BagOfWordsClassifier(nn.Module):
    """The baseline: logistic regression on word counts; `weights`: softmax of the words' predicted-class scores."""
    selects = "argmax"

    def __init__(self, vocab_size: int, num_classes: int = len(SUBJECTS)):
        super().__init__()
        self.word_scores = nn.Embedding(vocab_size, num_classes, padding_idx=PAD_ID)  # W^T: (V, C)
        nn.init.zeros_(self.word_scores.weight)
        self.bias = nn.Parameter(torch.zeros(num_classes))  # (C,)

    def forward(self, words: Tensor, mask: Tensor) -> ClassifierOutput:
        scores = self.word_scores(words) * mask.unsqueeze(-1)  # (B, S, C)
        logits = scores.sum(dim=1) + self.bias  # (B, C): the sum over words = counts @ W^T
        predicted = logits.argmax(dim=-1).view(-1, 1, 1).expand(-1, words.shape[1], 1)  # (B, S, 1)
        chosen = scores.gather(2, predicted).squeeze(-1)  # (B, S): each word's score for the predicted class
        return ClassifierOutput(logits, masked_softmax(chosen, mask), logits.new_zeros(()))


def _selected_words(model: nn.Module, output: ClassifierOutput, mask: Tensor) -> Tensor:
    """The words a model selects, (B, S) bool: gates above 0.5 or, per `model.selects`, the word of largest weight."""
    if model.selects == "threshold":
        return (output.weights > 0.5) & mask  # (B, S)
    return F.one_hot(output.weights.argmax(dim=-1), mask.shape[1]).bool() & mask  # (B, S)


@dataclass
class ClassifierConfig:
    """How to build and train a classifier. kind: "gated" (AttentionClassifier), "soft" or "bow"."""
    kind: str = "gated"
    selection: str = "soft"  # gated only: "soft" or "hard"
    sparsity_weight: float = 0.0  # loss = cross-entropy + sparsity_weight * sparsity
    embedding_size: int = 32
    hidden_size: int = 32
    epochs: int = 5
    batch_size: int = 128
    learning_rate: float = 5e-3
    seed: int = 0
    max_train_pairs: int | None = None  # None: the whole train split

    @property
    def name(self) -> str:
        """The cache name, e.g. "classifier-gated-soft-0.5"."""
        return {"gated": f"classifier-gated-{self.selection}-{self.sparsity_weight:g}"}.get(
            self.kind, f"classifier-{self.kind}")


# The classifiers notebook 08 compares, by the label it prints; `python -m course_utils pretrain` caches them too.
NOTEBOOK_CLASSIFIERS: dict[str, ClassifierConfig] = {
    "bag of words": ClassifierConfig(kind="bow"),
    "soft attention": ClassifierConfig(kind="soft"),
    "soft gates, λ=0.5": ClassifierConfig(selection="soft", sparsity_weight=0.5),
    **{f"hard gates, λ={w}": ClassifierConfig(selection="hard", sparsity_weight=w) for w in (0.0, 0.02, 0.05, 0.2)},
}


def build_classifier(config: ClassifierConfig, vocab_size: int) -> nn.Module:
    """The model `config.kind` names, seeded with config.seed."""
    torch.manual_seed(config.seed)
    sizes = dict(embedding_size=config.embedding_size, hidden_size=config.hidden_size)
    if config.kind == "gated":
        return AttentionClassifier(vocab_size, selection=config.selection, **sizes)
    if config.kind == "soft":
        return SoftAttentionClassifier(vocab_size, **sizes)
    if config.kind == "bow":
        return BagOfWordsClassifier(vocab_size)
    raise ValueError(f"unknown classifier kind {config.kind!r}: choose 'gated', 'soft' or 'bow'")


def train_classifier(model: nn.Module, pairs: Sequence[Pair], vocab: Vocab, config: ClassifierConfig,
                     log: Callable[[str], None] | None = print) -> list[dict]:
    """Adam on cross-entropy + sparsity_weight * sparsity; one dict per epoch (epoch, loss, accuracy, kept, seconds)."""
    encoded = subject_batch(list(pairs)[:config.max_train_pairs], vocab)  # (N, S_max): encoded once
    optimizer = torch.optim.Adam(model.parameters(), lr=config.learning_rate)
    history, t0 = [], time.perf_counter()
    model.train()
    for epoch in range(1, config.epochs + 1):
        totals = torch.zeros(4)  # summed loss, correct, kept fraction, sentences
        for batch in _subject_batches(encoded, batch_size=config.batch_size, seed=config.seed + epoch):
            with cpu_turn(batch.words.device):
                output = model(batch.words, batch.mask)
                loss = F.cross_entropy(output.logits, batch.labels) + config.sparsity_weight * output.sparsity
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            correct = (output.logits.argmax(-1) == batch.labels).sum().item()
            totals += torch.tensor([loss.item() * (n := len(batch.labels)), correct, output.sparsity.item() * n, n])
        loss, accuracy, kept = (totals[:3] / totals[3]).tolist()
        history.append(dict(epoch=epoch, loss=loss, accuracy=accuracy, kept=kept, seconds=time.perf_counter() - t0))
        if log:
            log(f"epoch {epoch}: loss {loss:.3f}  train accuracy {accuracy:.3f}  kept {kept:.2f}")
    model.eval()
    return history


class ClassifierScores(NamedTuple):
    """Accuracy, and the selection against the gold rationale."""
    accuracy: float
    rationale: RationaleScores  # precision, recall (sentences with a gold pronoun), kept (all sentences)


def evaluate_classifier(model: nn.Module, pairs: Sequence[Pair], vocab: Vocab, batch_size: int = 256
                        ) -> ClassifierScores:
    """Accuracy and rationale precision/recall of `model` on `pairs` (eval mode)."""
    correct, selections, golds, masks = 0, [], [], []
    with eval_mode(model), torch.no_grad():
        for batch in _subject_batches(pairs, vocab, batch_size):
            output = model(batch.words, batch.mask)
            correct += (output.logits.argmax(-1) == batch.labels).sum().item()
            selections += list(_selected_words(model, output, batch.mask))  # rows (S,): lengths differ by batch
            golds, masks = golds + list(batch.gold), masks + list(batch.mask)
    rationale = rationale_scores(*(pad_sequence(rows, batch_first=True) for rows in (selections, golds, masks)))
    return ClassifierScores(correct / len(pairs), rationale)


def highlight_html(tokens: Sequence[str], weights: Sequence[float] | Tensor) -> str:
    """One sentence as ONE line of inline <span>s, each word's background opacity its weight (0..1)."""
    weights = [float(w) for w in weights]
    if len(weights) != len(tokens):
        raise ValueError(f"{len(tokens)} tokens but {len(weights)} weights: slice the weights to the sentence")
    spans = [f'<span style="background-color: rgba(255, 140, 0, {min(max(w, 0.0), 1.0):.2f}); padding: 1px 2px">'
             f"{html.escape(token)}</span>" for token, w in zip(tokens, weights, strict=True)]
    return '<div style="font-family: monospace; line-height: 1.6">' + " ".join(spans) + "</div>"
