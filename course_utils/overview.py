"""Opening measurements: a toy task that shows the bottleneck (reversing random sequences), and the example sentence
picked by a rule. Introduced in notebook 00."""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

import torch

from course_utils.data import Batch, lengths_to_mask, pad_ids
from course_utils.evaluate import SentenceRow
from course_utils.search import greedy_decode
from course_utils.seq2seq import ModelConfig, Seq2Seq
from course_utils.train import TrainConfig, make_optimizer, train_step
from course_utils.vocab import EOS_ID, SPECIAL_TOKENS

__all__ = ["toy_copy_batch", "ToyScore", "train_and_score_toy", "pick_example"]

_LENGTHS = (5, 25)  # the toy sequences' shortest and longest length (symbols, EOS not counted)
_SYMBOLS = 10  # the toy vocabulary: ids after the special tokens (<pad> <sos> <eos> <unk>)


def toy_copy_batch(count: int, lengths: tuple[int, int] = _LENGTHS, seed: int = 0) -> Batch:
    """`count` random sequences of `_SYMBOLS` symbols, of lengths drawn from lengths (both ends included), each the
    target of itself; EOS ends every source and target, as in the course's batches. Introduced in notebook 00."""
    generator = torch.Generator().manual_seed(seed)
    sizes = torch.randint(lengths[0], lengths[1] + 1, (count,), generator=generator).tolist()
    first = len(SPECIAL_TOKENS)
    rows = [torch.cat([torch.randint(first, first + _SYMBOLS, (n,), generator=generator), torch.tensor([EOS_ID])])
            for n in sizes]
    src, src_lengths = pad_ids(rows)  # (B, S), (B,)
    return Batch(src, src_lengths, lengths_to_mask(src_lengths, src.size(1)), src.clone(), src_lengths.clone())


class ToyScore(NamedTuple):
    """One model trained on the toy task, scored on fresh sequences. Introduced in notebook 00."""
    attention: str  # "none" or "bahdanau"
    lengths: list[int]  # the scored sequence lengths
    accuracy: list[float]  # per length: the share of output positions holding the right symbol (greedy decoding)
    seconds: float  # training time


def train_and_score_toy(attention: str, steps: int = 200, seed: int = 0, test_lengths: Sequence[int] = (5, 10, 15, 20,
                        25), test_count: int = 100) -> ToyScore:
    """Train a small Seq2Seq (`attention` "none" or "bahdanau") to copy toy sequences, `steps` batches of 64 with the
    course's training step, then score it on `test_count` fresh sequences of each test length. Introduced in
    notebook 00."""
    torch.manual_seed(seed)
    size = len(SPECIAL_TOKENS) + _SYMBOLS
    model = Seq2Seq(ModelConfig(size, size, attention, embedding_size=32, hidden_size=64, dropout=0.0))
    config = TrainConfig(learning_rate=1e-2, seed=seed, device="cpu")
    optimizer, start = make_optimizer(model, config), time.perf_counter()
    model.train()
    for step in range(steps):
        train_step(model, toy_copy_batch(64, seed=seed * 1_000_003 + step), optimizer, config)
    seconds, accuracy = time.perf_counter() - start, []
    for n in test_lengths:  # test seeds: far above every training batch's
        test = toy_copy_batch(test_count, (n, n), seed=2**40 + seed * 1_000 + n)
        out = greedy_decode(model, test.src, test.src_lengths, max_steps=n + 1).tokens  # (B, <= n + 1)
        out = torch.nn.functional.pad(out, (0, n + 1 - out.size(1)), value=EOS_ID)[:, :n]  # (B, n)
        accuracy.append((out == test.tgt[:, :n]).float().mean().item())
    return ToyScore(attention, list(test_lengths), accuracy, seconds)


def pick_example(rows: Sequence[SentenceRow]) -> tuple[int, str]:
    """(row index, the rule as a phrase): the longest source whose hypothesis equals the reference (ties: the first),
    else the longest source, in tokens split on spaces. Raises ValueError for no rows. Introduced in notebook 00."""
    if not rows:
        raise ValueError("pick_example got no rows; pass evaluate(...).rows of a non-empty split")
    exact = [i for i, row in enumerate(rows) if row.hypothesis == row.reference]
    candidates, rule = (exact, "the longest test source translated exactly") if exact else (
        range(len(rows)), "no test source is translated exactly: the longest test source")
    return max(candidates, key=lambda i: (len(rows[i].source.split(" ")), -i)), rule
