"""Training: the configuration, one step, one epoch, the visible loop, and weight averaging.

Read it top to bottom, as in notebook 05:

    TrainConfig   how to train (epochs, batch size, learning rate, clipping, teacher forcing, seed, ...)
    History       per-epoch numbers of one run, for plotting
    train_step    one batch: forward, masked loss, backward, clip, Adam step (the benchmarks time exactly this)
    train_epoch   train_step over every batch of the loader
    train         the loop: epochs of train_epoch, dev loss and dev BLEU after each, a History

Teacher forcing is decided per decoder step, once for the whole batch: before each step after the first, one coin
flip (torch.rand, so the seed decides) feeds the gold previous word with probability `teacher_forcing_ratio`,
otherwise the model's own previous argmax. Ratio 1.0 (the default) always feeds the gold word, which lets Luong
decoders run all steps in one GRU call.

`train_step` computes its loss through `course_utils.fast.training_loss`: a decoder's teacher-forced fast path with
the loss on the real target steps only, and on a GPU the decoder's side replayed as CUDA graphs (recorded by `train`,
one per batch shape); the same numbers as the plain forward, up to float rounding.

Determinism: `train` seeds torch with `TrainConfig.seed` and the batch order comes from the same seed, so two runs
on the CPU with the same seed (and thread count) give identical losses. Named recipes and the model cache live in
`course_utils.zoo`, checkpoints in `course_utils.checkpoints`, evaluation in `course_utils.evaluate`.

Introduced in notebook 05.
"""
from __future__ import annotations

import collections
import dataclasses
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import torch
from tqdm.auto import tqdm

from course_utils.data import Batch, CourseData, Pair, make_loader
from course_utils.evaluate import evaluate
from course_utils.fast import DecoderGraphs, quiet_stream_warning, training_graphs, training_loss
from course_utils.runtime import resolve_device

if TYPE_CHECKING:
    from course_utils.seq2seq import Translator

__all__ = ["TrainConfig", "History", "enough_pairs_problem", "train_step",
           "train_epoch", "sample_pairs", "make_optimizer", "train"]


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
    cuda_graphs: bool = True  # on a GPU, replay the decoder's side of each step as CUDA graphs (ignored on the CPU)

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
    on the dev set (teacher forced, no dropout); dev_bleu: corpus BLEU of greedy translations of the dev set (nan
    when not computed);
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


# ------------------------------------------------------------------------------------------------- enough data
_MIN_USABLE_PAIRS = 20  # fewer kept pairs cannot fill a training batch and still leave dev and test pairs


def enough_pairs_problem(data: CourseData, minimum: int = _MIN_USABLE_PAIRS) -> str | None:
    """None when `data` has enough usable pairs to train and evaluate on; else a one-line message that says how many
    usable pairs it has, how many are needed, and how to get more."""
    splits = data.splits
    if len(data.pairs) >= minimum and splits.train and splits.dev and splits.test:
        return None
    return (f"the corpus has only {len(data.pairs):,} usable sentence pairs after filtering (train "
            f"{len(splits.train):,}, dev {len(splits.dev):,}, test {len(splits.test):,}); training needs at least "
            f"{minimum:,}, with non-empty dev and test splits: point COURSE_CORPUS to the full corpus, or loosen the "
            f"filter (max_length)")


# ---------------------------------------------------------------------------------------------------- the loop
class _StepResult(NamedTuple):
    """What one `train_step` did: the plain NLL per real target token (also when the optimised loss is
    label-smoothed, so it compares with the dev loss) and the number of real target tokens in the batch.

    Introduced in notebook 05.
    """

    loss: float
    tokens: int


def train_step(model: Translator, batch: Batch, optimizer: torch.optim.Optimizer, config: TrainConfig,
               graphs: DecoderGraphs | None = None, fast_paths: bool = True) -> _StepResult:
    """One optimisation step on one batch: forward (teacher forcing per `config`), masked loss (label-smoothed per
    `config`), backward, gradient clipping (when config.clip > 0), optimizer step. The loss comes from
    `fast.training_loss`: the same as masked_nll_loss over the model's (B, T, V), up to float rounding.

    Args:
        model: a translator in train mode, on the device of `batch`.
        batch: Batch(src (B, S), src_lengths (B,), src_mask (B, S), tgt (B, T), tgt_lengths (B,)).
        optimizer: e.g. make_optimizer(model, config).
        config: teacher_forcing_ratio, label_smoothing and clip are read from it.
        graphs: on a GPU, the decoder's side recorded as CUDA graphs (`fast.training_graphs`, built by `train`).
        fast_paths: False runs the decoder's own forward even where it has a fast path (to compare the two).
    Returns:
        _StepResult(loss, tokens): the loss is the plain NLL per target token, comparable with the dev loss.

    Introduced in notebook 05.
    """
    loss, nll = training_loss(model, batch, config, graphs, fast_paths)
    optimizer.zero_grad(set_to_none=True)
    with quiet_stream_warning():
        loss.backward()
    if config.clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
    optimizer.step()
    return _StepResult(nll.item(), int(batch.tgt_lengths.sum()))


def train_epoch(model: Translator, loader: Iterable[Batch], optimizer: torch.optim.Optimizer, config: TrainConfig,
                deadline: float | None = None, desc: str = "train", progress: bool = True,
                graphs: DecoderGraphs | None = None) -> float:
    """One pass of `train_step` over `loader`. Returns the mean plain NLL per target token of the epoch.

    Args:
        model: a Seq2Seq (put in train mode here).
        loader: yields Batch(src (B, S), src_lengths (B,), src_mask, tgt (B, T), tgt_lengths) (data.make_loader);
            iterated exactly once, and its len() sizes the progress bar.
        optimizer: e.g. Adam over model.parameters().
        config: what train_step reads (teacher_forcing_ratio, label_smoothing, clip).
        deadline: time.perf_counter() value after which the epoch stops early (time budget).
        desc, progress: the tqdm bar's label and whether to show it.
        graphs: passed to every train_step (CUDA graphs of the decoder's side; None: none).

    Introduced in notebook 05.
    """
    model.train()
    total_loss, total_tokens = 0.0, 0
    # tqdm(loader) would call iter(loader) once more in its constructor: a bucketed loader would reshuffle twice per
    # epoch. So the bar only counts, and the loader is iterated exactly once.
    bar = tqdm(total=len(loader), desc=desc, leave=False, disable=not progress, mininterval=0.5)
    for batch in loader:
        result = train_step(model, batch.to(model.device), optimizer, config, graphs)
        total_loss += result.loss * result.tokens
        total_tokens += result.tokens
        bar.set_postfix(loss=f"{total_loss / total_tokens:.3f}", refresh=False)
        bar.update()
        if deadline is not None and time.perf_counter() > deadline:
            break
    bar.close()
    return total_loss / max(total_tokens, 1)


def sample_pairs(pairs: Sequence[Pair], count: int | None, seed: int) -> list[Pair]:
    """A seeded random sample of `count` pairs, in their original order (all of them when count is None).

    Not the first `count`: the splits keep corpus order, which is roughly shortest first, so a prefix would be a
    biased subset. Introduced in notebook 05.
    """
    if count is None or count >= len(pairs):
        return list(pairs)
    chosen = sorted(random.Random(seed).sample(range(len(pairs)), count))
    return [pairs[index] for index in chosen]


def make_optimizer(model: Translator, config: TrainConfig) -> torch.optim.Optimizer:
    """Adam over all parameters (the fused kernel where PyTorch has one). Introduced in notebook 05."""
    try:
        return torch.optim.Adam(model.parameters(), lr=config.learning_rate, fused=True)
    except (RuntimeError, TypeError):  # fused Adam missing for this device or build
        return torch.optim.Adam(model.parameters(), lr=config.learning_rate)


def train(model: Translator, data: CourseData, config: TrainConfig, progress: bool = True,
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
    Raises:
        ValueError: the train or dev split is empty (before any training), or config.device is unusable.

    Introduced in notebook 05.
    """
    model.config.check_vocabularies(data.src_vocab, data.tgt_vocab)
    if not data.splits.train or not data.splits.dev:  # refuse before training, not after the first epoch
        raise ValueError(enough_pairs_problem(data))
    torch.manual_seed(config.seed)
    device = resolve_device(config.device)
    model.to(device)
    train_pairs = sample_pairs(data.splits.train, config.max_train_pairs, config.seed)
    dev_pairs = sample_pairs(data.splits.dev, config.max_eval_pairs, config.seed)
    loader = make_loader(train_pairs, data.src_vocab, data.tgt_vocab, config.batch_size, bucket_by=config.bucket_by,
                         seed=config.seed)
    optimizer = make_optimizer(model, config)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=config.lr_decay)
    history = History()
    snapshots: collections.deque[dict] = collections.deque(maxlen=max(config.average_last, 1))
    started = time.perf_counter()
    deadline = None if config.time_budget is None else started + config.time_budget
    graphs = training_graphs(model, config, loader)  # recorded before the first epoch: counted as training
    for epoch in range(1, config.epochs + 1):
        epoch_start = started if epoch == 1 else time.perf_counter()
        train_loss = train_epoch(model, loader, optimizer, config, deadline,
                                 desc=f"epoch {epoch}/{config.epochs}", progress=progress, graphs=graphs)
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
        model.load_state_dict(_average_weights(list(snapshots)))
        if log is not None:
            result = evaluate(model, dev_pairs, data.src_vocab, data.tgt_vocab, config.eval_batch_size,
                              bleu=config.eval_bleu)
            log(f"averaged the weights of the last {len(snapshots)} epochs: dev loss {result.loss:.3f}  "
                f"dev BLEU {result.bleu:5.2f}")
    return history


def _average_weights(state_dicts: list[dict]) -> dict:
    """The element-wise mean of several state_dicts of one model (checkpoint averaging). Introduced in notebook 05."""
    averaged = {}
    for key, value in state_dicts[0].items():
        if value.is_floating_point():
            averaged[key] = torch.stack([state[key] for state in state_dicts]).mean(dim=0)  # same shape as value
        else:
            averaged[key] = value
    return averaged
