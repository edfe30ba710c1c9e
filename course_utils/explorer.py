"""An interactive attention explorer: type a French sentence, pick a model, step through its translation.

At step t the explorer shows the translation so far, the attention the decoder used to produce output token t
(row t of the heatmap, outlined; later rows faded), and the top-5 candidates for token t as a bar chart.

The work is split in three layers so that everything but the last one runs without a browser:

    explorer_state(trained, sentence, mode, step)  -> ExplorerState   pure logic: translate, force-decode, pick row t
    draw_state(state)                              -> Figure          matplotlib only (no pyplot, no widgets)
    AttentionExplorer(models)                      -> ipywidgets UI   Text, Dropdown, ToggleButtons, IntSlider, Output

The figure is rendered to PNG and displayed inside an `Output` widget, like the inline backend does, so the
explorer works in JupyterLab, classic Notebook and Colab with no frontend extension. Without ipywidgets, use
`show_static(models, sentence, ...)`, which draws the same picture for fixed settings.

Introduced in notebook 06.
"""
from __future__ import annotations

import base64
import html
import io
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import torch
from matplotlib.figure import Figure

from course_utils.search import forbid_special_tokens, force_decode
from course_utils.translate import prepare_source, translate
from course_utils.viz import CELL_INCHES, plot_attention, plot_top_k, text_inches

__all__ = ["ExplorerState", "explorer_state", "draw_state", "figure_png", "show_static", "AttentionExplorer",
           "explore"]

_MODES = ("greedy", "beam")
_DEFAULT_BEAM_WIDTH = 5
_TOP_K = 5
_HINT = "Type a French sentence, e.g. « je suis tres fatigue . », then press Enter."
_EXAMPLE_SENTENCE = "je suis tres content de te voir aujourd hui ."
_FONT_SIZE = 12  # points: tick labels, axis labels and titles of the explorer's figure (matplotlib's default is 10)


@dataclass
class ExplorerState:
    """Everything the explorer shows at one step, as plain data (what the tests read back).

    message:        a hint, an error explained, or "" when all is well; shown above the figure.
    model_name, mode, sentence: the current settings.
    source_tokens:  (S,) the labels of the heatmap's columns: the normalised source words plus "<eos>", each
                    word missing from the vocabulary marked "word (unk)" (the model reads it as <unk>).
                    Empty when there is nothing to show (hint or error in `message`).
    output_tokens:  (T,) the full translation, "<eos>" included when produced.
    attention:      (T, S) float array, or None (model without attention, or nothing translated).
    step:           t, 0-based: the decoder is producing output_tokens[t] (0 when there is nothing to show).
    tokens_so_far:  output_tokens[:t], the output already produced before step t.
    chosen:         output_tokens[t], the token chosen at step t.
    weights_row:    (S,) attention at step t (row t of `attention`), or None.
    top_k:          [(token, probability)] the model's most probable candidates for token t, best first
                    (<pad> and <sos> excluded: decoding never picks them).
    unknown_words:  the source words missing from the vocabulary, unmarked.
    Introduced in notebook 06.
    """

    message: str = ""
    model_name: str = ""
    mode: str = "greedy"
    sentence: str = ""
    source_tokens: list[str] = field(default_factory=list)
    output_tokens: list[str] = field(default_factory=list)
    attention: np.ndarray | None = None
    step: int = 0
    tokens_so_far: list[str] = field(default_factory=list)
    chosen: str = ""
    weights_row: np.ndarray | None = None
    top_k: list[tuple[str, float]] = field(default_factory=list)
    unknown_words: list[str] = field(default_factory=list)

    @property
    def num_steps(self) -> int:
        """T: the number of output tokens (slider positions)."""
        return len(self.output_tokens)

    @property
    def ok(self) -> bool:
        """True when there is a translation to show."""
        return bool(self.output_tokens)


@dataclass
class _Decoded:
    """One sentence translated by one model in one mode: everything every step needs (cached per sentence)."""

    source_tokens: list[str]
    output_tokens: list[str]
    attention: np.ndarray | None  # (T, S)
    top_tokens: list[list[str]]  # (T, k)
    top_probs: np.ndarray  # (T, k)
    unknown_words: list[str]


def _check_trained(name: str, trained) -> None:
    missing = [a for a in ("model", "src_vocab", "tgt_vocab") if not hasattr(trained, a)]
    if missing:
        raise TypeError(f"models[{name!r}] has no {', '.join(missing)}; pass TrainedModel objects, e.g. "
                        f"{{'bahdanau': load_or_train('lecture-bahdanau')}}")


def _decode(trained, sentence: str, mode: str, beam_width: int, top_k: int) -> _Decoded:
    """Translate `sentence`, then force-decode the translation to get every step's next-token distribution."""
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
    translation = translate(trained.model, trained.src_vocab, trained.tgt_vocab, sentence,
                            beam_width=1 if mode == "greedy" else beam_width)
    _, src_ids, _ = prepare_source(trained.src_vocab, sentence)
    output_ids = [trained.tgt_vocab.word2index[token] for token in translation.output_tokens]
    forced = force_decode(trained.model, torch.tensor(src_ids), torch.tensor(output_ids))
    probs = forbid_special_tokens(forced.log_probs).exp()  # (T, V): PAD and SOS get 0, as in decoding
    top_probs, top_ids = probs.topk(min(top_k, probs.size(-1)), dim=-1)  # (T, k), (T, k)
    index2word = trained.tgt_vocab.index2word
    top_tokens = [[index2word[i] for i in row] for row in top_ids.tolist()]
    attention = translation.attention
    if attention is not None:
        attention = attention.detach().float().cpu().numpy()  # (T, S)
    source_tokens = [f"{word} (unk)" if word in translation.unknown_words else word
                     for word in translation.source_tokens[:-1]] + [translation.source_tokens[-1]]
    return _Decoded(source_tokens, list(translation.output_tokens), attention, top_tokens,
                    top_probs.numpy(), list(translation.unknown_words))


def _state_at(decoded: _Decoded | str, step: int | None, **settings) -> ExplorerState:
    """Pick step t (None = last) out of a decoded sentence; a message (str) instead of one gives a message state."""
    if isinstance(decoded, str):
        return ExplorerState(message=decoded, **settings)
    T = len(decoded.output_tokens)
    step = T - 1 if step is None else min(max(int(step), 0), T - 1)
    message = ""
    if decoded.unknown_words:
        message = (f"Unknown words (the model reads them as <unk>): {', '.join(decoded.unknown_words)}; "
                   f"check the spelling or try a word from the corpus.")
    if decoded.attention is None:
        message = (message + " " if message else "") + "This model has no attention: there is no heatmap to show."
    candidates = zip(decoded.top_tokens[step], decoded.top_probs[step], strict=True)  # k (token, probability)
    return ExplorerState(
        message=message, source_tokens=decoded.source_tokens, output_tokens=decoded.output_tokens,
        attention=decoded.attention, step=step, tokens_so_far=decoded.output_tokens[:step],
        chosen=decoded.output_tokens[step],
        weights_row=None if decoded.attention is None else decoded.attention[step],  # (S,)
        top_k=[(token, float(p)) for token, p in candidates],
        unknown_words=decoded.unknown_words, **settings)


def _decode_or_message(trained, sentence: str, mode: str, beam_width: int, top_k: int) -> _Decoded | str:
    """`_decode`, or the message explaining why there is nothing to decode (user input never raises)."""
    if not sentence.strip():
        return _HINT
    try:
        return _decode(trained, sentence, mode, beam_width, top_k)
    except ValueError as error:  # empty after normalisation, only unknown words, too long for location attention
        return str(error)


def explorer_state(trained, sentence: str, mode: str = "greedy", step: int | None = None,
                   beam_width: int = _DEFAULT_BEAM_WIDTH, top_k: int = _TOP_K, model_name: str = "") -> ExplorerState:
    """The explorer's pure logic for one setting: never raises on user input, explains problems in `message`.

    trained: a TrainedModel (anything with .model, .src_vocab, .tgt_vocab). sentence: raw French text.
    mode: "greedy" or "beam" (beam search of width `beam_width`, best hypothesis); another mode is a programming
    error and raises ValueError. step: t, clamped to 0..T-1 (None = last step). top_k: how many next-token
    candidates to list. model_name: copied into the state. Returns ExplorerState. Introduced in notebook 06.
    """
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
    settings = dict(model_name=model_name, mode=mode, sentence=sentence)
    return _state_at(_decode_or_message(trained, sentence, mode, beam_width, top_k), step, **settings)


# ------------------------------------------------------------------------------------------------ drawing

def _set_font_size(ax, size: float) -> None:
    """Tick labels, axis labels and title of `ax` at `size` points; texts inside the axes (bar values) 2 smaller."""
    ax.tick_params(labelsize=size)
    for text in (ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts):
        text.set_fontsize(size - 2 if text in ax.texts else size)


def draw_state(state: ExplorerState) -> Figure | None:
    """Draw one explorer state: heatmap with row t outlined and later rows faded, its colour bar, and the top-k bars.

    The colour bar shows the heatmap's fixed 0..1 weight scale; labels are _FONT_SIZE points. A model without
    attention gets the bar chart alone. Returns a matplotlib Figure (created without pyplot, so nothing piles up in
    notebooks) whose axes are [heatmap, bar chart, colour bar] ([bar chart] without attention), or None when the
    state has nothing to draw (hint or error). The layout is computed from the label lengths instead of
    matplotlib's constrained layout: one draw per redraw instead of three keeps the explorer responsive.
    Introduced in notebook 06.
    """
    if not state.ok:
        return None
    T, S = len(state.output_tokens), len(state.source_tokens)
    tokens, probabilities = zip(*state.top_k, strict=True)
    has_heatmap = state.attention is not None
    bar_title = f"next token after\n« {' '.join(state.tokens_so_far[-3:]) or '<sos>'} »"
    # Every size below is in inches. Left to right: heatmap, gap, colour bar + its labels, gap, bars.
    left = 0.7 + text_inches(state.output_tokens, _FONT_SIZE) if has_heatmap else 0.2
    heat_w, heat_h = (CELL_INCHES * S, CELL_INCHES * T) if has_heatmap else (0.0, 0.0)
    colorbar_w, colorbar_room = 0.15, 0.85 + text_inches(["0.0"], _FONT_SIZE) if has_heatmap else 0.0
    gap = 0.35 + text_inches(tokens, _FONT_SIZE)
    bar_w, bar_h = 2.8, max(0.42 * len(tokens), 1.4)
    right = 0.2 + max(0.0, text_inches(bar_title.split("\n"), _FONT_SIZE) - bar_w) / 2  # a long title overhangs
    bottom, top = 0.65 + (0.75 * text_inches(state.source_tokens, _FONT_SIZE) + 0.1 if has_heatmap else 0.0), 0.8
    width = left + heat_w + colorbar_room + gap + bar_w + right
    height = bottom + max(heat_h, bar_h) + top
    fig = Figure(figsize=(width, height))
    if has_heatmap:
        heat_ax = fig.add_axes((left / width, bottom / height, heat_w / width, heat_h / height))
        plot_attention(state.attention, state.source_tokens, state.output_tokens, ax=heat_ax, colorbar=False,
                       highlight_row=state.step, title=f"attention at step {state.step + 1} of {T}")
        if state.step + 1 < T:  # fade the steps not produced yet
            heat_ax.axhspan(state.step + 0.5, T - 0.5, color="white", alpha=0.55, linewidth=0)
    bar_bottom = bottom + max(heat_h, bar_h) - bar_h  # top-aligned with the heatmap
    bar_ax = fig.add_axes(((left + heat_w + colorbar_room + gap) / width, bar_bottom / height, bar_w / width,
                           bar_h / height))
    plot_top_k(list(tokens), list(probabilities), ax=bar_ax, highlight=state.chosen, title=bar_title)
    if has_heatmap:
        colorbar_ax = fig.add_axes(((left + heat_w + 0.15) / width, bottom / height, colorbar_w / width,
                                    heat_h / height))
        fig.colorbar(heat_ax.images[0], cax=colorbar_ax, label="attention weight")  # the image's fixed 0..1 scale
    for ax in fig.axes:
        _set_font_size(ax, _FONT_SIZE)
    return fig


def figure_png(fig: Figure, dpi: int = 80) -> bytes:
    """Render a figure to PNG bytes (what the inline backend sends to the notebook). Introduced in notebook 06."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def _summary_html(state: ExplorerState) -> str:
    """The translation so far (step t's token in bold) and the message, as HTML."""
    parts = []
    if state.message:
        color = "#555" if state.message == _HINT else "#b00"
        parts.append(f"<div style='color:{color}'>{html.escape(state.message)}</div>")
    if state.ok:
        so_far = html.escape(" ".join(state.tokens_so_far))
        chosen = html.escape(state.chosen)
        rest = html.escape(" ".join(state.output_tokens[state.step + 1:]))
        source = html.escape(" ".join(state.source_tokens))
        parts.append(f"<div><b>source</b>: {source}</div>"
                     f"<div><b>output</b>: {so_far} <b style='color:red'>{chosen}</b> "
                     f"<span style='color:#aaa'>{rest}</span></div>")
    return "".join(parts)


def show_static(models: Mapping[str, object], sentence: str = _EXAMPLE_SENTENCE, model_name: str | None = None,
                mode: str = "greedy", step: int | None = None) -> Figure | None:
    """The explorer's picture for fixed settings, for notebooks without ipywidgets (or exported to HTML/PDF).

    models: {name: TrainedModel}; model_name: which one (default the first); mode, step as in `explorer_state`.
    Prints the message (hint, unknown words) and returns the Figure (None if there is nothing to draw); make it the
    last expression of a cell to display it. Introduced in notebook 06.
    """
    if not models:
        raise ValueError("models is empty; pass {name: TrainedModel}")
    name = model_name or next(iter(models))
    if name not in models:
        raise KeyError(f"no model named {name!r}; choose one of {', '.join(models)}")
    _check_trained(name, models[name])
    state = explorer_state(models[name], sentence, mode=mode, step=step, model_name=name)
    if state.message:
        print(state.message)
    if state.ok:
        print("output:", " ".join(state.output_tokens))
    return draw_state(state)


# ------------------------------------------------------------------------------------------------ widgets

class AttentionExplorer:
    """The interactive explorer. Display it by making it the last expression of a cell.

    models: {name: TrainedModel}. sentence: initial text. beam_width: used in "beam" mode. top_k: next-token
    candidates in the bar chart. Raises ImportError (naming `show_static`) when ipywidgets is missing.
    Widgets (attributes): text (Text), model (Dropdown), mode (ToggleButtons greedy/beam), step (IntSlider
    1..T, as people count; `state().step` is the 0-based row index, slider - 1), summary (HTML), output (Output
    showing the PNG figure); `widget` is the whole VBox.
    `state()` returns the current ExplorerState; `last_redraw_seconds` how long the last redraw took.
    Introduced in notebook 06.
    """

    def __init__(self, models: Mapping[str, object], sentence: str = _EXAMPLE_SENTENCE,
                 beam_width: int = _DEFAULT_BEAM_WIDTH, top_k: int = _TOP_K):
        try:
            import ipywidgets as widgets
        except ImportError as error:
            raise ImportError("the explorer needs ipywidgets (pip install ipywidgets==8.1.9); without it, draw "
                              "one step with course_utils.explorer.show_static(models, sentence)") from error
        if not models:
            raise ValueError("models is empty; pass {name: TrainedModel}, e.g. {'bahdanau': trained}")
        for name, trained in models.items():
            _check_trained(name, trained)
        self.models = dict(models)
        self.beam_width, self.top_k = beam_width, top_k
        self._cache: dict[tuple[str, str, str], _Decoded | str] = {}
        self._busy = False
        self.last_redraw_seconds = 0.0

        self.text = widgets.Text(value=sentence, placeholder="je suis tres fatigue .", description="French:",
                                 continuous_update=False, layout=widgets.Layout(width="32em"))
        self.model = widgets.Dropdown(options=list(self.models), description="model:")
        self.mode = widgets.ToggleButtons(options=list(_MODES), value="greedy", description="decoding:")
        self.step = widgets.IntSlider(value=1, min=1, max=1, description="step:", continuous_update=True)  # 1..T
        self.summary = widgets.HTML()
        self.output = widgets.Output()
        self.widget = widgets.VBox([widgets.HBox([self.text, self.model]), self.mode, self.step, self.summary,
                                    self.output])
        for control in (self.text, self.model, self.mode):
            control.observe(self._on_settings_change, names="value")
        self.step.observe(self._on_step_change, names="value")
        self._on_settings_change(None)

    # -- logic (no browser needed) ----------------------------------------------------------------------------
    def _decoded(self) -> _Decoded | str:
        """The current sentence decoded by the current model and mode (cached), or a message string."""
        key = (self.model.value, self.mode.value, self.text.value)
        if key not in self._cache:
            self._cache[key] = _decode_or_message(self.models[self.model.value], self.text.value,
                                                  self.mode.value, self.beam_width, self.top_k)
            if len(self._cache) > 64:
                self._cache.pop(next(iter(self._cache)))
        return self._cache[key]

    def state(self) -> ExplorerState:
        """What the explorer shows now, as plain data."""
        settings = dict(model_name=self.model.value, mode=self.mode.value, sentence=self.text.value)
        return _state_at(self._decoded(), self.step.value - 1, **settings)  # the slider counts from 1, rows from 0

    # -- callbacks -------------------------------------------------------------------------------------------
    def _on_settings_change(self, change) -> None:
        """New sentence, model or mode: re-translate, reset the slider to the last step, redraw."""
        decoded = self._decoded()
        steps = len(decoded.output_tokens) if not isinstance(decoded, str) else 1
        self._busy = True  # moving the slider's bounds fires its observer: redraw once, below
        try:
            self.step.max = max(steps, 1)
            self.step.value = self.step.max
            self.step.disabled = isinstance(decoded, str)
        finally:
            self._busy = False
        self.redraw()

    def _on_step_change(self, change) -> None:
        if not self._busy:
            self.redraw()

    # -- drawing ---------------------------------------------------------------------------------------------
    def redraw(self) -> ExplorerState:
        """Recompute the state and show it: summary text, and the figure as one PNG output of the Output widget.

        The output is replaced in one assignment (no flicker, no dependence on the kernel's matplotlib backend,
        and testable without a kernel). Returns the state shown; `last_redraw_seconds` says how long it took.
        """
        started = time.perf_counter()
        state = self.state()
        self.summary.value = _summary_html(state)
        fig = draw_state(state)
        outputs = ()
        if fig is not None:
            png = base64.b64encode(figure_png(fig)).decode("ascii")
            outputs = ({"output_type": "display_data", "metadata": {},
                        "data": {"image/png": png, "text/plain": f"<attention explorer: step {state.step + 1}>"}},)
        self.output.outputs = outputs
        self.last_redraw_seconds = time.perf_counter() - started
        return state

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def explore(models: Mapping[str, object], sentence: str = _EXAMPLE_SENTENCE):
    """The explorer if ipywidgets is installed, else the static picture of its first model: one call for notebooks.

    Returns an AttentionExplorer, or (without ipywidgets) what `show_static` returns: a Figure, or None when
    there is nothing to draw. Introduced in notebook 06.
    """
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        print("ipywidgets is not installed: showing a static figure (pip install ipywidgets==8.1.9 for the explorer)")
        return show_static(models, sentence)
    return AttentionExplorer(models, sentence)
