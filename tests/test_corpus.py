"""Tests for course_utils.corpus (notebook 01): locating, reading, downloading and verifying the corpus.

Small corpora are made in the tests (see conftest.py); one test reads the real offline mirror named by
$COURSE_CORPUS and fails, not skips, when it is unset.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import zipfile
from pathlib import Path
from urllib.error import URLError

import pytest

from course_utils import corpus, data
from course_utils.corpus import CorpusError

CLEAN = re.compile(r"[a-z.!?]+( [a-z.!?]+)*")  # what a correctly normalised, non-empty sentence looks like


pytestmark = pytest.mark.usefixtures("offline_and_private_data_dir")  # tests/conftest.py


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

    expected = data.read_pairs(corpus.read_corpus_lines(tiny_corpus_path))
    assert len(expected) == len(tiny_lines)
    for path in (tutorial_zip, manythings_zip, crlf_bom):
        assert data.read_pairs(corpus.read_corpus_lines(path)) == expected, path.name


def test_missing_file_error_names_the_path_and_the_fix(tmp_path):
    with pytest.raises(CorpusError, match=r"nowhere\.zip does not exist.*COURSE_CORPUS"):
        corpus.read_corpus_lines(tmp_path / "nowhere.zip")


def test_corrupt_zip_is_a_clear_error(tmp_path, tiny_lines):
    good = zip_bytes({"data/eng-fra.txt": "\n".join(tiny_lines)})
    truncated = tmp_path / "data.zip"
    truncated.write_bytes(good[: len(good) // 2])
    with pytest.raises(CorpusError, match="not a readable zip archive.*truncated download"):
        corpus.read_corpus_lines(truncated)


def test_zip_without_a_corpus_member_lists_what_it_holds(tmp_path):
    archive = write_zip(tmp_path / "deu-eng.zip", {"deu.txt": "Hi.\tHallo.\n", "_about.txt": "x"})
    with pytest.raises(CorpusError, match=r"without a corpus file: it holds \['deu.txt', '_about.txt'\]"):
        corpus.read_corpus_lines(archive)


def test_file_without_tab_separated_pairs_is_refused(tmp_path):
    spaces = tmp_path / "eng-fra.txt"
    spaces.write_text("I am cold.    J'ai froid.\nGo.    Va !\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"not a file of tab-separated pairs: 2 of 2 lines have no tab"):
        corpus.read_corpus_lines(spaces)
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)))
    with pytest.raises(CorpusError, match="not UTF-8 text"):
        corpus.read_corpus_lines(binary)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="is empty"):
        corpus.read_corpus_lines(empty)


def test_check_corpus_reports_lines_and_sha256(tiny_corpus_path, tiny_lines):
    info = corpus.check_corpus(tiny_corpus_path)
    raw = tiny_corpus_path.read_bytes()
    assert (info.lines, info.n_bytes, info.member) == (len(tiny_lines), len(raw), None)
    assert info.sha256 == hashlib.sha256(raw).hexdigest()
    assert info.known is None and "not a known corpus file" in str(info)
    assert f"{len(tiny_lines):,} sentence pairs" in str(info)


def test_display_path_is_relative_inside_the_repo(tmp_path):
    assert corpus.display_path(corpus._REPO_ROOT / "data" / "eng-fra.txt") == os.path.join("data", "eng-fra.txt")
    assert corpus.display_path(tmp_path / "x.zip") == str((tmp_path / "x.zip").resolve())


# ---------------------------------------------------------------------------------------------- locating
def test_find_corpus_prefers_the_environment_variable(monkeypatch, tiny_corpus_path, tmp_path):
    corpus.data_dir().mkdir()
    (corpus.data_dir() / "eng-fra.txt").write_text("I am here.\tJe suis ici.\n", encoding="utf-8")
    monkeypatch.setenv("COURSE_CORPUS", str(tiny_corpus_path))
    assert corpus.find_corpus() == tiny_corpus_path
    monkeypatch.delenv("COURSE_CORPUS")
    assert corpus.find_corpus() == corpus.data_dir() / "eng-fra.txt"


def test_find_corpus_with_a_wrong_environment_variable_names_it(monkeypatch, tmp_path):
    monkeypatch.setenv("COURSE_CORPUS", str(tmp_path / "typo.zip"))
    with pytest.raises(CorpusError, match=r"COURSE_CORPUS=.*typo\.zip.* but no such file exists"):
        corpus.find_corpus()


def test_find_corpus_without_corpus_or_download_says_what_to_set(monkeypatch):
    monkeypatch.delenv("COURSE_CORPUS", raising=False)
    with pytest.raises(CorpusError, match="No corpus found: COURSE_CORPUS is not set"):
        corpus.find_corpus(download=False)


def test_find_corpus_without_network_says_to_set_course_corpus(monkeypatch):
    def offline(url, timeout):
        raise URLError("[Errno -3] Temporary failure in name resolution")
    monkeypatch.delenv("COURSE_CORPUS", raising=False)
    monkeypatch.setattr(corpus, "urlopen", offline)
    with pytest.raises(CorpusError, match="Could not download.*No network\\? Set COURSE_CORPUS to a local copy"):
        corpus.find_corpus()
    assert list(corpus.data_dir().iterdir()) == []  # no temporary files left behind


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
    fingerprint = corpus.CorpusFingerprint(len(tiny_lines), len(text), hashlib.sha256(text).hexdigest(), "tiny")
    return zip_bytes({"data/eng-fra.txt": text.decode("utf-8")}), text, fingerprint


def serve(monkeypatch, response: FakeResponse) -> list[str]:
    requested = []

    def fake_urlopen(url, timeout):
        requested.append(url)
        return response
    monkeypatch.setattr(corpus, "urlopen", fake_urlopen)
    return requested


def test_download_verifies_and_moves_the_file_into_place(monkeypatch, tmp_path, served_corpus):
    archive, text, fingerprint = served_corpus
    requested = serve(monkeypatch, FakeResponse(archive))
    path = corpus._download_corpus(tmp_path, expected=fingerprint, progress=False)
    assert requested == [corpus._CORPUS_URL]
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
        corpus._download_corpus(tmp_path, expected=fingerprint, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_download_with_a_wrong_checksum_leaves_nothing_behind(monkeypatch, tmp_path, served_corpus):
    archive, _, _ = served_corpus  # checked against the real tutorial fingerprint: must not match
    serve(monkeypatch, FakeResponse(archive))
    with pytest.raises(CorpusError, match=f"is not the PyTorch tutorial's.*expected 9,541,158 bytes and sha256 "
                                          f"{corpus.TUTORIAL_CORPUS.sha256}"):
        corpus._download_corpus(tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_download_of_something_else_than_a_zip_is_refused(monkeypatch, tmp_path, served_corpus):
    serve(monkeypatch, FakeResponse(b"<html>Access denied</html>"))
    with pytest.raises(CorpusError, match="is not a zip archive .*<html>Access denied"):
        corpus._download_corpus(tmp_path, expected=served_corpus[2], progress=False)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------- issue 11: bad places
def test_a_directory_as_corpus_is_named_a_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("COURSE_CORPUS", str(tmp_path))
    with pytest.raises(CorpusError, match="is a directory, not a file"):
        corpus.find_corpus()
    with pytest.raises(CorpusError, match="is a directory, not a corpus file"):
        corpus.read_corpus_lines(tmp_path)
    with pytest.raises(CorpusError, match="is a directory"):
        data.load_course_data(path=tmp_path, log=None)


def test_a_bad_course_data_dir_gives_a_corpus_error_not_a_traceback(monkeypatch, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the data folder should be")
    monkeypatch.delenv("COURSE_CORPUS", raising=False)
    monkeypatch.setenv("COURSE_DATA_DIR", str(blocker / "data"))
    with pytest.raises(CorpusError, match=r"Cannot write the corpus to .*blocker.*COURSE_DATA_DIR") as error:
        corpus.find_corpus()
    assert "\n" not in str(error.value)


def test_a_read_only_data_folder_while_downloading_gives_a_corpus_error(monkeypatch, tmp_path, served_corpus):
    def read_only(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    serve(monkeypatch, FakeResponse(served_corpus[0]))
    monkeypatch.setattr(corpus.tempfile, "mkstemp", read_only)
    with pytest.raises(CorpusError, match="Cannot write the corpus to .*Permission denied.*writable"):
        corpus._download_corpus(tmp_path, expected=served_corpus[2], progress=False)
    assert list(tmp_path.iterdir()) == []


def test_a_server_that_never_answers_times_out_quickly_and_says_what_it_waited_for(monkeypatch, tmp_path, capsys):
    timeouts = []

    def silent_server(url, timeout):
        timeouts.append(timeout)
        raise URLError(TimeoutError("timed out"))
    monkeypatch.setattr(corpus, "urlopen", silent_server)
    with pytest.raises(CorpusError, match=r"did not answer within 15 s.*COURSE_CORPUS"):
        corpus._download_corpus(tmp_path, progress=True)
    assert timeouts == [corpus._DOWNLOAD_TIMEOUT] and corpus._DOWNLOAD_TIMEOUT <= 20
    assert "waiting up to 15 s" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
