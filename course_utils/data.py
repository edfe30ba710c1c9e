"""From corpus lines to padded batches: normalise, filter, split by source sentence, index, batch.

    pairs = filter_pairs(read_pairs(read_corpus_lines(find_corpus())))  # Pair(source=French, target=English)
    splits = split_pairs(pairs, seed=0)  # 80/10/10 by French sentence; vocabularies come from splits.train
    loader = make_loader(splits.train, src_vocab, tgt_vocab)  # Batch(src (B, S), ..., tgt (B, T), ...)

`load_course_data()` does all of it in one call. Introduced in notebook 01.
"""
from __future__ import annotations

import os
import random
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import torch
from torch import Tensor
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset, Sampler

from course_utils.corpus import CorpusError, display_path, find_corpus, read_corpus_lines
from course_utils.runtime import Log, reporter
from course_utils.vocab import MAX_LENGTH, PAD_ID, Vocab

__all__ = ["ENG_PREFIXES", "unicode_to_ascii", "normalize_string", "normalize_string_anchored", "Pair", "read_pairs",
           "keep_pair", "filter_pairs", "Splits", "split_pairs", "tensor_from_sentence", "Batch",
           "TranslationDataset", "lengths_to_mask", "pad_ids", "collate_batch", "BucketBatchSampler",
           "length_batches", "make_loader", "CourseData", "course_data_from_pairs", "load_course_data"]

ENG_PREFIXES = ("i am ", "i m ", "he is", "he s ", "she is", "she s ", "you are", "you re ",
                "we are", "we re ", "they are", "they re ")


def unicode_to_ascii(s: str) -> str:
    """Drop accents: NFD splits 'é' into 'e' + a combining accent (category Mn), which is dropped; characters
    without a decomposition ('œ') pass through."""
    if s.isascii():
        return s  # fast path: most English lines
    return "".join(c for c in unicodedata.normalize("NFD", s) if unicodedata.category(c) != "Mn")


def normalize_string(s: str) -> str:
    """The tutorial's normalisation: lower case, no accents, a space before . ! ?, every run of other non-letters
    turned into one space, ends stripped: "J'ai 20 ans." -> "j ai ans ."   "Va, vite !" -> "va vite !"."""
    s = unicode_to_ascii(s.lower().strip())
    s = re.sub(r"([.!?])", r" \1", s)
    s = re.sub(r"[^a-zA-Z.!?]+", " ", s)  # unanchored: cleans everywhere, and collapses space runs
    return s.strip()


def normalize_string_anchored(s: str) -> str:
    """EXHIBIT of a popular bug, not for training: the cleaning regex is anchored (`^[^a-zA-Z.!?]+`), so only the
    start is cleaned: "J'ai 20 ans." -> "j'ai 20 ans ."   "Va, vite !" -> "va, vite  !"."""
    s = unicode_to_ascii(s.lower().strip())
    s = re.sub(r"([.!?])", r" \1", s)
    s = re.sub(r"^[^a-zA-Z.!?]+", " ", s)  # the bug: '^' anchors the match at the start of the string
    return s.strip()


class Pair(NamedTuple):
    """One normalised sentence pair. With reverse=True (the course default) source is French, target English."""
    source: str
    target: str


def read_pairs(lines: Iterable[str], reverse: bool = True) -> list[Pair]:
    """Normalise 'English<TAB>French[<TAB>...]' lines into Pairs (French -> English when reverse)."""
    pairs = []
    for number, line in enumerate(lines, 1):
        fields = line.split("\t")
        if len(fields) < 2:
            raise CorpusError(f"Line {number} has no tab: {line[:60]!r}. Expected 'English<TAB>French'.")
        english, french = normalize_string(fields[0]), normalize_string(fields[1])
        pairs.append(Pair(french, english) if reverse else Pair(english, french))
    return pairs


def keep_pair(pair: Pair, max_length: int | None = MAX_LENGTH, prefixes: Sequence[str] | None = ENG_PREFIXES,
              reverse: bool = True) -> bool:
    """The tutorial's filter: both sides non-empty and fewer than `max_length` words, the English side starting
    with one of `prefixes`; None switches a test off."""
    if not (pair.source and pair.target):
        return False
    if max_length is not None and max(len(pair.source.split(" ")), len(pair.target.split(" "))) >= max_length:
        return False
    english = pair.target if reverse else pair.source
    return prefixes is None or english.startswith(tuple(prefixes))


def filter_pairs(pairs: Iterable[Pair], max_length: int | None = MAX_LENGTH,
                 prefixes: Sequence[str] | None = ENG_PREFIXES, reverse: bool = True) -> list[Pair]:
    """The pairs that pass `keep_pair`, in their original order."""
    return [pair for pair in pairs if keep_pair(pair, max_length, prefixes, reverse)]


class Splits(NamedTuple):
    """Train/dev/test pairs; no source sentence appears in two of them. Introduced in appendix A4."""
    train: list[Pair]
    dev: list[Pair]
    test: list[Pair]


def split_pairs(pairs: Sequence[Pair], fractions: Sequence[float] = (0.8, 0.1, 0.1), seed: int = 0) -> Splits:
    """A seeded split by SOURCE sentence: all translations of one French sentence land in one split; `fractions`
    are of distinct sources, so pair counts are close to them. Pairs keep their input order."""
    if len(fractions) != 3 or min(fractions) < 0 or abs(sum(fractions) - 1) > 1e-6:
        raise ValueError(f"fractions must be three non-negative numbers summing to 1 (train, dev, test), "
                         f"got {tuple(fractions)}.")
    if not pairs:
        raise ValueError("No pairs to split: the filter kept nothing. Loosen max_length or prefixes.")
    sources = sorted({pair.source for pair in pairs})
    random.Random(seed).shuffle(sources)
    n_train, n_dev = round(fractions[0] * len(sources)), round(fractions[1] * len(sources))
    split_of = {source: (i >= n_train) + (i >= n_train + n_dev) for i, source in enumerate(sources)}  # 0, 1 or 2
    parts: tuple[list[Pair], list[Pair], list[Pair]] = ([], [], [])
    for pair in pairs:
        parts[split_of[pair.source]].append(pair)
    return Splits(*parts)


def tensor_from_sentence(vocab: Vocab, sentence: str) -> Tensor:
    """The tutorial's one-sentence form: ids with EOS appended, as a (L, 1) LongTensor (seq_len, batch=1)."""
    return torch.tensor(vocab.encode(sentence), dtype=torch.long).view(-1, 1)  # (L, 1)


class Batch(NamedTuple):
    """A padded batch. Decoders prepend SOS themselves, so tgt holds target ids + EOS only."""
    src: Tensor          # (B, S) long, PAD-padded, each row ends with EOS
    src_lengths: Tensor  # (B,) long, always on CPU (pack_padded_sequence needs CPU lengths)
    src_mask: Tensor     # (B, S) bool, True on real tokens
    tgt: Tensor          # (B, T) long, target ids + EOS, PAD-padded
    tgt_lengths: Tensor  # (B,) long, always on CPU (training computes the real steps' positions from it there)

    def to(self, device: torch.device | str) -> Batch:
        """The batch on `device`; the lengths stay on the CPU."""
        return Batch(self.src.to(device), self.src_lengths, self.src_mask.to(device), self.tgt.to(device),
                     self.tgt_lengths)


class TranslationDataset(Dataset):
    """Pairs as id tensors: item i is (src_ids (L,), tgt_ids (M,)), both ending with EOS."""

    def __init__(self, pairs: Sequence[Pair], src_vocab: Vocab, tgt_vocab: Vocab):
        self.pairs = list(pairs)
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.items = [(torch.tensor(src_vocab.encode(pair.source), dtype=torch.long),   # (L,)
                       torch.tensor(tgt_vocab.encode(pair.target), dtype=torch.long))   # (M,)
                      for pair in self.pairs]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> tuple[Tensor, Tensor]:
        return self.items[index]


def lengths_to_mask(lengths: Tensor, width: int | None = None) -> Tensor:
    """lengths (B,) -> mask (B, S) bool, True on real tokens; S = `width`, default the longest length."""
    width = int(lengths.max()) if width is None else width
    return torch.arange(width, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)  # (1, S) < (B, 1) -> (B, S)


def pad_ids(sequences: Sequence[Tensor]) -> tuple[Tensor, Tensor]:
    """Id sequences of lengths L_b -> (ids (B, max L) padded with PAD_ID, lengths (B,)); rows keep their order."""
    ids = pad_sequence(list(sequences), batch_first=True, padding_value=PAD_ID)  # (B, L)
    return ids, torch.tensor([len(s) for s in sequences], dtype=torch.long)  # (B,)


def collate_batch(items: Sequence[tuple[Tensor, Tensor]]) -> Batch:
    """Pad (src_ids (L,), tgt_ids (M,)) items into a Batch; rows keep their order."""
    if not items:
        raise ValueError("collate_batch got no items; is the dataset empty?")
    sources, targets = zip(*items)
    src, src_lengths = pad_ids(sources)  # (B, S), (B,)
    tgt, tgt_lengths = pad_ids(targets)  # (B, T), (B,)
    return Batch(src, src_lengths, lengths_to_mask(src_lengths, src.size(1)), tgt, tgt_lengths)  # src_mask (B, S)


class BucketBatchSampler(Sampler[list[int]]):
    """Batches of indices of similar lengths: shuffle, sort stably by length, cut, shuffle the batches. Epoch e (the
    e-th iteration, or set_epoch) uses seed + e; with shuffle=False the batches come shortest first."""

    def __init__(self, lengths: Sequence[int], batch_size: int, shuffle: bool = True, seed: int = 0):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
        self.lengths, self.batch_size, self.shuffle, self.seed, self.epoch = list(lengths), batch_size, shuffle, seed, 0

    def set_epoch(self, epoch: int) -> None:
        """Make the next iteration use seed + epoch."""
        self.epoch = epoch

    def __iter__(self) -> Iterator[list[int]]:
        rng = random.Random(self.seed + self.epoch)
        self.epoch += 1
        indices = list(range(len(self.lengths)))
        if self.shuffle:
            rng.shuffle(indices)  # random order among equal lengths
        indices.sort(key=lambda i: self.lengths[i])  # stable
        batches = [indices[i:i + self.batch_size] for i in range(0, len(indices), self.batch_size)]
        if self.shuffle:
            rng.shuffle(batches)
        return iter(batches)

    def __len__(self) -> int:
        return (len(self.lengths) + self.batch_size - 1) // self.batch_size


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices cut into batches of similar lengths, shortest first: the batching of evaluation and translation."""
    return list(BucketBatchSampler(lengths, batch_size, shuffle=False))


def make_loader(pairs: Sequence[Pair], src_vocab: Vocab, tgt_vocab: Vocab, batch_size: int = 64,
                shuffle: bool = True, bucket_by: str | None = "source", seed: int = 0) -> DataLoader:
    """A DataLoader of Batch(src (B, S), src_lengths (B,), src_mask (B, S), tgt (B, T), tgt_lengths (B,)).

    bucket_by groups pairs of similar length: "source" by source length, "target" by target then source length
    (least padding on both sides), None not at all. Deterministic given `seed`; bucketed loaders reshuffle each pass.
    """
    if bucket_by not in ("source", "target", None):
        raise ValueError(f"bucket_by must be one of ('source', 'target') or None, got {bucket_by!r}")
    dataset = TranslationDataset(pairs, src_vocab, tgt_vocab)
    if bucket_by is None:
        return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, collate_fn=collate_batch,
                          generator=torch.Generator().manual_seed(seed))
    keys = [1000 * len(tgt) + len(src) if bucket_by == "target" else len(src) for src, tgt in dataset.items]
    return DataLoader(dataset, batch_sampler=BucketBatchSampler(keys, batch_size, shuffle, seed),
                      collate_fn=collate_batch)


@dataclass
class CourseData:
    """Everything the notebooks and training need; vocabularies are built from the train split only."""
    lines_read: int          # corpus lines read
    pairs: list[Pair]        # all kept pairs, corpus order
    splits: Splits           # train/dev/test by source sentence
    src_vocab: Vocab
    tgt_vocab: Vocab
    reverse: bool = True     # True: French -> English
    corpus_path: Path | None = None


def course_data_from_pairs(pairs: Sequence[Pair], seed: int = 0, min_freq: int = 1, reverse: bool = True,
                           lines_read: int | None = None, corpus_path: Path | None = None) -> CourseData:
    """Split `pairs` and build the vocabularies from the train split (for in-memory data and tests)."""
    splits = split_pairs(pairs, seed=seed)
    src_name, tgt_name = ("fra", "eng") if reverse else ("eng", "fra")
    src_vocab = Vocab.build((pair.source for pair in splits.train), min_freq, name=src_name)
    tgt_vocab = Vocab.build((pair.target for pair in splits.train), min_freq, name=tgt_name)
    return CourseData(len(pairs) if lines_read is None else lines_read, list(pairs), splits,
                      src_vocab, tgt_vocab, reverse, corpus_path)


def load_course_data(reverse: bool = True, max_length: int | None = MAX_LENGTH,
                     prefixes: Sequence[str] | None = ENG_PREFIXES, seed: int = 0, min_freq: int = 1,
                     path: str | os.PathLike | None = None, log: Log = print) -> CourseData:
    """Find (`path` defaults to find_corpus()), read, normalise, filter and split the corpus; build the vocabularies
    from train. `log` (None: silent) gets the counts, the split and the vocabulary sizes."""
    corpus_path = Path(path) if path is not None else find_corpus()
    lines = read_corpus_lines(corpus_path)
    pairs = filter_pairs(read_pairs(lines, reverse), max_length, prefixes, reverse)
    if not pairs:
        raise CorpusError(f"The filter kept none of the {len(lines):,} pairs of {display_path(corpus_path)}: "
                          f"loosen max_length={max_length} or prefixes, or check reverse={reverse}.")
    data = course_data_from_pairs(pairs, seed, min_freq, reverse, len(lines), corpus_path)
    say = reporter(log)
    say(f"Read {data.lines_read:,} sentence pairs")
    say(f"Kept {len(data.pairs):,} sentence pairs")
    say(f"Split by source sentence (seed {seed}): train {len(data.splits.train):,}, "
        f"dev {len(data.splits.dev):,}, test {len(data.splits.test):,} pairs")
    say(f"Vocabulary sizes (train, with 4 special tokens): {data.src_vocab.name} {len(data.src_vocab):,}, "
        f"{data.tgt_vocab.name} {len(data.tgt_vocab):,}")
    return data
