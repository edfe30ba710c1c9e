"""An interactive attention explorer: type a French sentence, pick a model, step through its translation.

At step t it shows the translation so far, row t of the attention heatmap (later rows faded) and the top-5 next
tokens. `explorer_state` is pure logic, `draw_state` matplotlib only (no pyplot), `AttentionExplorer` the ipywidgets
UI (its figure a PNG inside an Output widget); `show_static` draws the same picture without ipywidgets.
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
    """Everything the explorer shows at one step, as plain data. Introduced in notebook 06."""

    message: str = ""  # a hint, an error explained, or "" when all is well
    model_name: str = ""
    mode: str = "greedy"
    sentence: str = ""
    source_tokens: list[str] = field(default_factory=list)  # (S,) words + "<eos>", unknown ones as "word (unk)"
    output_tokens: list[str] = field(default_factory=list)  # (T,) the full translation
    attention: np.ndarray | None = None  # (T, S); None without attention or translation
    step: int = 0  # t, 0-based: the decoder is producing output_tokens[t]
    tokens_so_far: list[str] = field(default_factory=list)  # output_tokens[:t]
    chosen: str = ""  # output_tokens[t]
    weights_row: np.ndarray | None = None  # (S,) row t of `attention`
    top_k: list[tuple[str, float]] = field(default_factory=list)  # (token, probability), best first; no <pad>, <sos>
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
    if missing := [a for a in ("model", "src_vocab", "tgt_vocab") if not hasattr(trained, a)]:
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
    top_tokens = [[trained.tgt_vocab.index2word[i] for i in row] for row in top_ids.tolist()]  # (T, k)
    attention = None if translation.attention is None else translation.attention.detach().float().cpu().numpy()
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
    """The explorer's pure logic for one setting; user input never raises, problems go in `message`.

    step: t, clamped to 0..T-1 (None = last). A mode other than "greedy" or "beam" raises ValueError.
    Introduced in notebook 06.
    """
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
    settings = dict(model_name=model_name, mode=mode, sentence=sentence)
    return _state_at(_decode_or_message(trained, sentence, mode, beam_width, top_k), step, **settings)


def _set_font_size(ax, size: float) -> None:
    """Tick labels, axis labels and title of `ax` at `size` points; texts inside the axes (bar values) 2 smaller."""
    ax.tick_params(labelsize=size)
    for text in (ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts):
        text.set_fontsize(size - 2 if text in ax.texts else size)


def draw_state(state: ExplorerState) -> Figure | None:
    """Draw one state: heatmap (row t outlined, later rows faded), colour bar, top-k bars. Introduced in notebook 06.

    Returns a Figure made without pyplot, axes [heatmap, bars, colour bar] (just [bars] without attention), or None
    when there is nothing to draw. The layout is computed from label lengths, not matplotlib's constrained layout.
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
    """The explorer's picture for fixed settings, without ipywidgets. Introduced in notebook 06.

    model_name defaults to the first model. Prints the message; returns the Figure, or None if nothing to draw.
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


class AttentionExplorer:
    """The interactive explorer; display it as a cell's last expression. Introduced in notebook 06.

    The step slider counts 1..T; `state().step` is the 0-based row (slider - 1). Raises ImportError (naming
    `show_static`) without ipywidgets.
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
        self.summary, self.output = widgets.HTML(), widgets.Output()
        self.widget = widgets.VBox([widgets.HBox([self.text, self.model]), self.mode, self.step, self.summary,
                                    self.output])
        for control in (self.text, self.model, self.mode):
            control.observe(self._on_settings_change, names="value")
        self.step.observe(self._on_step_change, names="value")
        self._on_settings_change(None)

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

    def redraw(self) -> ExplorerState:
        """Recompute the state and show it; the Output's PNG is replaced in one assignment. Returns the state."""
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
    """An AttentionExplorer, or without ipywidgets the first model's static picture. Introduced in notebook 06."""
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        print("ipywidgets is not installed: showing a static figure (pip install ipywidgets==8.1.9 for the explorer)")
        return show_static(models, sentence)
    return AttentionExplorer(models, sentence)
