"""Pictures of attention: heatmaps, side-by-side grids, next-token bars and training curves.

Heatmaps: one row per output token (top = first step), one column per source token ("<eos>" last), a fixed 0..1
colour scale. Drawing functions return their figure and never call `plt.show()`. Introduced in notebook 03.
"""
from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import matplotlib.pyplot as plt
import matplotlib.ticker as ticker
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from course_utils.metrics import diagonal_deviation

__all__ = ["ATTENTION_CMAP", "CELL_INCHES", "HIGHLIGHT_COLOR", "AttentionPlot", "AttentionPanel", "text_inches",
           "plot_attention", "plot_attention_2017", "visible_tick_labels", "plot_attention_grid",
           "plot_model_comparison", "plot_sentence_grid", "plot_beam_hypotheses", "plot_top_k", "plot_history",
           "save_figure"]

ATTENTION_CMAP = "viridis"  # perceptually uniform; 0 = dark blue, 1 = bright yellow
CELL_INCHES = 0.42  # size of one heatmap cell: 10+ tokens stay readable
HIGHLIGHT_COLOR = "red"
_PANEL_TITLE_SIZE = 10  # points: a grid panel's title, wrapped to the width of its panel


class AttentionPlot(NamedTuple):
    """What `plot_attention` and `plot_top_k` return: `fig, ax`. Introduced in notebook 03."""

    fig: Figure
    ax: Axes


class AttentionPanel(NamedTuple):
    """One heatmap of a grid: title, (T, S) weights (None: no attention), labels. Introduced in notebook 06."""

    title: str
    weights: object
    source_tokens: list[str]
    output_tokens: list[str]


def _to_numpy_matrix(weights, source_tokens: Sequence[str], output_tokens: Sequence[str]) -> np.ndarray:
    """Check a (T, S) attention matrix against its labels and return it as a float numpy array."""
    if weights is None:
        raise ValueError("weights is None: this model has no attention (attention='none'); pick a model with "
                         "attention, or draw it with plot_model_comparison, which labels such panels")
    matrix = np.asarray(weights.detach().float().cpu().numpy() if torch.is_tensor(weights) else weights, dtype=float)
    if matrix.ndim == 3 and matrix.shape[0] == 1:
        matrix = matrix[0]  # (T, S) a batch of one is unambiguous
    if matrix.ndim != 2:
        raise ValueError(f"weights must be one sentence's (T, S) matrix, got shape {matrix.shape}; "
                         f"index the batch first, e.g. attention[0, :T, :S]")
    T, S = matrix.shape
    if (len(output_tokens), len(source_tokens)) != (T, S):
        raise ValueError(f"weights has shape (T={T}, S={S}) but got {len(output_tokens)} output tokens and "
                         f"{len(source_tokens)} source tokens; pass one label per row and per column, each list "
                         f"including '<eos>' (Translation.source_tokens / .output_tokens), or slice the weights")
    return matrix


def text_inches(labels, fontsize: float = 10.0) -> float:
    """Rough width (inches) of the longest label: about 0.6 em per character."""
    return max((len(str(label)) for label in labels), default=1) * 0.6 * fontsize / 72


def _heatmap_size(num_source: int, num_output: int, colorbar: bool = True) -> tuple[float, float]:
    """Figure size (inches) that gives every cell CELL_INCHES and leaves room for rotated labels."""
    return (max(3.5, 1.6 + CELL_INCHES * num_source + (0.9 if colorbar else 0.0)),
            max(2.5, 1.4 + CELL_INCHES * num_output))


def plot_attention(weights, source_tokens: Sequence[str], output_tokens: Sequence[str], ax: Axes | None = None,
                   title: str | None = None, colorbar: bool = True, highlight_row: int | None = None,
                   annotate: bool = False, cmap: str = ATTENTION_CMAP) -> AttentionPlot:
    """Draw one attention matrix as a labelled heatmap on a fixed 0..1 colour scale. Introduced in notebook 03.

    weights: (T, S) or (1, T, S); row t = attention while producing output token t. Labels include "<eos>".
    """
    source_tokens, output_tokens = [str(t) for t in source_tokens], [str(t) for t in output_tokens]
    matrix = _to_numpy_matrix(weights, source_tokens, output_tokens)  # (T, S)
    T, S = matrix.shape
    fig, ax = plt.subplots(figsize=_heatmap_size(S, T, colorbar), layout="constrained") if ax is None \
        else (ax.figure, ax)
    image = ax.imshow(matrix, cmap=cmap, vmin=0.0, vmax=1.0, aspect="equal", interpolation="nearest",
                      origin="upper")  # row 0 (first output token) at the top
    ax.set_xticks(range(S), labels=source_tokens, rotation=45, ha="right", rotation_mode="anchor")
    ax.set_yticks(range(T), labels=output_tokens)
    ax.set(xlabel="source", ylabel="output")
    ax.tick_params(length=0)
    grid = dict(color="white", linewidth=0.5, alpha=0.4)  # thin lines between cells (cheaper than minor ticks)
    ax.vlines(np.arange(1, S) - 0.5, -0.5, T - 0.5, **grid)
    ax.hlines(np.arange(1, T) - 0.5, -0.5, S - 0.5, **grid)
    if annotate:
        for (t, s), weight in np.ndenumerate(matrix):
            ax.text(s, t, f"{weight:.2f}", ha="center", va="center", fontsize=7,
                    color="black" if weight > 0.6 else "white")
    if highlight_row is not None:
        if not 0 <= highlight_row < T:
            raise ValueError(f"highlight_row={highlight_row} is outside the {T} output rows; use 0..{T - 1}")
        ax.add_patch(Rectangle((-0.5, highlight_row - 0.5), S, 1, fill=False, edgecolor=HIGHLIGHT_COLOR,
                               linewidth=2.5, clip_on=False))
        ax.get_yticklabels()[highlight_row].set(fontweight="bold", color=HIGHLIGHT_COLOR)
    ax.set_title(title or "")
    if colorbar:
        fig.colorbar(image, ax=ax, label="attention weight", shrink=0.9)
    return AttentionPlot(fig, ax)


def plot_attention_2017(weights, source_tokens: Sequence[str], output_tokens: Sequence[str],
                        pad_labels: bool = True) -> Figure:
    """EXHIBIT: the 2017 tutorial's `showAttention`, whose tick labels are fragile. Introduced in appendix A3.

    Its `set_xticklabels([''] + tokens)` warns; `pad_labels=False` shifts every label one cell. Use `plot_attention`.
    """
    matrix = _to_numpy_matrix(weights, source_tokens, output_tokens)  # (T, S)
    fig, ax = plt.subplots()
    fig.colorbar(ax.matshow(matrix, cmap="bone"))
    pad = [""] if pad_labels else []
    ax.set_xticklabels(pad + list(source_tokens), rotation=90)  # warns: no fixed ticks
    ax.set_yticklabels(pad + list(output_tokens))
    ax.xaxis.set_major_locator(ticker.MultipleLocator(1))
    ax.yaxis.set_major_locator(ticker.MultipleLocator(1))
    return fig


def visible_tick_labels(axis) -> dict[int, str]:
    """{cell index: label} of the major ticks inside `ax.xaxis`/`ax.yaxis`'s view. Introduced in appendix A3."""
    axis.figure.canvas.draw()
    low, high = sorted(axis.get_view_interval())
    ticks = zip(axis.get_majorticklocs(), axis.get_ticklabels(), strict=False)
    return {int(round(loc)): label.get_text() for loc, label in ticks if low <= loc <= high}


def _panel_from(title: str, item, tgt_vocab=None, source_tokens: Sequence[str] | None = None) -> AttentionPanel:
    """Read a Translation-like (source_tokens, output_tokens, attention) or a beam Hypothesis (tokens ids)."""
    if hasattr(item, "output_tokens"):
        return AttentionPanel(title, item.attention, list(source_tokens or item.source_tokens),
                              list(item.output_tokens))
    if hasattr(item, "tokens"):
        if tgt_vocab is None or source_tokens is None:
            raise ValueError("beam hypotheses hold token ids: pass tgt_vocab= and source_tokens= to name them")
        return AttentionPanel(title, item.attention, list(source_tokens),
                              [tgt_vocab.index2word[i] for i in item.tokens])
    raise TypeError(f"expected a Translation (source_tokens, output_tokens, attention) or a Hypothesis "
                    f"(tokens, attention), got {type(item).__name__}")


def _panel_title(title: str, statistic: str, width_inches: float) -> str:
    """`title` wrapped into lines that fit `width_inches` at the title size, then `statistic` on a line of its own."""
    per_line = max(8, int(width_inches / text_inches(["x"], _PANEL_TITLE_SIZE)))
    return "\n".join(textwrap.wrap(title, per_line, break_on_hyphens=False) + ([statistic] if statistic else []))


def plot_attention_grid(panels: Sequence[AttentionPanel], ncols: int = 2, title: str | None = None,
                        show_stats: bool = True) -> Figure:
    """Several heatmaps sharing one colour bar; show_stats adds diagonal deviations. Introduced in notebook 06."""
    panels = list(panels)
    if not panels:
        raise ValueError("nothing to draw: pass at least one panel (translation)")
    if ncols < 1:
        raise ValueError(f"ncols must be >= 1, got {ncols}")
    ncols = min(ncols, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    cell_w, cell_h = _heatmap_size(max(len(p.source_tokens) for p in panels),
                                   max(len(p.output_tokens) for p in panels), colorbar=False)
    titles = []
    for panel in panels:
        statistic = ""
        if show_stats and panel.weights is not None:
            try:
                statistic = f"(diag. dev. {diagonal_deviation(panel.weights):.2f})"
            except ValueError:  # rows not summing to 1 (the 2017 location attention): no statistic
                pass
        titles.append(_panel_title(panel.title, statistic, cell_w - 1.0))  # the y labels take about an inch
    title_inches = max(t.count("\n") for t in titles) * 1.2 * _PANEL_TITLE_SIZE / 72  # the extra title lines
    fig, axes = plt.subplots(nrows, ncols, figsize=(cell_w * ncols + 1.0, (cell_h + title_inches) * nrows + 0.4),
                             squeeze=False, layout="constrained")
    image = None
    for ax, panel, subtitle in zip(axes.flat, panels, titles, strict=False):  # axes left over are hidden below
        if panel.weights is None:
            ax.text(0.5, 0.5, "no attention\n(this model has none)", ha="center", va="center", transform=ax.transAxes)
            ax.set(xticks=[], yticks=[])
        else:
            plot_attention(panel.weights, panel.source_tokens, panel.output_tokens, ax=ax, colorbar=False)
            image = ax.images[0]
        ax.set_title(subtitle, fontsize=_PANEL_TITLE_SIZE)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    if image is not None:
        fig.colorbar(image, ax=axes.ravel().tolist(), label="attention weight", shrink=0.8)
    if title:
        fig.suptitle(title)
    return fig


def plot_model_comparison(translations: Mapping[str, object], ncols: int = 2, title: str | None = None,
                          show_stats: bool = True) -> Figure:
    """One sentence under several models: {model name: Translation} -> one heatmap each. Introduced in notebook 06."""
    if not translations:
        raise ValueError("translations is empty; pass {model name: translate(model, ...)} for at least one model")
    panels = [_panel_from(f"{name}: {getattr(item, 'text', '')}".rstrip(": "), item)
              for name, item in translations.items()]
    return plot_attention_grid(panels, ncols=ncols, title=title, show_stats=show_stats)


def plot_sentence_grid(translations: Sequence[object], ncols: int = 2, title: str | None = None,
                       show_stats: bool = True) -> Figure:
    """Several sentences under one model: one heatmap per Translation, titled by source. Introduced in notebook 06."""
    panels = [_panel_from(" ".join(t for t in item.source_tokens if t != "<eos>"), item) for item in translations]
    return plot_attention_grid(panels, ncols=ncols, title=title, show_stats=show_stats)


def plot_beam_hypotheses(hypotheses: Sequence[object], source_tokens: Sequence[str], tgt_vocab=None,
                         ncols: int = 2, title: str | None = None, show_stats: bool = False) -> Figure:
    """One heatmap per beam hypothesis (ids: pass `tgt_vocab`), titled by rank and score. Introduced in notebook 07."""
    panels = [_panel_from(f"#{rank}  score {float(item.score):.3f}" if hasattr(item, "score") else f"#{rank}", item,
                          tgt_vocab=tgt_vocab, source_tokens=source_tokens) for rank, item in enumerate(hypotheses, 1)]
    return plot_attention_grid(panels, ncols=ncols, title=title, show_stats=show_stats)


def plot_top_k(tokens: Sequence[str], probabilities: Sequence[float], ax: Axes | None = None,
               title: str | None = None, highlight: str | None = None) -> AttentionPlot:
    """Bars of k candidate next tokens, most probable on top; `highlight` colours one. Introduced in notebook 06."""
    if len(tokens) != len(probabilities):
        raise ValueError(f"got {len(tokens)} tokens but {len(probabilities)} probabilities; pass one each")
    fig, ax = plt.subplots(figsize=(3.5, 0.4 * max(len(tokens), 1) + 1.0), layout="constrained") if ax is None \
        else (ax.figure, ax)
    positions = np.arange(len(tokens))
    ax.barh(positions, probabilities, color=[HIGHLIGHT_COLOR if token == highlight else "tab:blue" for token in tokens])
    ax.set_yticks(positions, labels=list(tokens))
    ax.invert_yaxis()  # most probable on top
    ax.set(xlim=(0.0, 1.0), xlabel="probability")
    for position, probability in zip(positions, probabilities, strict=True):
        ax.text(min(float(probability) + 0.02, 0.8), position, f"{float(probability):.2f}", va="center", fontsize=8)
    ax.set_title(title or "")
    return AttentionPlot(fig, ax)


def plot_history(histories, title: str | None = None) -> Figure:
    """Training curves of {run: History} or one History: loss and dev BLEU per epoch. Introduced in notebook 05."""
    histories = {"run": histories} if hasattr(histories, "train_loss") else histories
    if not histories:
        raise ValueError("histories is empty; pass {run name: trained.history}")
    for name, history in histories.items():
        if missing := [f for f in ("train_loss", "dev_loss", "dev_bleu") if not hasattr(history, f)]:
            raise TypeError(f"histories[{name!r}] has no {', '.join(missing)}; pass train.History objects "
                            f"(trained.history), not {type(history).__name__}")
    fig, (loss_ax, bleu_ax) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for index, (name, history) in enumerate(histories.items()):
        color = f"C{index % 10}"
        for ax, series, style, label in ((loss_ax, history.train_loss, "-", f"{name} train"),
                                         (loss_ax, history.dev_loss, "--", f"{name} dev"),
                                         (bleu_ax, history.dev_bleu, "-", name)):
            if series:
                ax.plot(range(1, len(series) + 1), series, color=color, linestyle=style, marker="o", markersize=3,
                        label=label)
    loss_ax.set(title="loss (NLL per token)", xlabel="epoch", ylabel="loss")
    bleu_ax.set(title="dev BLEU", xlabel="epoch", ylabel="BLEU")
    for ax in (loss_ax, bleu_ax):
        ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return fig


def save_figure(fig: Figure, path, dpi: int = 100) -> Path:
    """Save a figure in the format its suffix names, creating parent folders; returns the path written."""
    path = Path(path)
    if not path.suffix:
        raise ValueError(f"{path} has no file extension; use e.g. {path.name}.png")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    return path
