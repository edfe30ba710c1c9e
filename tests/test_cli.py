"""The command line: translate (sentence and stdin modes, bad input), train and compare on a tiny corpus."""
import io
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from course_utils import cli, data, translate
from course_utils.seq2seq import ModelConfig, Seq2Seq
from course_utils.train import History, TrainConfig
from course_utils.vocab import UNK_ID
from course_utils.zoo import TrainedModel, load_checkpoint, save_checkpoint


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
    """`python -m course_utils *args` in a subprocess; stdin as str, or bytes (then stdout/stderr are decoded)."""
    if isinstance(stdin, bytes):
        result = subprocess.run([sys.executable, "-m", "course_utils", *args], input=stdin, capture_output=True,
                                timeout=120)
        return subprocess.CompletedProcess(result.args, result.returncode, result.stdout.decode("utf-8"),
                                           result.stderr.decode("utf-8", "replace"))
    return subprocess.run([sys.executable, "-m", "course_utils", *args], input=stdin, capture_output=True,
                          text=True, timeout=120)


def checkpoint_of(data, path, attention="bahdanau", **config):
    """An (untrained) model of `data`'s vocabularies, saved as a checkpoint at `path`."""
    torch.manual_seed(0)
    config = ModelConfig(len(data.src_vocab), len(data.tgt_vocab), attention=attention, embedding_size=8,
                         hidden_size=16, **config)
    trained = TrainedModel("tiny", Seq2Seq(config).eval(), data.src_vocab, data.tgt_vocab, config, TrainConfig(),
                           History())
    return save_checkpoint(path, trained)


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


def test_translate_stdin_splits_on_newline_only_and_survives_odd_bytes(tiny_checkpoint):
    """Characters str.splitlines() breaks on stay inside their line; bad UTF-8 costs only its own line."""
    lines = [
        b"je suis fatigue .",                         # 1
        "je suis\u2028fatigue .".encode(),            # 2 LINE SEPARATOR inside: same words as line 1
        b"il\x0best\x0cgrand\x1c.",                    # 3 vertical tab, form feed, file separator
        "je\x85suis fatigue .\r".encode(),            # 4 NEL inside, CRLF line end
        b"je suis \xff\xfe fatigue .",                 # 5 not UTF-8
        b"il est grand .",                            # 6
        b"elle\rcuisine .",                           # 7 a lone carriage return inside the line
        b"?!...",                                     # 8 only punctuation
        b"\x1d\x1e",                                   # 9 group/record separators only: empty after normalising
    ]
    result = run_cli("translate", "--checkpoint", str(tiny_checkpoint), stdin=b"\n".join(lines) + b"\n")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    outputs = result.stdout.split("\n")
    assert outputs[-1] == "" and len(outputs) - 1 == len(lines)  # one output line per input \n-line
    outputs = outputs[:-1]
    assert outputs[0] and outputs[1] == outputs[0] and outputs[3] == outputs[0]
    assert outputs[5] and outputs[2] == outputs[5]
    assert outputs[4] == "" and "line 5 is not valid UTF-8" in result.stderr
    assert outputs[6] and outputs[7]
    assert "line 8: only punctuation" in result.stderr
    assert outputs[8] == "" and "line 9" in result.stderr
    warned = {int(word) for line in result.stderr.splitlines() for word in [line.split()[2].rstrip(":")]
              if line.startswith("warning: line")}
    assert warned == {5, 8, 9}


def test_one_line_too_long_for_its_batch_costs_only_itself(tiny_course_data, tmp_path):
    checkpoint = checkpoint_of(tiny_course_data, tmp_path / "location.pt", attention="location")
    long_line = " ".join(["je suis fatigue"] * 4) + " ."  # 13 words: more than the model's 10 positions
    lines = ["je suis fatigue .", long_line, "il est grand .", "elle cuisine ."]
    result = run_cli("translate", "--checkpoint", str(checkpoint), stdin="\n".join(lines) + "\n")
    assert result.returncode == 0, result.stderr
    outputs = result.stdout.split("\n")[:-1]
    assert len(outputs) == 4 and outputs[1] == "" and all(outputs[i] for i in (0, 2, 3))
    assert "warning: line 2:" in result.stderr and "location attention" in result.stderr
    assert "Traceback" not in result.stderr and "line 1" not in result.stderr


def test_translate_lines_falls_back_to_one_line_at_a_time(tiny_course_data, monkeypatch):
    """The pipeline's steps, in process: a batch that raises is retried per line; only the bad line is lost."""
    from course_utils.cli import batch_translate

    model = Seq2Seq(ModelConfig(len(tiny_course_data.src_vocab), len(tiny_course_data.tgt_vocab),
                                embedding_size=8, hidden_size=16)).eval()
    real = batch_translate.translate_sources
    prepared = []

    def fragile(model, tgt_vocab, sources, **kwargs):
        prepared.extend(sources)
        if any("grand" in source.words for source in sources):
            raise RuntimeError("boom")
        return real(model, tgt_vocab, sources, **kwargs)
    monkeypatch.setattr(batch_translate, "translate_sources", fragile)
    monkeypatch.setattr(batch_translate, "prepare_source", lambda *a: pytest.fail("prepared twice"))
    warnings = []
    raw = batch_translate._read_lines(io.BytesIO(b"je suis fatigue .\nil est grand .\nelle cuisine ."))
    with monkeypatch.context() as checking:  # check_lines prepares each line once; translating reuses it
        checking.setattr(batch_translate, "prepare_source", translate.prepare_source)
        lines = batch_translate._check_lines(raw, tiny_course_data.src_vocab, warnings.append)
    assert [line.number for line in lines] == [1, 2, 3] and warnings == []
    trained = SimpleNamespace(model=model, src_vocab=tiny_course_data.src_vocab, tgt_vocab=tiny_course_data.tgt_vocab)
    outputs = batch_translate._translate_lines(trained, lines, batch_size=8, warn=warnings.append)
    assert outputs[0] and outputs[1] == "" and outputs[2]
    assert warnings == ["line 2: boom; wrote an empty line"]
    buffer = io.StringIO()
    batch_translate._write_lines(outputs, buffer)
    assert buffer.getvalue().split("\n") == [*outputs, ""]


@pytest.mark.parametrize("options, message", [
    (["--batch-size", "0"], "--batch-size must be at least 1"),
    (["--beam", "0"], "--beam must be at least 1"),
    (["--device", "bogus"], "unknown device 'bogus'"),
    (["--device", "cuda"], "CUDA"),
])
def test_bad_translate_options_fail_in_one_line_before_reading_input(tiny_checkpoint, monkeypatch, capsys, options,
                                                                     message):
    class Untouchable:
        def read(self, *args):
            raise AssertionError("stdin was read before the options were checked")
        buffer = property(lambda self: self)
    monkeypatch.setattr(sys, "stdin", Untouchable())
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the same on a machine with a GPU
    status = cli.main(["translate", "--checkpoint", str(tiny_checkpoint), *options])
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    assert captured.err.startswith("error:") and message in captured.err and captured.err.count("\n") == 1


def test_translate_of_a_huge_token_echoes_it_once(tiny_checkpoint):
    token = "z" * 10_000
    result = run_cli("translate", "--checkpoint", str(tiny_checkpoint), token)
    assert result.returncode == 1 and result.stderr.count("z" * 50) == 1 and len(result.stderr) < 500
    result = run_cli("translate", "--checkpoint", str(tiny_checkpoint), f"je suis {token} .")
    assert result.returncode == 0 and result.stderr.count("z" * 50) == 1 and len(result.stderr) < 500
    result = run_cli("translate", "--checkpoint", str(tiny_checkpoint), "?!...")
    assert result.returncode == 0 and "only punctuation" in result.stderr


@pytest.mark.parametrize("problem", ["directory", "corrupt", "nan"])
def test_translate_with_an_unusable_checkpoint_is_one_line(tiny_course_data, tmp_path, capsys, problem):
    if problem == "directory":
        path = tmp_path
    elif problem == "corrupt":
        good = checkpoint_of(tiny_course_data, tmp_path / "good.pt").read_bytes()
        path = tmp_path / "corrupt.pt"
        path.write_bytes(good[:len(good) // 3])
    else:
        path = checkpoint_of(tiny_course_data, tmp_path / "nan.pt")
        payload = torch.load(path, weights_only=True)
        payload["state_dict"]["decoder.out.bias"][:] = float("nan")
        torch.save(payload, path)
    status = cli.main(["translate", "--checkpoint", str(path), "je suis fatigue ."])
    captured = capsys.readouterr()
    assert status == 1 and captured.out == ""
    assert captured.err.startswith("error:") and captured.err.count("\n") == 1
    assert {"directory": "is a directory", "corrupt": "not a readable", "nan": "NaN"}[problem] in captured.err


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


def test_compare_says_in_one_line_why_dot_reads_a_one_way_encoder(tiny_course_data, tmp_path, monkeypatch, capsys):
    from course_utils import zoo

    monkeypatch.setattr(data, "load_course_data", lambda **kwargs: tiny_course_data)
    trained_recipes = []
    real_train_recipe = zoo.train_recipe

    def recording(recipe, *args, **kwargs):
        trained_recipes.append(recipe)
        return real_train_recipe(recipe, *args, **kwargs)
    monkeypatch.setattr(zoo, "train_recipe", recording)
    status = cli.main(["compare", "--recipe", "full-bahdanau", "--attention", "bahdanau", "dot", "--hidden", "16",
                       "--epochs", "1", "--fast", "--device", "cpu", "--no-progress",
                       "--figure", str(tmp_path / "curves.png")])
    printed = capsys.readouterr().out
    assert status == 0
    notes = [line for line in printed.splitlines() if line.startswith("note:")]
    assert len(notes) == 1, printed  # bahdanau reads 2H keys: no note for it
    assert "'dot' attention needs keys of the decoder's size" in notes[0]  # the rule's own words...
    assert "got query size 16 and key size 32" in notes[0]
    assert "compare trains the 'dot' row with bidirectional=False" in notes[0]  # ...and what compare does about it
    assert [(r.model.attention, r.model.bidirectional) for r in trained_recipes] == [("bahdanau", True),
                                                                                     ("dot", False)]
    table = printed[printed.index("attention  "):].splitlines()
    assert [row.split()[0] for row in table[2:4]] == ["bahdanau", "dot"]


# ---------------------------------------------------------------------------------------------- issue 11: train
def no_training(*args, **kwargs):
    raise AssertionError("trained although the command should have refused first")


def few_pairs_data(tiny_pairs):
    return data.course_data_from_pairs(tiny_pairs[:8], seed=0)


@pytest.mark.parametrize("case", ["unwritable output", "output is a directory", "bogus device", "cuda device",
                                  "few pairs", "bad recipe"])
def test_train_refuses_before_training_in_one_line(tiny_course_data, tiny_pairs, tmp_path, monkeypatch, capsys, case):
    from course_utils import zoo

    monkeypatch.setattr(zoo, "train_recipe", no_training)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    small = few_pairs_data(tiny_pairs)
    monkeypatch.setattr(data, "load_course_data",
                        lambda **kwargs: small if case == "few pairs" else tiny_course_data)
    (tmp_path / "blocker").write_text("a file where a folder should be")
    options = {"unwritable output": ["--output", str(tmp_path / "blocker" / "models" / "model.pt")],
               "output is a directory": ["--output", str(tmp_path)],
               "bogus device": ["--device", "bogus"], "cuda device": ["--device", "cuda"],
               "few pairs": [], "bad recipe": ["--recipe", "nonsense"]}[case]
    status = cli.main(["train", "--fast", "--no-progress", "--output", str(tmp_path / "model.pt"), *options])
    captured = capsys.readouterr()
    assert status in (1, 2) and captured.err.startswith("error:") and captured.err.count("\n") == 1, captured.err
    expected = {"unwritable output": "cannot write", "output is a directory": "is a directory",
                "bogus device": "unknown device", "cuda device": "CUDA", "bad recipe": "no recipe called",
                "few pairs": f"only {len(small.pairs)} usable sentence pairs"}[case]
    assert expected in captured.err
    if case == "few pairs":
        assert "at least 20" in captured.err


def test_train_reports_an_output_that_fails_after_training_in_one_line(tiny_course_data, tmp_path, monkeypatch,
                                                                        capsys):
    from course_utils import zoo

    monkeypatch.setattr(data, "load_course_data", lambda **kwargs: tiny_course_data)
    output = tmp_path / "out" / "model.pt"

    def disk_full(path, trained):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(zoo, "save_checkpoint", disk_full)
    status = cli.main(["train", "--attention", "general", "--hidden", "16", "--fast", "--device", "cpu",
                       "--no-progress", "--output", str(output), "--figure-sentences", "2"])
    captured = capsys.readouterr()
    [line] = captured.err.strip().splitlines()
    assert status == 1 and f"cannot write {output}: No space left on device" in line and "--output" in line


def test_fast_train_and_compare_print_what_they_really_use(tiny_course_data, tmp_path, monkeypatch, capsys):
    from course_utils import zoo

    monkeypatch.setattr(data, "load_course_data", lambda **kwargs: tiny_course_data)
    monkeypatch.setitem(zoo.FAST_OVERRIDES, "max_train_pairs", 10)  # fewer than the tiny corpus' 30
    status = cli.main(["train", "--hidden", "16", "--fast", "--device", "cpu", "--no-progress",
                       "--output", str(tmp_path / "model.pt"), "--figure-sentences", "1"])
    banner = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Training"))
    assert status == 0
    assert "(1 epoch(s))" in banner and "epochs=1," in banner and "epochs=10" not in banner
    assert "max_train_pairs=10" in banner
    status = cli.main(["compare", "--attention", "none", "--hidden", "16", "--fast", "--device", "cpu",
                       "--no-progress", "--figure", str(tmp_path / "curves.png")])
    printed = capsys.readouterr().out
    assert status == 0
    assert f"trained on 10 of the {len(tiny_course_data.splits.train)} training pairs" in printed


def test_data_check_warns_about_a_corpus_with_few_usable_pairs(tiny_lines, tmp_path, monkeypatch, capsys):
    small = tmp_path / "small.txt"
    small.write_text("\n".join(tiny_lines[:6]) + "\n", encoding="utf-8")
    monkeypatch.setenv("COURSE_CORPUS", str(small))
    assert cli.main(["data", "check"]) == 0
    captured = capsys.readouterr()
    assert "6 sentence pairs" in captured.out
    assert captured.err.startswith("warning: the corpus has only") and "at least 20" in captured.err


@pytest.mark.parametrize("where", ["data dir", "corpus dir"])
def test_data_check_with_a_bad_place_is_one_line(tmp_path, monkeypatch, capsys, where):
    from course_utils import corpus

    monkeypatch.setattr(corpus, "urlopen", no_training)  # never reaches the network
    (tmp_path / "blocker").write_text("a file where a folder should be")
    if where == "data dir":
        monkeypatch.delenv("COURSE_CORPUS", raising=False)
        monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path / "blocker" / "data"))
    else:
        monkeypatch.setenv("COURSE_CORPUS", str(tmp_path))
    assert cli.main(["data", "check"]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("error:") and captured.err.count("\n") == 1
    assert ("Cannot write the corpus" if where == "data dir" else "is a directory") in captured.err


def test_translate_replace_unk_copies_source_words_for_every_unk(tiny_course_data, tmp_path, monkeypatch, capsys):
    """--replace-unk: an output <unk> becomes the source word it attends to most, in both modes."""
    torch.manual_seed(0)
    config = ModelConfig(len(tiny_course_data.src_vocab), len(tiny_course_data.tgt_vocab), attention="bahdanau",
                         embedding_size=8, hidden_size=16)
    model = Seq2Seq(config).eval()
    with torch.no_grad():
        model.decoder.out.bias.fill_(0.0)
        model.decoder.out.bias[UNK_ID] = 100.0  # every output token is <unk>
    path = save_checkpoint(tmp_path / "unk.pt", TrainedModel("unk", model, tiny_course_data.src_vocab,
                                                             tiny_course_data.tgt_vocab, config, TrainConfig(),
                                                             History()))
    source_words = {"je", "suis", "zorglub"}
    assert cli.main(["translate", "--checkpoint", str(path), "je suis zorglub ."]) == 0
    assert set(capsys.readouterr().out.split()) == {"<unk>"}
    assert cli.main(["translate", "--checkpoint", str(path), "--replace-unk", "je suis zorglub ."]) == 0
    words = capsys.readouterr().out.split()
    assert words and set(words) <= source_words
    stdin = io.TextIOWrapper(io.BytesIO(b"je suis zorglub .\nil est grand .\n"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    assert cli.main(["translate", "--checkpoint", str(path), "--replace-unk", "--beam", "2"]) == 0
    first, second = capsys.readouterr().out.split("\n")[:2]
    assert set(first.split()) <= source_words and set(second.split()) <= {"il", "est", "grand"}
