"""Every checker accepts a correct solution, says "not attempted yet" for the starter (None), and raises
AssertionError with a hint for a typical wrong solution."""
from __future__ import annotations

import re

import pytest
import torch

from course_utils import data, exercises


# ---------------------------------------------------------------------------------------------- notebook 01
def normalize_solution(s: str) -> str:
    s = data.unicode_to_ascii(s.lower().strip())
    s = re.sub(r"([.!?])", r" \1", s)
    return re.sub(r"[^a-zA-Z.!?]+", " ", s).strip()


def encode_solution(vocab: data.Vocab, sentence: str) -> list[int]:
    words = sentence.split(" ") if sentence else []
    return [vocab.word2index.get(word, data.UNK_ID) for word in words] + [data.EOS_ID]


def pad_fraction_solution(batch: data.Batch) -> float:
    return 1 - batch.src_lengths.sum().item() / batch.src.numel()


CHECKS = [  # checker, correct solution, typical wrong solutions with a word of the expected hint
    (exercises.check_normalize, normalize_solution, [
        (data.normalize_string_anchored, "anchored-regex bug"),
        (lambda s: data.unicode_to_ascii(s.lower()), "space before"),              # no cleaning at all
        (lambda s: re.sub(r"[^a-z.!?]+", " ", re.sub(r"([.!?])", r" \1", s.lower())).strip(), "accents"),
    ]),
    (exercises.check_encode, encode_solution, [
        (lambda vocab, sentence: [vocab.word2index[w] for w in sentence.split()] + [data.EOS_ID], "UNK_ID"),
        (lambda vocab, sentence: [vocab[w] for w in sentence.split()], "ends with EOS_ID"),
        # "".split(" ") is [""]: the empty sentence gets an <unk>
        (lambda vocab, sentence: [vocab[w] for w in sentence.split(" ")] + [data.EOS_ID], "UNK_ID"),
    ]),
    (exercises.check_pad_fraction, pad_fraction_solution, [
        (lambda batch: (batch.src == data.PAD_ID).sum().item() / batch.src.size(0), "B \\* S"),  # per row
        (lambda batch: (batch.src == data.PAD_ID).sum().item(), "B \\* S"),                      # a count
        (lambda batch: batch.src_mask.float().mean().item(), "B \\* S"),                         # real fraction
        (lambda batch: [0.5], "one number"),
    ]),
]


@pytest.mark.parametrize("check, solution", [(check, solution) for check, solution, _ in CHECKS])
def test_checker_accepts_a_correct_solution(check, solution, capsys):
    check(solution)
    out = capsys.readouterr().out
    assert "correct!" in out and "not attempted" not in out


@pytest.mark.parametrize("check", [check for check, _, _ in CHECKS])
def test_checker_reports_the_starter_as_not_attempted(check, capsys):
    check(lambda *args: None)
    out = capsys.readouterr().out
    assert "not attempted yet" in out and "correct!" not in out


@pytest.mark.parametrize("check, wrong, hint", [(check, wrong, hint) for check, _, mistakes in CHECKS
                                                for wrong, hint in mistakes])
def test_checker_raises_with_a_hint_for_a_typical_mistake(check, wrong, hint, capsys):
    with pytest.raises(AssertionError, match=hint):
        check(wrong)
    assert "correct!" not in capsys.readouterr().out


def test_pad_fraction_checker_accepts_a_tensor_result(capsys):
    exercises.check_pad_fraction(lambda batch: (~batch.src_mask).float().mean())
    assert "correct!" in capsys.readouterr().out


def test_checker_cases_are_really_tricky():
    """The cases must tell the bug from the fix, and the batches must include a no-padding one."""
    assert any(data.normalize_string(s) != data.normalize_string_anchored(s) for s in exercises.NORMALIZE_CASES)
    vocab = data.Vocab.build(exercises.ENCODE_VOCAB_SENTENCES)
    assert any(vocab.unknown_words(s) for s in exercises.ENCODE_CASES) and "" in exercises.ENCODE_CASES
    lengths = [{len(s.split(" ")) for s in group} for group in exercises.PAD_FRACTION_SOURCES]
    assert any(len(group) == 1 for group in lengths) and any(len(group) > 1 for group in lengths)
    assert torch.equal(torch.tensor(vocab.encode("je suis")), torch.tensor(encode_solution(vocab, "je suis")))


# ---------------------------------------------------------------------------------------------- notebook 03
def masked_softmax_solution(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


def dot_attention_solution(query, keys, mask):
    weights = masked_softmax_solution(torch.einsum("bk,bsk->bs", query, keys), mask)  # (B, S)
    return torch.einsum("bs,bsk->bk", weights, keys), weights


def context_solution(weights: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    return torch.einsum("bs,bsk->bk", weights, keys)


def naive_softmax(scores, mask):  # exp without subtracting the max: overflows for large scores
    exps = scores.exp() * mask
    return exps / exps.sum(-1, keepdim=True)


def dot_with(weights_fn):
    """A dot attention whose weights come from weights_fn(scores, mask, keys), context done right."""
    def attend(query, keys, mask):
        weights = weights_fn(torch.einsum("bk,bsk->bs", query, keys), mask, keys)
        return torch.einsum("bs,bsk->bk", weights, keys), weights
    return attend


CHECKS_03 = [  # checker, correct solution, typical wrong solutions with a word of the expected hint
    (exercises.check_masked_softmax, masked_softmax_solution, [
        (lambda scores, mask: scores.softmax(-1), "exactly 0"),                                  # no mask at all
        (lambda scores, mask: scores.masked_fill(~mask, 0).softmax(-1), "exactly 0"),            # 0 is not -inf
        (lambda scores, mask: scores.softmax(-1) * mask, "sum to less than 1"),                  # mask after softmax
        (lambda scores, mask: scores.masked_fill(~mask, float("-inf")).softmax(0), "dim=-1"),   # over the batch
        (naive_softmax, "overflows"),
    ]),
    (exercises.check_dot_attention, dot_attention_solution, [
        (dot_with(lambda scores, mask, keys: scores.softmax(-1)), "exactly 0"),
        (dot_with(lambda scores, mask, keys: masked_softmax_solution(scores / keys.shape[-1] ** 0.5, mask)), "scaled"),
        (lambda query, keys, mask: (keys.mean(1), dot_attention_solution(query, keys, mask)[1]), "context"),
        (lambda query, keys, mask: dot_attention_solution(query, keys, mask)[1], "pair"),
    ]),
    (exercises.check_context, context_solution, [
        (lambda weights, keys: keys.mean(1), "plain average"),
        (lambda weights, keys: weights.unsqueeze(-1) * keys, "shape"),                          # forgot the sum
        (lambda weights, keys: context_solution(weights.flip(-1), keys), "einsum"),
    ]),
]


@pytest.mark.parametrize("check, solution", [(check, solution) for check, solution, _ in CHECKS_03])
def test_notebook_03_checker_accepts_a_correct_solution(check, solution, capsys):
    test_checker_accepts_a_correct_solution(check, solution, capsys)


@pytest.mark.parametrize("check", [check for check, _, _ in CHECKS_03])
def test_notebook_03_checker_reports_the_starter_as_not_attempted(check, capsys):
    test_checker_reports_the_starter_as_not_attempted(check, capsys)


@pytest.mark.parametrize("check, wrong, hint", [(check, wrong, hint) for check, _, mistakes in CHECKS_03
                                                for wrong, hint in mistakes])
def test_notebook_03_checker_raises_with_a_hint_for_a_typical_mistake(check, wrong, hint, capsys):
    test_checker_raises_with_a_hint_for_a_typical_mistake(check, wrong, hint, capsys)


def test_notebook_03_cases_have_pads_large_scores_and_a_batch_without_padding():
    masks = [mask for _, _, mask in exercises._attention_cases()]
    assert any((~mask).any() for mask in masks) and any(mask.all() for mask in masks)
    assert any(len(set(lengths)) > 1 for lengths in exercises.ATTENTION_LENGTHS)
    with pytest.raises(AssertionError, match="overflows"):  # the large-score cases really overflow a naive exp
        exercises.check_masked_softmax(naive_softmax)


# ---------------------------------------------------------------------------------------------- notebook 02
def embedding_lookup_solution(ids: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.one_hot(ids, weight.shape[0]).float() @ weight  # (*, V) @ (V, E) -> (*, E)


def gru_step_solution(x, h, weight_ih, weight_hh, bias_ih, bias_hh, order=(0, 1), swap_z=False, bias_in_r=True):
    """One GRU step; the keyword arguments switch on the usual mistakes."""
    gi, gh = (x @ weight_ih.T + bias_ih).chunk(3, -1), (h @ weight_hh.T + bias_hh).chunk(3, -1)
    r, z = (torch.sigmoid(gi[k] + gh[k]) for k in order)
    h_n = gh[2] if bias_in_r else gh[2] - bias_hh.chunk(3)[2]
    n = torch.tanh(gi[2] + r * h_n + (0 if bias_in_r else bias_hh.chunk(3)[2]))
    return z * n + (1 - z) * h if swap_z else (1 - z) * n + z * h


def final_state_solution(outputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    index = (lengths - 1).view(-1, 1, 1).expand(-1, 1, outputs.shape[-1])  # (B, 1, H)
    return outputs.gather(1, index).squeeze(1)  # (B, H)


CHECKS_02 = [
    (exercises.check_embedding_lookup, embedding_lookup_solution, [
        (lambda ids, weight: torch.nn.functional.one_hot(ids).float() @ weight, "num_classes"),  # length max+1
        (lambda ids, weight: torch.nn.functional.one_hot(ids, weight.shape[0]) @ weight, "float"),  # long @ float
        (lambda ids, weight: weight[ids.reshape(-1)], "E added at the end"),                    # flattened ids
        (lambda ids, weight: weight[ids] + 1, "row i of weight"),
    ]),
    (exercises.check_gru_step, gru_step_solution, [
        (lambda *args: gru_step_solution(*args, swap_z=True), "share of the OLD state"),
        (lambda *args: gru_step_solution(*args, bias_in_r=False), "the bias b_hn included"),
        (lambda *args: gru_step_solution(*args, order=(1, 0)), "order r, z, n"),
        (lambda x, h, weight_ih, *rest: x @ weight_ih.T, r"\(B, H\)"),                    # (B, 3H)
    ]),
    (exercises.check_final_state, final_state_solution, [
        (lambda outputs, lengths: outputs[:, -1], "tutorial's bug"),
        (lambda outputs, lengths: outputs[torch.arange(len(lengths)), lengths], "count from 0"),  # IndexError
        (lambda outputs, lengths: outputs[:, lengths - 1], r"\(B, H\)"),                        # (B, B, H)
    ]),
]


@pytest.mark.parametrize("check, solution", [(check, solution) for check, solution, _ in CHECKS_02])
def test_notebook_02_checker_accepts_a_correct_solution(check, solution, capsys):
    test_checker_accepts_a_correct_solution(check, solution, capsys)


@pytest.mark.parametrize("check", [check for check, _, _ in CHECKS_02])
def test_notebook_02_checker_reports_the_starter_as_not_attempted(check, capsys):
    test_checker_reports_the_starter_as_not_attempted(check, capsys)


@pytest.mark.parametrize("check, wrong, hint", [(check, wrong, hint) for check, _, mistakes in CHECKS_02
                                                for wrong, hint in mistakes])
def test_notebook_02_checker_raises_with_a_hint_for_a_typical_mistake(check, wrong, hint, capsys):
    test_checker_raises_with_a_hint_for_a_typical_mistake(check, wrong, hint, capsys)


def test_final_state_checker_accepts_advanced_indexing_and_leaves_the_random_state_alone(capsys):
    state = torch.random.get_rng_state()
    exercises.check_final_state(lambda outputs, lengths: outputs[torch.arange(len(lengths)), lengths - 1])
    exercises.check_gru_step(gru_step_solution)
    assert "correct!" in capsys.readouterr().out
    assert torch.equal(torch.random.get_rng_state(), state)  # the checkers draw from their own generators


def test_notebook_02_cases_include_the_tricky_ones():
    """A batch without padding, a one-token sentence, unsorted lengths; a zero initial state for the GRU step."""
    lengths = exercises.FINAL_STATE_LENGTHS
    assert any(len(set(group)) == 1 for group in lengths) and any(1 in group for group in lengths)
    assert any(list(group) != sorted(group) for group in lengths)
    assert any(batch == 1 for batch, _, _ in exercises.GRU_STEP_SIZES)
