"""Training, top to bottom as in notebook 05: one batch, one epoch, the loop with dev loss and BLEU per epoch. The
loss comes from `fast.training_loss`: the plain forward's numbers up to float rounding. Two CPU runs with one seed and
thread count give identical losses. Introduced in notebook 05.
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
from course_utils.fast import training_graphs, training_loss
from course_utils.fast.cuda_graphs import DecoderGraphs, quiet_stream_warning
from course_utils.runtime import cpu_turn, resolve_device

if TYPE_CHECKING:
    from course_utils.seq2seq import Translator

__all__ = ["TrainConfig", "History", "enough_pairs_problem", "train_step",
           "train_epoch", "sample_pairs", "make_optimizer", "train"]


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
    """Per-epoch numbers of one training run, for plotting (viz.plot_history). Introduced in notebook 05."""
    train_loss: list[float] = field(default_factory=list)  # mean NLL per target token (without label smoothing)
    dev_loss: list[float] = field(default_factory=list)  # the same on the dev set (teacher forced, no dropout)
    dev_bleu: list[float] = field(default_factory=list)  # corpus BLEU of greedy dev translations (nan: not computed)
    epoch_seconds: list[float] = field(default_factory=list)  # training time (evaluation excluded)

    @property
    def epochs(self) -> int:
        return len(self.train_loss)

    @property
    def train_seconds(self) -> float:  # evaluation excluded
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


_MIN_USABLE_PAIRS = 20  # fewer kept pairs cannot fill a training batch and still leave dev and test pairs


def enough_pairs_problem(data: CourseData, minimum: int = _MIN_USABLE_PAIRS) -> str | None:
    """None when `data` has enough usable pairs to train and evaluate on, else a one-line message: how to get more."""
    splits = data.splits
    if len(data.pairs) >= minimum and splits.train and splits.dev and splits.test:
        return None
    return (f"the corpus has only {len(data.pairs):,} usable sentence pairs after filtering (train "
            f"{len(splits.train):,}, dev {len(splits.dev):,}, test {len(splits.test):,}); training needs at least "
            f"{minimum:,}, with non-empty dev and test splits: point COURSE_CORPUS to the full corpus, or loosen the "
            f"filter (max_length)")


class _StepResult(NamedTuple):
    """One train_step: the plain NLL per real target token (comparable with the dev loss), and their number."""
    loss: float
    tokens: int


def train_step(model: Translator, batch: Batch, optimizer: torch.optim.Optimizer, config: TrainConfig,
               graphs: DecoderGraphs | None = None, fast_paths: bool = True) -> _StepResult:
    """One optimisation step on `batch` (on the model's device): `fast.training_loss`, backward, clipping, step;
    fast_paths=False: the decoder's own forward. Introduced in appendix A2."""
    with cpu_turn(model.device):  # two trainings on one CPU alternate their steps
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
    """`train_step` over every batch, until time.perf_counter() passes `deadline` -> the epoch's mean plain NLL per
    target token. Introduced in notebook 05."""
    model.train()
    total_loss, total_tokens = 0.0, 0
    # the bar only counts: tqdm(loader) would iterate the loader once more (a bucketed loader would reshuffle twice)
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
    """A seeded random sample of `count` pairs (all when None), in corpus order: not a prefix, which would be biased
    (the splits run roughly shortest first). Introduced in notebook 05."""
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
    """Train `model` on data.splits.train (moved to config.device), one `log` line per epoch (None: silent).
    Raises ValueError before training when the train or dev split is empty or config.device is unusable.
    Introduced in notebook 10."""
    model.config.check_vocabularies(data.src_vocab, data.tgt_vocab)
    if not data.splits.train or not data.splits.dev:  # refuse before training, not after the first epoch
        raise ValueError(enough_pairs_problem(data))
    torch.manual_seed(config.seed)
    model.to(resolve_device(config.device))
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
    if graphs is not None:
        loader.batch_sampler.set_epoch(0)  # recording read the loader once: epoch 1 still sees sampler epoch 0
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
            log(f"epoch {epoch:>2}/{config.epochs}  train loss {train_loss:.3f}  dev loss {result.loss:.3f}  dev ppl "
                f"{result.perplexity:6.2f}  dev BLEU {result.bleu:5.2f}  ({history.epoch_seconds[-1]:.1f} s)")
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
    """The element-wise mean of several state_dicts of one model (checkpoint averaging)."""
    return {key: torch.stack([state[key] for state in state_dicts]).mean(dim=0) if value.is_floating_point() else value
            for key, value in state_dicts[0].items()}  # each the shape of value
