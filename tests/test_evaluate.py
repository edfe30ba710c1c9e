"""evaluate: teacher-forced loss and perplexity, BLEU/chrF of greedy or beam translations, per-sentence rows."""
import math

import pytest
import torch
from helpers import distinct_sources, fixed_batch, tiny_config

from course_utils.evaluate import evaluate
from course_utils.seq2seq import Seq2Seq
from course_utils.train import TrainConfig, make_optimizer, train_epoch


def test_evaluate_scores_a_perfect_model_100_and_keeps_pair_order(tiny_course_data, monkeypatch):
    pairs = distinct_sources(tiny_course_data.splits.train, 6)
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data, "general", hidden=48, dropout=0.0))
    batch = fixed_batch(tiny_course_data, pairs)
    config = TrainConfig(learning_rate=1e-2)
    optimizer = make_optimizer(model, config)
    for _ in range(120):
        train_epoch(model, [batch], optimizer, config, progress=False)
    result = evaluate(model, pairs, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, batch_size=4)
    assert [row.reference for row in result.rows] == [pair.target for pair in pairs]
    assert [row.hypothesis for row in result.rows] == [pair.target for pair in pairs]
    assert result.bleu == pytest.approx(100.0) and "nrefs:1" in result.signature
    assert result.perplexity == pytest.approx(math.exp(result.loss))
    beam = evaluate(model, pairs, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, beam_width=3)
    assert beam.bleu == pytest.approx(100.0)
    assert pairs[0].source in result.table(n=2) and len(result.table(n=2).splitlines()) == 4
