"""Where the course's corpus (the tutorial's English-French pairs) comes from, and whether it is the right file:
$COURSE_CORPUS (data.zip, a manythings fra-eng zip or a TSV), else data_dir()/eng-fra.txt, else a verified download
of data.zip. Normalising, filtering and splitting belong to `course_utils.data`. Introduced in notebook 01."""
from __future__ import annotations

import hashlib
import http.client
import io
import os
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import NamedTuple
from urllib.request import urlopen

__all__ = ["CorpusFingerprint", "TUTORIAL_CORPUS", "MIRROR_CORPUS", "CorpusError", "data_dir", "display_path",
           "find_corpus", "read_corpus_lines", "CorpusInfo", "check_corpus"]

_CORPUS_ENV = "COURSE_CORPUS"  # a local file or archive; wins over everything else
_DATA_DIR_ENV = "COURSE_DATA_DIR"  # where the corpus and the trained models are kept (default: data/ in the repo)
_REPO_ROOT = Path(__file__).resolve().parent.parent
_CORPUS_FILENAME = "eng-fra.txt"  # what the data folder holds once fetched
_CORPUS_URL = "https://download.pytorch.org/tutorial/data.zip"
_DOWNLOAD_TIMEOUT = 15.0  # seconds without an answer (connecting, or between two reads) before a download gives up
_CORPUS_MEMBERS = ("data/eng-fra.txt", "eng-fra.txt", "fra.txt")  # tutorial zip, flat copy, manythings zip


class CorpusFingerprint(NamedTuple):
    """What a known corpus file looks like: pair lines, size in bytes, sha256 of its bytes."""
    lines: int
    n_bytes: int
    sha256: str
    description: str


TUTORIAL_CORPUS = CorpusFingerprint(135_842, 9_541_158, description="the PyTorch tutorial's data/eng-fra.txt",
                                    sha256="6b0f3decdb78600485b58efb541f5a2ab69ba888742ac04180e013084e40de7c")
MIRROR_CORPUS = CorpusFingerprint(
    142_787, 10_009_515, "2546838ae46e0eac4c02ab7032ea0a02a006074a5340077a36a9444f41e02888",
    "manythings.org fra.txt of 2017-09-29 (the course's offline mirror)")
_KNOWN_CORPORA = {fp.sha256: fp for fp in (TUTORIAL_CORPUS, MIRROR_CORPUS)}


class CorpusError(RuntimeError):
    """The corpus is missing, unreadable or not what it should be; the message says how to fix it."""


def data_dir() -> Path:
    """The folder for the corpus and trained models: $COURSE_DATA_DIR (read at every call) if set, else data/."""
    return Path(os.environ.get(_DATA_DIR_ENV) or _REPO_ROOT / "data")


def display_path(path: str | os.PathLike) -> str:
    """`path` relative to the repository when it lies inside it, else absolute. Introduced in appendix A1."""
    path = Path(path).resolve()
    return str(path.relative_to(_REPO_ROOT) if path.is_relative_to(_REPO_ROOT) else path)


def find_corpus(download: bool = True) -> Path:
    """Where the corpus is: $COURSE_CORPUS, else data_dir()/eng-fra.txt, else a download. Introduced in notebook 01."""
    if named := os.environ.get(_CORPUS_ENV):
        path = Path(named).expanduser()
        if path.is_dir():
            raise CorpusError(f"{_CORPUS_ENV}={named!r} is a directory, not a file: point it to the corpus file.")
        if not path.is_file():
            raise CorpusError(f"{_CORPUS_ENV}={named!r} but no such file exists. Fix the path (a zip or a TSV), "
                              f"or unset {_CORPUS_ENV} to use {display_path(data_dir() / _CORPUS_FILENAME)}.")
        return path
    local = data_dir() / _CORPUS_FILENAME
    if local.is_file():
        return local
    if not download:
        raise CorpusError(f"No corpus found: {_CORPUS_ENV} is not set and {display_path(local)} does not exist. Set "
                          f"{_CORPUS_ENV} to a local copy (zip or tab-separated file), or allow the download.")
    return _download_corpus(data_dir())


def _download_corpus(dest_dir: str | os.PathLike | None = None, url: str = _CORPUS_URL,
                    expected: CorpusFingerprint = TUTORIAL_CORPUS, progress: bool = True) -> Path:
    """Download data.zip, verify its eng-fra.txt, rename it into `dest_dir` (atomic: never half-written); its path."""
    dest_dir = Path(dest_dir) if dest_dir is not None else data_dir()
    no_network_fix = f"No network? Set {_CORPUS_ENV} to a local copy of the corpus (zip or tab-separated file)."
    archive = text = None
    try:
        try:  # the folder and the temporary files first: a bad COURSE_DATA_DIR or a read-only data/ fails here
            dest_dir.mkdir(parents=True, exist_ok=True)
            archive = _temp_path(dest_dir, ".zip.part")
            text = _temp_path(dest_dir, ".txt.part")
        except OSError as error:
            raise CorpusError(f"Cannot write the corpus to {display_path(dest_dir)} ({error.strerror or error}): make "
                              f"it writable, or set {_DATA_DIR_ENV} (a writable folder) or {_CORPUS_ENV}.") from error
        with archive.open("wb") as archive_file:
            _fetch(url, archive_file, progress)
        if not zipfile.is_zipfile(archive):
            raise CorpusError(f"The download from {url} is not a zip archive ({archive.stat().st_size:,} bytes "
                              f"starting {archive.read_bytes()[:40]!r}). Retry, or set {_CORPUS_ENV} to a local copy.")
        raw, member, _ = _read_corpus_bytes(archive, where=f"the archive downloaded from {url}")
        n_bytes, sha256 = len(raw), hashlib.sha256(raw).hexdigest()
        if (n_bytes, sha256) != (expected.n_bytes, expected.sha256):
            raise CorpusError(f"The download from {url} is not {expected.description}: its {member} has "
                              f"{n_bytes:,} bytes and sha256 {sha256}, expected {expected.n_bytes:,} bytes and "
                              f"sha256 {expected.sha256}. Try again, or set {_CORPUS_ENV} to a local copy.")
        text.write_bytes(raw)
        os.replace(text, dest_dir / _CORPUS_FILENAME)  # atomic on one file system: the corpus whole or not at all
    except (OSError, http.client.HTTPException) as error:  # URLError, timeouts, resets, truncated reads
        if isinstance(getattr(error, "reason", error), TimeoutError) or "timed out" in str(error):  # URLError wraps it
            raise CorpusError(f"The server at {url} did not answer within {_DOWNLOAD_TIMEOUT:.0f} s. Try again "
                              f"later. {no_network_fix}") from error
        raise CorpusError(f"Could not download the corpus from {url}: {error!r}. {no_network_fix}") from error
    finally:
        for temporary in filter(None, (archive, text)):
            temporary.unlink(missing_ok=True)  # `text` is already gone after a successful os.replace
    return dest_dir / _CORPUS_FILENAME


def _temp_path(folder: Path, suffix: str) -> Path:
    fd, name = tempfile.mkstemp(dir=folder, prefix=".download-", suffix=suffix)  # by the target: atomic rename
    os.close(fd)
    return Path(name)


def _fetch(url: str, out: io.BufferedIOBase, progress: bool, chunk_size: int = 1 << 16) -> None:
    """Stream `url` into `out` with a progress bar; CorpusError if the body is truncated."""
    from tqdm.auto import tqdm
    if progress:
        print(f"Downloading the corpus from {url} (waiting up to {_DOWNLOAD_TIMEOUT:.0f} s for the server to "
              f"answer; set {_CORPUS_ENV} to a local copy to skip this)...", file=sys.stderr, flush=True)
    with urlopen(url, timeout=_DOWNLOAD_TIMEOUT) as response:
        total, received = int(response.headers.get("Content-Length") or 0) or None, 0
        with tqdm(total=total, unit="B", unit_scale=True, desc="data.zip", disable=not progress) as bar:
            while chunk := response.read(chunk_size):
                out.write(chunk)
                received += len(chunk)
                bar.update(len(chunk))
    if total is not None and received != total:
        raise CorpusError(f"The download from {url} stopped after {received:,} of {total:,} bytes. Try again.")


def _read_corpus_bytes(path: Path, where: str | None = None) -> tuple[bytes, str | None, str]:
    """(bytes of the corpus text in `path`, a zip or a plain file; the zip member or None; "path[:member]")."""
    where = where or display_path(path)
    if path.is_dir():
        raise CorpusError(f"{where} is a directory, not a corpus file: point {_CORPUS_ENV} (or --path) to the file.")
    if not path.is_file():
        raise CorpusError(f"{where} does not exist. Set {_CORPUS_ENV} to the corpus file or archive.")
    try:
        if not (zipfile.is_zipfile(path) or path.suffix.lower() == ".zip"):
            return path.read_bytes(), None, where
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            by_basename = {name.rsplit("/", 1)[-1]: name for name in names}
            member = next((name for name in _CORPUS_MEMBERS if name in names), None) or next(
                (by_basename[base] for base in ("eng-fra.txt", "fra.txt") if base in by_basename), None)
            if member is None:
                raise CorpusError(f"{where} is a zip archive without a corpus file: it holds {names[:10]}, expected "
                                  f"one of {list(_CORPUS_MEMBERS)}. Point {_CORPUS_ENV} to data.zip or the TSV itself.")
            return archive.read(member), member, f"{where}:{member}"
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as error:
        raise CorpusError(
            f"{where} is not a readable zip archive ({error}): a truncated download? Fetch it again.") from error
    except OSError as error:
        raise CorpusError(f"{where} cannot be read ({error.strerror or error}): fix its permissions.") from error


def _decode_lines(raw: bytes, where: str) -> list[str]:
    """Non-empty lines of UTF-8 `raw`, checked to be tab-separated pairs."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise CorpusError(f"{where} is not UTF-8 text ({error}): expected English<TAB>French lines.") from error
    lines = [line.rstrip("\r") for line in text.split("\n") if line.strip()]  # splitlines() would split inside lines
    if not lines:
        raise CorpusError(f"{where} is empty. Point {_CORPUS_ENV} to the corpus (English<TAB>French lines).")
    if bad := [number for number, line in enumerate(lines, 1) if "\t" not in line]:
        raise CorpusError(f"{where} is not a file of tab-separated pairs: {len(bad):,} of {len(lines):,} lines have "
                          f"no tab (first: line {bad[0]}, {lines[bad[0] - 1][:60]!r}). Expected 'English<TAB>French'.")
    return lines


def read_corpus_lines(path: str | os.PathLike) -> list[str]:
    """The non-empty 'English<TAB>French[<TAB>attribution]' lines of a corpus zip or TSV. Introduced in notebook 01."""
    raw, _, where = _read_corpus_bytes(Path(path))
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
    """Read and validate the corpus at `path`: its line count, and whether its sha256 is a known one."""
    path = Path(path)
    raw, member, where = _read_corpus_bytes(path)
    lines = _decode_lines(raw, where)
    sha256 = hashlib.sha256(raw).hexdigest()
    return CorpusInfo(path, member, len(lines), len(raw), sha256, _KNOWN_CORPORA.get(sha256))
