"""Tests for course_utils.vocab (notebook 01): special ids, counts and order, unknown words, round trips."""
from __future__ import annotations

import json
from collections import Counter

import pytest
import torch

from course_utils.vocab import EOS_ID, PAD_ID, SOS_ID, UNK_ID, Vocab


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
