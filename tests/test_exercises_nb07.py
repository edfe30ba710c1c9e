"""Notebook 07's checkers: the typical mistakes get their hint, and the cases are tricky enough."""
from __future__ import annotations

import torch

from course_utils import exercises
from course_utils.exercises import nb07_decoding, solutions
from course_utils.translate import Translation, replace_unknown_words

sampling = solutions.sampling_distribution
beam_step = solutions.beam_step


def sampling_unnormalised(log_probs, temperature, top_k):
    probs = (log_probs / temperature).softmax(-1)
    if top_k is not None:
        probs = probs * (probs >= probs.topk(top_k, dim=-1).values[:, -1:])  # cut after the softmax, no renormalising
    return probs


def beam_per_row(alive, step, slots):
    """The usual mistake: rank the next tokens by their own log-probability, ignoring the prefixes'."""
    values, index = step.reshape(-1).topk(slots)
    return values, index // step.size(1), index % step.size(1)


def replace_among(output, source, attention, positions):
    aligned = attention[:, positions].argmax(dim=-1).tolist()  # (T,)
    return [source[positions[aligned[t]]] if token == "<unk>" else token for t, token in enumerate(output)]


replace_with_eos = lambda o, s, a: replace_among(o, s, a, list(range(len(s))))  # the source <eos> included
replace_with_punctuation = lambda o, s, a: replace_among(o, s, a, list(range(len(s) - 1)))  # "." included


MISTAKES = [  # checker, typical wrong solution, a word of the expected hint
    (exercises.check_sampling_distribution, lambda lp, t, k: sampling(lp * t * t, t, k), "DIVIDE"),
    (exercises.check_sampling_distribution, sampling_unnormalised, "BEFORE the softmax"),
    (exercises.check_sampling_distribution, lambda lp, t, k: (lp / t).softmax(0), "sum to"),  # wrong axis
    (exercises.check_sampling_distribution, lambda lp, t, k: sampling(lp, t, None), "tokens kept"),  # no top-k cut
    (exercises.check_sampling_distribution, lambda lp, t, k: sampling(lp, t, k)[0], "shape"),
    (exercises.check_beam_step, beam_per_row, "WHOLE hypotheses"),
    (exercises.check_beam_step, lambda a, s, n: (lambda v, p, t: (v, t, p))(*beam_step(a, s, n)), "swapped"),
    (exercises.check_beam_step, lambda a, s, n: beam_step(a, s, 3), "open_slots"),  # a fixed width
    (exercises.check_beam_step, lambda a, s, n: beam_step(a, s, n)[:2], "three tensors"),
    (exercises.check_beam_step, lambda a, s, n: [x.flip(0) for x in beam_step(a, s, n)], "best first"),
    (exercises.check_replace_unknown, replace_with_eos, "<eos>"),
    (exercises.check_replace_unknown, replace_with_punctuation, "punctuation"),
    (exercises.check_replace_unknown,
     lambda o, s, a: [s[j] if tok == "<unk>" else tok for tok, j in zip(o, a[:, :-1].argmin(-1).tolist())], "expected"),
    (exercises.check_replace_unknown, lambda o, s, a: [tok for tok in o if tok != "<unk>"], "tokens"),  # drops them
]


def test_notebook_07_cases_are_tricky_enough():
    assert any(slots < rows for rows, slots in nb07_decoding.BEAM_STEP_CASES)  # a beam that shrank
    assert any(rows == 1 for rows, _ in nb07_decoding.BEAM_STEP_CASES)  # the first step
    cases = nb07_decoding._replace_cases()
    peaks = [s[int(a[t].argmax())] for o, s, a in cases for t, tok in enumerate(o) if tok == "<unk>"]
    assert "<eos>" in peaks and "." in peaks and any(p.isalpha() for p in peaks)
    assert any("<unk>" not in o for o, _, _ in cases) and any(o.count("<unk>") > 1 for o, _, _ in cases)
    # the package's function agrees with the answer key on every case
    for output, source, attention in cases:
        assert (replace_unknown_words(Translation(source, output, attention, 0.0, [])).output_tokens
                == solutions.replace_unknown(output, source, attention))
    log_probs = nb07_decoding._log_probs(2, seed=0)
    assert torch.equal(sampling(log_probs, 1.0, 1) > 0, log_probs == log_probs.max(-1, keepdim=True).values)
