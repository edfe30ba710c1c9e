"""From the Tatoeba corpus to padded batches: find, normalise, filter, split, index, batch.

The pipeline of the PyTorch "seq2seq translation" tutorial, written so that each step can be inspected:

    lines = read_corpus_lines(find_corpus())          # "English<TAB>French" strings
    pairs = filter_pairs(read_pairs(lines))           # Pair(source=French, target=English), normalised
    splits = split_pairs(pairs, seed=0)               # 80/10/10 by French sentence: no leakage
    src_vocab = Vocab.build(p.source for p in splits.train)
    loader = make_loader(splits.train, src_vocab, tgt_vocab)   # Batch(src (B, S), ..., tgt (B, T), ...)

`load_course_data()` does all of it in one call. Introduced in notebook 01.
"""
from __future__ import annotations

import hashlib
import http.client
import io
import os
import random
import re
import tempfile
import unicodedata
import zipfile
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple
from urllib.error import URLError
from urllib.request import urlopen

import torch
from torch import Tensor
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset, Sampler

# ---------------------------------------------------------------------------------------------- constants
PAD_ID, SOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
PAD_TOKEN, SOS_TOKEN, EOS_TOKEN, UNK_TOKEN = "<pad>", "<sos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD_TOKEN, SOS_TOKEN, EOS_TOKEN, UNK_TOKEN)  # in id order

MAX_LENGTH = 10  # keep pairs with FEWER than this many words on each side (the tutorial's filter)
ENG_PREFIXES = ("i am ", "i m ", "he is", "he s ", "she is", "she s ", "you are", "you re ",
                "we are", "we re ", "they are", "they re ")

CORPUS_ENV = "COURSE_CORPUS"  # a local file or archive; wins over everything else
REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("COURSE_DATA_DIR") or REPO_ROOT / "data")
CORPUS_FILENAME = "eng-fra.txt"  # what DATA_DIR holds once fetched
CORPUS_URL = "https://download.pytorch.org/tutorial/data.zip"
CORPUS_MEMBERS = ("data/eng-fra.txt", "eng-fra.txt", "fra.txt")  # tutorial zip, flat copy, manythings zip


class CorpusFingerprint(NamedTuple):
    """What a known corpus file looks like: pair lines, size in bytes, sha256 of its bytes."""
    lines: int
    n_bytes: int
    sha256: str
    description: str


TUTORIAL_CORPUS = CorpusFingerprint(
    135_842, 9_541_158, "6b0f3decdb78600485b58efb541f5a2ab69ba888742ac04180e013084e40de7c",
    "the PyTorch tutorial's data/eng-fra.txt")
MIRROR_CORPUS = CorpusFingerprint(
    142_787, 10_009_515, "2546838ae46e0eac4c02ab7032ea0a02a006074a5340077a36a9444f41e02888",
    "manythings.org fra.txt of 2017-09-29 (the course's offline mirror)")
KNOWN_CORPORA = {fp.sha256: fp for fp in (TUTORIAL_CORPUS, MIRROR_CORPUS)}


class CorpusError(RuntimeError):
    """The corpus is missing, unreadable or not what it should be; the message says how to fix it."""


# ---------------------------------------------------------------------------------------------- locating
def display_path(path: str | os.PathLike) -> str:
    """`path` relative to the repository when it lies inside it, else absolute. Introduced in notebook 01."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def find_corpus(download: bool = True) -> Path:
    """Where the corpus is: $COURSE_CORPUS, else DATA_DIR/eng-fra.txt, else a fresh download.

    Raises CorpusError when $COURSE_CORPUS names a missing file, or when nothing is found and
    `download` is False or the download fails. Introduced in notebook 01.
    """
    named = os.environ.get(CORPUS_ENV)
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise CorpusError(f"{CORPUS_ENV}={named!r} but no such file exists. Fix the path (a zip with "
                              f"data/eng-fra.txt or fra.txt inside, or a tab-separated text file), or unset "
                              f"{CORPUS_ENV} to use {display_path(DATA_DIR / CORPUS_FILENAME)}.")
        return path
    local = DATA_DIR / CORPUS_FILENAME
    if local.is_file():
        return local
    if not download:
        raise CorpusError(f"No corpus found: {CORPUS_ENV} is not set and {display_path(local)} does not exist. "
                          f"Set {CORPUS_ENV} to a local copy (the tutorial's data.zip, a manythings fra-eng "
                          f"zip or a tab-separated file), or allow the download from {CORPUS_URL}.")
    return download_corpus(DATA_DIR)


def download_corpus(dest_dir: str | os.PathLike | None = None, url: str = CORPUS_URL,
                    expected: CorpusFingerprint = TUTORIAL_CORPUS, progress: bool = True) -> Path:
    """Download the tutorial's data.zip, verify its eng-fra.txt, and move it to `dest_dir`/eng-fra.txt.

    Everything is written to temporary files inside `dest_dir` (default DATA_DIR) and only the verified
    file is renamed into place (atomic), so a failure never leaves a half-written corpus behind.
    Returns the path of the verified file; raises CorpusError on any failure. Introduced in notebook 01.
    """
    dest_dir = Path(dest_dir) if dest_dir is not None else DATA_DIR
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / CORPUS_FILENAME
    no_network_fix = f"No network? Set {CORPUS_ENV} to a local copy of the corpus (zip or tab-separated file)."
    archive = _temp_path(dest_dir, ".zip.part")
    text = _temp_path(dest_dir, ".txt.part")
    try:
        with archive.open("wb") as archive_file:
            _fetch(url, archive_file, progress)
        if not zipfile.is_zipfile(archive):
            start = archive.read_bytes()[:40]
            raise CorpusError(f"The download from {url} is not a zip archive ({archive.stat().st_size:,} bytes "
                              f"starting {start!r}). Try again later, or set {CORPUS_ENV} to a local copy.")
        raw, member = _read_corpus_bytes(archive, where=f"the archive downloaded from {url}")
        n_bytes, sha256 = len(raw), hashlib.sha256(raw).hexdigest()
        if (n_bytes, sha256) != (expected.n_bytes, expected.sha256):
            raise CorpusError(f"The download from {url} is not {expected.description}: its {member} has "
                              f"{n_bytes:,} bytes and sha256 {sha256}, expected {expected.n_bytes:,} bytes and "
                              f"sha256 {expected.sha256}. Try again; if it persists, the file on the server "
                              f"changed: set {CORPUS_ENV} to a local copy.")
        text.write_bytes(raw)
        os.replace(text, target)  # atomic on one file system: the corpus is there whole or not at all
    except CorpusError:
        raise
    except (OSError, http.client.HTTPException) as error:  # URLError, timeouts, resets, truncated reads
        raise CorpusError(f"Could not download the corpus from {url}: {error!r}. {no_network_fix}") from error
    finally:
        archive.unlink(missing_ok=True)
        text.unlink(missing_ok=True)  # already gone after a successful os.replace
    return target


def _temp_path(folder: Path, suffix: str) -> Path:
    """A fresh, empty, uniquely named hidden file in `folder` (same file system as the target: atomic rename)."""
    fd, name = tempfile.mkstemp(dir=folder, prefix=".download-", suffix=suffix)
    os.close(fd)
    return Path(name)


def _fetch(url: str, out: io.BufferedIOBase, progress: bool, chunk_size: int = 1 << 16) -> None:
    """Stream `url` into `out` with a tqdm progress bar; raise CorpusError if the body is truncated."""
    from tqdm.auto import tqdm

    with urlopen(url, timeout=60) as response:
        total = int(response.headers.get("Content-Length") or 0) or None
        received = 0
        with tqdm(total=total, unit="B", unit_scale=True, desc="data.zip", disable=not progress) as bar:
            while chunk := response.read(chunk_size):
                out.write(chunk)
                received += len(chunk)
                bar.update(len(chunk))
    if total is not None and received != total:
        raise CorpusError(f"The download from {url} stopped after {received:,} of {total:,} bytes. "
                          f"Try again, or set {CORPUS_ENV} to a local copy.")


# ---------------------------------------------------------------------------------------------- reading
def _read_corpus_bytes(path: Path, where: str | None = None) -> tuple[bytes, str | None]:
    """The raw bytes of the corpus text in `path` (a zip or a plain file) and the zip member used (or None)."""
    where = where or display_path(path)
    if not path.is_file():
        raise CorpusError(f"{where} does not exist. Set {CORPUS_ENV} to the corpus file or archive.")
    if not (zipfile.is_zipfile(path) or path.suffix.lower() == ".zip"):
        return path.read_bytes(), None
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            by_basename = {name.rsplit("/", 1)[-1]: name for name in names}
            member = next((name for name in CORPUS_MEMBERS if name in names), None) or next(
                (by_basename[base] for base in ("eng-fra.txt", "fra.txt") if base in by_basename), None)
            if member is None:
                raise CorpusError(f"{where} is a zip archive without a corpus file: it holds {names[:10]}, "
                                  f"expected one of {list(CORPUS_MEMBERS)}. Point {CORPUS_ENV} to the tutorial's "
                                  f"data.zip, a manythings fra-eng zip, or the tab-separated file itself.")
            return archive.read(member), member
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as error:
        raise CorpusError(f"{where} is not a readable zip archive ({error}); it may be a truncated download. "
                          f"Delete it and fetch it again, or point {CORPUS_ENV} to a good copy.") from error


def _decode_lines(raw: bytes, where: str) -> list[str]:
    """Non-empty lines of UTF-8 `raw`, checked to be tab-separated pairs."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise CorpusError(f"{where} is not UTF-8 text ({error}). Expected 'English<TAB>French' lines; point "
                          f"{CORPUS_ENV} to the tutorial's eng-fra.txt or a manythings fra.txt.") from error
    # split("\n"), not splitlines(): the corpus holds characters that splitlines() also treats as line breaks
    lines = [line.rstrip("\r") for line in text.split("\n")]
    lines = [line for line in lines if line.strip()]
    if not lines:
        raise CorpusError(f"{where} is empty. Point {CORPUS_ENV} to the corpus (English<TAB>French lines).")
    bad = [number for number, line in enumerate(lines, 1) if "\t" not in line]
    if bad:
        raise CorpusError(f"{where} is not a file of tab-separated pairs: {len(bad):,} of {len(lines):,} lines "
                          f"have no tab (first: line {bad[0]}, {lines[bad[0] - 1][:60]!r}). Expected "
                          f"'English<TAB>French' per line, as in the tutorial's eng-fra.txt or manythings' fra.txt.")
    return lines


def read_corpus_lines(path: str | os.PathLike) -> list[str]:
    """The corpus' non-empty lines, 'English<TAB>French[<TAB>attribution]', from a zip or a plain file.

    Accepts the tutorial's data.zip (data/eng-fra.txt), a manythings zip (fra.txt, newer ones with a third
    attribution column) or the bare tab-separated file. Raises CorpusError naming the problem and the fix.
    Introduced in notebook 01.
    """
    path = Path(path)
    raw, member = _read_corpus_bytes(path)
    where = f"{display_path(path)}:{member}" if member else display_path(path)
    return _decode_lines(raw, where)


class CorpusInfo(NamedTuple):
    """What `check_corpus` found; str() is the report `python -m course_utils data check` prints."""
    path: Path
    member: str | None      # the file inside the zip, None for a plain file
    lines: int              # non-empty pair lines
    n_bytes: int
    sha256: str
    known: CorpusFingerprint | None  # the known corpus this is byte-for-byte, if any

    def __str__(self) -> str:
        where = display_path(self.path) + (f" (member {self.member})" if self.member else "")
        status = (f"matches {self.known.description}" if self.known else
                  f"not a known corpus file (fine for a local copy; the tutorial's is {TUTORIAL_CORPUS.sha256})")
        return (f"corpus: {where}\nlines:  {self.lines:,} sentence pairs ({self.n_bytes:,} bytes)\n"
                f"sha256: {self.sha256}\n        {status}")


def check_corpus(path: str | os.PathLike) -> CorpusInfo:
    """Read and validate the corpus at `path`; report its line count and whether its sha256 is a known one.

    Introduced in notebook 01.
    """
    path = Path(path)
    raw, member = _read_corpus_bytes(path)
    lines = _decode_lines(raw, f"{display_path(path)}:{member}" if member else display_path(path))
    sha256 = hashlib.sha256(raw).hexdigest()
    return CorpusInfo(path, member, len(lines), len(raw), sha256, KNOWN_CORPORA.get(sha256))


# ---------------------------------------------------------------------------------------------- normalising
def unicode_to_ascii(s: str) -> str:
    """Drop accents: NFD splits 'é' into 'e' + a combining accent (category Mn), which is dropped.

    Characters without a decomposition ('œ', narrow no-break space) pass through; `normalize_string`
    turns them into spaces, as the tutorial does. Introduced in notebook 01.
    """
    if s.isascii():
        return s  # fast path: most English lines
    return "".join(c for c in unicodedata.normalize("NFD", s) if unicodedata.category(c) != "Mn")


def normalize_string(s: str) -> str:
    """The tutorial's normalisation, applied to the WHOLE string.

    Lower case, accents dropped, a space before each of . ! ?, every run of other non-letters (digits,
    apostrophes, commas, odd spaces) turned into one space, ends stripped:
    "J'ai 20 ans." -> "j ai ans ."   "Va, vite !" -> "va vite !". Introduced in notebook 01.
    """
    s = unicode_to_ascii(s.lower().strip())
    s = re.sub(r"([.!?])", r" \1", s)
    s = re.sub(r"[^a-zA-Z.!?]+", " ", s)  # unanchored: cleans everywhere, and collapses space runs
    return s.strip()


def normalize_string_anchored(s: str) -> str:
    """EXHIBIT of a popular bug: the cleaning regex is anchored (`^[^a-zA-Z.!?]+`), so only the start is cleaned.

    "J'ai 20 ans." -> "j'ai 20 ans ."   "Va, vite !" -> "va, vite  !". Do not use it for training; notebook 01
    compares it with `normalize_string`. Introduced in notebook 01.
    """
    s = unicode_to_ascii(s.lower().strip())
    s = re.sub(r"([.!?])", r" \1", s)
    s = re.sub(r"^[^a-zA-Z.!?]+", " ", s)  # the bug: '^' anchors the match at the start of the string
    return s.strip()


# ---------------------------------------------------------------------------------------------- pairs
class Pair(NamedTuple):
    """One normalised sentence pair. With reverse=True (the course default) source is French, target English."""
    source: str
    target: str


def read_pairs(lines: Iterable[str], reverse: bool = True) -> list[Pair]:
    """Normalise 'English<TAB>French[<TAB>...]' lines into Pairs; extra columns (attribution) are ignored.

    reverse=True gives Pair(source=French, target=English). Introduced in notebook 01.
    """
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
    """The tutorial's filter: both sides fewer than `max_length` words (split on ' '), English side
    (the target when reverse=True) starting with one of `prefixes`; None switches a test off.
    Pairs with an empty side (e.g. a sentence of digits) are never kept. Introduced in notebook 01.
    """
    if not (pair.source and pair.target):
        return False
    if max_length is not None and not (len(pair.source.split(" ")) < max_length
                                       and len(pair.target.split(" ")) < max_length):
        return False
    english = pair.target if reverse else pair.source
    return prefixes is None or english.startswith(tuple(prefixes))


def filter_pairs(pairs: Iterable[Pair], max_length: int | None = MAX_LENGTH,
                 prefixes: Sequence[str] | None = ENG_PREFIXES, reverse: bool = True) -> list[Pair]:
    """The pairs that pass `keep_pair`, in their original order. Introduced in notebook 01."""
    return [pair for pair in pairs if keep_pair(pair, max_length, prefixes, reverse)]


# ---------------------------------------------------------------------------------------------- vocabulary
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
            raise ValueError(f"A Vocab's first words must be {SPECIAL_TOKENS}, got {index2word[:4]}. "
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
        return (f"Vocab({name}size={len(self):,} (4 special + {len(self) - 4:,} words), "
                f"min_freq={self.min_freq}, words_seen={len(self.word_count):,}, most frequent: {top})")


# ---------------------------------------------------------------------------------------------- splitting
class Splits(NamedTuple):
    """Train/dev/test pairs; no source sentence appears in two of them."""
    train: list[Pair]
    dev: list[Pair]
    test: list[Pair]


def split_pairs(pairs: Sequence[Pair], fractions: Sequence[float] = (0.8, 0.1, 0.1), seed: int = 0) -> Splits:
    """A seeded split by SOURCE sentence: all translations of one French sentence land in the same split.

    The distinct sources are sorted, shuffled with `seed` and cut by `fractions` (of sources, so pair counts
    are close to, not exactly, the fractions). Within a split pairs keep their input order.
    Introduced in notebook 01.
    """
    if len(fractions) != 3 or min(fractions) < 0 or abs(sum(fractions) - 1) > 1e-6:
        raise ValueError(f"fractions must be three non-negative numbers summing to 1 (train, dev, test), "
                         f"got {tuple(fractions)}.")
    if not pairs:
        raise ValueError("No pairs to split: the filter kept nothing. Loosen max_length or prefixes.")
    sources = sorted({pair.source for pair in pairs})
    random.Random(seed).shuffle(sources)
    n_train = round(fractions[0] * len(sources))
    n_dev = round(fractions[1] * len(sources))
    split_of = {source: 0 for source in sources[:n_train]}
    split_of.update({source: 1 for source in sources[n_train:n_train + n_dev]})
    split_of.update({source: 2 for source in sources[n_train + n_dev:]})
    parts: tuple[list[Pair], list[Pair], list[Pair]] = ([], [], [])
    for pair in pairs:
        parts[split_of[pair.source]].append(pair)
    return Splits(*parts)


# ---------------------------------------------------------------------------------------------- tensors
def tensor_from_sentence(vocab: Vocab, sentence: str) -> Tensor:
    """The tutorial's one-sentence form: ids with EOS appended, as a (L, 1) LongTensor (seq_len, batch=1).

    Introduced in notebook 01.
    """
    return torch.tensor(vocab.encode(sentence), dtype=torch.long).view(-1, 1)  # (L, 1)


class Batch(NamedTuple):
    """A padded batch. Decoders prepend SOS themselves, so tgt holds target ids + EOS only."""
    src: Tensor          # (B, S) long, PAD-padded, each row ends with EOS
    src_lengths: Tensor  # (B,) long, always on CPU (pack_padded_sequence needs CPU lengths)
    src_mask: Tensor     # (B, S) bool, True on real tokens
    tgt: Tensor          # (B, T) long, target ids + EOS, PAD-padded
    tgt_lengths: Tensor  # (B,) long

    def to(self, device: torch.device | str) -> Batch:
        """The batch on `device`; src_lengths stays on the CPU."""
        return Batch(self.src.to(device), self.src_lengths, self.src_mask.to(device),
                     self.tgt.to(device), self.tgt_lengths.to(device))


class TranslationDataset(Dataset):
    """Pairs as id tensors: item i is (src_ids (L,), tgt_ids (M,)), both ending with EOS.

    Introduced in notebook 01.
    """

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


def collate_batch(items: Sequence[tuple[Tensor, Tensor]]) -> Batch:
    """Pad (src_ids (L,), tgt_ids (M,)) items into a Batch; rows keep their order. Introduced in notebook 01."""
    if not items:
        raise ValueError("collate_batch got no items; is the dataset empty?")
    sources, targets = zip(*items)
    src = pad_sequence(sources, batch_first=True, padding_value=PAD_ID)  # (B, S)
    tgt = pad_sequence(targets, batch_first=True, padding_value=PAD_ID)  # (B, T)
    src_lengths = torch.tensor([len(s) for s in sources], dtype=torch.long)  # (B,)
    tgt_lengths = torch.tensor([len(t) for t in targets], dtype=torch.long)  # (B,)
    src_mask = torch.arange(src.size(1))[None, :] < src_lengths[:, None]  # (1, S) < (B, 1) -> (B, S)
    return Batch(src, src_lengths, src_mask, tgt, tgt_lengths)


class BucketBatchSampler(Sampler[list[int]]):
    """Batches of indices with similar lengths, so little padding: shuffle, sort stably by length, cut into
    batches, shuffle the batches. Deterministic given `seed`; epoch e (the e-th iteration, or set_epoch)
    uses seed + e. With shuffle=False the batches come shortest first. Introduced in notebook 01.
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, shuffle: bool = True, seed: int = 0):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
        self.lengths, self.batch_size, self.shuffle, self.seed = list(lengths), batch_size, shuffle, seed
        self.epoch = 0

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


def make_loader(pairs: Sequence[Pair], src_vocab: Vocab, tgt_vocab: Vocab, batch_size: int = 64,
                shuffle: bool = True, bucket: bool = True, seed: int = 0) -> DataLoader:
    """A DataLoader of Batch(src (B, S), src_lengths (B,), src_mask (B, S), tgt (B, T), tgt_lengths (B,)).

    bucket=True groups pairs of similar source length (BucketBatchSampler); otherwise plain (optionally
    shuffled) batches. Both are deterministic given `seed`. Introduced in notebook 01.
    """
    dataset = TranslationDataset(pairs, src_vocab, tgt_vocab)
    if bucket:
        sampler = BucketBatchSampler([len(src) for src, _ in dataset.items], batch_size, shuffle, seed)
        return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate_batch)
    generator = torch.Generator().manual_seed(seed)
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, generator=generator,
                      collate_fn=collate_batch)


# ---------------------------------------------------------------------------------------------- one call
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
    """Split `pairs` and build the vocabularies from the train split (for in-memory data and tests).

    Introduced in notebook 01.
    """
    splits = split_pairs(pairs, seed=seed)
    src_name, tgt_name = ("fra", "eng") if reverse else ("eng", "fra")
    src_vocab = Vocab.build((pair.source for pair in splits.train), min_freq, name=src_name)
    tgt_vocab = Vocab.build((pair.target for pair in splits.train), min_freq, name=tgt_name)
    return CourseData(len(pairs) if lines_read is None else lines_read, list(pairs), splits,
                      src_vocab, tgt_vocab, reverse, corpus_path)


def load_course_data(reverse: bool = True, max_length: int | None = MAX_LENGTH,
                     prefixes: Sequence[str] | None = ENG_PREFIXES, seed: int = 0, min_freq: int = 1,
                     path: str | os.PathLike | None = None, verbose: bool = True) -> CourseData:
    """Find, read, normalise, filter and split the corpus; build the vocabularies from train.

    `path` defaults to find_corpus(). With verbose, prints the read/kept counts, split and vocabulary sizes.
    Introduced in notebook 01.
    """
    corpus_path = Path(path) if path is not None else find_corpus()
    lines = read_corpus_lines(corpus_path)
    pairs = filter_pairs(read_pairs(lines, reverse), max_length, prefixes, reverse)
    if not pairs:
        raise CorpusError(f"The filter kept none of the {len(lines):,} pairs of {display_path(corpus_path)}: "
                          f"loosen max_length={max_length} or prefixes, or check reverse={reverse}.")
    data = course_data_from_pairs(pairs, seed, min_freq, reverse, len(lines), corpus_path)
    if verbose:
        print(f"Read {data.lines_read:,} sentence pairs")
        print(f"Kept {len(data.pairs):,} sentence pairs")
        print(f"Split by source sentence (seed {seed}): train {len(data.splits.train):,}, "
              f"dev {len(data.splits.dev):,}, test {len(data.splits.test):,} pairs")
        print(f"Vocabulary sizes (train, with 4 special tokens): {data.src_vocab.name} {len(data.src_vocab):,}, "
              f"{data.tgt_vocab.name} {len(data.tgt_vocab):,}")
    return data


def describe_course_data(data: CourseData, examples: int = 5, seed: int = 0) -> str:
    """A plain-text summary (what `python -m course_utils data stats` prints). Introduced in notebook 01."""
    src_name, tgt_name = data.src_vocab.name, data.tgt_vocab.name
    all_src = Vocab.build(pair.source for pair in data.pairs)
    all_tgt = Vocab.build(pair.target for pair in data.pairs)
    where = display_path(data.corpus_path) if data.corpus_path else "(in memory)"
    lines = [f"corpus:      {where}",
             f"read:        {data.lines_read:,} sentence pairs",
             f"kept:        {len(data.pairs):,} sentence pairs ({src_name} -> {tgt_name})",
             f"splits:      train {len(data.splits.train):,} / dev {len(data.splits.dev):,} / "
             f"test {len(data.splits.test):,} pairs (by source sentence)",
             f"vocab train: {src_name} {len(data.src_vocab):,}, {tgt_name} {len(data.tgt_vocab):,} "
             f"(4 special tokens included)",
             f"vocab all:   {src_name} {len(all_src):,}, {tgt_name} {len(all_tgt):,} (all kept pairs)",
             "examples:"]
    for pair in random.Random(seed).sample(data.pairs, min(examples, len(data.pairs))):
        lines.append(f"  {pair.source}  ->  {pair.target}")
    return "\n".join(lines)
