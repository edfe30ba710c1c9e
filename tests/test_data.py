"""Tests for course_utils.data (notebook 01) and the `data` commands of `python -m course_utils`."""
from __future__ import annotations

import re
from collections import Counter

import pytest
import torch

from course_utils import data
from course_utils.__main__ import main
from course_utils.corpus import CorpusError
from course_utils.data import Pair
from course_utils.vocab import EOS_ID, PAD_ID, SOS_ID, UNK_ID, Vocab

CLEAN = re.compile(r"[a-z.!?]+( [a-z.!?]+)*")  # what a correctly normalised, non-empty sentence looks like


pytestmark = pytest.mark.usefixtures("offline_and_private_data_dir")  # tests/conftest.py


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
    assert moved.src.device.type == "meta" and moved.tgt.device.type == "meta"
    assert moved.src_lengths.device.type == "cpu" and moved.tgt_lengths.device.type == "cpu"  # read on the CPU
    with pytest.raises(ValueError, match="no items"):
        data.collate_batch([])


def batches_as_lists(loader) -> list[list[str]]:
    vocab = loader.dataset.src_vocab
    return [[" ".join(vocab.decode(row)) for row in batch.src] for batch in loader]


@pytest.mark.parametrize("bucket", [True, False])
def test_loader_covers_every_pair_once_and_is_deterministic(tiny_pairs, bucket):
    vocab_src = Vocab.build(p.source for p in tiny_pairs)
    vocab_tgt = Vocab.build(p.target for p in tiny_pairs)
    bucket_by = "source" if bucket else None
    loader = data.make_loader(tiny_pairs, vocab_src, vocab_tgt, batch_size=4, bucket_by=bucket_by, seed=3)
    first_epoch, second_epoch = batches_as_lists(loader), batches_as_lists(loader)
    assert Counter(s for batch in first_epoch for s in batch) == Counter(p.source for p in tiny_pairs)
    assert len(first_epoch) == len(loader) == 10
    assert first_epoch != second_epoch  # a new order each epoch
    again = data.make_loader(tiny_pairs, vocab_src, vocab_tgt, batch_size=4, bucket_by=bucket_by, seed=3)
    assert batches_as_lists(again) == first_epoch and batches_as_lists(again) == second_epoch
    other = data.make_loader(tiny_pairs, vocab_src, vocab_tgt, batch_size=4, bucket_by=bucket_by, seed=4)
    assert batches_as_lists(other) != first_epoch


def test_bucketing_groups_similar_lengths(tiny_pairs):
    vocab_src = Vocab.build(p.source for p in tiny_pairs)
    vocab_tgt = Vocab.build(p.target for p in tiny_pairs)

    def padding(loader) -> int:
        return sum(int((~batch.src_mask).sum()) for batch in loader)
    bucketed = data.make_loader(tiny_pairs, vocab_src, vocab_tgt, batch_size=4, bucket_by="source")
    plain = data.make_loader(tiny_pairs, vocab_src, vocab_tgt, batch_size=4, bucket_by=None)
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
    forward = data.load_course_data(path=tiny_corpus_path, reverse=False, log=None)
    assert capsys.readouterr().out == ""
    assert forward.pairs == [Pair(p.target, p.source) for p in tiny_pairs]
    assert forward.src_vocab.name == "eng"
    with pytest.raises(CorpusError, match="The filter kept none"):
        data.load_course_data(path=tiny_corpus_path, prefixes=("xyz",), log=None)
    lines = []
    data.load_course_data(path=tiny_corpus_path, log=lines.append)  # any function of one line takes the report
    assert capsys.readouterr().out == "" and lines[0] == f"Read {len(tiny_lines)} sentence pairs" and len(lines) == 4


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


def test_length_batches_and_pad_ids_are_the_sort_cut_pad_rule():
    lengths = [3, 1, 2, 1, 3]
    assert data.length_batches(lengths, 2) == [[1, 3], [2, 0], [4]]  # shortest first, ties in input order
    ids, got_lengths = data.pad_ids([torch.tensor([5, 2]), torch.tensor([7, 8, 2])])
    assert ids.tolist() == [[5, 2, PAD_ID], [7, 8, 2]] and got_lengths.tolist() == [2, 3]
