"""The 2017 PyTorch tutorial's `trainIters` and `evaluate()` on course_utils.classic's model: the baselines that
benchmarks/throughput.py, time_to_quality.py and memory.py run.

STEPS = 25,000 is not the tutorial's 75,000: it is what Carton's lecture (CS 780/880 Lecture 18, 2023) runs with the
same code, `trainIters(..., 25000, print_every=5000)`.
"""
from __future__ import annotations

import random
import time
from typing import NamedTuple

import torch
from tqdm.auto import tqdm

from course_utils import classic
from course_utils.vocab import EOS_ID, MAX_LENGTH, SOS_ID

STEPS = 25_000  # single-pair steps of the baseline run


class ClassicRun(NamedTuple):
    """What `train_classic` returns: the model, the training time and what it computed."""
    model: classic.ClassicModel
    seconds: float
    target_tokens: int  # decoder steps actually computed (teacher-forced steps run the whole target)
    steps: int


def train_classic(train_id_pairs: list[tuple[list[int], list[int]]], src_vocab_size: int, tgt_vocab_size: int,
                  steps: int = STEPS, seed: int = 0, time_limit: float | None = None,
                  progress: bool = True) -> ClassicRun:
    """The tutorial's `trainIters`: `steps` random pairs, one SGD step each, or until `time_limit` seconds have passed
    (no loss printing or plotting)."""
    random.seed(seed)
    model = classic.make_classic(src_vocab_size, tgt_vocab_size, seed)
    optimizers = [torch.optim.SGD(part.parameters(), lr=classic.LEARNING_RATE) for part in model]
    chosen = [random.choice(train_id_pairs) for _ in range(steps)]
    tokens, start, done = 0, time.perf_counter(), 0
    bar = tqdm(total=steps, desc="classic", leave=False, disable=not progress)
    for src_ids, tgt_ids in chosen:
        tokens += classic.train_step(model, optimizers, src_ids, tgt_ids)[1]
        done += 1
        bar.update(1)
        if time_limit is not None and time.perf_counter() - start > time_limit:
            break
    bar.close()
    return ClassicRun(model, time.perf_counter() - start, tokens, done)


@torch.no_grad()
def classic_translate(model: classic.ClassicModel, src_ids: list[int]) -> list[int]:
    """The tutorial's `evaluate()`, in eval mode: greedy, at most MAX_LENGTH ids (no EOS; the tutorial appends
    '<EOS>' to its words)."""
    encoder, decoder = model
    encoder.eval(), decoder.eval()
    src_ids = src_ids[:MAX_LENGTH]
    hidden = torch.zeros(1, 1, classic.HIDDEN_SIZE)
    encoder_outputs = torch.zeros(MAX_LENGTH, classic.HIDDEN_SIZE)  # (L, H)
    for i, index in enumerate(src_ids):
        output, hidden = encoder(torch.tensor([index]), hidden)
        encoder_outputs[i] = output[0, 0]
    token, out = torch.tensor([[SOS_ID]]), []
    for _ in range(MAX_LENGTH):
        log_probs, hidden, _ = decoder(token, hidden, encoder_outputs)
        index = int(log_probs.argmax())
        if index == EOS_ID:
            break
        out.append(index)
        token = torch.tensor([[index]])
    encoder.train(), decoder.train()
    return out
