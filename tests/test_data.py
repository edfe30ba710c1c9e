"""Tests for course_utils.data (notebook 01) and the `data` commands of `python -m course_utils`.

Small corpora are made in the tests (see conftest.py); one test reads the real offline mirror named by
$COURSE_CORPUS and fails, not skips, when it is unset.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import zipfile
from collections import Counter
from pathlib import Path
from urllib.error import URLError

import pytest
import torch

from course_utils import data
from course_utils.__main__ import main
from course_utils.data import EOS_ID, PAD_ID, SOS_ID, UNK_ID, CorpusError, Pair, Vocab

CLEAN = re.compile(r"[a-z.!?]+( [a-z.!?]+)*")  # what a correctly normalised, non-empty sentence looks like


@pytest.fixture(autouse=True)
def no_network_and_private_data_dir(monkeypatch, tmp_path):
    """No test may reach the network or the repository's data/ folder."""
    def refuse(*args, **kwargs):
        raise AssertionError("a test tried to use the network")
    monkeypatch.setattr(data, "urlopen", refuse)
    monkeypatch.setattr(data, "DATA_DIR", tmp_path / "data_dir")


def write_zip(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return path


def zip_bytes(members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------- reading
def test_all_three_layouts_give_the_same_pairs(tmp_path, tiny_lines, tiny_corpus_path):
    text = "\n".join(tiny_lines) + "\n"
    tutorial_zip = write_zip(tmp_path / "data.zip", {"data/eng-fra.txt": text})
    attribution = "\tCC-BY 2.0 (France) Attribution: tatoeba.org #1 (someone) & #2 (someone else)"
    manythings = "\n".join(line + attribution for line in tiny_lines) + "\n"
    manythings_zip = write_zip(tmp_path / "fra-eng.zip", {"_about.txt": "about", "fra.txt": manythings})
    crlf_bom = tmp_path / "windows.tsv"
    crlf_bom.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))

    expected = data.read_pairs(data.read_corpus_lines(tiny_corpus_path))
    assert len(expected) == len(tiny_lines)
    for path in (tutorial_zip, manythings_zip, crlf_bom):
        assert data.read_pairs(data.read_corpus_lines(path)) == expected, path.name


def test_missing_file_error_names_the_path_and_the_fix(tmp_path):
    with pytest.raises(CorpusError, match=r"nowhere\.zip does not exist.*COURSE_CORPUS"):
        data.read_corpus_lines(tmp_path / "nowhere.zip")


def test_corrupt_zip_is_a_clear_error(tmp_path, tiny_lines):
    good = zip_bytes({"data/eng-fra.txt": "\n".join(tiny_lines)})
    truncated = tmp_path / "data.zip"
    truncated.write_bytes(good[: len(good) // 2])
    with pytest.raises(CorpusError, match="not a readable zip archive.*truncated download"):
        data.read_corpus_lines(truncated)


def test_zip_without_a_corpus_member_lists_what_it_holds(tmp_path):
    archive = write_zip(tmp_path / "deu-eng.zip", {"deu.txt": "Hi.\tHallo.\n", "_about.txt": "x"})
    with pytest.raises(CorpusError, match=r"without a corpus file: it holds \['deu.txt', '_about.txt'\]"):
        data.read_corpus_lines(archive)


def test_file_without_tab_separated_pairs_is_refused(tmp_path):
    spaces = tmp_path / "eng-fra.txt"
    spaces.write_text("I am cold.    J'ai froid.\nGo.    Va !\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"not a file of tab-separated pairs: 2 of 2 lines have no tab"):
        data.read_corpus_lines(spaces)
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)))
    with pytest.raises(CorpusError, match="not UTF-8 text"):
        data.read_corpus_lines(binary)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="is empty"):
        data.read_corpus_lines(empty)


def test_check_corpus_reports_lines_and_sha256(tiny_corpus_path, tiny_lines):
    info = data.check_corpus(tiny_corpus_path)
    raw = tiny_corpus_path.read_bytes()
    assert (info.lines, info.n_bytes, info.member) == (len(tiny_lines), len(raw), None)
    assert info.sha256 == hashlib.sha256(raw).hexdigest()
    assert info.known is None and "not a known corpus file" in str(info)
    assert f"{len(tiny_lines):,} sentence pairs" in str(info)


def test_display_path_is_relative_inside_the_repo(tmp_path):
    assert data.display_path(data.REPO_ROOT / "data" / "eng-fra.txt") == os.path.join("data", "eng-fra.txt")
    assert data.display_path(tmp_path / "x.zip") == str((tmp_path / "x.zip").resolve())


# ---------------------------------------------------------------------------------------------- locating
def test_find_corpus_prefers_the_environment_variable(monkeypatch, tiny_corpus_path, tmp_path):
    data.DATA_DIR.mkdir()
    (data.DATA_DIR / "eng-fra.txt").write_text("I am here.\tJe suis ici.\n", encoding="utf-8")
    monkeypatch.setenv("COURSE_CORPUS", str(tiny_corpus_path))
    assert data.find_corpus() == tiny_corpus_path
    monkeypatch.delenv("COURSE_CORPUS")
    assert data.find_corpus() == data.DATA_DIR / "eng-fra.txt"


def test_find_corpus_with_a_wrong_environment_variable_names_it(monkeypatch, tmp_path):
    monkeypatch.setenv("COURSE_CORPUS", str(tmp_path / "typo.zip"))
    with pytest.raises(CorpusError, match=r"COURSE_CORPUS=.*typo\.zip.* but no such file exists"):
        data.find_corpus()


def test_find_corpus_without_corpus_or_download_says_what_to_set(monkeypatch):
    monkeypatch.delenv("COURSE_CORPUS", raising=False)
    with pytest.raises(CorpusError, match="No corpus found: COURSE_CORPUS is not set"):
        data.find_corpus(download=False)


def test_find_corpus_without_network_says_to_set_course_corpus(monkeypatch):
    def offline(url, timeout):
        raise URLError("[Errno -3] Temporary failure in name resolution")
    monkeypatch.delenv("COURSE_CORPUS", raising=False)
    monkeypatch.setattr(data, "urlopen", offline)
    with pytest.raises(CorpusError, match="Could not download.*No network\\? Set COURSE_CORPUS to a local copy"):
        data.find_corpus()
    assert list(data.DATA_DIR.iterdir()) == []  # no temporary files left behind


# ---------------------------------------------------------------------------------------------- downloading
class FakeResponse:
    """Stands in for urlopen's response: serves `body` in chunks, optionally failing after `fail_after` bytes."""

    def __init__(self, body: bytes, content_length: int | None = None, fail_after: int | None = None):
        self.body, self.position, self.fail_after = body, 0, fail_after
        self.headers = {"Content-Length": str(len(body) if content_length is None else content_length)}

    def read(self, size: int) -> bytes:
        if self.fail_after is not None and self.position >= self.fail_after:
            raise ConnectionResetError("connection reset by peer")
        chunk = self.body[self.position:self.position + min(size, 100)]
        self.position += len(chunk)
        return chunk

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.fixture
def served_corpus(tiny_lines):
    """The tiny corpus as the tutorial's data.zip, and its fingerprint."""
    text = ("\n".join(tiny_lines) + "\n").encode("utf-8")
    fingerprint = data.CorpusFingerprint(len(tiny_lines), len(text), hashlib.sha256(text).hexdigest(), "tiny")
    return zip_bytes({"data/eng-fra.txt": text.decode("utf-8")}), text, fingerprint


def serve(monkeypatch, response: FakeResponse) -> list[str]:
    requested = []

    def fake_urlopen(url, timeout):
        requested.append(url)
        return response
    monkeypatch.setattr(data, "urlopen", fake_urlopen)
    return requested


def test_download_verifies_and_moves_the_file_into_place(monkeypatch, tmp_path, served_corpus):
    archive, text, fingerprint = served_corpus
    requested = serve(monkeypatch, FakeResponse(archive))
    path = data.download_corpus(tmp_path, expected=fingerprint, progress=False)
    assert requested == [data.CORPUS_URL]
    assert path == tmp_path / "eng-fra.txt" and path.read_bytes() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eng-fra.txt"]  # temporaries removed


@pytest.mark.parametrize("response, message", [
    (dict(fail_after=300), "ConnectionResetError.*No network\\? Set COURSE_CORPUS"),
    (dict(content_length=10**6), "stopped after .* of 1,000,000 bytes"),
])
def test_download_failing_midway_leaves_nothing_behind(monkeypatch, tmp_path, served_corpus, response, message):
    archive, _, fingerprint = served_corpus
    serve(monkeypatch, FakeResponse(archive, **response))
    with pytest.raises(CorpusError, match=message):
        data.download_corpus(tmp_path, expected=fingerprint, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_download_with_a_wrong_checksum_leaves_nothing_behind(monkeypatch, tmp_path, served_corpus):
    archive, _, _ = served_corpus  # checked against the real tutorial fingerprint: must not match
    serve(monkeypatch, FakeResponse(archive))
    with pytest.raises(CorpusError, match=f"is not the PyTorch tutorial's.*expected 9,541,158 bytes and sha256 "
                                          f"{data.TUTORIAL_CORPUS.sha256}"):
        data.download_corpus(tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_download_of_something_else_than_a_zip_is_refused(monkeypatch, tmp_path, served_corpus):
    serve(monkeypatch, FakeResponse(b"<html>Access denied</html>"))
    with pytest.raises(CorpusError, match="is not a zip archive .*<html>Access denied"):
        data.download_corpus(tmp_path, expected=served_corpus[2], progress=False)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------- normalising
@pytest.mark.parametrize("raw, clean, anchored", [
    ("Va, vite !", "va vite !", "va, vite  !"),
    ("J'ai 20 ans.", "j ai ans .", "j'ai 20 ans ."),
    ("« Salut.", "salut .", "salut ."),   # only the start was dirty: they agree
    ("Ça alors\u202f!", "ca alors !", "ca alors\u202f !"),
])
def test_normalize_cleans_the_whole_string_unlike_the_anchored_bug(raw, clean, anchored):
    assert data.normalize_string(raw) == clean
    assert data.normalize_string_anchored(raw) == anchored


def test_normalized_corpus_has_no_stray_characters_anywhere(tiny_lines):
    sentences = [side for line in tiny_lines for side in line.split("\t")]
    sentences += ["  Hé, toi -- 3 fois!!  ", "C'est l'été.", "«Non», dit-il…", "œuvre", "Tom's 2nd car."]
    for sentence in sentences:
        clean = data.normalize_string(sentence)
        assert CLEAN.fullmatch(clean), (sentence, clean)
        assert data.normalize_string(clean) == clean  # idempotent
    buggy = [data.normalize_string_anchored(s) for s in sentences]
    assert sum(not CLEAN.fullmatch(s) for s in buggy) >= 10  # the anchored regex misses all of these


def test_unicode_to_ascii_drops_accents_only():
    assert data.unicode_to_ascii("déjà vu, garçon, Noël") == "deja vu, garcon, Noel"
    assert data.unicode_to_ascii("cœur") == "cœur"  # no decomposition: normalize_string turns it into a space


# ---------------------------------------------------------------------------------------------- pairs
def test_read_pairs_direction_and_extra_columns():
    lines = ["I'm cold.\tJ'ai froid.\tCC-BY 2.0 (France) Attribution: tatoeba.org"]
    assert data.read_pairs(lines) == [Pair("j ai froid .", "i m cold .")]
    assert data.read_pairs(lines, reverse=False) == [Pair("i m cold .", "j ai froid .")]
    with pytest.raises(CorpusError, match="Line 2 has no tab"):
        data.read_pairs(lines + ["no tab here"])


def test_keep_pair_is_the_tutorials_filter():
    nine = "i am " + " ".join(["very"] * 6) + " ."          # 9 words
    ten = "i am " + " ".join(["very"] * 7) + " ."           # 10 words
    assert data.keep_pair(Pair("je suis .", nine)) and not data.keep_pair(Pair("je suis .", ten))
    assert not data.keep_pair(Pair(ten, "i am ."))           # the source side is limited too
    assert data.keep_pair(Pair("je suis .", ten), max_length=None)
    assert not data.keep_pair(Pair("j ai froid .", "are you cold ?"))
    assert data.keep_pair(Pair("j ai froid .", "are you cold ?"), prefixes=None)
    assert data.keep_pair(Pair("j ai froid .", "are you cold ?"), prefixes=("are you",))
    assert not data.keep_pair(Pair("i am cold .", "j ai froid ."))  # reverse=True: the prefix is on the target
    assert data.keep_pair(Pair("i am cold .", "j ai froid ."), reverse=False)
    assert not data.keep_pair(Pair("", "i am ."), prefixes=None)  # an empty side is never kept
    assert not data.keep_pair(Pair("a", "he s"), prefixes=("he s ",))  # prefixes match on characters, with the space


def test_filter_pairs_keeps_order_and_drops_the_right_lines(tiny_lines, tiny_pairs):
    everything = data.read_pairs(tiny_lines)
    assert tiny_pairs == [pair for pair in everything if data.keep_pair(pair)]
    dropped = {pair.target for pair in everything} - {pair.target for pair in tiny_pairs}
    assert dropped == {"are you tired ?", "go .", "run !", "hurry please !",
                       "i am very happy to see you again after all these years ."}


# ---------------------------------------------------------------------------------------------- vocabulary
def test_vocab_reserved_ids_counts_and_order():
    vocab = Vocab.build(["i am cold .", "i am here .", "he is cold ."], name="eng")
    assert vocab.index2word[:4] == ["<pad>", "<sos>", "<eos>", "<unk>"]
    assert [vocab.word2index[t] for t in ("<pad>", "<sos>", "<eos>", "<unk>")] == [PAD_ID, SOS_ID, EOS_ID, UNK_ID]
    assert vocab.word_count == Counter({".": 3, "i": 2, "am": 2, "cold": 2, "here": 1, "he": 1, "is": 1})
    assert vocab.index2word[4:] == [".", "am", "cold", "i", "he", "here", "is"]  # frequency, then alphabet
    assert len(vocab) == 11 and "cold" in vocab and "<unk>" in vocab and "cat" not in vocab
    assert repr(vocab) == ("Vocab(name='eng', size=11 (4 special + 7 words), min_freq=1, words_seen=7, "
                           "most frequent: ., am, cold, i, he)")


def test_vocab_min_freq_maps_rare_words_to_unk():
    vocab = Vocab.build(["i am cold .", "i am here ."], min_freq=2)
    assert vocab.index2word[4:] == [".", "am", "i"]
    assert vocab.word_count["here"] == 1  # still counted
    assert vocab.encode("i am here .") == [vocab["i"], vocab["am"], UNK_ID, vocab["."], EOS_ID]
    assert vocab.unknown_words("i am here cold .") == ["here", "cold"]
    with pytest.raises(ValueError, match="min_freq must be at least 1"):
        Vocab.build(["a"], min_freq=0)


def test_vocab_round_trip_on_every_tiny_sentence(tiny_pairs):
    vocab = Vocab.build(pair.source for pair in tiny_pairs)
    for pair in tiny_pairs:
        ids = vocab.encode(pair.source)
        assert ids[-1] == EOS_ID and UNK_ID not in ids
        assert " ".join(vocab.decode(ids)) == pair.source
        assert vocab.encode(pair.source.split(" "), add_eos=False) == ids[:-1]  # token lists work too


def test_vocab_unknown_never_raises_and_decode_handles_specials():
    vocab = Vocab.build(["il est grand ."])
    assert vocab["zzz"] == UNK_ID and vocab.encode("il est zzz .")[2] == UNK_ID
    ids = [SOS_ID, vocab["il"], UNK_ID, PAD_ID, vocab["."], EOS_ID, vocab["est"], PAD_ID]
    assert vocab.decode(ids) == ["il", "<unk>", "."]
    assert vocab.decode(torch.tensor(ids)) == ["il", "<unk>", "."]
    assert vocab.decode(ids, skip_special=False) == ["<sos>", "il", "<unk>", "<pad>", ".", "<eos>", "est", "<pad>"]
    with pytest.raises(ValueError, match="Id 99 is outside this vocabulary"):
        vocab.decode([99])
    assert vocab.encode("") == [EOS_ID]


def test_vocab_refuses_reserved_words_and_bad_construction():
    with pytest.raises(ValueError, match="reserved tokens \\['<unk>'\\]"):
        Vocab.build(["a <unk> b"])
    with pytest.raises(ValueError, match="first words must be"):
        Vocab(["a", "b"])
    with pytest.raises(ValueError, match="missing keys \\['index2word'\\]"):
        Vocab.from_dict({"word_count": {}, "min_freq": 1})


def test_vocab_to_dict_is_plain_python_and_loads_with_weights_only(tmp_path, tiny_pairs):
    vocab = Vocab.build((pair.target for pair in tiny_pairs), min_freq=2, name="eng")
    state = vocab.to_dict()
    assert json.loads(json.dumps(state)) == state  # only lists, dicts, str, int, None
    assert Vocab.from_dict(state) == vocab
    torch.save({"vocab": state}, tmp_path / "v.pt")
    assert Vocab.from_dict(torch.load(tmp_path / "v.pt", weights_only=True)["vocab"]) == vocab
    assert Vocab.build(["a b"]) != Vocab.build(["a c"])


# ---------------------------------------------------------------------------------------------- splitting
def test_split_is_grouped_by_source_complete_and_seeded(tiny_pairs):
    splits = data.split_pairs(tiny_pairs, seed=0)
    sources = [{pair.source for pair in part} for part in splits]
    assert not (sources[0] & sources[1] or sources[0] & sources[2] or sources[1] & sources[2])
    assert Counter(splits.train + splits.dev + splits.test) == Counter(tiny_pairs)
    n_sources = len({pair.source for pair in tiny_pairs})
    assert [len(s) for s in sources] == [round(0.8 * n_sources), round(0.1 * n_sources),
                                         n_sources - round(0.8 * n_sources) - round(0.1 * n_sources)]
    assert data.split_pairs(tiny_pairs, seed=0) == splits
    assert data.split_pairs(list(reversed(tiny_pairs)), seed=0).train == list(reversed(splits.train))
    assert data.split_pairs(tiny_pairs, seed=1) != splits
    shared = Counter(pair.source for pair in tiny_pairs)
    assert max(shared.values()) > 1  # the tiny corpus does have a French sentence with several translations


def test_split_refuses_bad_fractions_and_empty_input(tiny_pairs):
    with pytest.raises(ValueError, match="summing to 1"):
        data.split_pairs(tiny_pairs, fractions=(0.8, 0.1))
    with pytest.raises(ValueError, match="summing to 1"):
        data.split_pairs(tiny_pairs, fractions=(0.8, 0.3, -0.1))
    with pytest.raises(ValueError, match="No pairs to split"):
        data.split_pairs([])


def test_course_data_vocabularies_come_from_train_only(tiny_course_data):
    course = tiny_course_data
    assert course.src_vocab == Vocab.build((p.source for p in course.splits.train), name="fra")
    assert course.tgt_vocab == Vocab.build((p.target for p in course.splits.train), name="eng")
    held_out = {w for p in course.splits.dev + course.splits.test for w in p.source.split(" ")}
    assert held_out - set(course.src_vocab.index2word)  # some dev/test words are unknown: nothing leaked


# ---------------------------------------------------------------------------------------------- tensors
def test_tensor_from_sentence_is_the_tutorials_column():
    vocab = Vocab.build(["il est grand ."])
    tensor = data.tensor_from_sentence(vocab, "il est petit .")
    assert tensor.shape == (5, 1) and tensor.dtype == torch.long
    assert tensor[:, 0].tolist() == [vocab["il"], vocab["est"], UNK_ID, vocab["."], EOS_ID]


def test_collate_pads_and_masks(tiny_course_data):
    course = tiny_course_data
    dataset = data.TranslationDataset(course.splits.train[:5], course.src_vocab, course.tgt_vocab)
    batch = data.collate_batch([dataset[i] for i in range(5)])
    lengths = [len(dataset[i][0]) for i in range(5)]
    assert batch.src.shape == (5, max(lengths)) and batch.src_lengths.tolist() == lengths
    assert batch.tgt.shape == (5, max(len(dataset[i][1]) for i in range(5)))
    assert torch.equal(batch.src_mask, batch.src != PAD_ID)
    for row in range(5):
        n = lengths[row]
        assert batch.src[row, n - 1] == EOS_ID and batch.tgt[row, batch.tgt_lengths[row] - 1] == EOS_ID
        assert (batch.src[row, n:] == PAD_ID).all() and batch.tgt[row, 0] != SOS_ID
        assert " ".join(course.src_vocab.decode(batch.src[row])) == dataset.pairs[row].source
    moved = batch.to("meta")
    assert moved.src.device.type == "meta" and moved.tgt_lengths.device.type == "meta"
    assert moved.src_lengths.device.type == "cpu"
    with pytest.raises(ValueError, match="no items"):
        data.collate_batch([])


def batches_as_lists(loader) -> list[list[str]]:
    vocab = loader.dataset.src_vocab
    return [[" ".join(vocab.decode(row)) for row in batch.src] for batch in loader]


@pytest.mark.parametrize("bucket", [True, False])
def test_loader_covers_every_pair_once_and_is_deterministic(tiny_pairs, bucket):
    vocab_src = Vocab.build(p.source for p in tiny_pairs)
    vocab_tgt = Vocab.build(p.target for p in tiny_pairs)
    loader = data.make_loader(tiny_pairs, vocab_src, vocab_tgt, batch_size=4, bucket=bucket, seed=3)
    first_epoch, second_epoch = batches_as_lists(loader), batches_as_lists(loader)
    assert Counter(s for batch in first_epoch for s in batch) == Counter(p.source for p in tiny_pairs)
    assert len(first_epoch) == len(loader) == 10
    assert first_epoch != second_epoch  # a new order each epoch
    again = data.make_loader(tiny_pairs, vocab_src, vocab_tgt, batch_size=4, bucket=bucket, seed=3)
    assert batches_as_lists(again) == first_epoch and batches_as_lists(again) == second_epoch
    other = data.make_loader(tiny_pairs, vocab_src, vocab_tgt, batch_size=4, bucket=bucket, seed=4)
    assert batches_as_lists(other) != first_epoch


def test_bucketing_groups_similar_lengths(tiny_pairs):
    vocab_src = Vocab.build(p.source for p in tiny_pairs)
    vocab_tgt = Vocab.build(p.target for p in tiny_pairs)

    def padding(loader) -> int:
        return sum(int((~batch.src_mask).sum()) for batch in loader)
    bucketed = data.make_loader(tiny_pairs, vocab_src, vocab_tgt, batch_size=4, bucket=True)
    plain = data.make_loader(tiny_pairs, vocab_src, vocab_tgt, batch_size=4, bucket=False)
    assert padding(bucketed) < padding(plain)
    in_order = data.make_loader(tiny_pairs, vocab_src, vocab_tgt, batch_size=4, shuffle=False)
    lengths = [batch.src_lengths.tolist() for batch in in_order]
    assert sum(lengths, []) == sorted(sum(lengths, []))  # without shuffling: shortest first
    first_lengths = [[int(batch.src_lengths.min()) for batch in data.make_loader(
        tiny_pairs, vocab_src, vocab_tgt, batch_size=4, seed=seed)] for seed in range(3)]
    assert all(lengths != sorted(lengths) for lengths in first_lengths)  # with shuffling: batches shuffled
    assert data.BucketBatchSampler([1, 2, 3], batch_size=2).__len__() == 2
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        data.BucketBatchSampler([1], batch_size=0)


# ---------------------------------------------------------------------------------------------- one call, CLI
def test_load_course_data_prints_counts(tiny_corpus_path, tiny_lines, tiny_pairs, capsys):
    course = data.load_course_data(path=tiny_corpus_path)
    out = capsys.readouterr().out
    assert f"Read {len(tiny_lines)} sentence pairs\nKept {len(tiny_pairs)} sentence pairs\n" in out
    assert f"fra {len(course.src_vocab)}, eng {len(course.tgt_vocab)}" in out
    assert course.lines_read == len(tiny_lines) and course.pairs == tiny_pairs
    assert course.corpus_path == tiny_corpus_path and course.reverse
    forward = data.load_course_data(path=tiny_corpus_path, reverse=False, verbose=False)
    assert capsys.readouterr().out == ""
    assert forward.pairs == [Pair(p.target, p.source) for p in tiny_pairs]
    assert forward.src_vocab.name == "eng"
    with pytest.raises(CorpusError, match="The filter kept none"):
        data.load_course_data(path=tiny_corpus_path, prefixes=("xyz",), verbose=False)


def test_cli_data_check_and_stats(monkeypatch, tiny_corpus_path, tiny_pairs, capsys):
    monkeypatch.setenv("COURSE_CORPUS", str(tiny_corpus_path))
    assert main(["data", "check"]) == 0
    assert "42 sentence pairs" in capsys.readouterr().out
    assert main(["data", "stats", "--examples", "3"]) == 0
    out = capsys.readouterr().out
    assert f"kept:        {len(tiny_pairs)} sentence pairs (fra -> eng)" in out
    assert len(re.findall(r"^  .+  ->  .+$", out, flags=re.MULTILINE)) == 3
    monkeypatch.delenv("COURSE_CORPUS")
    assert main(["data", "check", "--no-download"]) == 1
    assert "No corpus found" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- the real mirror
def test_real_corpus_mirror():
    """The offline mirror (manythings 2017-09-29) named by $COURSE_CORPUS; CI sets it."""
    named = os.environ.get("COURSE_CORPUS")
    if not named:
        pytest.fail("COURSE_CORPUS is not set: point it to the offline mirror, e.g. "
                    "COURSE_CORPUS=/work/shared/data/fra-eng-2017-09-29.zip (see data/README.md).")
    assert data.check_corpus(named).known == data.MIRROR_CORPUS
    course = data.load_course_data(verbose=False)
    assert course.corpus_path == Path(named)
    assert (course.lines_read, len(course.pairs)) == (142_787, 10_922)
    assert [len(part) for part in course.splits] == [8_750, 1_091, 1_081]
    assert (len(course.src_vocab), len(course.tgt_vocab)) == (4_024, 2_636)  # train only, 4 special tokens
    assert (len(Vocab.build(p.source for p in course.pairs)), len(Vocab.build(p.target for p in course.pairs))) \
        == (4_416, 2_845)
    train_sources = {p.source for p in course.splits.train}
    assert not train_sources & {p.source for p in course.splits.dev + course.splits.test}
    assert all(CLEAN.fullmatch(side) for pair in course.pairs for side in pair)
