"""The 2017 PyTorch tutorial "Translation with a Sequence to Sequence Network and Attention", the benchmarks' baseline:
its recipe as written, quirks included (one pair per SGD step, location attention over MAX_LENGTH slots, teacher
forcing with probability 0.5, Python loops over time steps); only the data (split, vocabularies, ids) is the course's.

Where each number comes from: the tutorial's stored source (pytorch/tutorials, intermediate_source/
seq2seq_translation_tutorial.py at 05e7ce2c, a revision of Robertson's 2017 text that already uses torch.device;
its `train()` is line for line the one Carton's lecture copies) has `hidden_size = 256`, `dropout_p=0.1`,
`teacher_forcing_ratio = 0.5`, `MAX_LENGTH = 10`, SGD with `learning_rate=0.01` (trainIters' default) and
`trainIters(encoder1, attn_decoder1, 75000, print_every=5000)`. Its `trainIters` and `evaluate()`, which only
the benchmarks run, are in benchmarks/classic_run.py. One quirk is a bug the baseline keeps on purpose: `train_step`'s
reported loss divides by the whole target length even after free running stopped early (see there; appendix A6).
"""
from __future__ import annotations

import random
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.vocab import EOS_ID, MAX_LENGTH, SOS_ID

__all__ = ["HIDDEN_SIZE", "LEARNING_RATE", "ClassicEncoder", "ClassicAttnDecoder", "ClassicModel", "make_classic",
           "train_step"]

HIDDEN_SIZE = 256
LEARNING_RATE = 0.01
_TEACHER_FORCING_RATIO = 0.5


class ClassicEncoder(nn.Module):
    """The tutorial's encoder: embedding + GRU fed a token at a time, (1, 1, H) all along. Introduced in notebook 05."""
    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size)

    def forward(self, token, hidden):
        embedded = self.embedding(token).view(1, 1, -1)  # (1, 1, H)
        return self.gru(embedded, hidden)  # (1, 1, H), (1, 1, H)


class ClassicAttnDecoder(nn.Module):
    """The tutorial's `AttnDecoderRNN`: location attention over MAX_LENGTH encoder slots. Introduced in notebook 05."""
    def __init__(self, hidden_size: int, output_size: int, dropout_p: float = 0.1, max_length: int = MAX_LENGTH):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attn = nn.Linear(hidden_size * 2, max_length)
        self.attn_combine = nn.Linear(hidden_size * 2, hidden_size)
        self.dropout = nn.Dropout(dropout_p)
        self.gru = nn.GRU(hidden_size, hidden_size)
        self.out = nn.Linear(hidden_size, output_size)

    def forward(self, token, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(token).view(1, 1, -1))  # (1, 1, H)
        attn_weights = F.softmax(self.attn(torch.cat((embedded[0], hidden[0]), 1)), dim=1)  # (1, L)
        attn_applied = torch.bmm(attn_weights.unsqueeze(0), encoder_outputs.unsqueeze(0))  # (1, 1, H)
        output = torch.cat((embedded[0], attn_applied[0]), 1)  # (1, 2H)
        output = F.relu(self.attn_combine(output).unsqueeze(0))  # (1, 1, H)
        output, hidden = self.gru(output, hidden)  # (1, 1, H), (1, 1, H)
        return F.log_softmax(self.out(output[0]), dim=1), hidden, attn_weights  # (1, V)


class ClassicModel(NamedTuple):
    """The tutorial's two separately optimised modules. Introduced in notebook 05."""
    encoder: ClassicEncoder
    decoder: ClassicAttnDecoder


def make_classic(src_vocab_size: int, tgt_vocab_size: int, seed: int = 0) -> ClassicModel:
    """The tutorial's encoder and decoder (HIDDEN_SIZE), initialised from `seed`. Introduced in appendix A2."""
    torch.manual_seed(seed)
    return ClassicModel(ClassicEncoder(src_vocab_size, HIDDEN_SIZE), ClassicAttnDecoder(HIDDEN_SIZE, tgt_vocab_size))


def train_step(model: ClassicModel, optimizers, src_ids: list[int], tgt_ids: list[int]) -> tuple[float, int]:
    """The tutorial's `train()` as written: one pair, one SGD step. Returns (loss / target length, decoder steps
    run). Introduced in appendix A2.

    The first number is the tutorial's, bug included: without teacher forcing the loop stops at a predicted EOS, yet
    the summed loss is still divided by the whole target length, so a pair that stopped after k of T tokens reports
    k/T of its real per-token mean (too low). The real mean is `loss * len(tgt_ids) / steps`. Kept unchanged: the
    baseline reproduces the tutorial's printed numbers; appendix A6 shows the gap."""
    encoder, decoder = model
    for optimizer in optimizers:
        optimizer.zero_grad()
    src = torch.tensor(src_ids).view(-1, 1)  # (S, 1)
    tgt = torch.tensor(tgt_ids).view(-1, 1)  # (T, 1)
    hidden = torch.zeros(1, 1, HIDDEN_SIZE)
    encoder_outputs = torch.zeros(MAX_LENGTH, HIDDEN_SIZE)  # (L, H)
    for i in range(src.size(0)):
        output, hidden = encoder(src[i], hidden)
        encoder_outputs[i] = output[0, 0]
    token = torch.tensor([[SOS_ID]])
    loss, steps = 0.0, 0
    teacher_forcing = random.random() < _TEACHER_FORCING_RATIO
    for t in range(tgt.size(0)):
        log_probs, hidden, _ = decoder(token, hidden, encoder_outputs)
        loss = loss + F.nll_loss(log_probs, tgt[t])
        steps += 1
        if teacher_forcing:
            token = tgt[t]
        else:
            token = log_probs.topk(1)[1].squeeze().detach()
            if token.item() == EOS_ID:
                break
    loss.backward()
    for optimizer in optimizers:
        optimizer.step()
    # The tutorial's bug, kept on purpose: divided by the whole target length even when the loop above broke at a
    # predicted <eos> after `steps` < T tokens; the real mean per scored token is loss.item() / steps.
    return loss.item() / tgt.size(0), steps
