"""Tests for course_utils.diagrams: every label is a shape of a real forward pass, and the figures draw headless."""
import base64
import dataclasses
import io
import re
import sys
import warnings

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

from course_utils import diagrams  # noqa: E402
from course_utils.attention import ATTENTION_SCORES, make_attention  # noqa: E402
from course_utils.diagram_layouts import SCORES  # noqa: E402
from course_utils.diagrams import (  # noqa: E402
    _diagram_config,
    _diagram_spec,
    _diagram_state,
    _DiagramExplorer,
    _draw_diagram,
    _edge_label,
    _example_batch,
    _parse_shapes,
    _show_diagram,
    diagram_explorer,
)
from course_utils.seq2seq import LUONG_SCORES, Seq2Seq  # noqa: E402
from course_utils.shapes import trace_shapes  # noqa: E402

# (part, settings, B, S, T): unidirectional and bidirectional (with bridge), every score, B = 1 and S = 1
CASES = [
    ("encoder", dict(), 2, 5, 3),
    ("encoder", dict(bidirectional=True, hidden_size=12), 3, 4, 2),
    ("encoder", dict(bidirectional=True), 1, 1, 1),
    ("decoder", dict(attention="bahdanau"), 2, 5, 3),
    ("decoder", dict(attention="bahdanau", bidirectional=True, embedding_size=6, hidden_size=10), 1, 1, 1),
    ("decoder", dict(attention="general", bidirectional=True, input_feeding=True), 3, 4, 2),
    ("decoder", dict(attention="dot", input_feeding=True), 1, 6, 1),
    ("decoder", dict(attention="concat", bidirectional=True), 4, 3, 5),
    ("decoder", dict(attention="scaled_dot", hidden_size=8), 2, 2, 2),
    ("decoder", dict(attention="scaled_general", bidirectional=True, input_feeding=True), 2, 4, 3),
]
IDS = [f"{part}-{settings.get('attention', '')}-{'bi' if settings.get('bidirectional') else 'uni'}-B{B}S{S}T{T}"
       for part, settings, B, S, T in CASES]


def evaluate_symbols(symbols: str, sizes: dict[str, int]) -> tuple[int, ...]:
    """"B, S, E+K" (an edge's symbols) with sizes -> (2, 5, 40): terms are a number, a letter or both ("2H")."""
    def term(text: str) -> int:
        count, name = re.fullmatch(r"(\d*)([A-Za-z_]*)", text.strip()).groups()
        return int(count or 1) * (sizes[name] if name else 1)
    return tuple(sum(term(t) for t in dim.split("+")) for dim in symbols.split(","))


def spec_for(part, settings, B, S, T):
    return _diagram_spec(part, _diagram_config(**settings), B, S, T)


def independent_trace(config, B, S, T):
    """Trace the same model and batch again, outside _diagram_spec."""
    model = Seq2Seq(dataclasses.replace(config, dropout=0.0)).eval()
    src, lengths, tgt = _example_batch(config, B, S, T)
    return {(row.name, row.call): row for row in trace_shapes(model, src, lengths, tgt, teacher_forcing_ratio=0.0)}


@pytest.mark.parametrize("part, settings, B, S, T", CASES, ids=IDS)
def test_every_label_is_the_traced_shape_and_matches_its_letters(part, settings, B, S, T):
    config = _diagram_config(**settings)
    spec = _diagram_spec(part, config, B, S, T)
    rows = independent_trace(config, B, S, T)
    assert spec.edges and spec.footnotes
    for tensor in spec.tensors:
        name, call, io_, index = tensor.source
        assert call == 0, "step 0: each module's first call"
        assert tensor.shape == _parse_shapes(getattr(rows[name, call], io_))[index], tensor
        assert evaluate_symbols(tensor.symbols, spec.sizes) == tensor.shape, tensor  # the letters say the same
        assert str(tensor.shape[-1]) in _edge_label(tensor, spec.sizes)
    H = settings.get("hidden_size", 16)
    assert spec.sizes | {"B": B, "S": S, "T": T, "H": H} == spec.sizes
    assert spec.sizes["N"] == sum(max(S - b, 1) for b in range(B))  # real tokens: packing drops the pads
    keys = {node.key for node in spec.nodes}
    assert all(edge.start in keys and edge.end in keys for edge in spec.edges)


def test_the_letters_are_checked_against_known_formulas():
    spec = spec_for("decoder", dict(attention="bahdanau", bidirectional=True, embedding_size=6, hidden_size=10),
                    3, 7, 4)
    shapes = {edge.name: edge.shape for edge in spec.tensors}  # names repeat ("" for concatenations): spot checks
    assert shapes["context $c_i$"] == (3, 20)  # (B, K) with K = 2H
    into = {edge.end: edge.shape for edge in spec.edges if edge.name == ""}  # the concatenations, by where they go
    assert into == {"gru": (3, 1, 6 + 20), "pre": (3, 10 + 20 + 6)}  # (B, 1, E+K) and (B, H+K+E)
    assert shapes["log_probs"] == (3, 4, 40) and shapes["weights"] == (3, 4, 7)  # (B, T, V), (B, T, S)


def test_a_bidirectional_encoders_keys_show_2h():
    bi = spec_for("encoder", dict(bidirectional=True, hidden_size=12), 2, 5, 3)
    keys = next(edge for edge in bi.edges if edge.end == "keys")
    assert keys.shape == (2, 5, 24) and _edge_label(keys, bi.sizes) == "outputs (2, 5, 24)\n(B, S, 2H)"
    assert any(node.key == "bridge" and "Linear(24, 12)" in node.text for node in bi.nodes)
    final = next(edge for edge in bi.edges if edge.end == "final")
    assert final.start == "bridge" and final.shape == (2, 12)
    uni = spec_for("encoder", dict(hidden_size=12), 2, 5, 3)
    keys = next(edge for edge in uni.edges if edge.end == "keys")
    assert keys.shape == (2, 5, 12) and keys.name + " (2, 5, 12)\n(B, S, H)" == _edge_label(keys, uni.sizes)
    assert "bridge" not in {node.key for node in uni.nodes}
    decoder = spec_for("decoder", dict(attention="general", bidirectional=True, hidden_size=12), 2, 5, 3)
    assert any("(B, S, 2H)" in _edge_label(edge, decoder.sizes) for edge in decoder.edges if edge.start == "keys")


def test_luong_input_feeding_feeds_the_attentional_state_back():
    spec = spec_for("decoder", dict(attention="general", input_feeding=True, embedding_size=6, hidden_size=10), 2, 5, 3)
    feedback = [edge for edge in spec.edges if edge.feedback]
    assert len(feedback) == 1
    back = feedback[0]
    assert (back.start, back.end) == ("combine", "cat1") and back.shape == (2, 10)  # h~_t (B, H)
    assert "attentional state" in back.name
    gru_input = next(edge for edge in spec.edges if edge.end == "gru" and edge.start == "cat1")
    assert gru_input.shape == (2, 1, 6 + 10)  # [E y; h~_{t-1}]: (B, 1, E+H)
    assert "Luong" in spec.title and "input feeding" in spec.title

    plain = spec_for("decoder", dict(attention="general", embedding_size=6, hidden_size=10), 2, 5, 3)
    assert not any(edge.feedback for edge in plain.edges) and "cat1" not in {n.key for n in plain.nodes}
    assert next(edge for edge in plain.edges if edge.end == "gru" and edge.start == "emb").shape == (2, 1, 6)


def test_every_score_is_drawn_with_its_formula_and_luong_scores_get_luongs_step():
    assert diagrams.LUONG_SCORES is LUONG_SCORES and "scaled_general" in LUONG_SCORES  # the package's one list
    for kind in ATTENTION_SCORES:
        spec = spec_for("decoder", dict(attention=kind, input_feeding=kind in LUONG_SCORES), 2, 5, 3)
        attn = next(node for node in spec.nodes if node.key == "attn")
        assert attn.text.splitlines()[-1] == SCORES[type(make_attention(kind, 16, 16)).__name__], kind
        assert ("Luong" in spec.title) == (kind in LUONG_SCORES)
        assert any(edge.feedback for edge in spec.edges) == (kind in LUONG_SCORES)
    scaled = spec_for("decoder", dict(attention="scaled_general"), 2, 5, 3)
    assert "ScaledGeneralAttention\nh W k / sqrt(K)" in next(n.text for n in scaled.nodes if n.key == "attn")
    assert "(scaled_general)" in scaled.title
    state = _diagram_state("decoder", 2, 5, 3, attention="scaled_general", input_feeding=True)
    assert state.message == "" and any(edge.feedback for edge in state.spec.edges)  # input feeding kept


def test_bahdanau_projects_the_keys_once_and_attends_with_the_previous_state():
    spec = spec_for("decoder", dict(attention="bahdanau"), 2, 5, 3)
    by_name = {edge.name: edge for edge in spec.edges}
    assert by_name["$Uk$, once per sentence"].source[0] == "decoder.attention.key_layer"
    assert by_name["query $s_{i-1}$"].shape == (2, 16)
    assert "Bahdanau" in spec.title and not any(edge.feedback for edge in spec.edges)


@pytest.mark.parametrize("part, settings, B, S, T", CASES, ids=IDS)
def test_figures_draw_without_warnings(part, settings, B, S, T):
    spec = spec_for(part, settings, B, S, T)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = _draw_diagram(spec)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=60)
    assert buffer.getvalue()[:4] == b"\x89PNG"
    texts = [text.get_text() for text in fig.axes[0].texts]
    assert all(_edge_label(edge, spec.sizes) in texts for edge in spec.edges)
    assert all(node.text in texts for node in spec.nodes)


def test_the_diagram_leaves_the_global_random_state_alone():
    before = torch.get_rng_state()
    spec_for("decoder", dict(attention="bahdanau"), 2, 5, 3)
    assert torch.equal(before, torch.get_rng_state())


def test_bad_parts_and_decoders_without_a_step_diagram_raise():
    with pytest.raises(ValueError, match="part must be"):
        spec_for("attention", {}, 2, 5, 3)
    with pytest.raises(ValueError, match="no step diagram"):
        spec_for("decoder", dict(attention="none"), 2, 5, 3)


def test_the_state_logic_explains_refused_combinations_instead_of_raising():
    state = _diagram_state("decoder", 2, 5, 3, attention="dot", bidirectional=True)
    assert state.spec is None and "bidirectional" in state.message
    encoder = _diagram_state("encoder", 2, 5, 3, attention="dot", bidirectional=True)  # the decoder is irrelevant
    assert encoder.message == "" and encoder.spec.sizes["K"] == 32
    bahdanau = _diagram_state("decoder", 2, 5, 3, attention="bahdanau", input_feeding=True)  # a Luong option
    assert bahdanau.message == "" and not any(edge.feedback for edge in bahdanau.spec.edges)


def test_parse_shapes_reads_every_trace_format():
    assert _parse_shapes("((2, 1, 8), (1, 2, 8))") == [(2, 1, 8), (1, 2, 8)]
    assert _parse_shapes("PackedSequence(data=(9, 8), batch_sizes=(5,))") == [(9, 8), (5,)]
    assert _parse_shapes("AttentionOutput(context=(2, 8), weights=(2, 4))") == [(2, 8), (2, 4)]
    assert _parse_shapes("(2, 3, 8), (2, 4, 8), (2, 4), None") == [(2, 3, 8), (2, 4, 8), (2, 4)]
    assert evaluate_symbols("B, 1, E+2H", dict(B=2, E=3, H=5)) == (2, 1, 13)


# ------------------------------------------------------------------------ the widget, driven like a user

def png_of(ui):
    assert len(ui.output.outputs) == 1
    png = base64.b64decode(ui.output.outputs[0]["data"]["image/png"])
    assert png[:4] == b"\x89PNG"
    return png


def test_changing_a_control_redraws_with_a_new_forward_pass():
    ui = _DiagramExplorer("decoder", attention="bahdanau", hidden_size=16, embedding_size=8)
    first = png_of(ui)
    assert ui.state().spec.sizes["H"] == 16 and ui.input_feeding.disabled
    ui.hidden_size.value = 24
    spec = ui.state().spec
    assert spec.sizes["H"] == 24 and any(edge.shape == (2, 24) for edge in spec.edges)
    assert png_of(ui) != first
    ui.batch_size.value, ui.source_length.value, ui.target_length.value = 1, 1, 4
    footnotes = {edge.name: edge.shape for edge in ui.state().spec.footnotes}
    assert footnotes == {"log_probs": (1, 4, 40), "weights": (1, 4, 1)}
    ui.bidirectional.value = True
    assert next(e for e in ui.state().spec.edges if e.start == "keys" and e.end == "attn").shape == (1, 1, 48)
    ui.attention.value = "general"
    assert not ui.input_feeding.disabled and "Luong" in ui.state().spec.title
    ui.input_feeding.value = True
    assert any(edge.feedback for edge in ui.state().spec.edges)
    ui.attention.value = "scaled_general"  # a Luong score too: input feeding stays on
    assert not ui.input_feeding.disabled and "scaled_general" in ui.state().spec.title
    assert any(edge.feedback for edge in ui.state().spec.edges)
    ui.attention.value = "dot"  # with a bidirectional encoder: refused, explained, nothing drawn
    assert "bidirectional" in ui.message.value and ui.output.outputs == () and ui.state().spec is None
    ui.bidirectional.value = False
    assert ui.message.value == "" and png_of(ui)


def test_the_encoder_explorer_shows_only_the_encoders_controls():
    ui = _DiagramExplorer("encoder", hidden_size=12)
    assert ui.target_length not in ui.controls and ui.attention not in ui.controls
    assert ui.bidirectional in ui.controls and ui.batch_size in ui.controls
    ui.bidirectional.value = True
    assert any(node.key == "bridge" for node in ui.state().spec.nodes)


def test_where_widgets_do_not_render_the_output_falls_back_to_the_png():
    ui = _DiagramExplorer("encoder")
    bundle = ui._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert base64.b64decode(bundle["image/png"])[:4] == b"\x89PNG"


def test_without_ipywidgets_the_static_figure_is_the_fallback(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import ipywidgets -> ImportError
    with pytest.raises(ImportError, match="diagram_explorer.*static figure"):
        _DiagramExplorer("encoder")
    fig = diagram_explorer("decoder", attention="general", input_feeding=True)
    assert fig is not None and "ipywidgets is not installed" in capsys.readouterr().out
    assert _show_diagram("decoder", attention="dot", bidirectional=True) is None
    assert "bidirectional" in capsys.readouterr().out


def test_the_explorer_accepts_a_notebooks_config():
    config = _diagram_config(attention="bahdanau", bidirectional=True, embedding_size=24, hidden_size=32)
    ui = diagram_explorer("decoder", config, batch_size=3, source_length=9)
    assert isinstance(ui, _DiagramExplorer) and ui.hidden_size.value == 32 and ui.bidirectional.value
    assert ui.state().spec.sizes == diagrams._diagram_spec("decoder", config, 3, 9, 3).sizes
