"""Tests for course_utils.shapes: the rows a traced forward pass produces, their formatting, and hook cleanup."""
from typing import NamedTuple

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from course_utils.fast.recurrences import FastDecoder
from course_utils.seq2seq import ModelConfig, Seq2Seq, teacher_forced_input
from course_utils.shapes import ShapeTrace, _describe_shapes, _ShapeRow, trace_shapes
from course_utils.vocab import EOS_ID, PAD_ID

T = 3


def model_and_batch(attention="bahdanau", **overrides):
    torch.manual_seed(0)
    model = Seq2Seq(ModelConfig(15, 12, attention=attention, embedding_size=6, hidden_size=8, **overrides)).eval()
    src = torch.tensor([[5, 6, 7, EOS_ID], [8, EOS_ID, PAD_ID, PAD_ID]])
    tgt = torch.tensor([[4, 5, EOS_ID], [6, EOS_ID, PAD_ID]])
    return model, (src, torch.tensor([4, 2]), tgt)


def all_hooks(model):
    return [hooks for module in model.modules() for hooks in (module._forward_hooks, module._forward_pre_hooks)]


def test_every_submodule_call_is_a_row_in_call_order():
    model, batch = model_and_batch("bahdanau")
    trace = trace_shapes(model, *batch)
    assert isinstance(trace, ShapeTrace) and all(isinstance(row, _ShapeRow) for row in trace)
    root = trace.rows[0]
    assert (root.name, root.type, root.depth, root.call) == ("(model)", "Seq2Seq", 0, 0)
    assert root.outputs == "Seq2SeqOutput(log_probs=(2, 3, 12), attention=(2, 3, 4))"
    names = [row.name for row in trace]
    called = {name for name, _ in model.named_modules() if name}
    assert called == set(names) - {"(model)"}  # every module of this model runs
    assert names.index("encoder") < names.index("encoder.gru") < names.index("decoder")  # parents first
    calls = {name: names.count(name) for name in names}
    assert calls["decoder.gru"] == T and calls["decoder.attention"] == T  # once per decoder step
    assert calls["decoder.attention.key_layer"] == 1  # keys projected once per sentence
    by_name = {(row.name, row.call): row for row in trace}
    assert by_name["encoder.embedding", 0].inputs == "(2, 4)"
    assert by_name["encoder.embedding", 0].outputs == "(2, 4, 6)"
    assert by_name["encoder.gru", 0].inputs == "PackedSequence(data=(6, 6), batch_sizes=(4,))"
    assert by_name["decoder.attention", 2].outputs == "AttentionOutput(context=(2, 8), weights=(2, 4))"
    assert [row.call for row in trace if row.name == "decoder.gru"] == list(range(T))
    assert by_name["decoder.attention.query_layer", 0].depth == by_name["decoder.attention", 0].depth + 1


def test_the_luong_fast_path_shows_one_call_per_layer_and_none_inputs():
    model, (src, lengths, tgt) = model_and_batch("general")
    memory, state = model.encode(src, lengths)
    trace = trace_shapes(FastDecoder(model.decoder), teacher_forced_input(tgt), state, memory)
    attention = [row for row in trace if row.name == "attention"]
    assert len(attention) == 1
    assert attention[0].inputs == "(2, 3, 8), (2, 4, 8), (2, 4), None"  # projected_keys=None
    assert attention[0].outputs == "AttentionOutput(context=(2, 3, 8), weights=(2, 3, 4))"


def test_output_is_the_models_output_and_no_gradients_are_recorded():
    model, batch = model_and_batch("dot")
    trace = trace_shapes(model, *batch)
    assert torch.equal(trace.output.log_probs, model(*batch).log_probs)
    assert not trace.output.log_probs.requires_grad


def test_keyword_arguments_are_passed_and_listed():
    model, (src, lengths, tgt) = model_and_batch("none")
    trace = trace_shapes(model, src, lengths, tgt=tgt, teacher_forcing_ratio=0.0)
    assert trace.rows[0].inputs == "(2, 4), (2,), tgt=(2, 3), teacher_forcing_ratio=0.0"
    assert trace.output.attention is None
    assert "attention=None" in trace.rows[0].outputs


def test_first_calls_keeps_one_row_per_module():
    model, batch = model_and_batch("bahdanau")
    trace = trace_shapes(model, *batch)
    first = trace.first_calls()
    names = [row.name for row in first]
    assert len(names) == len(set(names)) == len(set(row.name for row in trace)) < len(trace)


def test_plain_text_and_html_tables():
    model, batch = model_and_batch("concat")
    trace = trace_shapes(model, *batch)
    lines = str(trace).splitlines()
    assert lines[0].split() == ["module", "type", "call", "inputs", "outputs"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert len(lines) == len(trace) + 2
    assert lines[2].startswith("(model)") and lines[3].startswith("  encoder")  # indented by depth
    assert "Seq2SeqOutput(log_probs=(2, 3, 12)" in lines[2]
    page = trace._repr_html_()
    assert page.startswith("<table>") and page.count("<tr>") == len(trace) + 1
    assert "<th style='text-align:left'>outputs</th>" in page
    assert "ShapeTrace(" in repr(trace)


def test_html_escapes_its_cells():
    row = _ShapeRow("a<b>", "X&Y", 0, 0, "<script>", "")
    page = ShapeTrace([row])._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page and "X&amp;Y" in page


def test_hooks_are_removed_after_success_and_after_an_error():
    model, (src, lengths, tgt) = model_and_batch("bahdanau")
    trace_shapes(model, src, lengths, tgt)
    assert not any(all_hooks(model))
    with pytest.raises(ValueError, match="src_lengths"):
        trace_shapes(model, src, lengths[:1], tgt)
    assert not any(all_hooks(model))


class Pair(NamedTuple):
    left: object
    right: object


@pytest.mark.parametrize("value, text", [
    (torch.zeros(2, 3), "(2, 3)"),
    (torch.tensor(1.0), "()"),
    (None, "None"),
    ((torch.zeros(1), None), "((1,), None)"),
    ((torch.zeros(1),), "((1,),)"),
    ([torch.zeros(4), 3], "[(4,), 3]"),
    (Pair(torch.zeros(2, 2), (None, 1.5)), "Pair(left=(2, 2), right=(None, 1.5))"),
    ({"mask": torch.zeros(5, dtype=torch.bool)}, "{mask=(5,)}"),
    (nn.Linear(1, 1), "Linear"),
])
def test_describe_shapes(value, text):
    assert _describe_shapes(value) == text


def test_describe_packed_sequence():
    packed = pack_padded_sequence(torch.zeros(2, 3, 4), torch.tensor([3, 1]), batch_first=True)
    assert _describe_shapes(packed) == "PackedSequence(data=(4, 4), batch_sizes=(3,))"


def test_a_plain_module_traces_too():
    layer = nn.Sequential(nn.Linear(4, 3), nn.Tanh())
    trace = trace_shapes(layer, torch.zeros(5, 4))
    assert [(row.name, row.outputs) for row in trace] == [("(model)", "(5, 3)"), ("0", "(5, 3)"), ("1", "(5, 3)")]
