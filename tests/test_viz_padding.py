"""Tests for course_utils.viz_padding: padding drawn so that it shows, headless."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_utils.viz_padding import _PAD_LABEL, plot_batch_masks, plot_masked_scores  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_batch_masks_share_one_x_scale_so_the_shorter_batch_looks_shorter():
    plain = torch.arange(9)[None, :] < torch.tensor([9, 3, 5, 2])[:, None]  # (4, 9): much padding
    bucketed = torch.ones(4, 4, dtype=torch.bool)  # (4, 4): none
    fig = plot_batch_masks({"plain": plain, "bucketed": bucketed})
    plain_ax, bucketed_ax = fig.axes
    assert plain_ax.get_xlim() == bucketed_ax.get_xlim() == pytest.approx((-0.5, 8.5))  # the longest batch's S
    assert bucketed_ax.images[0].get_array().shape == (4, 4)  # drawn at its own width on that scale
    fig.canvas.draw()
    image_width = [ax.images[0].get_window_extent().width for ax in (plain_ax, bucketed_ax)]
    assert image_width[1] == pytest.approx(image_width[0] * 4 / 9, rel=0.05)
    assert "bucketed" in bucketed_ax.get_title() and "0% padding" in bucketed_ax.get_title()
    with pytest.raises(ValueError, match="at least one batch"):
        plot_batch_masks({})


def test_padding_is_visible_even_where_the_masked_score_is_zero():
    mask = torch.tensor([True, True, True, True, False, False])  # (S,) 4 words, 2 pads
    scores = {"dot": torch.tensor([1.5, -0.5, 2.0, 0.3, 0.0, 0.0]),  # a zero key scores exactly 0
              "bahdanau": torch.tensor([0.2, -0.1, 0.3, 0.1, -0.2, -0.2])}
    weights = {name: torch.softmax(value.masked_fill(~mask, float("-inf")), -1) for name, value in scores.items()}
    fig = plot_masked_scores(scores, weights, mask)
    fig.canvas.draw()
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == list(scores)
    for ax in panels:
        bands = [patch for patch in ax.patches if patch.get_label() == _PAD_LABEL or patch.get_hatch()]
        assert len(bands) == 2  # one per pad
        for band, j in zip(bands, (4, 5)):
            box = band.get_window_extent()
            assert box.height == pytest.approx(ax.get_window_extent().height)  # the panel's full height
            centre = ax.transData.inverted().transform(((box.x0 + box.x1) / 2, box.y0))[0]
            assert centre == pytest.approx(j)
        assert [label.get_text() for label in ax.get_xticklabels()][4:] == ["pad", "pad"]
    legend = [text.get_text() for text in fig.legends[0].get_texts()]
    assert legend.count(_PAD_LABEL) == 1
    with pytest.raises(ValueError, match="same scoring functions"):
        plot_masked_scores(scores, {"dot": weights["dot"]}, mask)
