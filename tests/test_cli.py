"""The command line: translate (sentence and stdin modes, bad input), train and compare on a tiny corpus."""
import subprocess
import sys

import pytest
import torch

from course_utils import __main__ as cli
from course_utils import data
from course_utils.checkpoints import TrainedModel, load_checkpoint, save_checkpoint
from course_utils.seq2seq import ModelConfig, Seq2Seq
from course_utils.train import History, TrainConfig


@pytest.fixture
def tiny_checkpoint(tiny_course_data, tmp_path):
    """An (untrained) Bahdanau model of the tiny corpus, saved as a checkpoint."""
    torch.manual_seed(0)
    config = ModelConfig(len(tiny_course_data.src_vocab), len(tiny_course_data.tgt_vocab), attention="bahdanau",
                         embedding_size=8, hidden_size=16)
    trained = TrainedModel("tiny", Seq2Seq(config).eval(), tiny_course_data.src_vocab,
                           tiny_course_data.tgt_vocab, config, TrainConfig(), History())
    return save_checkpoint(tmp_path / "tiny.pt", trained)


def run_cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "course_utils", *args], input=stdin, capture_output=True,
                          text=True, timeout=120)


def test_translate_one_sentence_names_unknown_words_and_shows_attention(tiny_checkpoint):
    result = run_cli("translate", "--checkpoint", str(tiny_checkpoint), "Je suis très fatigué, zorglub !",
                     "--show-attention")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].strip()  # the translation
    assert lines[2].split() == ["je", "suis", "tres", "fatigue", "zorglub", "!", "<eos>"]  # attention header
    assert "zorglub" in result.stderr and "unknown" in result.stderr


@pytest.mark.parametrize("sentence, message", [("", "empty"), ("  *** ", "empty"), ("zorglub blorp", "unknown")])
def test_translate_refuses_untranslatable_sentences_with_a_clear_message(tiny_checkpoint, sentence, message):
    result = run_cli("translate", "--checkpoint", str(tiny_checkpoint), sentence)
    assert result.returncode == 1
    assert result.stderr.startswith("error:") and message in result.stderr
    assert "Traceback" not in result.stderr


def test_translate_stdin_writes_one_line_per_input_line_in_order(tiny_checkpoint):
    long_line = " ".join(["je suis fatigue"] * 6) + " ."  # longer than anything in training (MAX_LENGTH)
    lines = ["je suis fatigue .", "", "zorglub blorp", long_line, "il est grand ."]
    result = run_cli("translate", "--checkpoint", str(tiny_checkpoint), "--beam", "2",
                     stdin="\n".join(lines) + "\n")
    assert result.returncode == 0, result.stderr
    outputs = result.stdout.split("\n")[:-1]
    assert len(outputs) == len(lines)
    assert outputs[1] == "" and outputs[2] == ""
    assert outputs[0] and outputs[3] and outputs[4]
    assert "line 2 is empty" in result.stderr and "line 3" in result.stderr
    single = run_cli("translate", "--checkpoint", str(tiny_checkpoint), "--beam", "2", "il est grand .")
    assert single.stdout.strip() == outputs[4]


def test_translate_with_a_missing_checkpoint_says_how_to_make_one(tmp_path):
    result = run_cli("translate", "--checkpoint", str(tmp_path / "none.pt"), "je suis fatigue .")
    assert result.returncode == 1 and "python -m course_utils train" in result.stderr


def test_train_command_saves_checkpoint_and_attention_figure(tiny_course_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(data, "load_course_data", lambda **kwargs: tiny_course_data)
    output = tmp_path / "model.pt"
    status = cli.main(["train", "--attention", "general", "--hidden", "16", "--epochs", "2", "--fast",
                       "--device", "cpu", "--no-progress", "--output", str(output)])
    printed = capsys.readouterr().out
    assert status == 0
    assert "epoch  1/2" in printed and "test (" in printed and "sacreBLEU signature: BLEU" in printed
    loaded = load_checkpoint(output, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab)
    assert loaded.model_config.attention == "general" and loaded.model_config.hidden_size == 16
    assert loaded.fast and loaded.history.epochs == 2
    assert output.with_suffix(".attention.png").stat().st_size > 1000


def test_compare_prints_one_row_per_attention_type_and_saves_curves(tiny_course_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(data, "load_course_data", lambda **kwargs: tiny_course_data)
    figure = tmp_path / "curves.png"
    status = cli.main(["compare", "--attention", "none", "dot", "--hidden", "16", "--epochs", "1", "--fast",
                       "--device", "cpu", "--no-progress", "--figure", str(figure)])
    printed = capsys.readouterr().out
    assert status == 0
    table = printed[printed.index("attention  "):].splitlines()
    assert table[0].split()[:3] == ["attention", "params", "s/epoch"]
    assert [row.split()[0] for row in table[2:4]] == ["none", "dot"]
    assert figure.stat().st_size > 1000
