"""Training and evaluation: the loop, its history, named recipes, cached models and checkpoints.

Read it top to bottom, as in notebook 05:

    masked_nll_loss   the loss: mean negative log-likelihood of the real target tokens (PAD ignored)
    train_epoch       one pass over the training batches: forward, loss, backward, clip, Adam step
    train             the visible loop: epochs of train_epoch, dev loss and dev BLEU after each, a History
    evaluate          loss, perplexity, BLEU/chrF (sacreBLEU) and a per-sentence table on any split
    RECIPES           named, commented settings (model + training) used by the notebooks and the CLI
    load_or_train     train a recipe once, cache it under data/models/, load it the next time
    save_checkpoint / load_checkpoint   one file: configs + vocabularies + weights + history

Teacher forcing is decided per decoder step, once for the whole batch: before each step after the first, one coin
flip (torch.rand, so the seed decides) feeds the gold previous word with probability `teacher_forcing_ratio`,
otherwise the model's own previous argmax. Ratio 1.0 (the default) always feeds the gold word, which lets Luong
decoders run all steps in one GRU call.

Determinism: `train` seeds torch with `TrainConfig.seed` and the batch order comes from the same seed, so two runs
on the CPU with the same seed (and thread count) give identical losses.

Introduced in notebook 05.
"""
from __future__ import annotations

import collections
import dataclasses
import math
import os
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from course_utils.data import (DATA_DIR, PAD_ID, BucketBatchSampler, CourseData, Pair, TranslationDataset, Vocab,
                               collate_batch, display_path, load_course_data)
from course_utils.decode import beam_search, greedy_decode
from course_utils.seq2seq import ModelConfig, Seq2Seq, count_parameters

FAST_ENV = "COURSE_FAST"  # COURSE_FAST=1: recipes train briefly (CI, smoke tests) and cache as "<name>-fast"
CHECKPOINT_FORMAT = "course_utils.checkpoint/1"


def fast_mode() -> bool:
    """True when the environment variable COURSE_FAST is set to 1 (or true/yes). Introduced in notebook 05."""
    return os.environ.get(FAST_ENV, "").strip().lower() in ("1", "true", "yes")


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """"auto" -> CUDA when available, else CPU; anything else is passed to torch.device. Introduced in notebook 05."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


# ---------------------------------------------------------------------------------------------------------- loss
def masked_nll_loss(log_probs: Tensor, tgt: Tensor, reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Negative log-likelihood of the target tokens, ignoring PAD positions.

    Args:
        log_probs: (B, T, V) the decoder's log-probabilities.
        tgt: (B, T) target ids (EOS included), PAD_ID where there is no token.
        reduction: "mean" (per real token) or "sum".
        label_smoothing: eps in [0, 1): the target distribution puts 1 - eps on the gold word and spreads eps
            uniformly over the vocabulary (a regulariser; 0 is the plain NLL).
    Returns:
        scalar tensor. Changing the prediction at a PAD position changes nothing.

    Introduced in notebook 05.
    """
    if log_probs.dim() != 3 or tgt.shape != log_probs.shape[:2]:
        raise ValueError(f"log_probs must be (B, T, V) and tgt (B, T) with the same B and T, got "
                         f"{tuple(log_probs.shape)} and {tuple(tgt.shape)}; pass the decoder's log_probs and batch.tgt")
    flat_log_probs = log_probs.reshape(-1, log_probs.size(-1))  # (B*T, V)
    flat_tgt = tgt.reshape(-1)  # (B*T,)
    if label_smoothing > 0:  # cross_entropy re-normalises, which leaves log-probabilities unchanged
        return F.cross_entropy(flat_log_probs, flat_tgt, ignore_index=PAD_ID, reduction=reduction,
                               label_smoothing=label_smoothing)
    return F.nll_loss(flat_log_probs, flat_tgt, ignore_index=PAD_ID, reduction=reduction)


# ------------------------------------------------------------------------------------------------------ configs
@dataclass
class TrainConfig:
    """How to train (the model's shape lives in ModelConfig). Introduced in notebook 05."""

    epochs: int = 10  # passes over the training pairs
    batch_size: int = 64  # pairs per optimiser step
    bucket_by: str = "target"  # batches group pairs of similar "target" (then source) or "source" length
    learning_rate: float = 1e-3  # Adam's step size
    lr_decay: float = 1.0  # multiply the learning rate by this after every epoch (1.0 = constant)
    clip: float = 1.0  # clip the gradient's global norm to this (0 = no clipping)
    teacher_forcing_ratio: float = 1.0  # per step: probability of feeding the gold previous word
    label_smoothing: float = 0.0  # training loss only; dev loss and perplexity are always the plain NLL
    average_last: int = 1  # the final weights are the average of the last N epochs' weights (1 = the last)
    seed: int = 0  # seeds weights' init (in load_or_train), dropout, teacher forcing coin flips, batch order
    device: str = "auto"  # "auto" (CUDA if present), "cpu", "cuda", "cuda:1", ...
    time_budget: float | None = None  # stop training after this many seconds (checked after every batch)
    eval_bleu: bool = True  # greedy-decode the dev set after every epoch for dev BLEU (costs a few seconds)
    eval_batch_size: int = 256  # pairs per batch when evaluating
    max_train_pairs: int | None = None  # train on a seeded random sample of N training pairs (fast mode)
    max_eval_pairs: int | None = None  # evaluate on a seeded random sample of N dev pairs per epoch (fast mode)

    def __post_init__(self):
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError(f"epochs and batch_size must be >= 1, got {self.epochs} and {self.batch_size}")
        if not 0.0 <= self.teacher_forcing_ratio <= 1.0:
            raise ValueError(f"teacher_forcing_ratio must lie in [0, 1], got {self.teacher_forcing_ratio}")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")


@dataclass
class History:
    """Per-epoch numbers of one training run, for plotting (viz.plot_history). Introduced in notebook 05.

    train_loss: mean NLL per target token over the epoch's batches (without label smoothing); dev_loss: the same
    on the dev set (teacher forced, no dropout); dev_bleu: corpus BLEU of greedy translations of the dev set (nan when not computed);
    epoch_seconds: training time of the epoch (evaluation excluded).
    """

    train_loss: list[float] = field(default_factory=list)
    dev_loss: list[float] = field(default_factory=list)
    dev_bleu: list[float] = field(default_factory=list)
    epoch_seconds: list[float] = field(default_factory=list)

    @property
    def epochs(self) -> int:
        return len(self.train_loss)

    @property
    def train_seconds(self) -> float:
        """Total training time (evaluation excluded)."""
        return float(sum(self.epoch_seconds))

    def to_dict(self) -> dict:
        """Plain lists of floats (checkpoints load with weights_only=True)."""
        return {name: [float(x) for x in values] for name, values in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls, d: dict) -> History:
        """The inverse of `to_dict`; unknown keys are an error (not a History)."""
        names = {f.name for f in dataclasses.fields(cls)}
        if not set(d) <= names:
            raise ValueError(f"not a History.to_dict() result: unexpected keys {sorted(set(d) - names)}")
        return cls(**{name: [float(x) for x in values] for name, values in d.items()})


# ---------------------------------------------------------------------------------------------------- the loop
def train_epoch(model: Seq2Seq, loader, optimizer: torch.optim.Optimizer, config: TrainConfig,
                deadline: float | None = None, desc: str = "train", progress: bool = True) -> float:
    """One pass over `loader`: forward, masked loss, backward, clip, step. Returns the mean NLL per target token
    (the plain NLL, also when the optimised loss is label-smoothed).

    Args:
        model: a Seq2Seq in train mode (this function sets it).
        loader: yields Batch(src (B, S), src_lengths (B,), src_mask, tgt (B, T), tgt_lengths) (make_train_loader).
        optimizer: e.g. Adam over model.parameters().
        config: teacher_forcing_ratio and clip are read from it.
        deadline: time.perf_counter() value after which the epoch stops early (time budget).
        desc, progress: the tqdm bar's label and whether to show it.

    Introduced in notebook 05.
    """
    model.train()
    device = next(model.parameters()).device
    total_loss, total_tokens = 0.0, 0
    bar = tqdm(loader, desc=desc, leave=False, disable=not progress, mininterval=0.5)
    for batch in bar:
        batch = batch.to(device)
        log_probs = model(batch.src, batch.src_lengths, batch.tgt,
                          teacher_forcing_ratio=config.teacher_forcing_ratio).log_probs  # (B, T, V)
        loss = masked_nll_loss(log_probs, batch.tgt, label_smoothing=config.label_smoothing)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        optimizer.step()

        tokens = int(batch.tgt_lengths.sum())
        if config.label_smoothing > 0:  # report the plain NLL, comparable with the dev loss
            loss = masked_nll_loss(log_probs.detach(), batch.tgt)
        total_loss += loss.item() * tokens
        total_tokens += tokens
        bar.set_postfix(loss=f"{total_loss / total_tokens:.3f}", refresh=False)
        if deadline is not None and time.perf_counter() > deadline:
            break
    bar.close()
    return total_loss / max(total_tokens, 1)


def make_train_loader(pairs: Sequence[Pair], src_vocab: Vocab, tgt_vocab: Vocab, batch_size: int,
                      seed: int = 0, bucket_by: str = "target") -> DataLoader:
    """Shuffled batches of pairs of similar length, so that little of the work is spent on padding.

    bucket_by="source" is data.make_loader's bucketing: it leaves ~25% of the decoder's positions as padding.
    bucket_by="target" sorts by target length first, then source length (key 1000 * T + S): <5% padding on
    either side, and ~20% more tokens per second, since the decoder does most of the work. Both go through
    data.BucketBatchSampler: deterministic given `seed`, reshuffled on each pass.
    Yields Batch(src (B, S), src_lengths (B,), src_mask (B, S), tgt (B, T), tgt_lengths (B,)).

    Introduced in notebook 05.
    """
    if bucket_by not in ("target", "source"):
        raise ValueError(f"bucket_by must be 'target' or 'source', got {bucket_by!r}")
    dataset = TranslationDataset(pairs, src_vocab, tgt_vocab)
    keys = [1000 * len(tgt) + len(src) if bucket_by == "target" else len(src) for src, tgt in dataset.items]
    sampler = BucketBatchSampler(keys, batch_size, shuffle=True, seed=seed)
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate_batch)


def sample_pairs(pairs: Sequence[Pair], count: int | None, seed: int) -> list[Pair]:
    """A seeded random sample of `count` pairs, in their original order (all of them when count is None).

    Not the first `count`: the splits keep corpus order, which is roughly shortest first, so a prefix would be a
    biased subset. Introduced in notebook 05.
    """
    if count is None or count >= len(pairs):
        return list(pairs)
    chosen = sorted(random.Random(seed).sample(range(len(pairs)), count))
    return [pairs[index] for index in chosen]


def make_optimizer(model: Seq2Seq, config: TrainConfig) -> torch.optim.Optimizer:
    """Adam over all parameters (the fused kernel where PyTorch has one). Introduced in notebook 05."""
    try:
        return torch.optim.Adam(model.parameters(), lr=config.learning_rate, fused=True)
    except (RuntimeError, TypeError):  # fused Adam missing for this device or build
        return torch.optim.Adam(model.parameters(), lr=config.learning_rate)


def train(model: Seq2Seq, data: CourseData, config: TrainConfig, progress: bool = True,
          log: Callable[[str], None] | None = print) -> History:
    """Train `model` on data.splits.train; after every epoch measure dev loss and dev BLEU. Returns a History.

    The loop, in full: seed; Adam; for each epoch: train_epoch (a tqdm bar with the running loss), then evaluate
    on the dev set, log one line, decay the learning rate; stop early when `config.time_budget` is spent. With
    `config.average_last` = N > 1 the model ends with the mean of its weights after each of the last N epochs.
    The model is moved to config.device ("auto": CUDA when present).

    Args:
        model: a Seq2Seq built for data's vocabularies.
        data: CourseData (splits and vocabularies).
        config: TrainConfig.
        progress: show tqdm bars.
        log: called with one line per epoch (None: silent).

    Introduced in notebook 05.
    """
    _check_vocab_sizes(model.config, data.src_vocab, data.tgt_vocab)
    torch.manual_seed(config.seed)
    device = resolve_device(config.device)
    model.to(device)
    train_pairs = sample_pairs(data.splits.train, config.max_train_pairs, config.seed)
    dev_pairs = sample_pairs(data.splits.dev, config.max_eval_pairs, config.seed)
    loader = make_train_loader(train_pairs, data.src_vocab, data.tgt_vocab, config.batch_size, config.seed,
                               config.bucket_by)
    optimizer = make_optimizer(model, config)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=config.lr_decay)
    history = History()
    snapshots: collections.deque[dict] = collections.deque(maxlen=max(config.average_last, 1))
    started = time.perf_counter()
    deadline = None if config.time_budget is None else started + config.time_budget
    for epoch in range(1, config.epochs + 1):
        epoch_start = time.perf_counter()
        train_loss = train_epoch(model, loader, optimizer, config, deadline,
                                 desc=f"epoch {epoch}/{config.epochs}", progress=progress)
        history.epoch_seconds.append(time.perf_counter() - epoch_start)
        history.train_loss.append(train_loss)
        result = evaluate(model, dev_pairs, data.src_vocab, data.tgt_vocab, config.eval_batch_size,
                          bleu=config.eval_bleu)
        history.dev_loss.append(result.loss)
        history.dev_bleu.append(result.bleu)
        if config.average_last > 1:
            snapshots.append({key: value.detach().clone() for key, value in model.state_dict().items()})
        scheduler.step()
        if log is not None:
            log(f"epoch {epoch:>2}/{config.epochs}  train loss {train_loss:.3f}  dev loss {result.loss:.3f}  "
                f"dev ppl {result.perplexity:6.2f}  dev BLEU {result.bleu:5.2f}  "
                f"({history.epoch_seconds[-1]:.1f} s)")
        if deadline is not None and time.perf_counter() > deadline:
            if log is not None and epoch < config.epochs:
                log(f"time budget of {config.time_budget:.0f} s spent after {epoch} epoch(s); stopping")
            break
    if len(snapshots) > 1:
        model.load_state_dict(average_weights(list(snapshots)))
        if log is not None:
            result = evaluate(model, dev_pairs, data.src_vocab, data.tgt_vocab, config.eval_batch_size,
                              bleu=config.eval_bleu)
            log(f"averaged the weights of the last {len(snapshots)} epochs: dev loss {result.loss:.3f}  "
                f"dev BLEU {result.bleu:5.2f}")
    return history


def average_weights(state_dicts: list[dict]) -> dict:
    """The element-wise mean of several state_dicts of one model (checkpoint averaging). Introduced in notebook 05."""
    averaged = {}
    for key, value in state_dicts[0].items():
        if value.is_floating_point():
            averaged[key] = torch.stack([state[key] for state in state_dicts]).mean(dim=0)  # same shape as value
        else:
            averaged[key] = value
    return averaged


# -------------------------------------------------------------------------------------------------- evaluation
class SentenceRow(NamedTuple):
    """One line of the per-sentence table."""

    source: str
    reference: str
    hypothesis: str


class Evaluation(NamedTuple):
    """`evaluate`'s result. loss: mean NLL per target token (teacher forced); perplexity = exp(loss);
    bleu, chrf: sacreBLEU corpus scores of the translations (greedy or beam; nan when bleu=False); signature:
    sacreBLEU's;
    rows: one SentenceRow per pair (empty when bleu=False). Introduced in notebook 05."""

    loss: float
    perplexity: float
    bleu: float
    chrf: float
    signature: str
    rows: list[SentenceRow]

    def table(self, n: int | None = 10, width: int = 40) -> str:
        """The first `n` rows as a plain-text table: source | reference | hypothesis."""
        rows = self.rows if n is None else self.rows[:n]
        head = f"{'source':<{width}} | {'reference':<{width}} | hypothesis"
        lines = [head, "-" * len(head)]
        lines += [f"{row.source[:width]:<{width}} | {row.reference[:width]:<{width}} | {row.hypothesis}"
                  for row in rows]
        return "\n".join(lines)


@torch.no_grad()
def evaluate(model: Seq2Seq, pairs: Sequence[Pair], src_vocab: Vocab, tgt_vocab: Vocab, batch_size: int = 256,
             bleu: bool = True, beam_width: int = 1, length_penalty: float = 1.0) -> Evaluation:
    """Teacher-forced loss/perplexity, and (bleu=True) greedy translations scored with sacreBLEU BLEU and chrF.

    References are the pairs' target sentences as text (words unknown to tgt_vocab included: the score is honest
    about them); hypotheses are greedy outputs (PAD/SOS never, stop at EOS, length cap from the source length).

    Args:
        model: a Seq2Seq (put in eval mode here; its previous mode is restored).
        pairs: the pairs to evaluate on (e.g. data.splits.test).
        src_vocab, tgt_vocab: the model's vocabularies.
        batch_size: pairs per batch.
        bleu: also decode and score (slower than the loss alone).
        beam_width: 1 = batched greedy decoding; k > 1 = beam search, one sentence at a time (slower).
        length_penalty: beam search's length normalisation exponent.
    Returns:
        Evaluation(loss, perplexity, bleu, chrf, signature, rows).

    Introduced in notebook 05.
    """
    from course_utils.metrics import corpus_scores  # the viz helper's module; imported late to keep train light

    if not pairs:
        raise ValueError("evaluate got no pairs; pass a non-empty split such as data.splits.dev")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    dataset = TranslationDataset(pairs, src_vocab, tgt_vocab)
    order = sorted(range(len(dataset)), key=lambda i: len(dataset[i][0]))  # similar lengths share a batch
    total_loss, total_tokens = 0.0, 0
    hypotheses: dict[int, str] = {}
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        batch = collate_batch([dataset[i] for i in chunk]).to(device)
        log_probs = model(batch.src, batch.src_lengths, batch.tgt).log_probs  # (B, T, V)
        total_loss += float(masked_nll_loss(log_probs, batch.tgt, reduction="sum"))
        total_tokens += int(batch.tgt_lengths.sum())
        if bleu and beam_width > 1:
            for row, index in enumerate(chunk):
                source = batch.src[row, :int(batch.src_lengths[row])]  # (S,)
                best = beam_search(model, source, beam_width=beam_width, length_penalty=length_penalty)[0]
                hypotheses[index] = " ".join(tgt_vocab.decode(best.tokens))
        elif bleu:
            output = greedy_decode(model, batch.src, batch.src_lengths)
            for row, index in enumerate(chunk):
                words = tgt_vocab.decode(output.tokens[row, :int(output.lengths[row])])
                hypotheses[index] = " ".join(words)
    if was_training:
        model.train()
    loss = total_loss / max(total_tokens, 1)
    perplexity = math.exp(min(loss, 50.0))
    if not bleu:
        return Evaluation(loss, perplexity, math.nan, math.nan, "", [])
    hyps = [hypotheses[i] for i in range(len(pairs))]
    refs = [pair.target for pair in pairs]
    scores = corpus_scores(hyps, refs)
    rows = [SentenceRow(pair.source, pair.target, hyp) for pair, hyp in zip(pairs, hyps)]
    return Evaluation(loss, perplexity, scores.bleu, scores.chrf, scores.signature, rows)


# ------------------------------------------------------------------------------------------------------ recipes
@dataclass
class Recipe:
    """A named way to build and train a model: the sizes of the model and the training settings.

    `model_config(src_vocab, tgt_vocab)` and `train_config()` turn it into the two configs. Introduced in notebook 05.
    """

    name: str
    attention: str = "bahdanau"  # none | bahdanau | dot | general | concat | scaled_dot | location
    embedding_size: int = 256
    hidden_size: int = 256
    bidirectional: bool = False
    dropout: float = 0.1
    input_feeding: bool = False
    epochs: int = 10
    batch_size: int = 64
    bucket_by: str = "target"
    learning_rate: float = 1e-3
    lr_decay: float = 1.0
    clip: float = 1.0
    teacher_forcing_ratio: float = 1.0
    label_smoothing: float = 0.0
    average_last: int = 1
    time_budget: float | None = None  # seconds of training at most
    seed: int = 0
    beam_width: int = 1  # decoding used for the recipe's reported test scores (1 = greedy)

    def model_config(self, src_vocab: Vocab, tgt_vocab: Vocab) -> ModelConfig:
        """The ModelConfig for these vocabularies."""
        return ModelConfig(src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab), attention=self.attention,
                           embedding_size=self.embedding_size, hidden_size=self.hidden_size,
                           bidirectional=self.bidirectional, dropout=self.dropout, input_feeding=self.input_feeding)

    def train_config(self, **overrides) -> TrainConfig:
        """The TrainConfig of this recipe; keyword arguments override fields (e.g. device="cpu")."""
        settings = dict(epochs=self.epochs, batch_size=self.batch_size, bucket_by=self.bucket_by,
                        learning_rate=self.learning_rate,
                        lr_decay=self.lr_decay, clip=self.clip, teacher_forcing_ratio=self.teacher_forcing_ratio,
                        label_smoothing=self.label_smoothing, average_last=self.average_last,
                        time_budget=self.time_budget, seed=self.seed)
        settings.update(overrides)
        return TrainConfig(**settings)


@dataclass
class LectureRecipe(Recipe):
    """Trains live in class in about 1.5 minutes on a 2-core CPU and beats the classic tutorial's test BLEU by half.

    Unidirectional encoder, the tutorial's hidden size, batches of 128 pairs of similar length (few Python steps
    per epoch, large matrix products), a high learning rate that decays each epoch. Tuned with
    benchmarks/time_to_quality.py (see benchmarks/README.md).
    """

    embedding_size: int = 128  # small embeddings: the vocabulary has only ~4,000 French / 2,600 English words
    hidden_size: int = 256  # the classic tutorial's size, so the comparison is fair
    dropout: float = 0.1  # little regularisation: ten epochs barely overfit
    epochs: int = 10  # 10 x 8,750 pairs
    batch_size: int = 128  # large matrix products; 64 learns a little more per epoch but runs ~1.5x slower
    learning_rate: float = 3e-3  # Adam; large steps early...
    lr_decay: float = 0.85  # ...smaller ones late (0.85 ** 9 = 0.23)
    time_budget: float | None = None  # no wall-clock stop: the same 10 epochs on every machine, so the notebooks'
    # models are reproducible (a loaded machine otherwise stops early with a worse model); for a live lecture on a
    # slow laptop, dataclasses.replace(get_recipe(...), time_budget=110) trades that for a guaranteed end time


@dataclass
class FullRecipe(Recipe):
    """The strongest model of the course: bidirectional encoder, regularised, 5-9 minutes on a 2-core CPU.

    Every setting below was checked against the alternatives in the comment with test runs of the whole recipe
    (benchmarks/README.md); the test BLEU is reported with beam search (width 5).
    """

    bidirectional: bool = True  # read the French sentence both ways; keys become 2H wide, a bridge maps to H
    embedding_size: int = 256  # 128 lost ~0.7 BLEU
    hidden_size: int = 256  # 384 and 512 learn more per epoch but fit fewer epochs into the time budget
    dropout: float = 0.3  # 0.35 and 0.4 worse; 0.25 scored higher in two single runs (worth confirming)
    label_smoothing: float = 0.2  # +0.6 BLEU with beam search over no smoothing; 0.1 and 0.3 slightly worse
    epochs: int = 26  # dev BLEU flattens after ~20 epochs; the time budget may stop it a little earlier
    batch_size: int = 64  # 32 and 48 were slower per epoch and no better
    learning_rate: float = 2e-3  # 3e-3 with faster decay was no better
    lr_decay: float = 0.9  # 0.9 ** 25 = 0.07: the last epochs take small steps...
    average_last: int = 5  # ...and their weights are averaged (checkpoint averaging)
    beam_width: int = 5  # +2.5 BLEU over greedy decoding; width 10 and length_penalty 0.6 made no difference
    time_budget: float | None = 540.0  # stop under 10 minutes of training even on a slow machine


def _lecture(attention: str) -> LectureRecipe:
    return LectureRecipe(name=f"lecture-{attention}", attention=attention)


RECIPES: dict[str, Recipe] = {
    recipe.name: recipe for recipe in [
        _lecture("bahdanau"),  # the default: additive attention (notebooks 03-06)
        _lecture("dot"),  # Luong dot: no parameters in the scorer
        _lecture("general"),  # Luong general: q^T W k
        _lecture("concat"),  # Luong concat: v^T tanh(W [q; k])
        _lecture("none"),  # no attention: the encoder's final state is all the decoder gets
        FullRecipe(name="full-bahdanau", attention="bahdanau"),
    ]
}
DEFAULT_RECIPE = "lecture-bahdanau"


def get_recipe(name: str) -> Recipe:
    """The recipe called `name`, with a clear error listing the known names. Introduced in notebook 05."""
    if name not in RECIPES:
        raise KeyError(f"no recipe called {name!r}; known recipes: {', '.join(RECIPES)}")
    return RECIPES[name]


# -------------------------------------------------------------------------------------------------- checkpoints
class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used here: not a checkpoint, or made for another config or vocabulary."""


@dataclass
class TrainedModel:
    """A model with everything needed to use it again. Introduced in notebook 05."""

    name: str
    model: Seq2Seq
    src_vocab: Vocab
    tgt_vocab: Vocab
    model_config: ModelConfig
    train_config: TrainConfig
    history: History
    fast: bool = False  # trained in fast mode (COURSE_FAST=1): a smoke-test model, not a real one

    def translate(self, sentence: str, beam_width: int = 1):
        """decode.translate with this model's vocabularies."""
        from course_utils.decode import translate
        return translate(self.model, self.src_vocab, self.tgt_vocab, sentence, beam_width=beam_width)


def save_checkpoint(path: str | os.PathLike, trained: TrainedModel) -> Path:
    """Write configs + vocabularies + weights + history to `path` atomically (temp file, then os.replace).

    Only plain Python types and tensors are stored, so `load_checkpoint` can use torch.load(weights_only=True).
    Returns the path. Introduced in notebook 05.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": CHECKPOINT_FORMAT,
        "name": trained.name,
        "fast": bool(trained.fast),
        "model_config": dataclasses.asdict(trained.model_config),
        "train_config": dataclasses.asdict(trained.train_config),
        "src_vocab": trained.src_vocab.to_dict(),
        "tgt_vocab": trained.tgt_vocab.to_dict(),
        "history": trained.history.to_dict(),
        "state_dict": {key: value.detach().cpu() for key, value in trained.model.state_dict().items()},
    }
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            torch.save(payload, file)
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    return path


def _differences(expected: dict, found: dict) -> list[str]:
    return [f"{key}: checkpoint has {found.get(key)!r}, expected {expected.get(key)!r}"
            for key in sorted(set(expected) | set(found)) if expected.get(key) != found.get(key)]


def _vocab_difference(which: str, expected: Vocab, found: Vocab) -> str:
    if len(expected) != len(found):
        return f"{which} vocabulary: checkpoint has {len(found):,} words, expected {len(expected):,}"
    for index, (a, b) in enumerate(zip(expected.index2word, found.index2word)):
        if a != b:
            return f"{which} vocabulary: id {index} is {b!r} in the checkpoint, expected {a!r}"
    return f"{which} vocabulary: same words, different counts or min_freq"


def load_checkpoint(path: str | os.PathLike, src_vocab: Vocab | None = None, tgt_vocab: Vocab | None = None,
                    config: ModelConfig | None = None, device: str | torch.device = "cpu") -> TrainedModel:
    """Load a checkpoint written by `save_checkpoint` (torch.load with weights_only=True).

    Args:
        path: the checkpoint file.
        src_vocab, tgt_vocab, config: when given, the checkpoint must have been made with exactly these, else
            CheckpointError names the field that differs.
        device: where to put the model ("auto": CUDA when present).
    Returns:
        TrainedModel with the model in eval mode.
    Raises:
        CheckpointError: not a course checkpoint, or mismatched configuration/vocabulary.

    Introduced in notebook 05.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}; train one with `python -m course_utils train --output "
                              f"{path}` or load_or_train(name)")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # truncated file, pickle with code in it, not a torch file at all
        raise CheckpointError(f"{path} is not a readable course checkpoint ({type(error).__name__}: {error}); "
                              "delete it and train again") from error
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path} is not a course_utils checkpoint (format {CHECKPOINT_FORMAT!r} expected); "
                              "train one with `python -m course_utils train`")
    redo = f"delete {path} (or pass another path) and train again"
    if config is not None:
        problems = _differences(dataclasses.asdict(config), payload["model_config"])
        if problems:
            raise CheckpointError(f"{path} was made with another model configuration: {'; '.join(problems)}. "
                                  f"Build the model from the checkpoint's config, or {redo}")
    saved_vocabs = Vocab.from_dict(payload["src_vocab"]), Vocab.from_dict(payload["tgt_vocab"])
    for which, expected, found in (("source", src_vocab, saved_vocabs[0]), ("target", tgt_vocab, saved_vocabs[1])):
        if expected is not None and expected != found:
            raise CheckpointError(f"{path} was trained with another {which} vocabulary "
                                  f"({_vocab_difference(which, expected, found)}); the data settings (max_length, "
                                  f"min_freq, seed, corpus) must match the training run's, or {redo}")
    try:
        model_config = ModelConfig(**payload["model_config"])
        train_config = TrainConfig(**payload["train_config"])
    except TypeError as error:
        raise CheckpointError(f"{path} has config fields this version of course_utils does not know ({error}); "
                              f"{redo}") from error
    _check_vocab_sizes(model_config, *saved_vocabs)
    model = Seq2Seq(model_config)
    try:
        model.load_state_dict(payload["state_dict"])
    except RuntimeError as error:
        raise CheckpointError(f"{path}: the weights do not fit the model its config describes ({error}); "
                              f"{redo}") from error
    model.to(resolve_device(device)).eval()
    return TrainedModel(payload["name"], model, *saved_vocabs, model_config, train_config,
                        History.from_dict(payload["history"]), payload.get("fast", False))


def _check_vocab_sizes(config: ModelConfig, src_vocab: Vocab, tgt_vocab: Vocab) -> None:
    if (config.src_vocab_size, config.tgt_vocab_size) != (len(src_vocab), len(tgt_vocab)):
        raise CheckpointError(f"the model expects vocabularies of {config.src_vocab_size:,} source and "
                              f"{config.tgt_vocab_size:,} target words but got {len(src_vocab):,} and "
                              f"{len(tgt_vocab):,}; build the ModelConfig from these vocabularies "
                              "(recipe.model_config(data.src_vocab, data.tgt_vocab))")


# ------------------------------------------------------------------------------------------------ load_or_train
FAST_TRAIN_PAIRS = 300  # fast mode: this many training pairs, one epoch, dev BLEU on FAST_EVAL_PAIRS
FAST_EVAL_PAIRS = 100


def model_path(name: str, fast: bool | None = None) -> Path:
    """Where load_or_train caches recipe `name`: DATA_DIR/models/<name>.pt, or <name>-fast.pt in fast mode."""
    fast = fast_mode() if fast is None else fast
    return DATA_DIR / "models" / f"{name}{'-fast' if fast else ''}.pt"


def train_recipe(recipe: Recipe, data: CourseData, fast: bool = False, progress: bool = True,
                 log: Callable[[str], None] | None = print, **overrides) -> TrainedModel:
    """Build the recipe's model (seeded) and train it on `data`; fast=True trains briefly (smoke tests).

    `overrides` replace TrainConfig fields (e.g. epochs=2, device="cpu"). Introduced in notebook 05.
    """
    if fast:
        overrides = dict(dict(epochs=1, max_train_pairs=FAST_TRAIN_PAIRS, max_eval_pairs=FAST_EVAL_PAIRS,
                              time_budget=None), **overrides)
    train_config = recipe.train_config(**overrides)
    model_config = recipe.model_config(data.src_vocab, data.tgt_vocab)
    torch.manual_seed(train_config.seed)
    model = Seq2Seq(model_config)
    history = train(model, data, train_config, progress=progress, log=log)
    model.eval()
    return TrainedModel(recipe.name, model, data.src_vocab, data.tgt_vocab, model_config, train_config, history, fast)


def load_or_train(name: str = DEFAULT_RECIPE, data: CourseData | None = None, retrain: bool = False,
                  progress: bool = True, verbose: bool = True) -> TrainedModel:
    """Recipe `name`, trained once and cached under DATA_DIR/models/ (git-ignored); loaded from there afterwards.

    In fast mode (environment COURSE_FAST=1) the recipe trains on a few hundred pairs for one epoch (seconds) and
    is cached separately as <name>-fast.pt, so a smoke-test model is never mistaken for a real one.

    Args:
        name: a key of RECIPES, e.g. "lecture-bahdanau".
        data: CourseData (default: load_course_data() with the default settings).
        retrain: train even when a cached model exists (and overwrite it).
        progress: show tqdm bars while training.
        verbose: print where the model comes from and how long training took.
    Returns:
        TrainedModel (model in eval mode, on the CPU).
    Raises:
        CheckpointError: the cached model was trained on other data; the message says how to retrain.

    Introduced in notebook 05.
    """
    recipe = get_recipe(name)
    fast = fast_mode()
    path = model_path(name, fast)
    say = print if verbose else (lambda *_: None)
    if data is None:
        data = load_course_data(verbose=False)
    if path.exists() and not retrain:
        try:
            trained = load_checkpoint(path, data.src_vocab, data.tgt_vocab,
                                      config=recipe.model_config(data.src_vocab, data.tgt_vocab))
        except CheckpointError as error:
            raise CheckpointError(f"{error}\n(cached model of recipe {name!r}: retrain it with "
                                  f"load_or_train({name!r}, retrain=True))") from error
        say(f"Loaded {name}{' (fast mode)' if fast else ''} from {display_path(path)} "
            f"(trained {trained.history.train_seconds:.0f} s, {trained.history.epochs} epochs)")
        return trained
    say(f"Training {name}{' in fast mode (COURSE_FAST=1)' if fast else ''}; "
        f"it will be cached at {display_path(path)}")
    started = time.perf_counter()
    trained = train_recipe(recipe, data, fast=fast, progress=progress, log=say if verbose else None)
    trained.model.cpu()
    save_checkpoint(path, trained)
    say(f"Trained {name} ({count_parameters(trained.model):,} parameters) in {time.perf_counter() - started:.0f} s; "
        f"saved to {display_path(path)}")
    return trained
