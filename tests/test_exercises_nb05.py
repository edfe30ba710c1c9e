"""Notebook 05's checkers: the typical mistakes get their hint, and the cases are tricky enough."""
from __future__ import annotations

import math

import torch

from course_utils import exercises
from course_utils.exercises import nb05_training, solutions
from course_utils.vocab import EOS_ID, PAD_ID, SOS_ID


def greedy_variant(model, src_ids, max_length, feed_back=True, keep_eos=True, stop=True, prefix=()):
    """Greedy decoding by hand; the keyword arguments switch on the usual mistakes."""
    memory, state = model.encode(src_ids.unsqueeze(0), torch.tensor([len(src_ids)]))  # src (1, S)
    prev, output = torch.tensor([SOS_ID]), list(prefix)
    for _ in range(max_length if stop else max_length + 3):
        step = model.decoder.step(prev, state, memory)
        token, state = step.log_probs.argmax(-1), step.state  # (1, V) -> (1,)
        prev = token if feed_back else torch.tensor([SOS_ID])
        if stop and token.item() == EOS_ID:
            return output + ([token.item()] if keep_eos else [])
        output.append(token.item())
    return output


def token_gold(log_probs, tgt):
    return log_probs.gather(-1, tgt.unsqueeze(-1)).squeeze(-1) * (tgt != PAD_ID)  # (B, T) 0 at pads


def weighted(losses, tokens):
    return sum(loss * n for loss, n in zip(losses, tokens, strict=True)) / sum(tokens)


MISTAKES = [  # checker, typical wrong solution, a word of the expected hint
    (exercises.check_masked_nll, lambda log_probs, tgt: -log_probs.gather(-1, tgt.unsqueeze(-1)).mean(),
     "<pad> positions as targets"),
    (exercises.check_masked_nll, lambda log_probs, tgt: -token_gold(log_probs, tgt).sum() / tgt.numel(), "B \\* T"),
    (exercises.check_masked_nll, lambda log_probs, tgt: -token_gold(log_probs, tgt).sum(), "returned the sum"),
    (exercises.check_masked_nll,
     lambda log_probs, tgt: (-token_gold(log_probs, tgt).sum(1) / (tgt != 0).sum(1)).mean(), "count once"),
    (exercises.check_masked_nll, lambda log_probs, tgt: -solutions.masked_nll(log_probs, tgt), "MINUS"),
    (exercises.check_masked_nll, lambda log_probs, tgt: torch.nn.functional.nll_loss(log_probs, tgt, ignore_index=0),
     "without calling torch.nn.functional.nll_loss.*gather"),  # forbidden (and (B, V, T) besides)
    (exercises.check_masked_nll, lambda log_probs, tgt: [solutions.masked_nll(log_probs, tgt)], "one number"),
    (exercises.check_masked_nll, lambda log_probs, tgt: -log_probs.gather(-1, tgt).mean(), "raised.*gather"),
    (exercises.check_greedy_decode, lambda *args: greedy_variant(*args, keep_eos=False), "include the EOS"),
    (exercises.check_greedy_decode, lambda *args: greedy_variant(*args, stop=False), "stop as soon as"),
    (exercises.check_greedy_decode, lambda *args: greedy_variant(*args, feed_back=False), "feed back"),
    (exercises.check_greedy_decode, lambda *args: greedy_variant(*args, prefix=[SOS_ID]), "AFTER <sos>"),
    (exercises.check_greedy_decode,
     lambda model, src_ids, max_length: torch.tensor(greedy_variant(model, src_ids, max_length)).float(), "int ids"),
    (exercises.check_greedy_decode, lambda model, src_ids, max_length: greedy_variant(model, src_ids[None], max_length),
     "raised.*model.encode"),  # (1, S) where (S,) is expected
    (exercises.check_perplexity, lambda losses, tokens: math.exp(sum(losses) / len(losses)), "number of tokens"),
    (exercises.check_perplexity,
     lambda losses, tokens: sum(math.exp(loss) * n for loss, n in zip(losses, tokens, strict=True)) / sum(tokens),
     "per-batch"),
    (exercises.check_perplexity, lambda losses, tokens: 2 ** weighted(losses, tokens), "not 2 \\*\\*"),
    (exercises.check_perplexity, lambda losses, tokens: weighted(losses, tokens), "exp of the MEAN"),
    (exercises.check_perplexity, lambda losses, tokens: math.exp(torch.tensor(losses) @ torch.tensor(tokens)),
     "raised RuntimeError.*weights each batch"),  # float @ long
]


def test_notebook_05_cases_are_tricky_and_leave_the_random_state_alone(capsys):
    """Ragged batches and one without padding; greedy outputs that end with EOS and others cut at the cap, with
    more than one distinct output; token counts that make the unweighted mean wrong."""
    state = torch.random.get_rng_state()
    targets = [tgt for _, tgt in nb05_training._masked_nll_cases()]
    assert any((tgt == PAD_ID).any() for tgt in targets) and any((tgt != PAD_ID).all() for tgt in targets)
    outputs = [expected for _, expected in nb05_training._greedy_cases()]
    assert any(out[-1] == EOS_ID and len(out) < exercises.GREEDY_MAX_LENGTH for out in outputs)
    assert any(out[-1] != EOS_ID and len(out) == exercises.GREEDY_MAX_LENGTH for out in outputs)
    assert len({tuple(out) for out in outputs}) > 2
    assert all(PAD_ID not in out and SOS_ID not in out for out in outputs)
    assert any(len(set(tokens)) > 1 for _, tokens in exercises.PERPLEXITY_CASES)
    exercises.check_greedy_decode(solutions.greedy_decode)
    assert "correct!" in capsys.readouterr().out
    assert torch.equal(torch.random.get_rng_state(), state)  # the checkers draw from their own generators
