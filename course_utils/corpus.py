"""Where the course's corpus comes from: locate it, download it, check it is the file it should be.

The Tatoeba English-French pairs of the PyTorch "seq2seq translation" tutorial, looked up in this order:

    1. $COURSE_CORPUS: a local archive or file (the tutorial's data.zip, a manythings fra-eng zip, a bare TSV);
    2. data/eng-fra.txt (or $COURSE_DATA_DIR/eng-fra.txt);
    3. a download of the tutorial's data.zip, verified (size and sha256) before it is put in place.

    path = find_corpus()                  # where it is (downloads when nothing is found)
    lines = read_corpus_lines(path)       # "English<TAB>French" strings
    print(check_corpus(path))             # line count, sha256, and whether it is a known corpus

What the lines mean (normalising, filtering, splitting) is the business of `course_utils.data`.
Introduced in notebook 01.
"""
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
    """What a known corpus file looks like: pair lines, size in bytes, sha256 of its bytes.

    Introduced in notebook 01.
    """
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
_KNOWN_CORPORA = {fp.sha256: fp for fp in (TUTORIAL_CORPUS, MIRROR_CORPUS)}


class CorpusError(RuntimeError):
    """The corpus is missing, unreadable or not what it should be; the message says how to fix it.

    Introduced in notebook 01.
    """

def data_dir() -> Path:
    """The folder for the corpus and trained models: $COURSE_DATA_DIR if set, else data/ in the repository.

    Read at every call (not once at import), so setting the variable, or monkeypatching it in a test, takes effect
    everywhere at once. Introduced in notebook 01.
    """
    return Path(os.environ.get(_DATA_DIR_ENV) or _REPO_ROOT / "data")


# ---------------------------------------------------------------------------------------------- locating
def display_path(path: str | os.PathLike) -> str:
    """`path` relative to the repository when it lies inside it, else absolute. Introduced in notebook 04."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(_REPO_ROOT))
    except ValueError:
        return str(path)


def find_corpus(download: bool = True) -> Path:
    """Where the corpus is: $COURSE_CORPUS, else data_dir()/eng-fra.txt, else a fresh download.

    Raises CorpusError when $COURSE_CORPUS names a missing file, or when nothing is found and
    `download` is False or the download fails. Introduced in notebook 01.
    """
    named = os.environ.get(_CORPUS_ENV)
    if named:
        path = Path(named).expanduser()
        if path.is_dir():
            raise CorpusError(f"{_CORPUS_ENV}={named!r} is a directory, not a file. Point it to the corpus file "
                              f"itself (a zip with data/eng-fra.txt or fra.txt inside, or a tab-separated text file).")
        if not path.is_file():
            raise CorpusError(f"{_CORPUS_ENV}={named!r} but no such file exists. Fix the path (a zip with "
                              f"data/eng-fra.txt or fra.txt inside, or a tab-separated text file), or unset "
                              f"{_CORPUS_ENV} to use {display_path(data_dir() / _CORPUS_FILENAME)}.")
        return path
    local = data_dir() / _CORPUS_FILENAME
    if local.is_file():
        return local
    if not download:
        raise CorpusError(f"No corpus found: {_CORPUS_ENV} is not set and {display_path(local)} does not exist. "
                          f"Set {_CORPUS_ENV} to a local copy (the tutorial's data.zip, a manythings fra-eng "
                          f"zip or a tab-separated file), or allow the download from {_CORPUS_URL}.")
    return _download_corpus(data_dir())


def _download_corpus(dest_dir: str | os.PathLike | None = None, url: str = _CORPUS_URL,
                    expected: CorpusFingerprint = TUTORIAL_CORPUS, progress: bool = True) -> Path:
    """Download the tutorial's data.zip, verify its eng-fra.txt, and move it to `dest_dir`/eng-fra.txt.

    Everything is written to temporary files inside `dest_dir` (default data_dir()) and only the verified
    file is renamed into place (atomic), so a failure never leaves a half-written corpus behind.
    Returns the path of the verified file; raises CorpusError on any failure. Introduced in notebook 01.
    """
    dest_dir = Path(dest_dir) if dest_dir is not None else data_dir()
    target = dest_dir / _CORPUS_FILENAME
    no_network_fix = f"No network? Set {_CORPUS_ENV} to a local copy of the corpus (zip or tab-separated file)."
    archive = text = None
    try:
        try:  # the folder and the temporary files first: a bad COURSE_DATA_DIR or a read-only data/ fails here
            dest_dir.mkdir(parents=True, exist_ok=True)
            archive = _temp_path(dest_dir, ".zip.part")
            text = _temp_path(dest_dir, ".txt.part")
        except OSError as error:
            raise CorpusError(f"Cannot write the corpus to {display_path(dest_dir)} ({error.strerror or error}). "
                              f"Make it writable, set {_DATA_DIR_ENV} to a writable folder, or set {_CORPUS_ENV} to a "
                              f"local copy of the corpus.") from error
        with archive.open("wb") as archive_file:
            _fetch(url, archive_file, progress)
        if not zipfile.is_zipfile(archive):
            start = archive.read_bytes()[:40]
            raise CorpusError(f"The download from {url} is not a zip archive ({archive.stat().st_size:,} bytes "
                              f"starting {start!r}). Try again later, or set {_CORPUS_ENV} to a local copy.")
        raw, member = _read_corpus_bytes(archive, where=f"the archive downloaded from {url}")
        n_bytes, sha256 = len(raw), hashlib.sha256(raw).hexdigest()
        if (n_bytes, sha256) != (expected.n_bytes, expected.sha256):
            raise CorpusError(f"The download from {url} is not {expected.description}: its {member} has "
                              f"{n_bytes:,} bytes and sha256 {sha256}, expected {expected.n_bytes:,} bytes and "
                              f"sha256 {expected.sha256}. Try again; if it persists, the file on the server "
                              f"changed: set {_CORPUS_ENV} to a local copy.")
        text.write_bytes(raw)
        os.replace(text, target)  # atomic on one file system: the corpus is there whole or not at all
    except CorpusError:
        raise
    except (OSError, http.client.HTTPException) as error:  # URLError, timeouts, resets, truncated reads
        if _is_timeout(error):
            raise CorpusError(f"The server at {url} did not answer within {_DOWNLOAD_TIMEOUT:.0f} s. Try again "
                              f"later. {no_network_fix}") from error
        raise CorpusError(f"Could not download the corpus from {url}: {error!r}. {no_network_fix}") from error
    finally:
        for temporary in (archive, text):
            if temporary is not None:
                temporary.unlink(missing_ok=True)  # `text` is already gone after a successful os.replace
    return target


def _temp_path(folder: Path, suffix: str) -> Path:
    """A fresh, empty, uniquely named hidden file in `folder` (same file system as the target: atomic rename)."""
    fd, name = tempfile.mkstemp(dir=folder, prefix=".download-", suffix=suffix)
    os.close(fd)
    return Path(name)


def _is_timeout(error: BaseException) -> bool:
    """True for a timeout, also when urllib wraps it in a URLError."""
    reason = getattr(error, "reason", None)
    return isinstance(error, TimeoutError) or isinstance(reason, TimeoutError) or "timed out" in str(error)


def _fetch(url: str, out: io.BufferedIOBase, progress: bool, chunk_size: int = 1 << 16) -> None:
    """Stream `url` into `out` with a tqdm progress bar; raise CorpusError if the body is truncated.

    Says on stderr what it waits for; a server that connects but does not answer times out after _DOWNLOAD_TIMEOUT
    seconds (per connection attempt and per read), not a silent minute.
    """
    from tqdm.auto import tqdm

    if progress:
        print(f"Downloading the corpus from {url} (waiting up to {_DOWNLOAD_TIMEOUT:.0f} s for the server to "
              f"answer; set {_CORPUS_ENV} to a local copy to skip this)...", file=sys.stderr, flush=True)
    with urlopen(url, timeout=_DOWNLOAD_TIMEOUT) as response:
        total = int(response.headers.get("Content-Length") or 0) or None
        received = 0
        with tqdm(total=total, unit="B", unit_scale=True, desc="data.zip", disable=not progress) as bar:
            while chunk := response.read(chunk_size):
                out.write(chunk)
                received += len(chunk)
                bar.update(len(chunk))
    if total is not None and received != total:
        raise CorpusError(f"The download from {url} stopped after {received:,} of {total:,} bytes. "
                          f"Try again, or set {_CORPUS_ENV} to a local copy.")


# ---------------------------------------------------------------------------------------------- reading
def _read_corpus_bytes(path: Path, where: str | None = None) -> tuple[bytes, str | None]:
    """The raw bytes of the corpus text in `path` (a zip or a plain file) and the zip member used (or None)."""
    where = where or display_path(path)
    if path.is_dir():
        raise CorpusError(f"{where} is a directory, not a corpus file. Point {_CORPUS_ENV} (or --path) to the corpus "
                          f"file or archive itself, e.g. {display_path(path / _CORPUS_FILENAME)}.")
    if not path.is_file():
        raise CorpusError(f"{where} does not exist. Set {_CORPUS_ENV} to the corpus file or archive.")
    try:
        if not (zipfile.is_zipfile(path) or path.suffix.lower() == ".zip"):
            return path.read_bytes(), None
    except OSError as error:
        raise CorpusError(f"{where} cannot be read ({error.strerror or error}). Fix its permissions, or point "
                          f"{_CORPUS_ENV} to a readable copy.") from error
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            by_basename = {name.rsplit("/", 1)[-1]: name for name in names}
            member = next((name for name in _CORPUS_MEMBERS if name in names), None) or next(
                (by_basename[base] for base in ("eng-fra.txt", "fra.txt") if base in by_basename), None)
            if member is None:
                raise CorpusError(f"{where} is a zip archive without a corpus file: it holds {names[:10]}, "
                                  f"expected one of {list(_CORPUS_MEMBERS)}. Point {_CORPUS_ENV} to the tutorial's "
                                  f"data.zip, a manythings fra-eng zip, or the tab-separated file itself.")
            return archive.read(member), member
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as error:
        raise CorpusError(f"{where} is not a readable zip archive ({error}); it may be a truncated download. "
                          f"Delete it and fetch it again, or point {_CORPUS_ENV} to a good copy.") from error
    except OSError as error:
        raise CorpusError(f"{where} cannot be read ({error.strerror or error}). Fix its permissions, or point "
                          f"{_CORPUS_ENV} to a readable copy.") from error


def _decode_lines(raw: bytes, where: str) -> list[str]:
    """Non-empty lines of UTF-8 `raw`, checked to be tab-separated pairs."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise CorpusError(f"{where} is not UTF-8 text ({error}). Expected 'English<TAB>French' lines; point "
                          f"{_CORPUS_ENV} to the tutorial's eng-fra.txt or a manythings fra.txt.") from error
    # split("\n"), not splitlines(): the corpus holds characters that splitlines() also treats as line breaks
    lines = [line.rstrip("\r") for line in text.split("\n")]
    lines = [line for line in lines if line.strip()]
    if not lines:
        raise CorpusError(f"{where} is empty. Point {_CORPUS_ENV} to the corpus (English<TAB>French lines).")
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
    """What `check_corpus` found; str() is the report `python -m course_utils data check` prints.

    Introduced in notebook 01.
    """
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
    return CorpusInfo(path, member, len(lines), len(raw), sha256, _KNOWN_CORPORA.get(sha256))


