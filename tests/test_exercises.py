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


CHECKS_01 = [  # checker, correct solution, typical wrong solutions with a word of the expected hint
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


# ---------------------------------------------------------------------------------------------- notebook 06
def entropy_solution(weights: torch.Tensor) -> torch.Tensor:
    return -torch.special.xlogy(weights, weights).sum(-1)  # (T,)


def argmax_alignment_solution(weights: torch.Tensor, source_tokens: list[str]) -> list[str]:
    return [source_tokens[j] for j in weights.argmax(dim=-1).tolist()]


def diagonal_deviation_solution(weights: torch.Tensor, centre: float = 0.5, relative: bool = True,
                                reduce: str = "mean") -> float:
    T, S = weights.shape
    p = (torch.arange(T) + centre) / (T if relative else 1)  # (T,)
    q = (torch.arange(S) + centre) / (S if relative else 1)  # (S,)
    per_step = (weights * (q[None, :] - p[:, None]).abs()).sum(-1)  # (T,)
    return float(getattr(per_step, reduce)())


CHECKS_06 = [  # checker, correct solution, typical wrong solutions with a word of the expected hint
    (exercises.check_attention_entropy, entropy_solution, [
        (lambda weights: -(weights * weights.log()).sum(-1), "0 \\* log\\(0\\)"),      # nan on exact zeros
        (lambda weights: torch.special.xlogy(weights, weights).sum(-1), "MINUS"),     # sign
        (lambda weights: entropy_solution(weights) / torch.tensor(2.0).log(), "bits"),            # log2
        (lambda weights: -torch.special.xlogy(weights, weights).sum(0), "shape"),     # over the output axis
        (lambda weights: -torch.special.xlogy(weights, weights).sum(), "shape"),      # one number
    ]),
    (exercises.check_argmax_alignment, argmax_alignment_solution, [
        (lambda weights, tokens: [tokens[j] for j in weights.argmax(dim=0).tolist()], "one answer per output"),
        (lambda weights, tokens: weights.argmax(dim=-1), "TOKENS"),                               # indices
        (lambda weights, tokens: [tokens[j] for j in weights.argmin(dim=-1).tolist()], "largest|argmax"),
    ]),
    (exercises.check_diagonal_deviation, diagonal_deviation_solution, [
        (lambda weights: diagonal_deviation_solution(weights, centre=0.0), "cell edges"),
        (lambda weights: diagonal_deviation_solution(weights, relative=False), "indices"),
        (lambda weights: diagonal_deviation_solution(weights, reduce="sum"), "summed over the output steps"),
        (lambda weights: [diagonal_deviation_solution(weights)], "one number"),
        (lambda weights: diagonal_deviation_solution(weights.T), "expected"),                      # transposed
    ]),
]


def test_notebook_06_cases_have_unequal_lengths_exact_zeros_and_a_one_hot_row():
    maps = exercises._attention_maps()
    assert {(w.shape[0] < w.shape[1], w.shape[0] > w.shape[1]) for w in maps} >= {(True, False), (False, True)}
    assert any((w == 0).any() for w in maps) and any((w == 1).any() for w in maps)
    assert all(torch.allclose(w.sum(-1), torch.ones(w.shape[0])) for w in maps)  # real attention maps
    # the edge-not-centre mistake only shows when T != S: the cases must contain such a map
    assert any(w.shape[0] != w.shape[1] for w in exercises._attention_maps(seed=9))


# ---------------------------------------------------------------------------------------------- notebook 04
def general_score_solution(query, keys, weight):
    return torch.einsum("bth,kh,bsk->bts", query, weight, keys)  # (B, T, S)


def bahdanau_score_solution(query, keys, W, U, v, tanh=True, tanh_after_v=False):
    energies = (query @ W.T).unsqueeze(2) + (keys @ U.T).unsqueeze(1)  # (B, T, S, A)
    if tanh_after_v:
        return torch.tanh(energies @ v)
    return (torch.tanh(energies) if tanh else energies) @ v  # (B, T, S)


def attention_parameters_solution(kind, query_size, key_size, attention_size, biases=False, v=True):
    A, extra = attention_size, (attention_size if v else 0)
    counts = {"bahdanau": A * query_size + A * key_size + extra + (2 * A + 1 if biases else 0),
              "general": key_size * query_size + (key_size if biases else 0),
              "concat": A * (query_size + key_size) + extra + (A + 1 if biases else 0),
              "dot": 0, "scaled_dot": 0}
    return counts[kind]


CHECKS_04 = [  # checker, correct solution, typical wrong solutions with a word of the expected hint
    (exercises.check_general_score, general_score_solution, [
        (lambda query, keys, weight: query @ weight @ keys.transpose(1, 2), "transpose|weight.T"),  # W = weight
        (lambda query, keys, weight: general_score_solution(query, keys, weight).softmax(-1), "softmax"),
        (lambda query, keys, weight: general_score_solution(query, keys, weight) / keys.shape[-1] ** 0.5, "scaled"),
        (lambda query, keys, weight: general_score_solution(query, keys, weight).transpose(1, 2), r"\(B, T, S\)"),
    ]),
    (exercises.check_bahdanau_score, bahdanau_score_solution, [
        (lambda *args: bahdanau_score_solution(*args, tanh=False), "no tanh"),
        (lambda *args: bahdanau_score_solution(*args, tanh_after_v=True), "INSIDE"),
        (lambda q, k, W, U, v: bahdanau_score_solution(q, k, W, U, v).softmax(-1), "softmax"),
        (lambda q, k, W, U, v: torch.tanh(q @ W.T + k @ U.T) @ v, r"\(B, 1, S, A\)"),  # no broadcasting over T, S
        (lambda q, k, W, U, v: torch.tanh(q @ W + k @ U) @ v, r"query @ W.T"),  # weights not transposed
    ]),
    (exercises.check_attention_parameters, attention_parameters_solution, [
        (lambda *args: attention_parameters_solution(*args, biases=True), "no biases"),
        (lambda *args: attention_parameters_solution(*args, v=False), "forgot v"),
        (lambda kind, Hq, K, A: A * Hq + A if kind == "concat" else attention_parameters_solution(kind, Hq, K, A),
         "Hq \\+ K"),
        (lambda kind, Hq, K, A: Hq * K if "dot" in kind else attention_parameters_solution(kind, Hq, K, A),
         "no parameters"),
        (lambda kind, Hq, K, A: [attention_parameters_solution(kind, Hq, K, A)], "one whole number"),
    ]),
]


def test_notebook_04_cases_make_shape_mistakes_fail_and_leave_the_random_state_alone(capsys):
    """One case with every size different (transposes and missing unsqueezes fail), one square case (they run and
    only the values tell); the checkers build modules without moving the student's random state."""
    sizes = exercises.SCORE_SIZES
    assert any(len({T, S}) == 2 and len({Hq, K, A}) == 3 for _, T, S, Hq, K, A in sizes)
    assert any(T == S and Hq == K == A for _, T, S, Hq, K, A in sizes)
    kinds = {kind for kind, *_ in exercises.ATTENTION_PARAMETER_CASES}
    assert kinds == {"bahdanau", "dot", "general", "concat", "scaled_dot"}
    state = torch.random.get_rng_state()
    exercises.check_general_score(general_score_solution)
    exercises.check_bahdanau_score(bahdanau_score_solution)
    exercises.check_attention_parameters(attention_parameters_solution)
    assert capsys.readouterr().out.count("correct!") == 3
    assert torch.equal(torch.random.get_rng_state(), state)


# ---------------------------------------------------------------------------------------------- notebook 05
import math  # noqa: E402  (only this section needs it)


def masked_nll_solution(log_probs: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    gold = log_probs.gather(-1, tgt.unsqueeze(-1)).squeeze(-1)  # (B, T)
    real = tgt != data.PAD_ID  # (B, T)
    return -gold[real].sum() / real.sum()


def greedy_solution(model, src_ids, max_length, feed_back=True, keep_eos=True, stop=True, prefix=()):
    """Greedy decoding by hand; the keyword arguments switch on the usual mistakes."""
    memory, state = model.encode(src_ids.unsqueeze(0), torch.tensor([len(src_ids)]))
    prev, output = torch.tensor([data.SOS_ID]), list(prefix)
    for _ in range(max_length if stop else max_length + 3):
        step = model.decoder.step(prev, state, memory)
        token, state = step.log_probs.argmax(-1), step.state  # (1,)
        prev = token if feed_back else torch.tensor([data.SOS_ID])
        if stop and token.item() == data.EOS_ID:
            return output + ([token.item()] if keep_eos else [])
        output.append(token.item())
    return output


def perplexity_solution(batch_losses: list[float], batch_tokens: list[int]) -> float:
    return math.exp(sum(loss * n for loss, n in zip(batch_losses, batch_tokens)) / sum(batch_tokens))


def token_gold(log_probs, tgt):
    return log_probs.gather(-1, tgt.unsqueeze(-1)).squeeze(-1) * (tgt != data.PAD_ID)  # (B, T) 0 at pads


CHECKS_05 = [  # checker, correct solution, typical wrong solutions with a word of the expected hint
    (exercises.check_masked_nll, masked_nll_solution, [
        (lambda log_probs, tgt: -log_probs.gather(-1, tgt.unsqueeze(-1)).mean(), "<pad> positions as targets"),
        (lambda log_probs, tgt: -token_gold(log_probs, tgt).sum() / tgt.numel(), "B \\* T"),
        (lambda log_probs, tgt: -token_gold(log_probs, tgt).sum(), "returned the sum"),
        (lambda log_probs, tgt: (-token_gold(log_probs, tgt).sum(1) / (tgt != 0).sum(1)).mean(), "count once"),
        (lambda log_probs, tgt: -masked_nll_solution(log_probs, tgt), "MINUS"),
        (lambda log_probs, tgt: torch.nn.functional.nll_loss(log_probs, tgt, ignore_index=0), "gather"),  # (B, V, T)
        (lambda log_probs, tgt: [masked_nll_solution(log_probs, tgt)], "one number"),
    ]),
    (exercises.check_greedy_decode, greedy_solution, [
        (lambda *args: greedy_solution(*args, keep_eos=False), "include the EOS"),
        (lambda *args: greedy_solution(*args, stop=False), "stop as soon as"),
        (lambda *args: greedy_solution(*args, feed_back=False), "feed back"),
        (lambda *args: greedy_solution(*args, prefix=[data.SOS_ID]), "AFTER <sos>"),
        (lambda model, src_ids, max_length: torch.tensor(greedy_solution(model, src_ids, max_length)).float(),
         "int ids"),
    ]),
    (exercises.check_perplexity, perplexity_solution, [
        (lambda losses, tokens: math.exp(sum(losses) / len(losses)), "number of tokens"),
        (lambda losses, tokens: sum(math.exp(l) * n for l, n in zip(losses, tokens)) / sum(tokens), "per-batch"),
        (lambda losses, tokens: 2 ** (sum(l * n for l, n in zip(losses, tokens)) / sum(tokens)), "not 2 \\*\\*"),
        (lambda losses, tokens: sum(l * n for l, n in zip(losses, tokens)) / sum(tokens), "exp of the MEAN"),
    ]),
]


def test_notebook_05_cases_are_tricky_and_leave_the_random_state_alone(capsys):
    """Ragged batches and one without padding; greedy outputs that end with EOS and others cut at the cap, with
    more than one distinct output; token counts that make the unweighted mean wrong."""
    state = torch.random.get_rng_state()
    targets = [tgt for _, tgt in exercises._masked_nll_cases()]
    assert any((tgt == data.PAD_ID).any() for tgt in targets) and any((tgt != data.PAD_ID).all() for tgt in targets)
    outputs = [expected for _, expected in exercises._greedy_cases()]
    assert any(out[-1] == data.EOS_ID and len(out) < exercises.GREEDY_MAX_LENGTH for out in outputs)
    assert any(out[-1] != data.EOS_ID and len(out) == exercises.GREEDY_MAX_LENGTH for out in outputs)
    assert len({tuple(out) for out in outputs}) > 2
    assert all(data.PAD_ID not in out and data.SOS_ID not in out for out in outputs)
    assert any(len(set(tokens)) > 1 for _, tokens in exercises.PERPLEXITY_CASES)
    exercises.check_greedy_decode(greedy_solution)
    assert "correct!" in capsys.readouterr().out
    assert torch.equal(torch.random.get_rng_state(), state)  # the checkers draw from their own generators


# ------------------------------------------------------------------ every checker of notebooks 01-06
ALL_CHECKS = CHECKS_01 + CHECKS_02 + CHECKS_03 + CHECKS_04 + CHECKS_05 + CHECKS_06


@pytest.mark.parametrize("check, solution", [(check, solution) for check, solution, _ in ALL_CHECKS])
def test_checker_accepts_a_correct_solution(check, solution, capsys):
    check(solution)
    out = capsys.readouterr().out
    assert "correct!" in out and "not attempted" not in out


@pytest.mark.parametrize("check", [check for check, _, _ in ALL_CHECKS])
def test_checker_reports_the_starter_as_not_attempted(check, capsys):
    check(lambda *args: None)
    out = capsys.readouterr().out
    assert "not attempted yet" in out and "correct!" not in out


@pytest.mark.parametrize("check, wrong, hint", [(check, wrong, hint) for check, _, mistakes in ALL_CHECKS
                                                for wrong, hint in mistakes])
def test_checker_raises_with_a_hint_for_a_typical_mistake(check, wrong, hint, capsys):
    with pytest.raises(AssertionError, match=hint):
        check(wrong)
    assert "correct!" not in capsys.readouterr().out
