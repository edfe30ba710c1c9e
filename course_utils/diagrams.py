"""Architecture diagrams drawn from a real forward pass: every arrow is a tensor, labelled with the shape it had.

`_diagram_spec` traces a Seq2Seq built from a ModelConfig on one batch (step 0 of the decoder) and reads every label
off the trace (the tests check its letters, B, S, 2H, ..., against the numbers). Box positions are data, in
`diagram_layouts`. Introduced in notebooks 02 (encoder), 03 (Bahdanau step) and 04 (Luong step).
"""
from __future__ import annotations

import base64
import dataclasses
import html
import io
import re
from typing import NamedTuple

import torch
from matplotlib.figure import Figure

from course_utils.attention import ATTENTION_SCORES
from course_utils.diagram_layouts import SCORES, layouts_for
from course_utils.seq2seq import LUONG_SCORES, ModelConfig, Seq2Seq
from course_utils.shapes import ShapeTrace, trace_shapes
from course_utils.vocab import EOS_ID, PAD_ID

__all__ = ["diagram_explorer"]

_PARTS = ("encoder", "decoder")
_CONTROLLED = ("embedding_size", "hidden_size", "bidirectional", "attention", "input_feeding")  # explorer's fields
_COLORS = {"input": "#e8f0fe", "module": "#fff4d6", "op": "#eeeeee", "output": "#e6f4ea"}


class _Node(NamedTuple):
    """A box: a module (its real sizes in `text`), an operation, an input or an output."""

    key: str  # what edges refer to
    text: str  # e.g. "bridge\nLinear(32, 16)"
    x: float  # centre, in layout units
    y: float
    kind: str  # "input" | "module" | "op" | "output"


class _Edge(NamedTuple):
    """An arrow carrying one tensor, with its traced shape.

    `source` = (module name, call, "inputs" | "outputs", i): the i-th tensor of that trace row."""

    start: str
    end: str
    name: str  # e.g. "keys"
    symbols: str  # e.g. "B, S, K"
    shape: tuple[int, ...]  # e.g. (2, 5, 32), read from the trace
    source: tuple[str, int, str, int]
    feedback: bool = False  # drawn as a dashed curve (Luong's input feeding)


class _DiagramSpec(NamedTuple):
    """What `_draw_diagram` draws; footnotes are tensors with no arrow."""

    part: str
    title: str
    nodes: list[_Node]
    edges: list[_Edge]
    footnotes: list[_Edge]
    sizes: dict[str, int]
    trace: ShapeTrace

    @property
    def tensors(self) -> list[_Edge]:
        """Every labelled tensor: the edges, then the footnotes."""
        return self.edges + self.footnotes


def _diagram_config(src_vocab_size: int = 30, tgt_vocab_size: int = 40, **settings) -> ModelConfig:
    """A ModelConfig with small vocabularies, E = 8 and H = 16 unless `settings` (ModelConfig fields) say otherwise."""
    return ModelConfig(src_vocab_size, tgt_vocab_size, **{"embedding_size": 8, "hidden_size": 16, **settings})


def _parse_shapes(cell: str) -> list[tuple[int, ...]]:
    """The tensor shapes in one trace cell, in order: "((2, 1, 8), (1, 2, 8))" -> [(2, 1, 8), (1, 2, 8)]."""
    return [tuple(int(n) for n in group.replace(",", " ").split()) for group in re.findall(r"\(([\d, ]*)\)", cell)]


def _edge_label(edge: _Edge, sizes: dict[str, int]) -> str:
    """'keys (2, 5, 32)\n(B, S, 2H)': the name, the traced shape, the letters (K shown as 2H or H, D as 2 or 1)."""
    two = sizes["D"] == 2
    letters = re.sub(r"\bD\b", "2" if two else "1", re.sub(r"\bK\b", "2H" if two else "H", edge.symbols))
    shape, letters = (f"({edge.shape[0]},)", f"({letters},)") if len(edge.shape) == 1 else (edge.shape, f"({letters})")
    return f"{edge.name} {shape}\n{letters}"


def _module_text(model: Seq2Seq, name: str) -> str:
    """A box's text from the module itself: 'bridge\\nLinear(32, 16)'; just 'GRU(8, 16)' where the name says no more."""
    module, title = model.get_submodule(name), name.rsplit(".", 1)[-1].replace("_", " ")
    kind, m = type(module).__name__, module
    sizes = {"Embedding": lambda: (m.num_embeddings, m.embedding_dim),
             "Linear": lambda: (m.in_features, m.out_features),
             "GRU": lambda: (m.input_size, m.hidden_size) + (("bidirectional",) if m.bidirectional else ())}
    if kind not in sizes:
        return f"{title}\n{kind}\n{SCORES[kind]}" if kind in SCORES else f"{title}\n{kind}"
    call = f"{kind}({', '.join(str(size) for size in sizes[kind]())})"
    return call if title.replace(" ", "") == kind.lower() else f"{title}\n{call}"


def _example_batch(config: ModelConfig, batch_size: int, source_length: int, target_length: int, seed: int = 0):
    """(src (B, S), src_lengths (B,), tgt (B, T)): random ids, lengths S, S-1, ... (at least 1), EOS then PAD."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([max(source_length - b, 1) for b in range(batch_size)])  # (B,)
    src = torch.randint(4, config.src_vocab_size, (batch_size, source_length), generator=generator)  # (B, S)
    positions = torch.arange(source_length).unsqueeze(0)  # (1, S)
    src[positions == (lengths - 1).unsqueeze(1)] = EOS_ID
    src[positions >= lengths.unsqueeze(1)] = PAD_ID
    tgt = torch.randint(4, config.tgt_vocab_size, (batch_size, target_length), generator=generator)  # (B, T)
    return src, lengths, tgt


def _diagram_spec(part: str, config: ModelConfig, batch_size: int = 2, source_length: int = 5,
                  target_length: int = 3) -> _DiagramSpec:
    """The diagram of `part` ("encoder" or "decoder") for `config`, read off a traced batch.

    The batch has B sentences of at most S source and T target tokens; the decoder runs its step loop as in
    generation. The global random state is kept. Raises ValueError for a part or attention without a diagram."""
    if part not in _PARTS:
        raise ValueError(f"part must be one of {_PARTS}, got {part!r}")
    if part == "decoder" and config.attention not in ATTENTION_SCORES:
        raise ValueError(f"no step diagram for attention={config.attention!r}: choose 'bahdanau' or one of "
                         f"{', '.join(LUONG_SCORES)}")
    config = dataclasses.replace(config, dropout=0.0)
    with torch.random.fork_rng(devices=[]):
        model = Seq2Seq(config).eval()
    src, src_lengths, tgt = _example_batch(config, batch_size, source_length, target_length)
    trace = trace_shapes(model, src, src_lengths, tgt, teacher_forcing_ratio=0.0)
    additive = getattr(getattr(model.decoder, "attention", None), "energy_layer", None)  # v: (1, A)
    sizes = dict(B=batch_size, S=source_length, T=target_length, E=config.embedding_size, H=config.hidden_size,
                 K=model.encoder.key_size, D=2 if config.bidirectional else 1, V=config.tgt_vocab_size,
                 N=int(src_lengths.sum()), A=additive.in_features if additive is not None else config.hidden_size)
    title, layouts = layouts_for(part, config.attention, config.input_feeding, model.encoder.bridge is not None)
    cells = {(row.name, row.call): row for row in trace}
    traced = lambda source: _parse_shapes(getattr(cells[source[:2]], source[2]))[source[3]]  # (name, call, io, i)
    nodes = [_Node(key, _module_text(model, text) if kind == "module" else text, x, y, kind)
             for layout in layouts for key, text, x, y, kind in layout["nodes"]]
    edges = [_Edge(a, b, name, symbols, traced(source), source, feedback=b == "cat1" and a == "combine")
             for layout in layouts for a, b, name, symbols, source in layout["edges"]]
    footnotes = [_Edge("", "", name, symbols, traced(source), source) for name, symbols, source in
                 layouts[0]["footnotes"]]
    shown = "BSEHK" if part == "encoder" else "BSTEHKV"
    title = f"{title}   ({', '.join(f'{letter}={sizes[letter]}' for letter in shown)})"
    return _DiagramSpec(part, title, nodes, edges, footnotes, sizes, trace)


def _footnote(spec: _DiagramSpec) -> str:
    s = spec.sizes
    if spec.part == "encoder":
        batch_sizes = _edge_label(spec.footnotes[0], s).replace("\n", " ")
        return (f"Packing keeps the N = sum(src_lengths) = {s['N']} real tokens of the B x S = {s['B'] * s['S']} "
                f"slots ({batch_sizes}: rows per time step). Keys are K = D*H wide, D = {s['D']} direction(s).")
    steps = "; ".join(_edge_label(e, s).replace("\n", " ") for e in spec.footnotes)
    return f"Shown: step 0 of T = {s['T']}. The T steps stacked: {steps}. A = {s['A']} (attention size)."


def _draw_diagram(spec: _DiagramSpec) -> Figure:
    """Draw a _DiagramSpec on a Figure made without pyplot: inputs blue, modules yellow, ops grey, outputs green."""
    xs, ys = [n.x for n in spec.nodes], [n.y for n in spec.nodes]
    unit = 0.62  # inches per layout unit
    fig = Figure(figsize=((max(xs) - min(xs) + 3.2) * unit, (max(ys) - min(ys) + 2.4) * unit))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set(xlim=(min(xs) - 1.6, max(xs) + 1.6), ylim=(min(ys) - 1.3, max(ys) + 1.1))
    ax.axis("off")
    boxes = {n.key: ax.text(n.x, n.y, n.text, ha="center", va="center", fontsize=8.5, zorder=3,
                            bbox=dict(boxstyle="round,pad=0.4", fc=_COLORS[n.kind], ec="#555555")) for n in spec.nodes}
    where = {n.key: (n.x, n.y) for n in spec.nodes}
    for e in spec.edges:
        (x0, y0), (x1, y1) = where[e.start], where[e.end]
        bend = -0.35 if e.feedback else 0.0
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0), zorder=4, arrowprops=dict(
            arrowstyle="-|>", color="#c0392b" if e.feedback else "#333333", lw=1.1, shrinkA=0, shrinkB=0,
            linestyle="--" if e.feedback else "-", connectionstyle=f"arc3,rad={bend}",
            patchA=boxes[e.start].get_bbox_patch(), patchB=boxes[e.end].get_bbox_patch()))
        mx, my = (x0 + x1) / 2 + bend * (y1 - y0) / 2, (y0 + y1) / 2 - bend * (x1 - x0) / 2
        ax.text(mx, my, _edge_label(e, spec.sizes), ha="center", va="center", fontsize=7.5, zorder=5,
                color="#c0392b" if e.feedback else "black",
                bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.9))
    ax.text(min(xs) - 1.5, max(ys) + 1.0, spec.title, ha="left", va="top", fontsize=10, weight="bold")
    ax.text(min(xs) - 1.5, min(ys) - 1.2, _footnote(spec), ha="left", va="bottom", fontsize=7.5, color="#444444")
    return fig


class _DiagramState(NamedTuple):
    """The diagram for one setting of the controls: a spec, or a message saying why there is none."""

    message: str
    spec: _DiagramSpec | None


def _diagram_state(part: str, batch_size: int, source_length: int, target_length: int,
                  config: ModelConfig | None = None, **settings) -> _DiagramState:
    """The logic behind the controls: `settings` override `config`; a combination ModelConfig refuses comes back
    as the message. input_feeding is dropped for a decoder other than Luong's."""
    base = {**dataclasses.asdict(config or _diagram_config()), **settings}
    if part == "encoder":
        base["attention"] = "bahdanau"  # any decoder that accepts 2H keys: the encoder is the same for all
    if base["attention"] not in LUONG_SCORES:
        base["input_feeding"] = False
    try:
        return _DiagramState("", _diagram_spec(part, ModelConfig(**base), batch_size, source_length, target_length))
    except ValueError as error:
        return _DiagramState(str(error), None)


def _show_diagram(part: str, config: ModelConfig | None = None, batch_size: int = 2, source_length: int = 5,
                 target_length: int = 3, **settings) -> Figure | None:
    """The static diagram for fixed settings; prints the message and returns None for a refused combination."""
    state = _diagram_state(part, batch_size, source_length, target_length, config, **settings)
    if state.message:
        print(state.message)
    return None if state.spec is None else _draw_diagram(state.spec)


def _png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


class _DiagramExplorer:
    """Sliders and boxes that redraw the diagram from a new forward pass; display it as a cell's last expression.

    `controls` lists the widgets shown; `settings` set their first values (_CONTROLLED) or fix other ModelConfig
    fields. Where widgets do not render, the cell shows the first diagram as a PNG.
    """

    def __init__(self, part: str = "encoder", config: ModelConfig | None = None, batch_size: int = 2,
                 source_length: int = 5, target_length: int = 3, **settings):
        try:
            import ipywidgets as w
        except ImportError as error:
            raise ImportError("the diagram explorer needs ipywidgets (pip install ipywidgets==8.1.9); without it, "
                              "course_utils.diagrams.diagram_explorer(part, ...) draws the static figure") from error
        if part not in _PARTS:
            raise ValueError(f"part must be one of {_PARTS}, got {part!r}")
        config = config or _diagram_config()
        first = {**dataclasses.asdict(config), **settings}
        self.part = part
        self.config = dataclasses.replace(config, **{k: v for k, v in settings.items() if k not in _CONTROLLED})
        slider = lambda name, value, low, high, step=1: w.IntSlider(
            value=value, min=low, max=max(high, value), step=step, description=name, continuous_update=False)
        self.batch_size, self.source_length = slider("B", batch_size, 1, 8), slider("S", source_length, 1, 12)
        self.target_length = slider("T", target_length, 1, 10)
        self.embedding_size, self.hidden_size = slider("E", first["embedding_size"], 2, 64, 2), slider(
            "H", first["hidden_size"], 2, 64, 2)
        self.bidirectional = w.Checkbox(value=first["bidirectional"], description="bidirectional")
        attention = first["attention"] if first["attention"] in ATTENTION_SCORES else "bahdanau"
        self.attention = w.Dropdown(options=ATTENTION_SCORES, value=attention, description="attention")
        self.input_feeding = w.Checkbox(value=first["input_feeding"], description="input feeding")
        self.controls = [self.batch_size, self.source_length, self.embedding_size, self.hidden_size,
                         self.bidirectional]
        if part == "decoder":
            self.controls[2:2] = [self.target_length]
            self.controls += [self.attention, self.input_feeding]
        self.message, self.output = w.HTML(), w.Output()
        self.widget = w.VBox([w.HBox(self.controls[:4]), w.HBox(self.controls[4:]), self.message, self.output])
        for control in self.controls:
            control.observe(lambda change: self.redraw(), names="value")
        self._first_png = self.redraw()

    def state(self) -> _DiagramState:
        """The diagram the controls ask for now (a new forward pass)."""
        return _diagram_state(self.part, self.batch_size.value, self.source_length.value, self.target_length.value,
                             self.config, **{name: getattr(self, name).value for name in _CONTROLLED})

    def redraw(self) -> str:
        """Recompute and show the diagram; returns its PNG (base64; "" when the message explains why none)."""
        self.input_feeding.disabled = self.attention.value not in LUONG_SCORES
        state = self.state()
        self.message.value = f"<span style='color:#b00'>{html.escape(state.message)}</span>" if state.message else ""
        png = "" if state.spec is None else _png(_draw_diagram(state.spec))
        self.output.outputs = ({"output_type": "display_data", "metadata": {}, "data": {
            "image/png": png, "text/plain": f"<{self.part} diagram>"}},) if png else ()
        return png

    def _repr_mimebundle_(self, **kwargs) -> dict:
        """The widget, plus the first diagram as image/png for frontends that cannot render widgets."""
        bundle = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        return {**bundle, "image/png": self._first_png} if self._first_png else bundle


def diagram_explorer(part: str = "encoder", config: ModelConfig | None = None, batch_size: int = 2,
                     source_length: int = 5, target_length: int = 3, **settings):
    """The _DiagramExplorer, or without ipywidgets (with a note) the static Figure. Introduced in notebook 02."""
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        print("ipywidgets is not installed: showing the static diagram (pip install ipywidgets==8.1.9 for controls)")
        return _show_diagram(part, config, batch_size, source_length, target_length, **settings)
    return _DiagramExplorer(part, config, batch_size, source_length, target_length, **settings)
