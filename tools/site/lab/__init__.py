"""The attention lab: a trained GRU translator exported to ONNX and run in the browser, with attention you can edit.

    python -m tools.site.lab --output DIR                          # lecture-bahdanau (fast-mode model if COURSE_FAST=1)
    python -m tools.site.lab --model lecture-concat --output DIR   # any cached GRU recipe with content attention
    python -m tools.site.lab --checkpoint my-model.pt --output DIR # a model saved with zoo.save_checkpoint

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

The 2017 location exhibit (AttnDecoderRNN), the model without attention and the Transformer are refused in one line
(exit status 2) that names the recipes it can export.
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

__all__ = ["DEFAULT_MODEL", "LabError", "NotExportable", "LabReport", "exportable_recipes", "refusal",
           "check_exportable", "export_lab", "export_model", "vendored_runtime"]

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

    return [name for name, recipe in RECIPES.items() if refusal(recipe.model, name) is None]


def refusal(config, label: str) -> str | None:
    """Why the model a config describes (ModelConfig or TransformerConfig) cannot run in the lab, or None."""
    from course_utils.seq2seq import ModelConfig

    if not isinstance(config, ModelConfig):
        return f"{label} is a Transformer (several heads per layer, no single attention row to edit)"
    if config.attention == "location":
        return (f"{label} is the 2017 location exhibit (AttnDecoderRNN), whose weights never look at the source "
                "words and cover a fixed number of slots")
    if config.attention == "none":
        return f"{label} has no attention to show or edit"
    return None


def _instead() -> str:
    return f"the lab exports GRU translators with content-based attention: {', '.join(exportable_recipes())}"


def check_exportable(name: str) -> None:
    """Raise NotExportable (one line, naming what can be exported instead) unless recipe `name` fits the lab."""
    from course_utils.recipes import RECIPES

    if name not in RECIPES:
        raise NotExportable(f"no recipe called {name!r}; {_instead()}")
    reason = refusal(RECIPES[name].model, name)
    if reason:
        raise NotExportable(f"{reason}; {_instead()}")


# -------------------------------------------------------------------------------------------------- the files
def _alphabet(data) -> str:
    """Every character of the corpus's French side (raw, lower case): what the page accepts, with any Latin letter;
    for data made in memory (no corpus file), the characters of its normalised source sentences."""
    from course_utils.corpus import read_corpus_lines

    side = 1 if data.reverse else 0
    lines = ([line.split("\t")[side] for line in read_corpus_lines(data.corpus_path)] if data.corpus_path
             else [pair.source for pair in data.pairs])
    characters = {c for line in lines for c in unicodedata.normalize("NFC", line.lower())}
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


def _load_data(data):
    from course_utils.corpus import CorpusError, find_corpus
    from course_utils.data import load_course_data

    try:
        return load_course_data(path=find_corpus(download=False), log=None) if data is None else data
    except CorpusError as error:
        raise LabError(f"the lab needs the corpus (its vocabularies and test sentences): {error}") from None


def export_lab(output: Path | str, name: str = DEFAULT_MODEL, fast: bool | None = None, data=None,
               checkpoint: Path | str | None = None, log=print) -> LabReport:
    """Export recipe `name`'s cached model (the fast-mode one when `fast`, default COURSE_FAST), or the model saved at
    `checkpoint` (zoo.save_checkpoint), and the page into `output`. Raises NotExportable or LabError."""
    from course_utils.checkpoints import CheckpointError
    from course_utils.runtime import fast_mode
    from course_utils.zoo import load_checkpoint, load_or_train

    if checkpoint is not None:
        try:
            trained = load_checkpoint(checkpoint)
        except (CheckpointError, OSError, ValueError) as error:
            raise LabError(f"cannot read {checkpoint}: {error}") from None
        reason = refusal(trained.model_config, f"{checkpoint} ({trained.name})")
        if reason:
            raise NotExportable(f"{reason}; {_instead()}")
        return export_model(output, trained.model, trained.src_vocab, trained.tgt_vocab, trained.name, trained.fast,
                            _load_data(data))
    check_exportable(name)
    fast = fast_mode() if fast is None else fast
    data = _load_data(data)
    trained = load_or_train(name, data=data, fast=fast, log=log or (lambda *_: None))
    return export_model(output, trained.model, trained.src_vocab, trained.tgt_vocab, name, fast, data)


def export_model(output: Path | str, model, src_vocab, tgt_vocab, name: str, fast: bool, data) -> LabReport:
    """Export `model` (a GRU Seq2Seq with content attention) with its vocabularies and the page into `output`, after
    checking its graphs against PyTorch on up to CHECK_SENTENCES source sentences of data's test split."""
    import torch

    from course_utils.search import default_max_steps
    from course_utils.vocab import EOS_ID, MAX_LENGTH, PAD_ID, SOS_ID, UNK_ID
    from tools.site.lab.graphs import check_graphs, export_graphs

    start = time.perf_counter()
    reason = refusal(model.config, name)
    if reason:
        raise NotExportable(f"{reason}; {_instead()}")
    output = Path(output)
    model = model.cpu().eval()
    max_words = MAX_LENGTH - 1  # the training pairs have fewer than MAX_LENGTH tokens a side (data.keep_pair)
    caps = [0] + default_max_steps(torch.arange(1, max_words + 2)).tolist()  # caps[S], S source ids with EOS
    pairs = data.splits.test + data.splits.dev + data.splits.train  # the test split is enough but for tiny data
    sources = list(dict.fromkeys(pair.source for pair in pairs))[:CHECK_SENTENCES]
    sentences = [src_vocab.encode(source, add_eos=True) for source in sources]
    output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lab-export-") as scratch:
        folder = Path(scratch)
        names = export_graphs(model, folder)
        worst = check_graphs(model, folder, names, caps, sentences)
        manifest = {
            "model": name, "fast": fast, "attention": model.config.attention,
            "names": names, "source_vocab": src_vocab.index2word, "target_vocab": tgt_vocab.index2word,
            "special": {"pad": PAD_ID, "sos": SOS_ID, "eos": EOS_ID, "unk": UNK_ID},
            "max_words": max_words, "caps": caps,
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
