"""Tests for course_utils.viz: heatmaps render headless with the right labels, orientation and scale."""
import warnings
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402

from course_utils import viz  # noqa: E402
from course_utils.viz import (  # noqa: E402
    AttentionPanel,
    plot_attention,
    plot_attention_2017,
    plot_attention_grid,
    plot_beam_hypotheses,
    plot_history,
    plot_model_comparison,
    plot_sentence_grid,
    plot_top_k,
    save_figure,
    visible_tick_labels,
)

SOURCE = "je suis tres content de vous voir aujourd hui .".split() + ["<eos>"]  # S = 11
OUTPUT = "i am very happy to see you today . <eos>".split()  # T = 10


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def random_attention(T=None, S=None, seed=0):
    T, S = T or len(OUTPUT), S or len(SOURCE)
    generator = torch.Generator().manual_seed(seed)
    return torch.softmax(3 * torch.randn(T, S, generator=generator), dim=-1)  # (T, S)


def translation(source=SOURCE, output=OUTPUT, attention="random", seed=0):
    weights = random_attention(len(output), len(source), seed) if attention == "random" else attention
    return SimpleNamespace(source_tokens=list(source), output_tokens=list(output), attention=weights,
                           score=-1.5, text=" ".join(t for t in output if t != "<eos>"))


# ------------------------------------------------------------------------ plot_attention: labels and ticks

def test_every_token_labels_its_own_cell_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any matplotlib warning fails the test
        fig, ax = plot_attention(random_attention(), SOURCE, OUTPUT, title="t")
        assert visible_tick_labels(ax.xaxis) == dict(enumerate(SOURCE))
        assert visible_tick_labels(ax.yaxis) == dict(enumerate(OUTPUT))
    assert ax.get_title() == "t"


def test_axis_sizes_match_the_matrix_one_cell_per_token():
    fig, ax = plot_attention(random_attention(), SOURCE, OUTPUT)
    assert ax.get_xlim() == pytest.approx((-0.5, len(SOURCE) - 0.5))
    assert ax.get_ylim() == pytest.approx((len(OUTPUT) - 0.5, -0.5))  # row 0 at the top
    assert ax.images[0].get_array().shape == (len(OUTPUT), len(SOURCE))
    width, height = fig.get_size_inches()
    assert width >= viz.CELL_INCHES * len(SOURCE) and height >= viz.CELL_INCHES * len(OUTPUT)


def test_figure_grows_with_sentence_length_so_long_sentences_stay_readable():
    short_fig, _ = plot_attention(random_attention(3, 4), SOURCE[:4], OUTPUT[:3])
    long_S = 20
    long_fig, _ = plot_attention(random_attention(12, long_S), [f"w{i}" for i in range(long_S)],
                                 [f"o{i}" for i in range(12)])
    assert long_fig.get_size_inches()[0] > short_fig.get_size_inches()[0]
    assert long_fig.get_size_inches()[1] > short_fig.get_size_inches()[1]


def test_x_labels_are_rotated_for_readability():
    _, ax = plot_attention(random_attention(), SOURCE, OUTPUT)
    assert all(label.get_rotation() == 45 for label in ax.get_xticklabels())


def test_colour_bar_has_fixed_zero_to_one_range_even_for_peaked_data():
    weights = torch.full((2, 3), 0.1)
    weights[:, 0] = 0.8  # data range 0.1..0.8
    fig, ax = plot_attention(weights, SOURCE[:3], OUTPUT[:2])
    assert ax.images[0].get_clim() == (0.0, 1.0)
    colorbar_axes = [a for a in fig.axes if a is not ax]
    assert len(colorbar_axes) == 1
    assert colorbar_axes[0].get_ylim() == pytest.approx((0.0, 1.0))
    fig2, ax2 = plot_attention(weights, SOURCE[:3], OUTPUT[:2], colorbar=False)
    assert fig2.axes == [ax2]


def test_accepts_numpy_and_batch_of_one_and_draws_into_given_axes():
    fig, axes = plt.subplots(1, 2)
    weights = random_attention().numpy()
    _, ax0 = plot_attention(weights, SOURCE, OUTPUT, ax=axes[0], colorbar=False)
    _, ax1 = plot_attention(torch.as_tensor(weights)[None], SOURCE, OUTPUT, ax=axes[1], colorbar=False)
    assert ax0 is axes[0] and ax1 is axes[1]
    assert np.allclose(ax1.images[0].get_array(), weights)


def test_highlight_row_outlines_that_row_and_marks_its_label():
    _, ax = plot_attention(random_attention(), SOURCE, OUTPUT, highlight_row=3)
    (rectangle,) = ax.patches
    assert rectangle.get_xy() == (-0.5, 2.5) and rectangle.get_height() == 1 and rectangle.get_width() == len(SOURCE)
    assert ax.get_yticklabels()[3].get_fontweight() == "bold"
    with pytest.raises(ValueError, match="outside the 10 output rows"):
        plot_attention(random_attention(), SOURCE, OUTPUT, highlight_row=10)


def test_annotate_writes_each_weight():
    weights = torch.tensor([[0.25, 0.75]])
    _, ax = plot_attention(weights, ["a", "<eos>"], ["<eos>"], annotate=True)
    assert [text.get_text() for text in ax.texts] == ["0.25", "0.75"]


@pytest.mark.parametrize(
    "weights, source, output, words",
    [
        (random_attention(), SOURCE[:-1], OUTPUT, ["(T=10, S=11)", "10 source tokens", "including '<eos>'"]),
        (random_attention(), SOURCE, OUTPUT[:-1], ["9 output tokens", "(T=10, S=11)"]),
        (torch.rand(2, 10, 11), SOURCE, OUTPUT, ["(2, 10, 11)", "attention[0"]),
        (None, SOURCE, OUTPUT, ["no attention"]),
    ],
)
def test_bad_weights_name_both_shapes_and_the_fix(weights, source, output, words):
    with pytest.raises(ValueError) as info:
        plot_attention(weights, source, output)
    for word in words:
        assert word in str(info.value)


# ------------------------------------------------------------------------ image-level orientation

def bright_cell(fig, ax, T, S):
    """Render the figure and return the (row, column) cell of the heatmap where the colour of weight 1 appears."""
    fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(float) / 255  # (H, W, 3) row 0 = top
    height = pixels.shape[0]
    box = ax.get_window_extent()  # display coordinates, origin bottom-left
    top, bottom = int(round(height - box.y1)), int(round(height - box.y0))
    left, right = int(round(box.x0)), int(round(box.x1))
    inside = pixels[top:bottom, left:right]
    target = np.array(matplotlib.colormaps[viz.ATTENTION_CMAP](1.0)[:3])
    rows, cols = np.nonzero(np.abs(inside - target).sum(axis=-1) < 0.05)
    assert rows.size > 0, "the weight-1 colour is not drawn inside the heatmap"
    row_bands = (rows * T) // inside.shape[0]
    col_bands = (cols * S) // inside.shape[1]
    return set(zip(row_bands.tolist(), col_bands.tolist()))


def test_image_row_is_output_step_and_column_is_source_token():
    T, S = 4, 5
    weights = torch.zeros(T, S)
    weights[0, 2] = 1.0  # first output token looks only at the third source token
    fig, ax = plot_attention(weights, SOURCE[:S], OUTPUT[:T], colorbar=False)
    assert bright_cell(fig, ax, T, S) == {(0, 2)}


def test_image_orientation_bottom_left_cell():
    T, S = 3, 6
    weights = torch.zeros(T, S)
    weights[T - 1, 0] = 1.0
    fig, ax = plot_attention(weights, SOURCE[:S], OUTPUT[:T], colorbar=False)
    assert bright_cell(fig, ax, T, S) == {(T - 1, 0)}


# ------------------------------------------------------------------------ the 2017 tutorial exhibit

def test_tutorial_2017_version_warns_and_shifts_labels_when_padding_is_dropped():
    weights = random_attention()
    with pytest.warns(UserWarning, match="fixed number of ticks"):
        fig = plot_attention_2017(weights, SOURCE, OUTPUT, pad_labels=True)
    assert visible_tick_labels(fig.axes[0].xaxis)[0] == SOURCE[0]  # right only thanks to the '' label at tick -1
    with pytest.warns(UserWarning):
        shifted = plot_attention_2017(weights, SOURCE, OUTPUT, pad_labels=False)
    labels = visible_tick_labels(shifted.axes[0].xaxis)
    assert labels[0] == SOURCE[1]  # every label one cell to the left: the bug our version avoids
    assert labels[len(SOURCE) - 1] == ""
    assert visible_tick_labels(shifted.axes[0].yaxis)[0] == OUTPUT[1]  # and every output label one row up


# ------------------------------------------------------------------------ grids

def test_model_comparison_one_panel_per_model_shared_colour_bar():
    translations = {name: translation(seed=i) for i, name in enumerate(["bahdanau", "dot", "general", "concat"])}
    fig = plot_model_comparison(translations, ncols=2, title="same sentence")
    heatmaps = [ax for ax in fig.axes if ax.images]
    assert len(heatmaps) == 4
    assert [ax.get_title().split(":")[0] for ax in heatmaps] == list(translations)
    assert all("diag. dev." in ax.get_title() for ax in heatmaps)
    assert len(fig.axes) == 5  # four heatmaps + one colour bar
    assert fig.get_suptitle() == "same sentence"
    for ax in heatmaps:
        assert visible_tick_labels(ax.xaxis) == dict(enumerate(SOURCE))


def test_model_comparison_titles_do_not_overlap_however_long_the_outputs():
    long_output = "i am very very very happy to see you again here today my dear friend . <eos>".split()
    translations = {name: translation(output=long_output, seed=i)
                    for i, name in enumerate(["bahdanau", "scaled_dot", "scaled_general"])}
    fig = plot_model_comparison(translations, ncols=3, title="same sentence")  # three panels in one row
    fig.canvas.draw()
    titles = [ax.title for ax in fig.axes if ax.get_title()]
    assert len(titles) == 3
    boxes = [title.get_window_extent() for title in titles]
    for i, box in enumerate(boxes):
        assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1, "a title runs off the figure"
        for other in boxes[i + 1:]:
            assert not box.overlaps(other), "two panel titles overlap"
    for title, name in zip(titles, translations):
        lines = title.get_text().split("\n")
        assert lines[0].startswith(f"{name}:") and lines[-1].startswith("(diag. dev.")  # statistic on its own line
        assert " ".join(lines[:-1]).split() == f"{name}: {translations[name].text}".split()  # wrapped, not cut


def test_model_comparison_labels_a_model_without_attention_instead_of_failing():
    translations = {"bahdanau": translation(), "none": translation(attention=None)}
    fig = plot_model_comparison(translations)
    no_attention = [ax for ax in fig.axes if ax.get_title().startswith("none")][0]
    assert not no_attention.images
    assert "no attention" in no_attention.texts[0].get_text()


def test_grid_hides_unused_axes_and_handles_different_output_lengths():
    items = [translation(output=OUTPUT), translation(output=OUTPUT[:4], seed=1), translation(output=OUTPUT[:7], seed=2)]
    fig = plot_sentence_grid(items, ncols=2)
    heatmaps = [ax for ax in fig.axes if ax.images]
    assert [ax.images[0].get_array().shape[0] for ax in heatmaps] == [10, 4, 7]
    hidden = [ax for ax in fig.axes if not ax.get_visible()]
    assert len(hidden) == 1
    assert heatmaps[0].get_title().startswith("je suis tres")


def test_beam_hypotheses_from_token_ids_use_the_vocabulary():
    vocab = SimpleNamespace(index2word=["<pad>", "<sos>", "<eos>", "<unk>", "i", "am", "happy"])
    hypotheses = [SimpleNamespace(tokens=[4, 5, 6, 2], score=-0.1, attention=random_attention(4, 3)),
                  SimpleNamespace(tokens=[4, 6, 2], score=-0.9, attention=random_attention(3, 3, seed=1))]
    fig = plot_beam_hypotheses(hypotheses, ["je", "suis", "<eos>"], tgt_vocab=vocab)
    heatmaps = [ax for ax in fig.axes if ax.images]
    assert heatmaps[0].get_title().startswith("#1  score -0.100")
    assert visible_tick_labels(heatmaps[0].yaxis) == dict(enumerate(["i", "am", "happy", "<eos>"]))
    assert visible_tick_labels(heatmaps[1].yaxis) == dict(enumerate(["i", "happy", "<eos>"]))
    with pytest.raises(ValueError, match="tgt_vocab"):
        plot_beam_hypotheses(hypotheses, ["je", "suis", "<eos>"])


def test_grid_rejects_empty_input():
    with pytest.raises(ValueError, match="at least one"):
        plot_attention_grid([])
    with pytest.raises(ValueError, match="at least one model"):
        plot_model_comparison({})


def test_grid_skips_statistic_for_rows_that_do_not_sum_to_one():
    weights = torch.full((2, 3), 0.1)  # the 2017 location attention sliced to S: rows sum below 1
    fig = plot_attention_grid([AttentionPanel("location", weights, SOURCE[:3], OUTPUT[:2])])
    assert fig.axes[0].get_title() == "location"


# ------------------------------------------------------------------------ bars, curves, saving

def test_top_k_bars_most_probable_on_top_on_a_zero_to_one_axis():
    fig, ax = plot_top_k(["am", "is", "are"], [0.7, 0.2, 0.05], highlight="am")
    assert ax.get_xlim() == (0.0, 1.0)
    assert visible_tick_labels(ax.yaxis) == {0: "am", 1: "is", 2: "are"}
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # inverted: index 0 at the top
    widths = [bar.get_width() for bar in ax.patches]
    assert widths == pytest.approx([0.7, 0.2, 0.05])
    assert to_rgb(ax.patches[0].get_facecolor()) == to_rgb(viz.HIGHLIGHT_COLOR)
    with pytest.raises(ValueError, match="3 tokens but 2 probabilities"):
        plot_top_k(["a", "b", "c"], [0.5, 0.5])


def test_history_overlays_runs_with_one_colour_each():
    histories = {
        "bahdanau": SimpleNamespace(train_loss=[3.0, 2.0, 1.5], dev_loss=[3.2, 2.4, 2.0], dev_bleu=[5.0, 15.0, 25.0]),
        "dot": SimpleNamespace(train_loss=[3.1, 2.2, 1.7], dev_loss=[3.3, 2.6, 2.2], dev_bleu=[4.0, 12.0, 20.0]),
    }
    fig = plot_history(histories)
    loss_ax, bleu_ax = fig.axes
    assert len(loss_ax.lines) == 4 and len(bleu_ax.lines) == 2
    assert list(loss_ax.lines[0].get_xdata()) == [1, 2, 3]
    assert list(bleu_ax.lines[1].get_ydata()) == [4.0, 12.0, 20.0]
    assert loss_ax.lines[0].get_color() == loss_ax.lines[1].get_color() == bleu_ax.lines[0].get_color()
    assert loss_ax.lines[1].get_linestyle() == "--"
    assert [t.get_text() for t in bleu_ax.get_legend().get_texts()] == ["bahdanau", "dot"]


def test_history_accepts_a_single_history_and_rejects_other_objects():
    fig = plot_history(SimpleNamespace(train_loss=[2.0, 1.0], dev_loss=[], dev_bleu=[]))
    assert len(fig.axes[0].lines) == 1
    with pytest.raises(TypeError, match="dev_bleu"):
        plot_history({"x": SimpleNamespace(train_loss=[1.0], dev_loss=[1.0])})


def test_save_figure_writes_png_into_new_folder(tmp_path):
    fig, _ = plot_attention(random_attention(), SOURCE, OUTPUT)
    path = save_figure(fig, tmp_path / "figures" / "attention.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = plt.imread(path)
    assert image.shape[1] > 300  # readable: several hundred pixels wide at dpi 100
    with pytest.raises(ValueError, match="no file extension"):
        save_figure(fig, tmp_path / "attention")


def test_library_never_calls_show(monkeypatch):
    monkeypatch.setattr(plt, "show", lambda *a, **k: pytest.fail("library code called plt.show()"))
    plot_attention(random_attention(), SOURCE, OUTPUT)
    plot_model_comparison({"a": translation()})
    plot_history({"a": SimpleNamespace(train_loss=[1.0], dev_loss=[1.0], dev_bleu=[1.0])})
