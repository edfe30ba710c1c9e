"""Pictures of padding: where a batch holds `<pad>` (mask False), and what attention scores do at those positions."""
from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from course_utils.viz import ATTENTION_CMAP, HIGHLIGHT_COLOR

__all__ = ["plot_batch_masks", "plot_masked_scores"]

_PAD_LABEL = "padding (masked)"
_PAD_BAND = dict(facecolor="lightgray", edgecolor="gray", hatch="//", alpha=0.6, linewidth=0)  # behind the bars


def _as_numpy(values) -> np.ndarray:
    """A tensor (any device, with or without grad) or array-like as a float numpy array."""
    return np.asarray(values.detach().float().cpu().numpy() if torch.is_tensor(values) else values, dtype=float)


def plot_batch_masks(masks: Mapping[str, object], title: str | None = None) -> Figure:
    """{title: (B, S) mask} -> masks side by side on the longest batch's x scale. Introduced in notebook 01."""
    if not masks:
        raise ValueError("masks is empty; pass {title: batch.src_mask} for at least one batch")
    arrays = {name: _as_numpy(mask) for name, mask in masks.items()}
    if bad := [name for name, array in arrays.items() if array.ndim != 2]:
        raise ValueError(f"masks[{bad[0]!r}] must be a (B, S) mask, got shape {arrays[bad[0]].shape}")
    fig, axes = plt.subplots(1, len(arrays), figsize=(4.2 * len(arrays), 3.2), sharex=True, sharey=True,
                             squeeze=False, layout="constrained")
    for ax, (name, array) in zip(axes[0], arrays.items(), strict=True):
        ax.imshow(array, cmap=ATTENTION_CMAP, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
        batch, positions = array.shape
        ax.set(title=f"{name}\n{batch} x {positions}, {1.0 - array.mean():.0%} padding", xlabel="position s")
    axes[0, 0].set(xlim=(-0.5, max(a.shape[1] for a in arrays.values()) - 0.5), ylabel="row b of the batch")
    if title:
        fig.suptitle(title)
    return fig


def plot_masked_scores(scores: Mapping[str, object], weights: Mapping[str, object], mask,
                       title: str | None = None) -> Figure:
    """One sentence's (S,) scores (bars) and weights (dots) per scorer, pads banded. Introduced in notebook 04."""
    if not scores or set(scores) != set(weights):
        raise ValueError(f"scores and weights must name the same scoring functions: {list(scores)}, {list(weights)}")
    real = _as_numpy(mask).astype(bool)  # (S,)
    S = real.size
    fig, axes = plt.subplots(1, len(scores), figsize=(3.3 * len(scores), 3.2), squeeze=False, layout="constrained")
    for ax, name in zip(axes[0], scores, strict=True):
        score, weight = _as_numpy(scores[name]), _as_numpy(weights[name])  # (S,), (S,)
        if score.shape != (S,) or weight.shape != (S,):
            raise ValueError(f"{name}: scores {score.shape} and weights {weight.shape} must both be ({S},), "
                             f"one value per position of the mask; index the batch first, e.g. scores[row]")
        for index, j in enumerate(np.flatnonzero(~real)):  # one band per pad, one legend entry in all
            ax.axvspan(j - 0.5, j + 0.5, **_PAD_BAND, zorder=0, label=None if index else _PAD_LABEL)
        ax.bar(range(S), score, color=["tab:blue" if r else "gray" for r in real], zorder=2, label="score $e_j$")
        ax.axhline(0.0, color="black", linewidth=0.5)
        ax.set_xticks(range(S), labels=[f"k{j + 1}" if r else "pad" for j, r in enumerate(real)])
        ax.set(xlim=(-0.5, S - 0.5), title=name)
        twin = ax.twinx()
        twin.plot(range(S), weight, "o", color=HIGHLIGHT_COLOR, label=r"weight $\alpha_j$")
        twin.set_ylim(0.0, 1.0)
    axes[0, 0].set_ylabel("score $e_j$ (bars)")
    twin.set_ylabel(r"weight $\alpha_j$ (red dots)")
    handles = [h for a in (axes[0, 0], twin) for h in a.get_legend_handles_labels()[0]]
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=9)
    if title:
        fig.suptitle(title)
    return fig
