"""Words and ids of one language (ids 0-3: the special tokens every model shares), and MAX_LENGTH, the tutorial's
sentence-length limit. Introduced in notebook 01."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from torch import Tensor

__all__ = ["MAX_LENGTH", "PAD_ID", "SOS_ID", "EOS_ID", "UNK_ID", "EOS_TOKEN", "UNK_TOKEN", "SPECIAL_TOKENS", "Vocab"]

MAX_LENGTH = 10  # kept pairs have FEWER words a side (data.keep_pair); the attention slots of AttnDecoderRNN
PAD_ID, SOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
_PAD_TOKEN, _SOS_TOKEN, EOS_TOKEN, UNK_TOKEN = "<pad>", "<sos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (_PAD_TOKEN, _SOS_TOKEN, EOS_TOKEN, UNK_TOKEN)  # in id order


def _tokens(sentence: str | Sequence[str]) -> list[str]:
    """A normalised sentence split on single spaces; a list of tokens as is."""
    return sentence.split(" ") if isinstance(sentence, str) and sentence else list(sentence)


class Vocab:
    """Word <-> id maps (word2index, index2word): <pad> <sos> <eos> <unk>, then words by frequency; words seen fewer
    than min_freq times and unknown words map to UNK_ID; word_count counts every word. Introduced in notebook 01."""

    def __init__(self, index2word: Sequence[str], word_count: Counter | dict | None = None,
                 min_freq: int = 1, name: str | None = None):
        index2word = list(index2word)
        if tuple(index2word[:len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
            raise ValueError(f"A Vocab's first words must be {SPECIAL_TOKENS}, got {index2word[:len(SPECIAL_TOKENS)]}. "
                             f"Use Vocab.build(sentences) or Vocab.from_dict(d).")
        if len(set(index2word)) != len(index2word):
            raise ValueError("A Vocab's words must be unique; use Vocab.build(sentences).")
        self.index2word, self.word2index = index2word, {word: index for index, word in enumerate(index2word)}
        self.word_count, self.min_freq, self.name = Counter(word_count or {}), min_freq, name

    @classmethod
    def build(cls, sentences: Iterable[str | Sequence[str]], min_freq: int = 1, name: str | None = None) -> Vocab:
        """Keep the words seen at least `min_freq` times, most frequent first, ties alphabetically."""
        if min_freq < 1:
            raise ValueError(f"min_freq must be at least 1, got {min_freq}.")
        word_count = Counter(word for sentence in sentences for word in _tokens(sentence))
        if reserved := [word for word in SPECIAL_TOKENS if word in word_count]:
            raise ValueError(f"The sentences contain reserved tokens {reserved}; normalise them first "
                             f"(normalize_string removes '<' and '>').")
        kept = sorted((w for w, count in word_count.items() if count >= min_freq), key=lambda w: (-word_count[w], w))
        return cls(list(SPECIAL_TOKENS) + kept, word_count, min_freq, name)

    def __len__(self) -> int:
        return len(self.index2word)

    def __contains__(self, word: str) -> bool:
        return word in self.word2index

    def __getitem__(self, word: str) -> int:
        return self.word2index.get(word, UNK_ID)  # never a KeyError

    def encode(self, sentence: str | Sequence[str], add_eos: bool = True) -> list[int]:
        """Ids of a normalised sentence (or token list); unknown words -> UNK_ID; EOS_ID appended if add_eos."""
        ids = [self.word2index.get(word, UNK_ID) for word in _tokens(sentence)]
        return ids + [EOS_ID] if add_eos else ids

    def decode(self, ids: Iterable[int] | Tensor, skip_special: bool = True) -> list[str]:
        """Words of `ids` (a list or a 1-D tensor); skip_special stops at the first EOS and drops <pad> and <sos>."""
        words = []
        for index in map(int, ids.tolist() if isinstance(ids, Tensor) else ids):
            if not 0 <= index < len(self):
                raise ValueError(f"Id {index} is outside this vocabulary (size {len(self)}); "
                                 f"were the ids made with another Vocab?")
            if skip_special and index == EOS_ID:
                break
            if not (skip_special and index in (PAD_ID, SOS_ID)):
                words.append(self.index2word[index])
        return words

    def unknown_words(self, sentence: str | Sequence[str]) -> list[str]:
        return [word for word in _tokens(sentence) if word not in self.word2index]

    def to_dict(self) -> dict:
        """Plain Python types only (lists, dicts, str, int), so checkpoints load with weights_only=True."""
        return {"index2word": list(self.index2word), "word_count": dict(self.word_count),
                "min_freq": self.min_freq, "name": self.name}

    @classmethod
    def from_dict(cls, d: dict) -> Vocab:
        if missing := {"index2word", "word_count", "min_freq"} - set(d):
            raise ValueError(f"Not a Vocab.to_dict() result: missing keys {sorted(missing)}.")
        return cls(d["index2word"], d["word_count"], d["min_freq"], d.get("name"))

    def __eq__(self, other: object) -> bool:  # index2word, word2index, word_count, min_freq, name
        return vars(self) == vars(other) if isinstance(other, Vocab) else NotImplemented

    def __repr__(self) -> str:
        special, name = len(SPECIAL_TOKENS), f"name={self.name!r}, " if self.name else ""
        top = ", ".join(self.index2word[special:special + 5])
        return (f"Vocab({name}size={len(self):,} ({special} special + {len(self) - special:,} words), "
                f"min_freq={self.min_freq}, words_seen={len(self.word_count):,}, most frequent: {top})")
