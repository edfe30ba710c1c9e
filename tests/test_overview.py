"""overview: the toy copying task (its batches, one train-and-score call), and the example sentence picked by a rule."""
import pytest
import torch

from course_utils.evaluate import SentenceRow
from course_utils.overview import pick_example, toy_copy_batch, train_and_score_toy
from course_utils.vocab import EOS_ID, PAD_ID, SPECIAL_TOKENS

ROWS = [
    SentenceRow("je suis fatigue .", "i m tired .", "i m tired ."),                      # 4 tokens, exact
    SentenceRow("il est tres grand .", "he s very tall .", "he s very big ."),          # 5
    SentenceRow("nous sommes tous ici .", "we re all here .", "we re all here ."),      # 5, exact
    SentenceRow("je suis en train de manger .", "i m eating .", "i m eating ."),        # 7, exact
    SentenceRow("elle est plus grande que moi .", "she s taller than me .", "she s tall ."),  # 7
]


def test_a_toy_batch_holds_random_symbols_ending_in_eos_and_its_target_is_the_source():
    batch = toy_copy_batch(50, seed=3)
    lengths = batch.src_lengths
    assert batch.src.shape == (50, int(lengths.max())) and batch.src_mask.shape == batch.src.shape
    assert int(lengths.min()) >= 5 + 1 and int(lengths.max()) <= 25 + 1  # EOS counted
    for row, n in zip(batch.src, lengths.tolist()):
        assert row[n - 1] == EOS_ID and (row[n:] == PAD_ID).all()
        assert (row[:n - 1] >= len(SPECIAL_TOKENS)).all()  # symbols only: no special token inside a sequence
    assert torch.equal(batch.tgt, batch.src) and torch.equal(batch.tgt_lengths, lengths)  # the task: copy
    assert torch.equal(batch.src_mask, batch.src != PAD_ID)
    assert torch.equal(toy_copy_batch(50, seed=3).src, batch.src)  # a seed gives the same batch
    assert not torch.equal(toy_copy_batch(50, seed=4).src[:, :5], batch.src[:, :5])


def test_lengths_can_be_fixed():
    batch = toy_copy_batch(8, (7, 7), seed=0)
    assert batch.src.shape == (8, 8) and (batch.src_lengths == 8).all()


def test_a_short_training_run_beats_the_untrained_model():
    untrained = train_and_score_toy("bahdanau", steps=0, test_lengths=(5,), test_count=50)
    trained = train_and_score_toy("bahdanau", steps=60, test_lengths=(5,), test_count=50)
    assert untrained.lengths == trained.lengths == [5] and trained.attention == "bahdanau"
    assert untrained.accuracy[0] < 0.3  # about one symbol in ten by chance
    assert trained.accuracy[0] > untrained.accuracy[0] + 0.2


def test_the_model_without_attention_is_scored_the_same_way():
    score = train_and_score_toy("none", steps=2, test_lengths=(5, 10), test_count=10)
    assert score.attention == "none" and score.lengths == [5, 10] and len(score.accuracy) == 2
    assert all(0.0 <= a <= 1.0 for a in score.accuracy) and score.seconds >= 0


def test_the_example_is_the_longest_exact_translation_else_the_longest_source():
    index, rule = pick_example(ROWS)
    assert index == 3 and "exactly" in rule  # 7 tokens and exact; row 4 is as long but wrong
    wrong = [row._replace(hypothesis="no .") for row in ROWS]
    index, rule = pick_example(wrong)
    assert index == 3 and rule.startswith("no test source")  # ties go to the first row
    with pytest.raises(ValueError, match="no rows"):
        pick_example([])
