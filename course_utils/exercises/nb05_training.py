"""Checkers of notebook 05's exercises: the masked loss by hand, greedy decoding by hand, perplexity from the
batch losses."""
from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch

from course_utils import data
from course_utils.exercises.contract import expect, first_match, run_cases
from course_utils.vocab import EOS_ID, PAD_ID, SOS_ID

MASKED_NLL_FORBIDDEN = ("course_utils.loss.masked_nll_loss", "torch.nn.functional.nll_loss",
                        "torch.nn.functional.cross_entropy")
GREEDY_FORBIDDEN = ("course_utils.search.greedy_decode", "course_utils.search.beam_search")
MASKED_NLL_LENGTHS = ((4, 2, 3), (3, 3), (1, 5))  # target lengths (EOS included) of the cases: ragged, no padding


def _masked_nll_cases(vocab_size: int = 9, seed: int = 10) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Seeded (log_probs (B, T, V), tgt (B, T)) cases: real ids >= 4 then EOS, PAD after each length."""
    generator = torch.Generator().manual_seed(seed)
    cases = []
    for lengths in MASKED_NLL_LENGTHS:
        lengths = torch.tensor(lengths)  # (B,)
        B, T = len(lengths), int(lengths.max())
        tgt = torch.randint(4, vocab_size, (B, T), generator=generator)  # (B, T)
        tgt[torch.arange(B), lengths - 1] = EOS_ID
        tgt[~data.lengths_to_mask(lengths, T)] = PAD_ID  # (B, T) pads after each length
        log_probs = torch.log_softmax(torch.randn(B, T, vocab_size, generator=generator) * 2, dim=-1)  # (B, T, V)
        cases.append((log_probs, tgt))
    return cases


def check_masked_nll(student_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check `student_fn(log_probs (B, T, V), tgt (B, T)) -> scalar`, the mean NLL of the non-PAD targets, against
    loss.masked_nll_loss, without calling a loss function. Introduced in notebook 05 (exercise: the masked loss)."""
    from course_utils.loss import masked_nll_loss
    exercise = "masked_nll"
    cases = _masked_nll_cases()
    hint = ("pick each position's gold log-probability (log_probs.gather(-1, tgt.unsqueeze(-1)), shape (B, T, 1)), "
            "keep the positions where tgt != PAD_ID, and return MINUS their sum divided by their count; write it "
            "without calling masked_nll_loss, F.nll_loss or F.cross_entropy")

    def check(case: tuple, got: object) -> None:
        log_probs, tgt = case
        expect(isinstance(got, (float, torch.Tensor)) and torch.as_tensor(got).numel() == 1,
               f"{exercise}: you returned {got!r}; expected one number (a scalar tensor). Hint: {hint}.")
        got, expected = float(got), float(masked_nll_loss(log_probs, tgt))
        real = tgt != PAD_ID  # (B, T)
        gold = log_probs.gather(-1, tgt.unsqueeze(-1)).squeeze(-1)  # (B, T)
        masked_gold = gold * real  # (B, T) 0 at pads
        mistakes = {  # what a typical mistake computes -> the hint that fixes it
            "you counted the <pad> positions as targets (the model would be trained to predict <pad>): ignore the "
            "positions where tgt == PAD_ID": float(-gold.mean()),
            "you divided by all B * T positions: pads count in the denominator, so padded batches get a smaller "
            "loss; divide by the number of real tokens": float(-masked_gold.sum() / real.numel()),
            "you returned the sum: divide by the number of real tokens (the mean per token)": float(-masked_gold.sum()),
            "you averaged each sentence's mean: every real token must count once (a long sentence has more "
            "tokens), so sum over all real tokens and divide by their total count":
                float((-masked_gold.sum(1) / real.sum(1)).mean()),
            "the loss is MINUS the log-probability (log-probabilities are <= 0, the loss >= 0)":
                float(masked_gold.sum() / real.sum()),
        }
        close = functools.partial(math.isclose, rel_tol=1e-5, abs_tol=1e-6)
        if not close(got, expected):
            why = first_match(got, mistakes, lambda got, value: not close(value, expected) and close(got, value))
            raise AssertionError(f"{exercise}: with target lengths {real.sum(1).tolist()} (tgt shape "
                                 f"{tuple(tgt.shape)}) you gave {got:.6f}, expected {expected:.6f}. Hint: "
                                 f"{why or hint}.")

    run_cases(exercise, student_fn, cases, hint, check, f"your loss equals loss.masked_nll_loss on all {len(cases)} "
              f"batches (ragged ones and one without padding).", MASKED_NLL_FORBIDDEN)


GREEDY_SOURCES = ((4, 5, 6, 7), (8, 9, 10, 11, 5, 6), (7,), (11, 10, 9, 8, 7, 6, 5, 4), (5, 5, 9),
                  (10, 4, 8, 6, 11))  # source ids of the cases (EOS appended); see _greedy_model
GREEDY_MAX_LENGTH = 7  # the output cap (EOS included) of the exercise


def _greedy_model():
    """A seeded tiny Seq2Seq (Bahdanau, V = 10) in eval mode with clear-cut argmaxes: PAD and SOS never picked, EOS
    favoured so that some GREEDY_SOURCES end with EOS before the cap and others are cut by it."""
    from course_utils.seq2seq import ModelConfig, Seq2Seq
    with torch.random.fork_rng():  # seeded weights without touching the student's random state
        torch.manual_seed(14)
        model = Seq2Seq(ModelConfig(src_vocab_size=12, tgt_vocab_size=10, attention="bahdanau", embedding_size=8,
                                    hidden_size=16, dropout=0.0)).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(3.0)
        model.decoder.out.bias[PAD_ID] = -1e4
        model.decoder.out.bias[SOS_ID] = -1e4
        model.decoder.out.bias[EOS_ID] += 1.0
    return model


def _greedy_cases() -> list[tuple[torch.Tensor, list[int]]]:
    """(src_ids (S,), expected output ids) for GREEDY_SOURCES, the expected ids from search.greedy_decode."""
    from course_utils.search import greedy_decode
    model = _greedy_model()
    cases = []
    for ids in GREEDY_SOURCES:
        src_ids = torch.tensor(list(ids) + [EOS_ID])  # (S,)
        output = greedy_decode(model, src_ids.unsqueeze(0), torch.tensor([len(src_ids)]),
                               max_steps=GREEDY_MAX_LENGTH)
        cases.append((src_ids, output.tokens[0, :int(output.lengths[0])].tolist()))
    return cases


def check_greedy_decode(student_fn: Callable[..., list[int]]) -> None:
    """Check `student_fn(model, src_ids (S,), max_length) -> output ids (EOS included)`, a loop over
    model.decoder.step, against search.greedy_decode. Introduced in notebook 05 (exercise: greedy decoding)."""
    exercise = "greedy_decode"
    model, cases = _greedy_model(), _greedy_cases()
    hint = ("memory, state = model.encode(src_ids.unsqueeze(0), torch.tensor([len(src_ids)])); start with "
            "prev = torch.tensor([SOS_ID]); at each step out = model.decoder.step(prev, state, memory), "
            "prev = out.log_probs.argmax(-1), state = out.state; append prev.item(); stop after EOS_ID or "
            "max_length tokens; write the loop yourself, without calling greedy_decode or beam_search")

    def student(*args: object) -> object:
        with torch.no_grad():
            got = student_fn(*args)
        return got.tolist() if isinstance(got, torch.Tensor) else got

    def check(case: tuple, got: object) -> None:
        src_ids, expected = case
        expect(isinstance(got, (list, tuple)) and all(isinstance(i, int) for i in got),
               f"{exercise}: you returned {got!r}; expected a list of int ids (use .item() or .tolist()). "
               f"Hint: {hint}.")
        got = list(got)
        if got == expected:
            return
        why = hint
        if got and got[0] == SOS_ID:
            why = "the output starts AFTER <sos>: SOS is the first input, not an output token"
        elif expected[-1] == EOS_ID and got == expected[:-1]:
            why = "include the EOS token in the output (then stop): the lengths and the attention rows count it"
        elif got[:len(expected)] == expected and len(got) > len(expected):
            why = (f"stop as soon as you produce EOS_ID ({EOS_ID}), and never produce more than max_length "
                   f"= {GREEDY_MAX_LENGTH} tokens")
        elif got[:1] == expected[:1]:
            why = ("feed back the token you just chose (prev = its argmax) and carry the new state "
                   "(state = out.state) into the next step")
        raise AssertionError(f"{exercise}: for src_ids {src_ids.tolist()} you produced {got}, greedy_decode "
                             f"produced {expected}. Hint: {why}.")

    run_cases(exercise, student, cases, hint, check, f"your loop equals search.greedy_decode on all {len(cases)} "
              f"sentences (ending with EOS or cut at max_length = {GREEDY_MAX_LENGTH}).", GREEDY_FORBIDDEN,
              args=lambda case: (model, case[0], GREEDY_MAX_LENGTH))


PERPLEXITY_CASES = (  # (mean NLL per token of each batch, real target tokens of each batch)
    ([2.0, 1.0, 3.0], [100, 300, 50]),
    ([1.2, 1.8], [64, 64]),   # equal token counts: the unweighted mean happens to be right
    ([0.5, 2.5, 1.5, 4.0], [900, 10, 400, 25]),
)


def check_perplexity(student_fn: Callable[[list[float], list[int]], float]) -> None:
    """Check `student_fn(batch_losses, batch_tokens) -> float`, exp(sum(loss_i * n_i) / sum(n_i)) from per-batch mean
    NLLs and token counts. Introduced in notebook 05 (exercise: perplexity from the loss)."""
    exercise = "perplexity"
    hint = ("perplexity = exp(mean NLL per token over the whole set); that mean weights each batch's loss by its "
            "number of tokens: exp(sum(loss * n) / sum(n))")

    def check(case: tuple, got: object) -> None:
        losses, tokens = case
        expect(isinstance(got, (float, int, torch.Tensor)) and torch.as_tensor(got).numel() == 1,
               f"{exercise}: you returned {got!r}; expected one number. Hint: {hint}.")
        got = float(got)
        mean_loss = sum(loss * n for loss, n in zip(losses, tokens, strict=True)) / sum(tokens)
        expected = math.exp(mean_loss)
        mistakes = {
            "weight each batch's loss by its number of tokens (a batch of 10 tokens must not count as much as one "
            "of 900)": math.exp(sum(losses) / len(losses)),
            "the perplexity of the set is exp of the token-weighted mean loss, not the mean of per-batch "
            "perplexities": sum(math.exp(loss) * n for loss, n in zip(losses, tokens, strict=True)) / sum(tokens),
            "the losses are natural-log NLL: use math.exp (e ** loss), not 2 ** loss": 2 ** mean_loss,
            "the perplexity is exp of the MEAN loss, not the loss itself": mean_loss,
        }
        if not math.isclose(got, expected, rel_tol=1e-6):
            why = first_match(got, mistakes, lambda got, value: not math.isclose(value, expected, rel_tol=1e-6)
                              and math.isclose(got, value, rel_tol=1e-6))
            raise AssertionError(f"{exercise}: for losses {losses} over {tokens} tokens you gave {got:.4f}, "
                                 f"expected {expected:.4f}. Hint: {why or hint}.")

    run_cases(exercise, student_fn, PERPLEXITY_CASES, hint, check, f"right on all {len(PERPLEXITY_CASES)} sets of "
              f"batches (unequal token counts included).", args=lambda case: (list(case[0]), list(case[1])))
