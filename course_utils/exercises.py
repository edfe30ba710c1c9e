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
