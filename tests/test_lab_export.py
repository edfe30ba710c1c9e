"""The attention lab's export (tools.site.lab): ONNX graphs that onnxruntime runs as PyTorch runs the model (greedy
and with edited attention), one-line refusals of what it cannot export, and the pinned onnxruntime-web files.
The page itself is checked in a browser by tests/browser/run_lab_check.py."""
import gzip
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import tiny_config

from course_utils.search import greedy_decode
from course_utils.seq2seq import Seq2Seq
from course_utils.train import History, TrainConfig
from course_utils.zoo import TrainedModel, save_checkpoint
from tools.site.lab import ORT, LabError, NotExportable, export_model, refusal
from tools.site.lab.graphs import check_graphs, decode_with_edits, export_graphs

pytest.importorskip("onnxruntime", reason="the lab's export check needs onnxruntime (requirements.txt)")
REPO = Path(__file__).resolve().parents[1]


def tiny_model(data, attention="bahdanau", seed=0, **fields):
    torch.manual_seed(seed)
    return Seq2Seq(tiny_config(data, attention, **fields)).eval()


def model_js(folder: Path) -> dict:
    text = (folder / "model.js").read_text(encoding="utf-8")
    return json.loads(re.search(r"window\.LAB_MODEL = (\{.*\});", text, re.S).group(1))


@pytest.mark.parametrize("attention, fields", [("bahdanau", {}), ("general", {"input_feeding": True}),
                                               ("concat", {"bidirectional": True}), ("scaled_dot", {})])
def test_export_runs_like_pytorch(tiny_course_data, tmp_path, attention, fields):
    data = tiny_course_data
    model = tiny_model(data, attention, **fields)
    report = export_model(tmp_path / "lab", model, data.src_vocab, data.tgt_vocab, "tiny", False, data)
    assert report.max_weight_difference <= 1e-4 and report.sentences_checked >= 1
    manifest = model_js(tmp_path / "lab")
    assert manifest["source_vocab"] == data.src_vocab.index2word
    assert manifest["names"]["state"] == (["hidden", "input_feed"] if fields.get("input_feeding") else ["hidden"])
    assert {"index.html", "lab.js", "lab.css", "model.js"} <= {p.name for p in (tmp_path / "lab").iterdir()}
    assert {p.name for p in (tmp_path / "lab" / "ort").iterdir()} == {"ort.wasm.min.js", "ort-runtime.js", "LICENSE"}


def test_reference_decoding_with_edits(tiny_course_data):
    """decode_with_edits: no edit is greedy_decode; an edit is decoder.step(weights=...) at that step only."""
    data = tiny_course_data
    model = tiny_model(data)
    ids = data.src_vocab.encode(data.splits.train[0].source, add_eos=True)
    reference = greedy_decode(model, torch.tensor([ids]), torch.tensor([len(ids)]))
    length = int(reference.lengths[0])
    got, weights = decode_with_edits(model, ids)
    assert got == reference.tokens[0, :length].tolist()
    torch.testing.assert_close(weights, reference.attention[0, :length])
    one_hot = [0.0] * len(ids)
    one_hot[0] = 1.0
    edited_ids, edited = decode_with_edits(model, ids, {0: one_hot})
    torch.testing.assert_close(edited[0], torch.tensor(one_hot))
    memory, state = model.encode(torch.tensor([ids]), torch.tensor([len(ids)]))
    with torch.no_grad():
        step = model.decoder.step(torch.tensor([1]), state, memory, weights=torch.tensor([one_hot]))
    step_log_probs = step.log_probs.clone()
    step_log_probs[0, :2] = -float("inf")  # PAD, SOS
    assert edited_ids[0] == int(step_log_probs.argmax())


def test_check_catches_graphs_of_another_model(tiny_course_data, tmp_path):
    """The export's check fails when the graphs do not compute what the model computes (here: another seed)."""
    data = tiny_course_data
    exported, other = tiny_model(data, seed=0), tiny_model(data, seed=1)
    names = export_graphs(exported, tmp_path)
    sentences = [data.src_vocab.encode(pair.source, add_eos=True) for pair in data.splits.train[:4]]
    caps = [0] + [2 * s + 5 for s in range(1, 11)]
    assert check_graphs(exported, tmp_path, names, caps, sentences) <= 1e-4
    with pytest.raises(LabError, match="onnxruntime"):
        check_graphs(other, tmp_path, names, caps, sentences)


def run_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "tools.site.lab", *args], cwd=REPO, capture_output=True, text=True,
                          env=env, timeout=300)


def test_cli_refuses_the_location_exhibit_in_one_line(tiny_course_data, tmp_path):
    data = tiny_course_data
    config = tiny_config(data, "location")
    trained = TrainedModel("exhibit-location", Seq2Seq(config), data.src_vocab, data.tgt_vocab, config,
                           TrainConfig(), History([1.0], [1.0], [1.0], [0.1]))
    path = save_checkpoint(tmp_path / "location.pt", trained)
    result = run_cli("--checkpoint", str(path), "--output", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "location" in result.stderr and "lecture-bahdanau" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name, words", [("lecture-transformer", "Transformer"), ("lecture-none", "no attention"),
                                         ("no-such-model", "no recipe")])
def test_cli_refuses_other_models_in_one_line(tmp_path, name, words):
    result = run_cli("--model", name, "--output", str(tmp_path / "out"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and words in result.stderr
    assert "lecture-bahdanau" in result.stderr


def test_refusal_names_what_the_lab_cannot_run(tiny_course_data):
    assert refusal(tiny_config(tiny_course_data, "bahdanau"), "m") is None
    assert "location" in refusal(tiny_config(tiny_course_data, "location"), "m")
    with pytest.raises(NotExportable):
        export_model("/nonexistent", tiny_model(tiny_course_data, "none"), None, None, "m", False, tiny_course_data)


def test_vendored_onnxruntime_web_is_the_pinned_npm_release():
    """The files are those of onnxruntime-web 1.30.0 on npm (the hashes its README lists), with the licence."""
    readme = (ORT / "README.md").read_text(encoding="utf-8")
    files = {"ort.wasm.min.js": (ORT / "ort.wasm.min.js").read_bytes(),
             "ort-wasm-simd-threaded.mjs": (ORT / "ort-wasm-simd-threaded.mjs").read_bytes(),
             "ort-wasm-simd-threaded.wasm": gzip.decompress((ORT / "ort-wasm-simd-threaded.wasm.gz").read_bytes())}
    for name, content in files.items():
        assert hashlib.sha256(content).hexdigest() in readme, name
    assert "onnxruntime-web@1.30.0" in readme and "MIT License" in (ORT / "LICENSE").read_text(encoding="utf-8")
    assert b"1.30.0" in files["ort.wasm.min.js"]


def test_site_build_leaves_the_lab_out_with_a_note_while_the_model_is_not_cached(monkeypatch, tmp_path, capsys):
    """A site build never trains: with no cached model there is no lab/ and no link to it, and a note says why."""
    from tools.site import _build_lab

    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.delenv("COURSE_FAST", raising=False)
    assert _build_lab(tmp_path / "site", "lecture-bahdanau") == []
    assert "attention lab is left out" in capsys.readouterr().err
    assert not (tmp_path / "site" / "lab").exists()
