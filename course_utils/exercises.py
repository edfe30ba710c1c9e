"""Self-checks for the notebooks' exercises: run a student's function in place and say whether it is right.

Every checker has the same contract, so the notebooks can share one pattern:

    def my_normalize(s):
        return None          # the starter: replace with your code
    check_normalize(my_normalize)

- the student's function returns None (the starter)  -> prints "not attempted yet";
- it gives a wrong answer                           -> raises AssertionError naming the input and a hint;
- it is right on every case                         -> prints a success message ("... correct! ...").
Checkers return None, so a notebook cell that ends with the call shows only the message.

To add a checker for another notebook: write `check_<thing>(student_fn)` that calls `_attempted` on the
first result (return if it is False), `_expect` for each comparison and ends with `_passed(...)`; add its test to
tests/test_exercises.py (correct solution passes, None is "not attempted", a typical mistake raises).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import torch

from course_utils import data


# ---------------------------------------------------------------------------------------------- shared
def _attempted(exercise: str, result: object) -> bool:
    """False (after printing "not attempted yet") when `result` is None, the starter's return value."""
    if result is None:
        print(f"{exercise}: not attempted yet (your function returns None). Write it, then rerun this cell.")
        return False
    return True


def _expect(condition: bool, message: str) -> None:
    """Raise AssertionError(message) unless `condition` (a real raise: survives `python -O`)."""
    if not condition:
        raise AssertionError(message)


def _passed(exercise: str, detail: str) -> None:
    """Print the success message."""
    print(f"{exercise}: correct! {detail}")


# ---------------------------------------------------------------------------------------------- notebook 01
NORMALIZE_CASES = (
    "Va, vite !",                 # a comma in the middle
    "J'ai 20 ans.",               # apostrophe and digits in the middle
    "Ça alors\u202f!",            # accent, and a narrow no-break space before '!'
    "  Hé, toi -- 3 fois!!  ",    # outer spaces, dashes, a digit, repeated '!'
    "C'est l'été.",               # two apostrophes, accents
    "«Non», dit-il…",             # guillemets, hyphen, ellipsis character
    "cœur",                       # 'œ' has no decomposition: it becomes a space
    "Tom's 2nd car.",             # English: apostrophe, digit glued to letters
    "Qu'est-ce que c'est ?",
    "I'M COLD.",
)


def check_normalize(student_fn: Callable[[str], str]) -> None:
    """Check `student_fn(s) -> str` against `data.normalize_string` on tricky strings.

    Introduced in notebook 01 (exercise: write your own normalisation).
    """
    exercise = "normalize"
    if not _attempted(exercise, student_fn(NORMALIZE_CASES[0])):
        return
    for raw in NORMALIZE_CASES:
        got, expected = student_fn(raw), data.normalize_string(raw)
        hint = ("it matches the anchored-regex bug: the cleaning regex must not start with '^', so that it "
                "cleans the whole string" if got == data.normalize_string_anchored(raw) != expected else
                "lower case, accents dropped (unicode_to_ascii), a space before . ! ?, every run of other "
                "non-letters replaced by ONE space, ends stripped")
        _expect(got == expected, f"normalize({raw!r}) returned {got!r}, expected {expected!r}. Hint: {hint}.")
    _passed(exercise, f"your function agrees with normalize_string on all {len(NORMALIZE_CASES)} "
                             f"tricky strings.")


ENCODE_VOCAB_SENTENCES = ("je suis fatigue .", "il est grand .", "je suis grand !", "tu es en retard .")
ENCODE_CASES = ("je suis fatigue .", "il est petit .", "nous sommes en retard !", "", "je")


def check_encode(student_fn: Callable[[data.Vocab, str], list[int]]) -> None:
    """Check `student_fn(vocab, sentence) -> list[int]` against `Vocab.encode(sentence)` (EOS appended,
    unknown words -> UNK_ID) on a small vocabulary. Introduced in notebook 01 (exercise: encode with <unk>).
    """
    exercise = "encode"
    vocab = data.Vocab.build(ENCODE_VOCAB_SENTENCES, name="fra")

    def call(sentence: str) -> list[int]:
        try:
            return student_fn(vocab, sentence)
        except KeyError as error:
            raise AssertionError(f"encode(vocab, {sentence!r}) raised KeyError {error}. Hint: unknown words "
                                 f"must become UNK_ID ({data.UNK_ID}): use vocab.word2index.get(word, "
                                 f"UNK_ID).") from error

    if not _attempted(exercise, call(ENCODE_CASES[0])):
        return
    for sentence in ENCODE_CASES:
        got, expected = call(sentence), vocab.encode(sentence)
        if isinstance(got, torch.Tensor):
            got = got.tolist()
        hint = ("every sentence ends with EOS_ID" if not got or got[-1] != data.EOS_ID else
                "one id per word (split on ' '), unknown words -> UNK_ID, then EOS_ID")
        _expect(list(got) == expected, f"encode(vocab, {sentence!r}) returned {got!r}, expected {expected!r}. "
                                       f"Hint: {hint}.")
    _passed(exercise, f"your function agrees with Vocab.encode on all {len(ENCODE_CASES)} sentences, "
                             f"unknown words and the empty sentence included.")


PAD_FRACTION_SOURCES = (("je suis fatigue .", "il est grand .", "je"),   # ragged: some padding
                        ("je suis grand !", "tu es en retard ."),         # ragged
                        ("je suis fatigue .", "je suis grand !"))         # same lengths: no padding at all


def check_pad_fraction(student_fn: Callable[[data.Batch], float]) -> None:
    """Check `student_fn(batch) -> float`, the fraction of the positions of batch.src (B, S) that are <pad>,
    on a few small batches (one without any padding). Introduced in notebook 01 (exercise: pad fraction).
    """
    exercise = "pad_fraction"
    vocab = data.Vocab.build(ENCODE_VOCAB_SENTENCES)
    batches = [data.collate_batch([(torch.tensor(vocab.encode(s)), torch.tensor(vocab.encode(s))) for s in group])
               for group in PAD_FRACTION_SOURCES]
    if not _attempted(exercise, student_fn(batches[0])):
        return
    for batch in batches:
        got = student_fn(batch)
        expected = (~batch.src_mask).sum().item() / batch.src_mask.numel()  # pads / (B * S)
        _expect(isinstance(got, (float, int, torch.Tensor)) and torch.as_tensor(got).numel() == 1,
                f"pad_fraction returned {got!r}; expected one number (a float between 0 and 1).")
        _expect(math.isclose(float(got), expected, abs_tol=1e-6),
                f"pad_fraction of a batch with src lengths {batch.src_lengths.tolist()} and src shape "
                f"{tuple(batch.src.shape)} returned {float(got):.4f}, expected {expected:.4f}. Hint: count the "
                f"<pad> positions of batch.src and divide by ALL its positions, B * S.")
    _passed(exercise, f"right on all {len(batches)} batches, including one without padding.")


# ---------------------------------------------------------------------------------------------- notebook 03
ATTENTION_LENGTHS = ((5, 2, 4), (3, 3))  # a ragged batch (pads) and one without padding; S = max length


def _attention_cases(key_size: int = 6, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Seeded (query (B, K), keys (B, S, K), mask (B, S)) cases, keys zero at pads like the encoder's outputs."""
    generator = torch.Generator().manual_seed(seed)
    cases = []
    for lengths in ATTENTION_LENGTHS:
        lengths = torch.tensor(lengths)  # (B,)
        mask = torch.arange(int(lengths.max())).unsqueeze(0) < lengths.unsqueeze(1)  # (B, S)
        keys = torch.randn(*mask.shape, key_size, generator=generator) * mask.unsqueeze(-1)  # (B, S, K)
        query = torch.randn(mask.shape[0], key_size, generator=generator)  # (B, K)
        cases.append((query, keys, mask))
    return cases


def _expect_tensor(exercise: str, got: object, shape: tuple[int, ...], what: str) -> None:
    """Raise with a hint unless `got` is a float tensor of `shape`."""
    _expect(isinstance(got, torch.Tensor), f"{exercise}: {what} must be a torch.Tensor, got {type(got).__name__}.")
    _expect(tuple(got.shape) == shape, f"{exercise}: {what} has shape {tuple(got.shape)}, expected {shape}.")
    _expect(got.is_floating_point() and bool(torch.isfinite(got).all()),
            f"{exercise}: {what}: not a float tensor, or it holds inf or nan. Hint: exp() overflows for large "
            f"scores: subtract each row's max before exp, or use torch.softmax, which does.")


def _expect_weights(exercise: str, weights: torch.Tensor, expected: torch.Tensor, mask: torch.Tensor) -> None:
    """Compare attention weights (B, S) with `expected`, with hints for the usual mistakes."""
    _expect_tensor(exercise, weights, tuple(expected.shape), "the weights")
    _expect(bool((weights[~mask] == 0).all()),
            f"{exercise}: padded positions got weight up to {weights.masked_fill(mask, 0).abs().max().item():.3g} "
            f"(lengths {mask.sum(-1).tolist()}). Hint: pads must get exactly 0: fill their scores with float('-inf') "
            f"BEFORE the softmax (scores.masked_fill(~mask, float('-inf'))); exp(-inf) = 0.")
    _expect(torch.allclose(weights.sum(-1), torch.ones(weights.shape[0]), atol=1e-5),
            f"{exercise}: rows sum to {[round(x, 4) for x in weights.sum(-1).tolist()]}, expected 1 each. Hint: "
            f"take the softmax over the source axis (dim=-1), after masking (zeroing pads after a softmax "
            f"leaves rows that sum to less than 1).")
    _expect(torch.allclose(weights, expected, atol=1e-5),
            f"{exercise}: weights differ from the expected ones by up to "
            f"{(weights - expected).abs().max().item():.3g}. Hint: softmax of the scores over the real positions only.")


def check_masked_softmax(student_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check `student_fn(scores (B, S), mask (B, S) bool) -> weights (B, S)` against attention.masked_softmax:
    rows sum to 1, pads exactly 0, also for large scores (exp would overflow) and a batch without padding.
    Introduced in notebook 03 (exercise: masked softmax by hand).
    """
    from course_utils.attention import masked_softmax
    exercise = "masked_softmax"
    generator = torch.Generator().manual_seed(3)
    cases = []
    for _, _, mask in _attention_cases():
        scores = torch.randn(mask.shape, generator=generator) * 3  # (B, S)
        cases += [(scores, mask), (scores * 100, mask)]  # large scores: a naive exp() overflows to inf
    if not _attempted(exercise, student_fn(cases[0][0].clone(), cases[0][1].clone())):
        return
    for scores, mask in cases:
        got = student_fn(scores.clone(), mask.clone())
        _expect_weights(exercise, got, masked_softmax(scores, mask), mask)
    _passed(exercise, f"rows sum to 1 and pads are exactly 0 on all {len(cases)} cases, large scores included.")


def check_dot_attention(student_fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor],
                                             tuple[torch.Tensor, torch.Tensor]]) -> None:
    """Check `student_fn(query (B, K), keys (B, S, K), mask (B, S) bool) -> (context (B, K), weights (B, S))`
    against attention.DotAttention (score q^T k, masked softmax, weighted sum of the keys).
    Introduced in notebook 03 (exercise: dot-product attention).
    """
    from course_utils.attention import DotAttention, ScaledDotAttention
    exercise = "dot_attention"
    cases = _attention_cases()
    if not _attempted(exercise, student_fn(*(x.clone() for x in cases[0]))):
        return
    for query, keys, mask in cases:
        got = student_fn(query.clone(), keys.clone(), mask.clone())
        _expect(isinstance(got, tuple) and len(got) == 2,
                f"{exercise}: return the pair (context, weights), got {type(got).__name__}.")
        context, weights = got
        expected = DotAttention()(query, keys, mask)
        B, S, K = keys.shape
        _expect_tensor(exercise, context, (B, K), "the context")
        scaled = ScaledDotAttention()(query, keys, mask).weights
        _expect(not (torch.allclose(weights, scaled, atol=1e-5) and not torch.allclose(weights, expected.weights)),
                f"{exercise}: your weights are the *scaled* dot product's (q^T k / sqrt(K)). Hint: this exercise "
                f"is the plain dot product q^T k, without the scaling.")
        _expect_weights(exercise, weights, expected.weights, mask)
        _expect(torch.allclose(context, expected.context, atol=1e-5),
                f"{exercise}: the weights are right but the context is not. Hint: context[b] = sum over s of "
                f"weights[b, s] * keys[b, s], e.g. torch.bmm(weights.unsqueeze(1), keys).squeeze(1).")
    _passed(exercise, f"context and weights equal attention.DotAttention's on all {len(cases)} batches.")


def check_context(student_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check `student_fn(weights (B, S), keys (B, S, K)) -> context (B, K)`, the weighted sum of the keys
    (what torch.bmm(weights.unsqueeze(1), keys).squeeze(1) computes). Introduced in notebook 03 (exercise:
    the context vector with torch.einsum).
    """
    from course_utils.attention import masked_softmax
    exercise = "context"
    generator = torch.Generator().manual_seed(4)
    cases = []
    for _, keys, mask in _attention_cases(key_size=4, seed=1):
        weights = masked_softmax(torch.randn(mask.shape, generator=generator) * 2, mask)  # (B, S)
        cases.append((weights, keys))
    if not _attempted(exercise, student_fn(*(x.clone() for x in cases[0]))):
        return
    for weights, keys in cases:
        got = student_fn(weights.clone(), keys.clone())
        B, S, K = keys.shape
        _expect_tensor(exercise, got, (B, K), "the context")
        expected = torch.bmm(weights.unsqueeze(1), keys).squeeze(1)  # (B, K)
        uniform = keys.sum(1) / (keys != 0).any(-1).sum(-1, keepdim=True)  # (B, K) plain mean of the real keys
        hint = ("that is the plain average of the keys: weight key s by weights[b, s]" if
                torch.allclose(got, uniform, atol=1e-5) or torch.allclose(got, keys.mean(1), atol=1e-5) else
                "sum over the source axis s of weights[b, s] * keys[b, s, k]: torch.einsum('bs,bsk->bk', ...)")
        _expect(torch.allclose(got, expected, atol=1e-5),
                f"{exercise}: the context differs from the weighted sum of the keys. Hint: {hint}.")
    _passed(exercise, f"your context equals torch.bmm(weights.unsqueeze(1), keys).squeeze(1) on all "
                      f"{len(cases)} batches.")


# ---------------------------------------------------------------------------------------------- notebook 02
def _call_student(exercise: str, student_fn: Callable, args: tuple, hint: str) -> object:
    """student_fn(*args) on clones; a RuntimeError/IndexError (wrong shapes, dtypes) becomes an AssertionError
    with `hint`, so a shape mistake reads like any other wrong answer."""
    try:
        return student_fn(*(arg.clone() if isinstance(arg, torch.Tensor) else arg for arg in args))
    except (RuntimeError, IndexError) as error:
        raise AssertionError(f"{exercise}: your function raised {type(error).__name__}: {error}. Hint: {hint}.") \
            from error


def check_embedding_lookup(student_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check `student_fn(ids (*) long, weight (V, E)) -> vectors (*, E)`, the embedding lookup written as a
    one-hot product, against torch.nn.functional.embedding on ids of shapes (), (L,), (L, 1) and (B, S).
    Introduced in notebook 02 (exercise: nn.Embedding is a one-hot matrix product).
    """
    exercise = "embedding_lookup"
    generator = torch.Generator().manual_seed(2)
    weight = torch.randn(11, 4, generator=generator)  # (V, E)
    cases = [torch.randint(0, 11, shape, generator=generator) for shape in ((6,), (6, 1), (3, 5))]
    cases.insert(0, torch.tensor(5))  # a single id, shape (): its one-hot vector is shorter than V without num_classes
    hint = ("F.one_hot(ids, num_classes=V) is (*, V) with V = weight.shape[0] (without num_classes its length "
            "is max(ids) + 1); make it float before the product (*, V) @ (V, E) -> (*, E)")
    if not _attempted(exercise, _call_student(exercise, student_fn, (cases[1], weight), hint)):
        return
    for ids in cases:
        got = _call_student(exercise, student_fn, (ids, weight), hint)
        expected = torch.nn.functional.embedding(ids, weight)  # (*, E)
        _expect(isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(expected.shape),
                f"{exercise}: ids of shape {tuple(ids.shape)} gave "
                f"{tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__}, expected a tensor "
                f"of shape {tuple(expected.shape)}: the shape of ids with E added at the end. Hint: {hint}.")
        _expect(torch.allclose(got.float(), expected, atol=1e-6),
                f"{exercise}: ids {ids.tolist()} gave the wrong vectors. Hint: the vector of id i is row i of "
                f"weight; {hint}.")
    _passed(exercise, f"your lookup equals nn.Embedding's on ids of shapes "
                      f"{', '.join(str(tuple(ids.shape)) for ids in cases)}.")


GRU_STEP_SIZES = ((3, 5, 4), (1, 2, 6))  # (B, E, H) of the cases


def check_gru_step(student_fn: Callable[..., torch.Tensor]) -> None:
    """Check `student_fn(x (B, E), h (B, H), weight_ih (3H, E), weight_hh (3H, H), bias_ih (3H,), bias_hh (3H,))
    -> h_next (B, H)`, one GRU step written from the gate equations, against nn.GRUCell with the same weights
    (PyTorch's gate order in the rows: r, z, n). Introduced in notebook 02 (exercise: a GRU step by hand).
    """
    from torch import nn
    exercise = "gru_step"
    generator = torch.Generator().manual_seed(5)
    cases = []
    for batch_size, input_size, hidden_size in GRU_STEP_SIZES:
        with torch.random.fork_rng():  # GRUCell's own initialisation draws from the global generator
            cell = nn.GRUCell(input_size, hidden_size)
        with torch.no_grad():
            for parameter in cell.parameters():  # seeded weights, without touching the global random state
                parameter.copy_(torch.randn(parameter.shape, generator=generator))
        x = torch.randn(batch_size, input_size, generator=generator)  # (B, E)
        for h in (torch.randn(batch_size, hidden_size, generator=generator), torch.zeros(batch_size, hidden_size)):
            cases.append((cell, x, h))  # a random state and the zero initial state

    def variants(cell: nn.GRUCell, x: torch.Tensor, h: torch.Tensor) -> dict[str, torch.Tensor]:
        """The usual mistakes, each with its hint."""
        gi, gh = x @ cell.weight_ih.T + cell.bias_ih, h @ cell.weight_hh.T + cell.bias_hh  # (B, 3H) each
        (i_r, i_z, i_n), (h_r, h_z, h_n) = gi.chunk(3, dim=-1), gh.chunk(3, dim=-1)
        r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        swapped_r, swapped_z = torch.sigmoid(i_z + h_z), torch.sigmoid(i_r + h_r)
        swapped_n = torch.tanh(i_n + swapped_r * h_n)
        b_hn = cell.bias_hh.chunk(3)[2]
        return {
            "h' = (1 - z) * n + z * h: z is the share of the OLD state that is kept (some papers swap z and 1 - z; "
            "PyTorch does not)": z * n + (1 - z) * h,
            "r multiplies (W_hn h + b_hn), the bias b_hn included: n = tanh(W_in x + b_in + r * (W_hn h + b_hn))":
                (1 - z) * torch.tanh(i_n + r * (h_n - b_hn) + b_hn) + z * h,
            "the rows of weight_ih and weight_hh are the gates in the order r, z, n: chunk(3) gives r first":
                (1 - swapped_z) * swapped_n + swapped_z * h,
        }

    hint = ("r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z = sigmoid(W_iz x + b_iz + W_hz h + b_hz), "
            "n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h; x @ weight_ih.T is (B, 3H)")

    def call(cell: nn.GRUCell, x: torch.Tensor, h: torch.Tensor) -> object:
        with torch.no_grad():
            return _call_student(exercise, student_fn, (x, h, cell.weight_ih, cell.weight_hh, cell.bias_ih,
                                                        cell.bias_hh), hint)

    if not _attempted(exercise, call(*cases[0])):
        return
    for cell, x, h in cases:
        got = call(cell, x, h)
        with torch.no_grad():
            expected = cell(x, h)  # (B, H)
            mistakes = variants(cell, x, h)
        _expect(isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(expected.shape),
                f"{exercise}: with B, E, H = {x.shape[0]}, {x.shape[1]}, {h.shape[1]} your function returned "
                f"{tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__}, expected a tensor "
                f"of shape {tuple(expected.shape)} (B, H). Hint: {hint}.")
        if not torch.allclose(got, expected, atol=1e-5):
            specific = [why for why, wrong in mistakes.items() if torch.allclose(got, wrong, atol=1e-5)]
            state = "the zero state h = 0" if not h.any() else "a random state h"
            raise AssertionError(f"{exercise}: with {state}, h' differs from nn.GRUCell's by up to "
                                 f"{(got - expected).abs().max().item():.3g}. Hint: {(specific or [hint])[0]}.")
    _passed(exercise, f"your step equals nn.GRUCell on all {len(cases)} cases (random and zero states).")


FINAL_STATE_LENGTHS = ((3, 7, 5), (4, 4), (1, 6))  # unsorted, no padding at all, a one-token sentence


def check_final_state(student_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check `student_fn(outputs (B, S, H), lengths (B,)) -> final (B, H)`: each sentence's output at its last
    real position, taken from the outputs of an encoder that ran over the pads too (packed=False), against the
    final state of the packed EncoderRNN. Introduced in notebook 02 (exercise: the final state by gather).
    """
    from course_utils.encoder import EncoderRNN
    exercise = "final_state"
    vocab_size, generator = 20, torch.Generator().manual_seed(6)
    with torch.random.fork_rng():  # a seeded model without changing the student's random state
        torch.manual_seed(6)
        encoder = EncoderRNN(vocab_size, 6, 5).eval()
    cases = []
    for lengths in FINAL_STATE_LENGTHS:
        lengths = torch.tensor(lengths)  # (B,)
        src = torch.randint(4, vocab_size, (len(lengths), int(lengths.max())), generator=generator)  # (B, S)
        src[torch.arange(len(lengths)), lengths - 1] = data.EOS_ID
        src[torch.arange(src.shape[1]) >= lengths.unsqueeze(1)] = data.PAD_ID  # (B, S) pads after each length
        with torch.no_grad():
            cases.append((encoder(src, lengths, packed=False).outputs, lengths, encoder(src, lengths).final))
    hint = ("row b's last real output is outputs[b, lengths[b] - 1] (positions count from 0): index with "
            "(torch.arange(B), lengths - 1), or outputs.gather(1, index) with an index of shape (B, 1, H)")
    if not _attempted(exercise, _call_student(exercise, student_fn, cases[0][:2], hint)):
        return
    for outputs, lengths, expected in cases:
        got = _call_student(exercise, student_fn, (outputs, lengths), hint)
        _expect(isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(expected.shape),
                f"{exercise}: for outputs of shape {tuple(outputs.shape)} your function returned "
                f"{tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__}, expected a tensor "
                f"of shape {tuple(expected.shape)} (B, H). Hint: {hint}.")
        if not torch.allclose(got, expected, atol=1e-5):
            last_column = ("that is the last column, outputs[:, -1]: for the shorter sentences it is a step that "
                           "read PAD tokens (the current PyTorch tutorial's bug); "
                           if torch.allclose(got, outputs[:, -1], atol=1e-5) else "")
            raise AssertionError(f"{exercise}: with lengths {lengths.tolist()} your final states differ from the "
                                 f"packed encoder's. Hint: {last_column}{hint}.")
    _passed(exercise, f"your final states equal the packed encoder's on all {len(cases)} batches (unsorted "
                      f"lengths, no padding, a one-token sentence).")


# ---------------------------------------------------------------------------------------------- notebook 06
def _attention_maps(seed: int = 7) -> list[torch.Tensor]:
    """Seeded (T, S) attention maps: T < S, T > S, T == S, a peaked one with exact zeros and one-hot rows."""
    generator = torch.Generator().manual_seed(seed)
    maps = [torch.softmax(torch.randn(T, S, generator=generator) * 2, dim=-1) for T, S in ((4, 7), (6, 3), (5, 5))]
    peaked = torch.softmax(torch.randn(4, 6, generator=generator) * 3, dim=-1)  # (T, S)
    peaked[:, 4:] = 0.0  # two padded source positions: exactly zero
    peaked = peaked / peaked.sum(-1, keepdim=True)
    peaked[0] = torch.tensor([0.0, 1.0, 0.0, 0.0, 0.0, 0.0])  # a one-hot row: 0 * log 0 must count as 0
    return maps + [peaked]


def check_attention_entropy(student_fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Check `student_fn(weights (T, S)) -> entropy (T,)`, the entropy in nats of each output step's attention,
    H_t = -sum_j w_tj log w_tj (0 log 0 = 0), against metrics.attention_entropy; the cases include T != S, exact
    zeros and a one-hot row. Introduced in notebook 06 (exercise: per-step entropy by hand).
    """
    from course_utils.metrics import attention_entropy
    exercise = "attention_entropy"
    cases = _attention_maps()
    hint = "H_t = -(w_t * log w_t).sum() over the source axis (dim=-1), natural log, one number per output step"
    if not _attempted(exercise, _call_student(exercise, student_fn, (cases[0],), hint)):
        return
    for weights in cases:
        got = _call_student(exercise, student_fn, (weights,), hint)
        expected = attention_entropy(weights)  # (T,)
        T, S = weights.shape
        _expect(isinstance(got, torch.Tensor) and tuple(got.shape) == (T,),
                f"{exercise}: weights of shape (T={T}, S={S}) gave "
                f"{tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__}, expected a tensor "
                f"of shape ({T},). Hint: {hint}.")
        got = got.double()
        _expect(bool(torch.isfinite(got).all()),
                f"{exercise}: your entropies contain nan or inf ({got.tolist()}). Hint: a weight of exactly 0 gives "
                f"0 * log(0) = 0 * -inf = nan; count it as 0 (torch.special.xlogy(w, w), or torch.where(w > 0, ...)).")
        if torch.allclose(got, -expected.double(), atol=1e-4) and not torch.allclose(got, expected.double()):
            raise AssertionError(f"{exercise}: your entropies are negative. Hint: H = MINUS sum w log w (log w <= 0).")
        if torch.allclose(got, expected.double() / math.log(2), atol=1e-4):
            raise AssertionError(f"{exercise}: your entropies are in bits. Hint: use the natural log (nats), "
                                 f"torch.log, so that uniform attention over S tokens gives log(S).")
        _expect(torch.allclose(got, expected.double(), atol=1e-4),
                f"{exercise}: for weights of shape (T={T}, S={S}) you gave {[round(x, 4) for x in got.tolist()]}, "
                f"expected {[round(x, 4) for x in expected.tolist()]}. Hint: {hint}.")
    _passed(exercise, f"your entropies equal metrics.attention_entropy on all {len(cases)} maps (T != S, exact "
                      f"zeros and a one-hot row included).")


def check_argmax_alignment(student_fn: Callable[[torch.Tensor, list[str]], list[str]]) -> None:
    """Check `student_fn(weights (T, S), source_tokens (S,)) -> list of T source tokens`: for each output step the
    source token with the largest attention weight (the "hard" alignment read off a heatmap).
    Introduced in notebook 06 (exercise: which source word does each output word look at?).
    """
    exercise = "argmax_alignment"
    cases = _attention_maps(seed=8)
    hint = ("one answer per output step (row t): the source token at weights[t].argmax(); argmax over the source "
            "axis, dim=-1, then index source_tokens with it")
    sources = [[f"w{j}" for j in range(weights.shape[1] - 1)] + ["<eos>"] for weights in cases]
    if not _attempted(exercise, _call_student(exercise, student_fn, (cases[0], list(sources[0])), hint)):
        return
    for weights, tokens in zip(cases, sources):
        got = _call_student(exercise, student_fn, (weights, list(tokens)), hint)
        if isinstance(got, torch.Tensor):
            raise AssertionError(f"{exercise}: you returned a tensor ({got.tolist()}); return the source TOKENS, "
                                 f"e.g. [source_tokens[j] for j in indices.tolist()]. Hint: {hint}.")
        expected = [tokens[j] for j in weights.argmax(dim=-1).tolist()]
        T, S = weights.shape
        _expect(isinstance(got, (list, tuple)) and len(got) == T,
                f"{exercise}: weights of shape (T={T}, S={S}) gave {got!r}, expected a list of {T} tokens, one per "
                f"output step. Hint: {hint}.")
        _expect(list(got) == expected,
                f"{exercise}: for weights of shape (T={T}, S={S}) you gave {list(got)}, expected {expected}. "
                f"Hint: {hint}.")
    _passed(exercise, f"your alignments are right on all {len(cases)} maps (T < S, T > S and T == S).")


def check_diagonal_deviation(student_fn: Callable[[torch.Tensor], float]) -> None:
    """Check `student_fn(weights (T, S)) -> float` against metrics.diagonal_deviation: the mean over output steps of
    sum_j w_tj |q_j - p_t|, with cell-centre positions p_t = (t + 0.5) / T and q_j = (j + 0.5) / S.
    Introduced in notebook 06 (exercise: diagonal deviation by hand).
    """
    from course_utils.metrics import diagonal_deviation
    exercise = "diagonal_deviation"
    cases = _attention_maps(seed=9) + [torch.eye(5)]  # (T, S) maps; the identity lies on the diagonal: 0
    hint = ("relative positions of the cell centres, p_t = (t + 0.5) / T and q_j = (j + 0.5) / S; the distance "
            "|q_j - p_t| weighted by w_tj, summed over j, averaged over the T steps")
    if not _attempted(exercise, _call_student(exercise, student_fn, (cases[0],), hint)):
        return
    for weights in cases:
        got = _call_student(exercise, student_fn, (weights,), hint)
        T, S = weights.shape
        _expect(isinstance(got, (float, int, torch.Tensor)) and torch.as_tensor(got).numel() == 1,
                f"{exercise}: you returned {got!r}; expected one number for the whole (T, S) map. Hint: {hint}.")
        got, expected = float(got), diagonal_deviation(weights)
        t, j = torch.arange(T, dtype=torch.float64)[:, None], torch.arange(S, dtype=torch.float64)[None, :]
        mistakes = {  # what a typical mistake computes -> the hint that fixes it
            "positions without the + 0.5 (cell edges, not centres)": (j / S - t / T),
            "positions as indices j - t, not fractions of the sentence length": (j - t),
        }
        for what, distance in mistakes.items():
            value = float((weights.double() * distance.abs()).sum(-1).mean())
            if not math.isclose(value, expected, abs_tol=1e-6) and math.isclose(got, value, abs_tol=1e-6):
                raise AssertionError(f"{exercise}: for a (T={T}, S={S}) map you used {what}. Hint: {hint}.")
        if T > 1 and expected > 1e-9 and math.isclose(got, expected * T, abs_tol=1e-6):
            raise AssertionError(f"{exercise}: you summed over the output steps. Hint: average over them (mean).")
        _expect(math.isclose(got, expected, abs_tol=1e-6),
                f"{exercise}: for a (T={T}, S={S}) map you gave {got:.6f}, expected {expected:.6f}. Hint: {hint}.")
    _passed(exercise, f"your deviation equals metrics.diagonal_deviation on all {len(cases)} maps "
                      f"(T != S included, and 0 for the identity).")


# ---------------------------------------------------------------------------------------------- notebook 04
SCORE_SIZES = ((2, 3, 5, 4, 6, 7), (1, 4, 4, 5, 5, 5))  # (B, T, S, Hq, K, A): all different; then a square case


def _score_cases(seed: int = 10) -> list[tuple[torch.Tensor, torch.Tensor, int]]:
    """Seeded (query (B, T, Hq), keys (B, S, K), A) cases: first with every size different (a transposed weight
    or a missing unsqueeze fails loudly there), then a square one (Hq == K == A, T == S) where such mistakes run
    silently and only the values can tell."""
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(B, T, Hq, generator=generator), torch.randn(B, S, K, generator=generator), A)
            for B, T, S, Hq, K, A in SCORE_SIZES]


def _seeded_weights(module: torch.nn.Module, generator: torch.Generator) -> torch.nn.Module:
    """Overwrite every parameter of `module` with seeded N(0, 0.5^2) values (the global random state is untouched)."""
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.5)
    return module


def _scorer_cases(build: Callable[[int, int, int], torch.nn.Module], seed: int) -> list[tuple]:
    """(query, keys, scorer) for every `_score_cases()` shape; scorer = build(Hq, K, A) with seeded weights.

    The module is built inside fork_rng, so its own initialisation does not move the student's random state.
    """
    generator = torch.Generator().manual_seed(seed)
    cases = []
    for query, keys, attention_size in _score_cases():
        with torch.random.fork_rng():
            scorer = build(query.shape[-1], keys.shape[-1], attention_size)
        cases.append((query, keys, _seeded_weights(scorer, generator)))
    return cases


def _expect_scores(exercise: str, got: object, expected: torch.Tensor, hint: str,
                   mistakes: dict[str, torch.Tensor]) -> None:
    """Compare student scores with `expected` (B, T, S); name the mistake when `got` equals one of `mistakes`."""
    B, T, S = expected.shape
    _expect(isinstance(got, torch.Tensor) and tuple(got.shape) == (B, T, S),
            f"{exercise}: expected scores of shape (B, T, S) = {(B, T, S)}, got "
            f"{tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__}. Hint: {hint}.")
    if torch.allclose(got, expected, atol=1e-5):
        return
    if T == S:  # square: a (B, S, T) result has the right shape and the wrong layout
        mistakes = {**mistakes, "your scores are transposed, (B, S, T): row t must hold step t's scores for "
                                "all S keys": expected.transpose(1, 2)}
    for why, wrong in mistakes.items():
        if wrong.shape == got.shape and torch.allclose(got, wrong, atol=1e-5):
            raise AssertionError(f"{exercise}: {why}. Hint: {hint}.")
    raise AssertionError(f"{exercise}: with (B, T, S) = {(B, T, S)} your scores differ from the module's by up to "
                         f"{(got - expected).abs().max().item():.3g}. Hint: {hint}.")


def check_general_score(student_fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check `student_fn(query (B, T, Hq), keys (B, S, K), weight (K, Hq)) -> scores (B, T, S)`, Luong's general
    score q^T W k, where `weight` is GeneralAttention's `linear.weight` (nn.Linear stores W^T: shape (K, Hq)),
    against GeneralAttention.score. Introduced in notebook 04 (exercise: the general score by hand).
    """
    from course_utils.attention import GeneralAttention
    exercise = "general_score"
    hint = ("`weight` is nn.Linear's (K, Hq) matrix, so W = weight.T and q^T W k = (query @ weight.T) @ keys^T: "
            "torch.einsum('bth,kh,bsk->bts', query, weight, keys); return the raw scores (no softmax, no scaling)")
    cases = _scorer_cases(lambda query_size, key_size, _: GeneralAttention(query_size, key_size), seed=11)
    if not _attempted(exercise, _call_student(exercise, student_fn, (cases[0][0], cases[0][1],
                                                                    cases[0][2].linear.weight.detach()), hint)):
        return
    for query, keys, attention in cases:
        weight = attention.linear.weight.detach()  # (K, Hq)
        got = _call_student(exercise, student_fn, (query, keys, weight), hint)
        with torch.no_grad():
            expected = attention.score(query, keys, None)  # (B, T, S)
        mistakes = {"these are attention weights (after a softmax); the exercise asks for the scores":
                        expected.softmax(-1),
                    "your scores are divided by sqrt(K): that is the scaled dot product, not Luong's general score":
                        expected / keys.shape[-1] ** 0.5}
        if weight.shape[0] == weight.shape[1]:  # square: a missing transpose runs, with the wrong values
            mistakes["you used W = weight, not its transpose (nn.Linear stores (out, in) = (K, Hq))"] = \
                query @ weight @ keys.transpose(1, 2)
        _expect_scores(exercise, got, expected, hint, mistakes)
    _passed(exercise, f"your scores equal GeneralAttention.score on all {len(cases)} cases (Hq != K included).")


def check_bahdanau_score(student_fn: Callable[..., torch.Tensor]) -> None:
    """Check `student_fn(query (B, T, Hq), keys (B, S, K), W (A, Hq), U (A, K), v (A,)) -> scores (B, T, S)`,
    Bahdanau's additive score v^T tanh(W q + U k) (W, U as nn.Linear weights), against BahdanauAttention.score.
    Introduced in notebook 04 (exercise: the additive score by hand).
    """
    from course_utils.attention import BahdanauAttention
    exercise = "bahdanau_score"
    hint = ("W q is query @ W.T (B, T, A), U k is keys @ U.T (B, S, A); add them as (B, T, 1, A) + (B, 1, S, A) "
            "-> (B, T, S, A), apply tanh, then the dot product with v over A -> (B, T, S)")
    cases = _scorer_cases(BahdanauAttention, seed=12)

    def arguments(query, keys, attention):
        return (query, keys, attention.query_layer.weight.detach(), attention.key_layer.weight.detach(),
                attention.energy_layer.weight.detach()[0])

    if not _attempted(exercise, _call_student(exercise, student_fn, arguments(*cases[0]), hint)):
        return
    for query, keys, attention in cases:
        _, _, W, U, v = arguments(query, keys, attention)
        got = _call_student(exercise, student_fn, arguments(query, keys, attention), hint)
        with torch.no_grad():
            expected = attention.score(query, keys, attention.project_keys(keys))  # (B, T, S)
        summed = (query @ W.T).unsqueeze(2) + (keys @ U.T).unsqueeze(1)  # (B, T, S, A)
        mistakes = {"no tanh: the energies are tanh(W q + U k), squashed before v reads them": summed @ v,
                    "tanh after v: the score is v^T tanh(...), the tanh goes INSIDE, before the product with v":
                        torch.tanh(summed @ v),
                    "these are attention weights (after a softmax); the exercise asks for the scores":
                        expected.softmax(-1)}
        _expect_scores(exercise, got, expected, hint, mistakes)
    _passed(exercise, f"your scores equal BahdanauAttention.score on all {len(cases)} cases (T != S and "
                      f"Hq != K != A included).")


ATTENTION_PARAMETER_CASES = (("bahdanau", 4, 6, 5), ("general", 4, 6, 5), ("concat", 4, 6, 5), ("dot", 6, 6, 5),
                             ("scaled_dot", 6, 6, 5), ("bahdanau", 256, 512, 128), ("general", 256, 512, 128),
                             ("concat", 256, 512, 128))  # (kind, Hq, K, A)


def check_attention_parameters(student_fn: Callable[[str, int, int, int], int]) -> None:
    """Check `student_fn(kind, query_size, key_size, attention_size) -> int`, the number of parameters of
    make_attention(kind, query_size, key_size, attention_size) counted by hand, against count_parameters.
    Introduced in notebook 04 (exercise: count an attention module's parameters).
    """
    from course_utils.attention import make_attention
    from course_utils.seq2seq import count_parameters
    exercise = "attention_parameters"
    hint = ("read the modules: bahdanau has W (A, Hq), U (A, K) and v (A); general one (K, Hq) matrix; concat "
            "W (A, Hq + K) and v (A); dot and scaled_dot none; no biases anywhere")
    if not _attempted(exercise, student_fn(*ATTENTION_PARAMETER_CASES[0])):
        return
    for kind, Hq, K, A in ATTENTION_PARAMETER_CASES:
        got = student_fn(kind, Hq, K, A)
        with torch.random.fork_rng():
            expected = count_parameters(make_attention(kind, Hq, K, A))
        _expect(isinstance(got, int) or (isinstance(got, torch.Tensor) and got.numel() == 1),
                f"{exercise}: ({kind!r}, Hq={Hq}, K={K}, A={A}) gave {got!r}; return one whole number.")
        got = int(got)
        if got == expected:
            continue
        mistakes = {"the scorers have no biases (bias=False, as in the papers)":
                        {"bahdanau": expected + 2 * A + 1, "general": expected + K, "concat": expected + A + 1},
                    "you forgot v, the energy vector of A entries that turns tanh(...) into one score":
                        {"bahdanau": expected - A, "concat": expected - A},
                    "concat's W multiplies the concatenation [q; k] of size Hq + K, not a vector of size Hq":
                        {"concat": A * Hq + A},
                    "dot and scaled_dot compare q and k directly: they have no parameters":
                        {"dot": Hq * K, "scaled_dot": Hq * K}}
        specific = [why for why, wrong in mistakes.items() if wrong.get(kind) == got]
        raise AssertionError(f"{exercise}: ({kind!r}, Hq={Hq}, K={K}, A={A}) gave {got:,}, expected {expected:,}. "
                             f"Hint: {(specific or [hint])[0]}.")
    _passed(exercise, f"your counts equal count_parameters(make_attention(...)) on all "
                      f"{len(ATTENTION_PARAMETER_CASES)} cases (every kind, small and lecture-sized).")


# ---------------------------------------------------------------------------------------------- notebook 05
MASKED_NLL_LENGTHS = ((4, 2, 3), (3, 3), (1, 5))  # target lengths (EOS included) of the cases: ragged, no padding


def _masked_nll_cases(vocab_size: int = 9, seed: int = 10) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Seeded (log_probs (B, T, V), tgt (B, T)) cases: real ids >= 4 then EOS, PAD after each length."""
    generator = torch.Generator().manual_seed(seed)
    cases = []
    for lengths in MASKED_NLL_LENGTHS:
        lengths = torch.tensor(lengths)  # (B,)
        B, T = len(lengths), int(lengths.max())
        tgt = torch.randint(4, vocab_size, (B, T), generator=generator)  # (B, T)
        tgt[torch.arange(B), lengths - 1] = data.EOS_ID
        tgt[torch.arange(T) >= lengths.unsqueeze(1)] = data.PAD_ID  # (B, T) pads after each length
        log_probs = torch.log_softmax(torch.randn(B, T, vocab_size, generator=generator) * 2, dim=-1)  # (B, T, V)
        cases.append((log_probs, tgt))
    return cases


def check_masked_nll(student_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check `student_fn(log_probs (B, T, V), tgt (B, T)) -> loss` (a scalar), the mean negative log-probability of
    the real target tokens (positions where tgt == PAD_ID ignored), against train.masked_nll_loss, on ragged
    batches and one without padding. Introduced in notebook 05 (exercise: the masked loss by hand).
    """
    from course_utils.train import masked_nll_loss
    exercise = "masked_nll"
    cases = _masked_nll_cases()
    hint = ("pick each position's gold log-probability (log_probs.gather(-1, tgt.unsqueeze(-1)), shape (B, T, 1)), "
            "keep the positions where tgt != PAD_ID, and return MINUS their sum divided by their count")
    if not _attempted(exercise, _call_student(exercise, student_fn, cases[0], hint)):
        return
    for log_probs, tgt in cases:
        got = _call_student(exercise, student_fn, (log_probs, tgt), hint)
        _expect(isinstance(got, (float, torch.Tensor)) and torch.as_tensor(got).numel() == 1,
                f"{exercise}: you returned {got!r}; expected one number (a scalar tensor). Hint: {hint}.")
        got, expected = float(got), float(masked_nll_loss(log_probs, tgt))
        real = tgt != data.PAD_ID  # (B, T)
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
        if not math.isclose(got, expected, rel_tol=1e-5, abs_tol=1e-6):
            specific = [why for why, value in mistakes.items()
                        if not math.isclose(value, expected, rel_tol=1e-5, abs_tol=1e-6)
                        and math.isclose(got, value, rel_tol=1e-5, abs_tol=1e-6)]
            raise AssertionError(f"{exercise}: with target lengths {real.sum(1).tolist()} (tgt shape "
                                 f"{tuple(tgt.shape)}) you gave {got:.6f}, expected {expected:.6f}. Hint: "
                                 f"{(specific or [hint])[0]}.")
    _passed(exercise, f"your loss equals train.masked_nll_loss on all {len(cases)} batches (ragged ones and one "
                      f"without padding).")


GREEDY_SOURCES = ((4, 5, 6, 7), (8, 9, 10, 11, 5, 6), (7,), (11, 10, 9, 8, 7, 6, 5, 4), (5, 5, 9),
                  (10, 4, 8, 6, 11))  # source ids of the cases (EOS appended); see _greedy_model
GREEDY_MAX_LENGTH = 7  # the output cap (EOS included) of the exercise


def _greedy_model():
    """A seeded tiny Seq2Seq (Bahdanau attention, V = 10) in eval mode, with weights scaled up so its argmaxes are
    clear-cut. PAD and SOS get a very low output bias, so a plain argmax never picks them (greedy_decode forbids
    them anyway), and EOS a higher one, so that on GREEDY_SOURCES some outputs end with EOS before the cap and
    others are cut by it (tests/test_exercises.py checks both happen)."""
    from course_utils.seq2seq import ModelConfig, Seq2Seq
    with torch.random.fork_rng():  # seeded weights without touching the student's random state
        torch.manual_seed(14)
        model = Seq2Seq(ModelConfig(src_vocab_size=12, tgt_vocab_size=10, attention="bahdanau", embedding_size=8,
                                    hidden_size=16, dropout=0.0)).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(3.0)
        model.decoder.out.bias[data.PAD_ID] = -1e4
        model.decoder.out.bias[data.SOS_ID] = -1e4
        model.decoder.out.bias[data.EOS_ID] += 1.0
    return model


def _greedy_cases() -> list[tuple[torch.Tensor, list[int]]]:
    """(src_ids (S,), expected output ids) for GREEDY_SOURCES, the expected ids from decode.greedy_decode."""
    from course_utils.decode import greedy_decode
    model = _greedy_model()
    cases = []
    for ids in GREEDY_SOURCES:
        src_ids = torch.tensor(list(ids) + [data.EOS_ID])  # (S,)
        output = greedy_decode(model, src_ids.unsqueeze(0), torch.tensor([len(src_ids)]),
                               max_length=GREEDY_MAX_LENGTH)
        cases.append((src_ids, output.tokens[0, :int(output.lengths[0])].tolist()))
    return cases


def check_greedy_decode(student_fn: Callable[..., list[int]]) -> None:
    """Check `student_fn(model, src_ids (S,), max_length) -> list of output ids`, greedy decoding written as a
    loop over model.encode and model.decoder.step (start from SOS, feed back each argmax, stop after EOS or
    max_length tokens, EOS included in the output), against decode.greedy_decode on a seeded tiny model.
    Introduced in notebook 05 (exercise: greedy decoding by hand).
    """
    exercise = "greedy_decode"
    model, cases = _greedy_model(), _greedy_cases()
    hint = ("memory, state = model.encode(src_ids.unsqueeze(0), torch.tensor([len(src_ids)])); start with "
            "prev = torch.tensor([SOS_ID]); at each step out = model.decoder.step(prev, state, memory), "
            "prev = out.log_probs.argmax(-1), state = out.state; append prev.item(); stop after EOS_ID or "
            "max_length tokens")

    def call(src_ids: torch.Tensor) -> object:
        with torch.no_grad():
            got = _call_student(exercise, student_fn, (model, src_ids, GREEDY_MAX_LENGTH), hint)
        return got.tolist() if isinstance(got, torch.Tensor) else got

    if not _attempted(exercise, call(cases[0][0])):
        return
    for src_ids, expected in cases:
        got = call(src_ids)
        _expect(isinstance(got, (list, tuple)) and all(isinstance(i, int) for i in got),
                f"{exercise}: you returned {got!r}; expected a list of int ids (use .item() or .tolist()). "
                f"Hint: {hint}.")
        got = list(got)
        if got == expected:
            continue
        why = hint
        if got and got[0] == data.SOS_ID:
            why = "the output starts AFTER <sos>: SOS is the first input, not an output token"
        elif expected[-1] == data.EOS_ID and got == expected[:-1]:
            why = "include the EOS token in the output (then stop): the lengths and the attention rows count it"
        elif got[:len(expected)] == expected and len(got) > len(expected):
            why = (f"stop as soon as you produce EOS_ID ({data.EOS_ID}), and never produce more than max_length "
                   f"= {GREEDY_MAX_LENGTH} tokens")
        elif got[:1] == expected[:1]:
            why = ("feed back the token you just chose (prev = its argmax) and carry the new state "
                   "(state = out.state) into the next step")
        raise AssertionError(f"{exercise}: for src_ids {src_ids.tolist()} you produced {got}, greedy_decode "
                             f"produced {expected}. Hint: {why}.")
    _passed(exercise, f"your loop equals decode.greedy_decode on all {len(cases)} sentences (ending with EOS or "
                      f"cut at max_length = {GREEDY_MAX_LENGTH}).")


PERPLEXITY_CASES = (  # (mean NLL per token of each batch, real target tokens of each batch)
    ([2.0, 1.0, 3.0], [100, 300, 50]),
    ([1.2, 1.8], [64, 64]),   # equal token counts: the unweighted mean happens to be right
    ([0.5, 2.5, 1.5, 4.0], [900, 10, 400, 25]),
)


def check_perplexity(student_fn: Callable[[list[float], list[int]], float]) -> None:
    """Check `student_fn(batch_losses, batch_tokens) -> float`: the perplexity of a whole set from per-batch mean
    losses (NLL per real token, natural log) and each batch's number of real target tokens,
    exp(sum(loss_i * n_i) / sum(n_i)). Introduced in notebook 05 (exercise: perplexity from the loss).
    """
    exercise = "perplexity"
    hint = ("perplexity = exp(mean NLL per token over the whole set); that mean weights each batch's loss by its "
            "number of tokens: exp(sum(loss * n) / sum(n))")
    losses, tokens = PERPLEXITY_CASES[0]
    if not _attempted(exercise, student_fn(list(losses), list(tokens))):
        return
    for losses, tokens in PERPLEXITY_CASES:
        got = student_fn(list(losses), list(tokens))
        _expect(isinstance(got, (float, int, torch.Tensor)) and torch.as_tensor(got).numel() == 1,
                f"{exercise}: you returned {got!r}; expected one number. Hint: {hint}.")
        got = float(got)
        mean_loss = sum(l * n for l, n in zip(losses, tokens)) / sum(tokens)
        expected = math.exp(mean_loss)
        mistakes = {
            "weight each batch's loss by its number of tokens (a batch of 10 tokens must not count as much as one "
            "of 900)": math.exp(sum(losses) / len(losses)),
            "the perplexity of the set is exp of the token-weighted mean loss, not the mean of per-batch "
            "perplexities": sum(math.exp(l) * n for l, n in zip(losses, tokens)) / sum(tokens),
            "the losses are natural-log NLL: use math.exp (e ** loss), not 2 ** loss": 2 ** mean_loss,
            "the perplexity is exp of the MEAN loss, not the loss itself": mean_loss,
        }
        if not math.isclose(got, expected, rel_tol=1e-6):
            specific = [why for why, value in mistakes.items()
                        if not math.isclose(value, expected, rel_tol=1e-6) and math.isclose(got, value, rel_tol=1e-6)]
            raise AssertionError(f"{exercise}: for losses {losses} over {tokens} tokens you gave {got:.4f}, "
                                 f"expected {expected:.4f}. Hint: {(specific or [hint])[0]}.")
    _passed(exercise, f"right on all {len(PERPLEXITY_CASES)} sets of batches (unequal token counts included).")
