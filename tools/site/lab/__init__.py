"""The attention lab: a trained GRU translator exported to ONNX and run in the browser, with attention you can edit.

    python -m tools.site.lab --output DIR                          # lecture-bahdanau (fast-mode model if COURSE_FAST=1)
    python -m tools.site.lab --model lecture-concat --output DIR   # any cached GRU recipe with content attention

What DIR holds (open DIR/index.html in any current browser, from disk: no server, no network):

    index.html, lab.js, lab.css   the page (copied from tools/site/lab/page/)
    model.js                      the encoder and one decoder step as ONNX graphs (base64), the vocabularies, the
                                  normalisation's alphabet, the length limit, the course's heatmap colours
    ort/                          onnxruntime-web (tools/site/static/onnxruntime-web/, vendored from npm, MIT): its
                                  wasm-only script, and ort-runtime.js holding its loader and the gzipped wasm as text,
                                  so that nothing is fetched (a page opened as file:// may not fetch files)

The two graphs are made with PyTorch's exporter from the package's own code (`Seq2Seq.encoder`,
`decoder.prepare_memory`, `decoder.step`); the step graph takes attention weights from outside (`given`, used where
`use_given` is 1: `decoder.step(..., weights=given)`). Before anything is written, greedy decodings of test sentences
run through the graphs with onnxruntime must give PyTorch's ids and weights (within 1e-4), and so must one edited
step. The site build (`python -m tools.site`) runs this step into DIR/lab/.

The 2017 location attention, the model without attention and the Transformer are refused in one line (exit 2).
"""
from __future__ import annotations

import base64
import hashlib
import json
import shutil
import tempfile
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn

__all__ = ["DEFAULT_MODEL", "LabError", "NotExportable", "LabReport", "exportable_recipes", "check_exportable",
           "decode_with_edits", "export_lab", "vendored_runtime"]

DEFAULT_MODEL = "lecture-bahdanau"
PAGE = Path(__file__).resolve().parent / "page"
ORT = Path(__file__).resolve().parents[1] / "static" / "onnxruntime-web"
ORT_FILES = ("ort.wasm.min.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm.gz", "LICENSE")
TOLERANCE = 1e-4  # the largest difference in an attention weight between PyTorch and onnxruntime
CHECK_SENTENCES = 12  # test sentences decoded with both on export
OPSET = 17


class LabError(RuntimeError):
    """The lab cannot be exported (no model, no corpus, the graphs disagree with PyTorch)."""


class NotExportable(LabError):
    """The model is not a GRU translator with content-based attention."""


@dataclass
class LabReport:
    """What export_lab wrote and checked."""

    output: Path
    model: str
    fast: bool
    megabytes: float
    sentences_checked: int
    max_weight_difference: float
    seconds: float

    def __str__(self) -> str:
        mode = " (fast-mode model)" if self.fast else ""
        return (f"lab of {self.model}{mode} written to {self.output} ({self.megabytes:.1f} MB) in "
                f"{self.seconds:.0f} s; "
                f"onnxruntime agrees with PyTorch on {self.sentences_checked} test sentences and one edited step "
                f"(same words, weights within {self.max_weight_difference:.1e}); open {self.output / 'index.html'}")


def exportable_recipes() -> list[str]:
    """The recipes whose models the lab can run: GRU translators with content-based attention."""
    from course_utils.recipes import RECIPES
    from course_utils.seq2seq import ModelConfig

    return [name for name, recipe in RECIPES.items()
            if isinstance(recipe.model, ModelConfig) and recipe.model.attention not in ("none", "location")]


def check_exportable(name: str) -> None:
    """Raise NotExportable (one line, naming what can be exported instead) unless recipe `name` fits the lab."""
    from course_utils.recipes import RECIPES
    from course_utils.seq2seq import ModelConfig

    instead = f"the lab exports GRU translators with content-based attention: {', '.join(exportable_recipes())}"
    if name not in RECIPES:
        raise NotExportable(f"no recipe called {name!r}; {instead}")
    model = RECIPES[name].model
    if not isinstance(model, ModelConfig):
        raise NotExportable(f"{name} is a Transformer (many heads per layer, no single attention row to edit); "
                            f"{instead}")
    if model.attention == "location":
        raise NotExportable(f"{name} uses the 2017 location attention, whose weights never look at the source words; "
                            f"{instead}")
    if model.attention == "none":
        raise NotExportable(f"{name} has no attention to show or edit; {instead}")


# ------------------------------------------------------------------------------------------ the reference decoding
@torch.no_grad()
def decode_with_edits(model, src_ids: list[int], edits: dict[int, list[float]] | None = None
                      ) -> tuple[list[int], Tensor]:
    """Greedy decoding of one sentence (as `search.greedy_decode`: PAD and SOS never chosen, EOS ends, the default
    length cap) where at each step t in `edits` the given weights (S floats) replace the scorer's:
    `decoder.step(prev, state, memory, weights=...)`. Returns the output ids and the weights (T, S) used."""
    from course_utils.runtime import eval_mode
    from course_utils.search import default_max_steps, forbid_special_tokens
    from course_utils.vocab import EOS_ID, SOS_ID

    edits = edits or {}
    src = torch.tensor([src_ids])  # (1, S)
    lengths = torch.tensor([len(src_ids)])
    cap = int(default_max_steps(lengths)[0])
    with eval_mode(model):
        memory, state = model.encode(src, lengths)
        prev, ids, rows = torch.tensor([SOS_ID]), [], []
        for t in range(cap):
            given = torch.tensor([edits[t]], dtype=torch.float32) if t in edits else None  # (1, S)
            step = model.decoder.step(prev, state, memory, weights=given)
            token = int(forbid_special_tokens(step.log_probs).argmax(dim=-1))
            ids.append(token)
            rows.append(step.weights[0])
            if token == EOS_ID:
                break
            prev, state = torch.tensor([token]), step.state
    return ids, torch.stack(rows)  # (T, S)


# ------------------------------------------------------------------------------------------------- the graphs
class _EncoderGraph(nn.Module):
    """One sentence src (1, S) -> the memory (keys, [projected keys]) and the decoder's first state."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.has_projection = model.decoder.prepare_memory(*_probe_memory(model)).projected_keys is not None
        self.has_feed = model.decoder.init_state(torch.zeros(1, model.decoder.hidden_size)).input_feed is not None

    def forward(self, src: Tensor):
        lengths = torch.full((1,), src.shape[1], dtype=torch.long)
        # one sentence fills its row: the unpacked GRU reads exactly what the packed one reads (checked on export)
        encoded = self.model.encoder(src, lengths, packed=False)
        memory = self.model.decoder.prepare_memory(encoded.outputs, torch.ones_like(src, dtype=torch.bool))
        state = self.model.decoder.init_state(encoded.final)
        outputs = [memory.keys] + ([memory.projected_keys] if self.has_projection else [])
        return tuple(outputs + [state.hidden] + ([state.input_feed] if self.has_feed else []))


class _StepGraph(nn.Module):
    """One decoder step: the scorer's weights, or `given` where use_given is 1, then decoder.step with them."""

    def __init__(self, model, has_projection: bool, has_feed: bool):
        super().__init__()
        self.decoder, self.has_projection, self.has_feed = model.decoder, has_projection, has_feed

    def forward(self, *inputs: Tensor):
        from course_utils.decoder import DecoderState, Memory

        inputs = list(inputs)
        prev, hidden = inputs.pop(0), inputs.pop(0)
        feed = inputs.pop(0) if self.has_feed else None
        keys = inputs.pop(0)
        projected = inputs.pop(0) if self.has_projection else None
        given, use_given = inputs
        memory = Memory(keys, torch.ones(keys.shape[:2], dtype=torch.bool), projected)
        state = DecoderState(hidden, feed)
        own = self.decoder.step(prev, state, memory).weights  # (1, S) the scorer's
        weights = torch.where(use_given.unsqueeze(1) > 0.5, given, own)  # (1, S)
        out = self.decoder.step(prev, state, memory, weights=weights)
        return tuple([out.log_probs, out.state.hidden] + ([out.state.input_feed] if self.has_feed else [])
                     + [out.weights])


def _probe_memory(model) -> tuple[Tensor, Tensor]:
    return torch.zeros(1, 3, model.decoder.key_size), torch.ones(1, 3, dtype=torch.bool)


def _names(has_projection: bool, has_feed: bool) -> dict[str, list[str]]:
    memory = ["keys"] + (["projected_keys"] if has_projection else [])
    state = ["hidden"] + (["input_feed"] if has_feed else [])
    return {"memory": memory, "state": state,
            "encoder_inputs": ["src"], "encoder_outputs": memory + state,
            "step_inputs": ["prev_token"] + state + memory + ["given", "use_given"],
            "step_outputs": ["log_probs"] + [f"next_{n}" for n in state] + ["weights"]}


def _export_graphs(model, folder: Path) -> dict[str, list[str]]:
    """Write folder/encoder.onnx and folder/step.onnx; returns their input and output names."""
    import warnings

    encoder = _EncoderGraph(model).eval()
    names = _names(encoder.has_projection, encoder.has_feed)
    step = _StepGraph(model, encoder.has_projection, encoder.has_feed).eval()
    src = torch.tensor([[4, 5, 6, 2]])
    with torch.no_grad():
        encoded = encoder(src)
    memory = dict(zip(names["encoder_outputs"], encoded))
    step_args = ([torch.tensor([1])] + [memory[n] for n in names["state"]] + [memory[n] for n in names["memory"]]
                 + [torch.full((1, 4), 0.25), torch.zeros(1)])
    sequence = {1: "source_length"}
    dynamic = {"src": sequence, **{n: sequence for n in names["memory"] + ["given", "weights"]}}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on shape checks it turns into constants
        torch.onnx.export(encoder, (src,), str(folder / "encoder.onnx"), input_names=names["encoder_inputs"],
                          output_names=names["encoder_outputs"], opset_version=OPSET, dynamo=False,
                          dynamic_axes={n: sequence for n in ["src"] + names["memory"]})
        torch.onnx.export(step, tuple(step_args), str(folder / "step.onnx"), input_names=names["step_inputs"],
                          output_names=names["step_outputs"], opset_version=OPSET, dynamo=False,
                          dynamic_axes={n: axes for n, axes in dynamic.items() if n != "src"})
    return names


class _OrtTranslator:
    """The page's decoding loop in Python on onnxruntime (what lab.js does): the export's check."""

    def __init__(self, folder: Path, names: dict[str, list[str]], caps: list[int]):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        self.encoder = onnxruntime.InferenceSession(str(folder / "encoder.onnx"), options)
        self.step = onnxruntime.InferenceSession(str(folder / "step.onnx"), options)
        self.names, self.caps = names, caps

    def decode(self, src_ids: list[int], edits: dict[int, list[float]] | None = None):
        import numpy as np

        from course_utils.vocab import EOS_ID, PAD_ID, SOS_ID

        edits, names = edits or {}, self.names
        encoded = dict(zip(names["encoder_outputs"],
                           self.encoder.run(None, {"src": np.array([src_ids], dtype=np.int64)})))
        state = {n: encoded[n] for n in names["state"]}
        prev, ids, rows = SOS_ID, [], []
        for t in range(self.caps[len(src_ids)]):
            given = np.array([edits.get(t, [0.0] * len(src_ids))], dtype=np.float32)
            feeds = {"prev_token": np.array([prev], dtype=np.int64), **state,
                     **{n: encoded[n] for n in names["memory"]}, "given": given,
                     "use_given": np.array([1.0 if t in edits else 0.0], dtype=np.float32)}
            out = dict(zip(names["step_outputs"], self.step.run(None, feeds)))
            log_probs = out["log_probs"][0].copy()
            log_probs[[PAD_ID, SOS_ID]] = -np.inf
            token = int(np.argmax(log_probs))
            ids.append(token)
            rows.append(out["weights"][0])
            if token == EOS_ID:
                break
            prev, state = token, {n: out[f"next_{n}"] for n in names["state"]}
        return ids, np.stack(rows)


def _check_graphs(model, folder: Path, names, caps, sentences: list[list[int]]) -> float:
    """Greedy decodings through the graphs against PyTorch's greedy_decode, and one edited step against
    decode_with_edits; raises LabError on any difference in the words or a weight off by more than TOLERANCE."""
    from course_utils.search import greedy_decode

    runner, worst = _OrtTranslator(folder, names, caps), 0.0
    for ids in sentences:
        reference = greedy_decode(model, torch.tensor([ids]), torch.tensor([len(ids)]))
        length = int(reference.lengths[0])
        expected, weights = reference.tokens[0, :length].tolist(), reference.attention[0, :length].numpy()
        got, got_weights = runner.decode(ids)
        if got != expected:
            raise LabError(f"onnxruntime decodes source ids {ids} as {got}, PyTorch as {expected}: the graphs differ")
        worst = max(worst, float(abs(got_weights - weights).max()))
    ids = sentences[0]
    edits = {min(1, caps[len(ids)] - 1): [1.0 if j == 0 else 0.0 for j in range(len(ids))]}  # read only word 0
    expected, weights = decode_with_edits(model, ids, edits)
    got, got_weights = runner.decode(ids, edits)
    if got != expected:
        raise LabError(f"with an edited step onnxruntime gives {got}, PyTorch {expected}: the step graph differs")
    worst = max(worst, float(abs(got_weights - weights.numpy()).max()))
    if worst > TOLERANCE:
        raise LabError(f"attention weights differ by {worst:.2e} between onnxruntime and PyTorch "
                       f"(allowed {TOLERANCE:g})")
    return worst


# -------------------------------------------------------------------------------------------------- the files
def _alphabet(data) -> str:
    """Every character of the corpus's French side (raw, before normalisation): what the page accepts."""
    from course_utils.corpus import find_corpus, read_corpus_lines

    path = data.corpus_path or find_corpus(download=False)
    characters = {c for line in read_corpus_lines(path) for c in unicodedata.normalize("NFC", line.split("\t")[1])}
    return "".join(sorted(c for c in characters if not c.isspace()))


def _colours() -> list[str]:
    """The course's heatmap colour map (course_utils.viz.ATTENTION_CMAP) at 256 levels, as #rrggbb."""
    import matplotlib

    from course_utils.viz import ATTENTION_CMAP

    cmap = matplotlib.colormaps[ATTENTION_CMAP]
    return [matplotlib.colors.to_hex(cmap(i / 255)) for i in range(256)]


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode("ascii")


def vendored_runtime() -> dict[str, str]:
    """The vendored onnxruntime-web files (name -> sha256 of the file as stored); LabError if one is missing."""
    missing = [name for name in ORT_FILES if not (ORT / name).is_file()]
    if missing:
        raise LabError(f"vendored onnxruntime-web incomplete in {ORT}: missing {', '.join(missing)}")
    return {name: hashlib.sha256((ORT / name).read_bytes()).hexdigest() for name in ORT_FILES}


def _write_runtime(output: Path) -> None:
    """output/ort/: the wasm-only script as is, and ort-runtime.js holding the loader module and gzipped wasm."""
    vendored_runtime()
    target = output / "ort"
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ORT / "ort.wasm.min.js", target / "ort.wasm.min.js")
    shutil.copy2(ORT / "LICENSE", target / "LICENSE")
    glue = (ORT / "ort-wasm-simd-threaded.mjs").read_text(encoding="utf-8")
    runtime = {"glue": glue, "wasmGzip": _b64(ORT / "ort-wasm-simd-threaded.wasm.gz")}
    (target / "ort-runtime.js").write_text(
        "// onnxruntime-web's wasm loader and its wasm (gzip, base64), as text: a page opened from disk may not\n"
        "// fetch files. Made by tools/site/lab from tools/site/static/onnxruntime-web (MIT, see LICENSE).\n"
        f"window.LAB_ORT = {json.dumps(runtime)};\n", encoding="utf-8")


def export_lab(output: Path | str, name: str = DEFAULT_MODEL, fast: bool | None = None, data=None,
               log=print) -> LabReport:
    """Export recipe `name`'s cached model (fast-mode one when `fast`, default COURSE_FAST) and the page into
    `output`; checks the graphs against PyTorch first. Raises NotExportable or LabError."""
    from course_utils.data import load_course_data
    from course_utils.runtime import fast_mode
    from course_utils.search import default_max_steps
    from course_utils.vocab import MAX_LENGTH
    from course_utils.zoo import load_or_train

    start = time.perf_counter()
    check_exportable(name)
    fast = fast_mode() if fast is None else fast
    output = Path(output)
    data = load_course_data(log=None) if data is None else data
    trained = load_or_train(name, data=data, fast=fast, log=log or (lambda *_: None))
    model = trained.model.cpu().eval()
    max_words = MAX_LENGTH - 1  # the training pairs have fewer than MAX_LENGTH tokens a side (data.keep_pair)
    caps = [0] + default_max_steps(torch.arange(1, max_words + 2)).tolist()  # caps[S], S source ids with EOS
    seen, sentences = set(), []
    for pair in data.splits.test:
        if pair.source not in seen and len(sentences) < CHECK_SENTENCES:
            seen.add(pair.source)
            sentences.append(trained.src_vocab.encode(pair.source, add_eos=True))
    output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lab-export-") as scratch:
        folder = Path(scratch)
        names = _export_graphs(model, folder)
        worst = _check_graphs(model, folder, names, caps, sentences)
        manifest = {
            "model": name, "fast": fast, "attention": trained.model_config.attention,
            "names": names, "source_vocab": trained.src_vocab.index2word, "target_vocab": trained.tgt_vocab.index2word,
            "special": {"pad": 0, "sos": 1, "eos": 2, "unk": 3}, "max_words": max_words, "caps": caps,
            "alphabet": _alphabet(data), "colours": _colours(),
            "labels": {"x": "source", "y": "output", "colourbar": "attention weight"},
            "example": "je suis fatigue .",
            "encoder": _b64(folder / "encoder.onnx"), "step": _b64(folder / "step.onnx")}
    (output / "model.js").write_text(
        f"// The {name} model for the attention lab (tools/site/lab): ONNX graphs in base64, vocabularies.\n"
        f"window.LAB_MODEL = {json.dumps(manifest)};\n", encoding="utf-8")
    _write_runtime(output)
    for page in PAGE.iterdir():
        shutil.copy2(page, output / page.name)
    megabytes = sum(path.stat().st_size for path in output.rglob("*") if path.is_file()) / 1e6
    return LabReport(output, name, fast, megabytes, len(sentences), worst, time.perf_counter() - start)

