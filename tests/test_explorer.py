"""Tests for course_utils.explorer: the explorer's logic and drawing, without a browser or a kernel."""
import base64
import sys
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_utils import explorer  # noqa: E402
from course_utils.explorer import (  # noqa: E402
    _HINT,
    AttentionExplorer,
    ExplorerState,
    draw_state,
    explore,
    explorer_state,
    figure_png,
    show_static,
)
from course_utils.seq2seq import ModelConfig, Seq2Seq  # noqa: E402
from course_utils.translate import translate  # noqa: E402
from course_utils.vocab import PAD_ID, Vocab  # noqa: E402

FRENCH = ["je suis tres content de te voir aujourd hui .", "il est grand .", "nous sommes ici .",
          "je suis fatigue ."]
ENGLISH = ["i am very happy to see you today .", "he is tall .", "we are here .", "i am tired ."]
TEN_WORDS = FRENCH[0]  # 10 words + <eos>


def tiny_trained(attention="bahdanau", seed=0, hidden=16):
    """A randomly initialised TrainedModel-like object with tiny vocabularies."""
    torch.manual_seed(seed)
    src_vocab, tgt_vocab = Vocab.build(FRENCH), Vocab.build(ENGLISH)
    config = ModelConfig(len(src_vocab), len(tgt_vocab), attention=attention, embedding_size=hidden,
                         hidden_size=hidden, dropout=0.0)
    return SimpleNamespace(model=Seq2Seq(config).eval(), src_vocab=src_vocab, tgt_vocab=tgt_vocab)


@pytest.fixture(scope="module")
def models():
    return {"bahdanau": tiny_trained("bahdanau"), "general": tiny_trained("general", seed=1),
            "none": tiny_trained("none", seed=2)}


@pytest.fixture(scope="module")
def overfit():
    """A tiny model trained for a second to reproduce the four pairs: realistic output lengths (EOS is learnt)."""
    trained = tiny_trained("bahdanau", hidden=32)
    model = trained.model.train()
    src = [torch.tensor(trained.src_vocab.encode(s)) for s in FRENCH]
    tgt = [torch.tensor(trained.tgt_vocab.encode(s)) for s in ENGLISH]
    src_lengths = torch.tensor([len(s) for s in src])  # (B,)
    src = torch.nn.utils.rnn.pad_sequence(src, batch_first=True, padding_value=PAD_ID)  # (B, S)
    tgt = torch.nn.utils.rnn.pad_sequence(tgt, batch_first=True, padding_value=PAD_ID)  # (B, T)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.03)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model trains ~5x faster on one thread when the CPU is shared
    try:
        for _ in range(60):
            log_probs = model(src, src_lengths, tgt).log_probs  # (B, T, V)
            loss = torch.nn.functional.nll_loss(log_probs.transpose(1, 2), tgt, ignore_index=PAD_ID)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    return trained


def test_overfit_model_translates_its_training_sentence(overfit):
    state = explorer_state(overfit, TEN_WORDS, step=0)
    assert state.output_tokens == ENGLISH[0].split() + ["<eos>"]
    assert state.top_k[0] == (state.chosen, pytest.approx(state.top_k[0][1])) and state.top_k[0][1] > 0.5


# ------------------------------------------------------------------------ pure logic: explorer_state

def test_state_at_step_t_is_consistent_with_the_translation(models):
    state = explorer_state(models["bahdanau"], TEN_WORDS, step=3, model_name="bahdanau")
    assert state.ok and state.message == ""
    assert state.source_tokens == TEN_WORDS.split() + ["<eos>"]
    assert state.output_tokens == translate(models["bahdanau"].model, models["bahdanau"].src_vocab,
                                            models["bahdanau"].tgt_vocab, TEN_WORDS).output_tokens
    assert state.step == 3
    assert state.tokens_so_far == state.output_tokens[:3]
    assert state.chosen == state.output_tokens[3]
    assert state.attention.shape == (state.num_steps, len(state.source_tokens))
    assert np.allclose(state.weights_row, state.attention[3])
    assert state.weights_row.sum() == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("name", ["bahdanau", "general", "none", "overfit"])
def test_greedy_top_candidate_is_the_chosen_token_at_every_step(models, overfit, name):
    """The bar chart and the translation come from two passes (decode, force_decode): they must line up."""
    trained = overfit if name == "overfit" else models[name]
    decoded = explorer._decode(trained, TEN_WORDS, "greedy", beam_width=1, top_k=5)  # translate once
    for step in range(len(decoded.output_tokens)):
        state = explorer._state_at(decoded, step)
        probabilities = dict(state.top_k)
        assert state.chosen in probabilities, f"step {step}: chosen token not among the candidates (off by one?)"
        # random models have near-ties (1e-7 apart), so compare probabilities, not names
        assert probabilities[state.chosen] == pytest.approx(state.top_k[0][1], abs=1e-5), f"step {step}"


def test_top_k_is_five_sorted_probabilities(models):
    state = explorer_state(models["bahdanau"], "il est grand .", step=1)
    probabilities = [p for _, p in state.top_k]
    assert len(state.top_k) == 5
    assert probabilities == sorted(probabilities, reverse=True)
    assert all(0.0 <= p <= 1.0 for p in probabilities) and sum(probabilities) <= 1.0 + 1e-6


def test_step_is_clamped_and_none_means_last_step(models):
    last = explorer_state(models["bahdanau"], "il est grand .", step=None)
    assert last.step == last.num_steps - 1
    assert explorer_state(models["bahdanau"], "il est grand .", step=999).step == last.step
    assert explorer_state(models["bahdanau"], "il est grand .", step=-4).step == 0


def test_beam_mode_shows_the_beam_translation(models):
    trained = models["bahdanau"]
    state = explorer_state(trained, TEN_WORDS, mode="beam", beam_width=3)
    expected = translate(trained.model, trained.src_vocab, trained.tgt_vocab, TEN_WORDS, beam_width=3)
    assert state.output_tokens == expected.output_tokens
    assert state.mode == "beam"
    with pytest.raises(ValueError, match="mode must be one of"):
        explorer_state(trained, TEN_WORDS, mode="sampling")


def test_empty_box_shows_a_hint_not_an_error(models):
    for text in ("", "   "):
        state = explorer_state(models["bahdanau"], text)
        assert not state.ok and state.message == _HINT
        assert draw_state(state) is None
    state = explorer_state(models["bahdanau"], "-- ;")  # nothing left after normalisation
    assert not state.ok and "empty after normalisation" in state.message


def test_pad_and_sos_are_never_candidates(models):
    decoded = explorer._decode(models["general"], TEN_WORDS, "greedy", beam_width=1, top_k=5)
    for step in range(len(decoded.output_tokens)):
        tokens = [token for token, _ in explorer._state_at(decoded, step).top_k]
        assert "<pad>" not in tokens and "<sos>" not in tokens


def test_unknown_words_are_shown_as_such(models):
    state = explorer_state(models["bahdanau"], "je suis xylophone .")
    assert state.ok
    assert state.unknown_words == ["xylophone"]
    assert "xylophone" in state.message and "<unk>" in state.message
    assert state.source_tokens == ["je", "suis", "xylophone (unk)", ".", "<eos>"]


def test_only_unknown_words_explain_instead_of_raising(models):
    state = explorer_state(models["bahdanau"], "hello world")
    assert not state.ok
    assert "unknown" in state.message and "hello" in state.message


def test_model_without_attention_still_shows_next_token_bars(models):
    state = explorer_state(models["none"], "il est grand .", step=0)
    assert state.ok and state.attention is None and state.weights_row is None
    assert "no attention" in state.message
    fig = draw_state(state)
    assert len(fig.axes) == 1 and not fig.axes[0].images


# ------------------------------------------------------------------------ drawing

def test_figure_highlights_row_t_and_shows_top_k(models):
    state = explorer_state(models["bahdanau"], TEN_WORDS, step=2)
    fig = draw_state(state)
    heat_ax, bar_ax, _ = fig.axes  # and the colour bar
    assert heat_ax.images[0].get_array().shape == state.attention.shape
    outline = [p for p in heat_ax.patches if not p.get_fill()]
    assert len(outline) == 1 and outline[0].get_xy() == (-0.5, 1.5)  # row 2 spans 1.5..2.5
    assert [label.get_text() for label in bar_ax.get_yticklabels()] == [token for token, _ in state.top_k]
    assert [bar.get_width() for bar in bar_ax.patches] == pytest.approx([p for _, p in state.top_k])
    assert figure_png(fig)[:8] == b"\x89PNG\r\n\x1a\n"


def test_figure_labels_do_not_overflow_the_canvas(models):
    state = explorer_state(models["bahdanau"], TEN_WORDS, step=0)
    fig = draw_state(state)
    fig.canvas.draw()
    canvas = fig.bbox
    for ax in fig.axes:
        box = ax.get_tightbbox()
        assert box.x0 >= canvas.x0 - 1 and box.y0 >= canvas.y0 - 1
        assert box.x1 <= canvas.x1 + 1 and box.y1 <= canvas.y1 + 1


def test_figure_has_a_zero_to_one_colour_bar_for_the_heatmap(models):
    state = explorer_state(models["bahdanau"], TEN_WORDS, step=1)
    fig = draw_state(state)
    heat_ax, colorbar_ax = fig.axes[0], fig.axes[-1]
    assert colorbar_ax is heat_ax.images[0].colorbar.ax  # the heatmap's own colour bar
    assert colorbar_ax.get_ylim() == pytest.approx((0.0, 1.0)) and heat_ax.images[0].get_clim() == (0.0, 1.0)
    assert "weight" in colorbar_ax.get_ylabel()
    fig.canvas.draw()
    assert colorbar_ax.get_window_extent().x0 > heat_ax.get_window_extent().x1  # beside the heatmap, not over it
    assert colorbar_ax.get_window_extent().x1 < fig.axes[1].get_tightbbox().x0  # and left of the bar chart


def test_figure_text_is_larger_than_matplotlib_default(models):
    default = matplotlib.font_manager.FontProperties(size=matplotlib.rcParams["font.size"]).get_size_in_points()
    fig = draw_state(explorer_state(models["bahdanau"], TEN_WORDS, step=1))
    fig.canvas.draw()
    for ax in fig.axes:
        texts = [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.xaxis.label, ax.yaxis.label, ax.title]
        sizes = [text.get_fontsize() for text in texts if text.get_text()]
        assert sizes and min(sizes) == explorer._FONT_SIZE > default


# ------------------------------------------------------------------------ the widget, driven like a user

def test_explorer_text_slider_model_and_mode_callbacks(models):
    ui = AttentionExplorer(models, sentence="il est grand .")
    state = ui.state()
    assert ui.step.min == 1 and ui.step.max == state.num_steps  # counts steps from 1, like the figure's title
    assert ui.step.value == ui.step.max and state.step == state.num_steps - 1  # starts at the last step
    assert len(ui.output.outputs) == 1
    assert base64.b64decode(ui.output.outputs[0]["data"]["image/png"])[:4] == b"\x89PNG"

    ui.text.value = TEN_WORDS  # like typing and pressing Enter
    state = ui.state()
    assert state.sentence == TEN_WORDS and ui.step.max == state.num_steps

    ui.step.value = 2
    state = ui.state()
    assert state.step == 1 and state.tokens_so_far == state.output_tokens[:1]
    assert ui.output.outputs[0]["data"]["text/plain"] == "<attention explorer: step 2>"
    assert f"<b style='color:red'>{state.output_tokens[1]}</b>" in ui.summary.value

    ui.model.value = "none"
    assert ui.state().model_name == "none" and ui.state().attention is None

    ui.model.value = "bahdanau"
    ui.mode.value = "beam"
    assert ui.state().mode == "beam"


def test_explorer_empty_box_hint_and_unknown_words(models):
    ui = AttentionExplorer(models, sentence="")
    assert _HINT.split(",")[0] in ui.summary.value
    assert ui.output.outputs == () and ui.step.disabled
    ui.text.value = "je suis xylophone ."
    assert not ui.step.disabled
    assert "xylophone" in ui.summary.value
    assert ui.state().unknown_words == ["xylophone"]


def test_slider_moves_reuse_the_translation(models, monkeypatch):
    ui = AttentionExplorer(models, sentence="il est grand .")
    calls = []
    monkeypatch.setattr(explorer, "translate", lambda *a, **k: calls.append(a) or pytest.fail("re-translated"))
    for value in range(1, ui.step.max + 1):
        ui.step.value = value
    assert calls == []


def test_explorer_rejects_bad_models():
    with pytest.raises(ValueError, match="models is empty"):
        AttentionExplorer({})
    with pytest.raises(TypeError, match="src_vocab"):
        AttentionExplorer({"x": SimpleNamespace(model=None)})


# ------------------------------------------------------------------------ without ipywidgets

def test_without_ipywidgets_static_figure_is_the_fallback(models, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import ipywidgets -> ImportError
    with pytest.raises(ImportError, match="show_static"):
        AttentionExplorer(models)
    fig = explore(models, "je suis xylophone .")
    assert fig is not None and len(fig.axes) == 3  # heatmap, bars, colour bar
    out = capsys.readouterr().out
    assert "ipywidgets is not installed" in out and "xylophone" in out


def test_show_static_picks_model_and_step(models, capsys):
    fig = show_static(models, TEN_WORDS, model_name="general", step=0)
    heat_ax = fig.axes[0]
    assert heat_ax.get_title() == f"attention at step 1 of {explorer_state(models['general'], TEN_WORDS).num_steps}"
    assert show_static(models, "") is None
    assert _HINT in capsys.readouterr().out
    with pytest.raises(KeyError, match="choose one of bahdanau, general, none"):
        show_static(models, TEN_WORDS, model_name="dot")


def test_state_is_plain_data():
    state = ExplorerState()
    assert not state.ok and state.num_steps == 0 and state.top_k == []
