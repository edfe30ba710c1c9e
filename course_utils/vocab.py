"""Words and ids: the vocabulary of one language, with the four special tokens every model shares, and the
tutorial's sentence-length limit (MAX_LENGTH) that both the data filter and the location decoder use.

    vocab = Vocab.build(["je suis fatigue .", "il est grand ."])   # ids 0-3 special, then words by frequency
    vocab.encode("je suis grand .")    # [4, 5, 9, 6, 2]: unknown words -> UNK_ID, EOS_ID appended
    vocab.decode([4, 5, 2])            # ['je', 'suis']: stops at EOS

Introduced in notebook 01.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from torch import Tensor

__all__ = ["MAX_LENGTH", "PAD_ID", "SOS_ID", "EOS_ID", "UNK_ID", "EOS_TOKEN", "UNK_TOKEN", "SPECIAL_TOKENS", "Vocab"]

# The 2017 tutorial's MAX_LENGTH: the data filter keeps pairs with FEWER than this many words on each side
# (data.filter_pairs), and the tutorial's location decoder has this many attention slots (decoder.AttnDecoderRNN),
# so every kept source (at most 9 words + EOS) fits. Defined here, in the module both sides import.
MAX_LENGTH = 10

PAD_ID, SOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
_PAD_TOKEN, _SOS_TOKEN, EOS_TOKEN, UNK_TOKEN = "<pad>", "<sos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (_PAD_TOKEN, _SOS_TOKEN, EOS_TOKEN, UNK_TOKEN)  # in id order


def _tokens(sentence: str | Sequence[str]) -> list[str]:
    """A normalised sentence is split on single spaces; a list of tokens is taken as is."""
    if isinstance(sentence, str):
        return sentence.split(" ") if sentence else []
    return list(sentence)


class Vocab:
    """Word <-> id maps for one language: ids 0-3 are <pad> <sos> <eos> <unk>, then words by frequency.

    Vocab.build(sentences, min_freq=1) counts words; words seen fewer than `min_freq` times map to <unk>.
    Attributes: word2index (dict), index2word (list), word_count (Counter of every word seen), min_freq, name.
    Introduced in notebook 01.
    """

    def __init__(self, index2word: Sequence[str], word_count: Counter | dict | None = None,
                 min_freq: int = 1, name: str | None = None):
        index2word = list(index2word)
        if tuple(index2word[:len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
            raise ValueError(f"A Vocab's first words must be {SPECIAL_TOKENS}, got {index2word[:len(SPECIAL_TOKENS)]}. "
                             f"Use Vocab.build(sentences) or Vocab.from_dict(d).")
        if len(set(index2word)) != len(index2word):
            raise ValueError("A Vocab's words must be unique; use Vocab.build(sentences).")
        self.index2word = index2word
        self.word2index = {word: index for index, word in enumerate(index2word)}
        self.word_count = Counter(word_count or {})
        self.min_freq = min_freq
        self.name = name

    @classmethod
    def build(cls, sentences: Iterable[str | Sequence[str]], min_freq: int = 1, name: str | None = None) -> Vocab:
        """Count the words of `sentences`; keep those seen at least `min_freq` times, most frequent first
        (ties alphabetically, so the ids do not depend on sentence order)."""
        if min_freq < 1:
            raise ValueError(f"min_freq must be at least 1, got {min_freq}.")
        word_count = Counter(word for sentence in sentences for word in _tokens(sentence))
        reserved = [word for word in SPECIAL_TOKENS if word in word_count]
        if reserved:
            raise ValueError(f"The sentences contain reserved tokens {reserved}; normalise them first "
                             f"(normalize_string removes '<' and '>').")
        kept = sorted((word for word, count in word_count.items() if count >= min_freq),
                      key=lambda word: (-word_count[word], word))
        return cls(list(SPECIAL_TOKENS) + kept, word_count, min_freq, name)

    def __len__(self) -> int:
        return len(self.index2word)

    def __contains__(self, word: str) -> bool:
        return word in self.word2index

    def __getitem__(self, word: str) -> int:
        """The id of `word`, UNK_ID if unknown (never a KeyError)."""
        return self.word2index.get(word, UNK_ID)

    def encode(self, sentence: str | Sequence[str], add_eos: bool = True) -> list[int]:
        """Ids of a normalised sentence (or token list); unknown words -> UNK_ID; EOS_ID appended if add_eos."""
        ids = [self.word2index.get(word, UNK_ID) for word in _tokens(sentence)]
        return ids + [EOS_ID] if add_eos else ids

    def decode(self, ids: Iterable[int] | Tensor, skip_special: bool = True) -> list[str]:
        """Words of `ids` (a list or a 1-D tensor). With skip_special, stops at the first EOS and drops
        <pad> and <sos>; <unk> is kept, since it stands for a real word."""
        if isinstance(ids, Tensor):
            ids = ids.tolist()
        words = []
        for index in ids:
            index = int(index)
            if not 0 <= index < len(self):
                raise ValueError(f"Id {index} is outside this vocabulary (size {len(self)}); "
                                 f"were the ids made with another Vocab?")
            if skip_special and index == EOS_ID:
                break
            if skip_special and index in (PAD_ID, SOS_ID):
                continue
            words.append(self.index2word[index])
        return words

    def unknown_words(self, sentence: str | Sequence[str]) -> list[str]:
        """The words of `sentence` that this vocabulary maps to <unk>, in order."""
        return [word for word in _tokens(sentence) if word not in self.word2index]

    def to_dict(self) -> dict:
        """Plain Python types only (lists, dicts, str, int), so checkpoints load with weights_only=True."""
        return {"index2word": list(self.index2word), "word_count": dict(self.word_count),
                "min_freq": self.min_freq, "name": self.name}

    @classmethod
    def from_dict(cls, d: dict) -> Vocab:
        """The inverse of `to_dict`."""
        missing = {"index2word", "word_count", "min_freq"} - set(d)
        if missing:
            raise ValueError(f"Not a Vocab.to_dict() result: missing keys {sorted(missing)}.")
        return cls(d["index2word"], d["word_count"], d["min_freq"], d.get("name"))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocab):
            return NotImplemented
        return (self.index2word, self.word_count, self.min_freq, self.name) == (
            other.index2word, other.word_count, other.min_freq, other.name)

    def __repr__(self) -> str:
        name = f"name={self.name!r}, " if self.name else ""
        top = ", ".join(self.index2word[len(SPECIAL_TOKENS):len(SPECIAL_TOKENS) + 5])
        special = len(SPECIAL_TOKENS)
        return (f"Vocab({name}size={len(self):,} ({special} special + {len(self) - special:,} words), "
                f"min_freq={self.min_freq}, words_seen={len(self.word_count):,}, most frequent: {top})")
