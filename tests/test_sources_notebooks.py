"""What the core notebooks and their appendices say about the course's sources, checked against the sources' text
(../shared/seeds/, tests/seeds.py) and against the package where the package has the fix.

- 01: the course filters with the tutorial's prefixes exactly as Carton's lecture prints them; the Dissected
  Attention Network notebook's list differs by the space after "she s", and on the corpus that space is the whole
  difference between the two filters; the counts both sources print are the ones 01 states.
- 03: the tutorial's encoder-output buffer, run as the Dissected Attention Network notebook writes it, raises an
  IndexError on an 11-token source; the package's location decoder refuses it with a message instead.
- A1: the lecture's two training logs are quoted, and A1 states their final losses and times as the lecture prints
  them, the run without attention first.
- A4: the lecture lists three alternatives to teacher forcing, and A4 says three.
"""
import json
import re
from types import SimpleNamespace

import pytest
import torch
from seeds import ROOT, mismatches, quotes, seed_lines

from course_utils import corpus, data
from course_utils.data import MAX_LENGTH
from course_utils.decoder import AttnDecoderRNN

NOTEBOOKS = ROOT / "notebooks"
NUMBERS = {2: "two", 3: "three", 4: "four", 5: "five"}


def cell_text(notebook: str, start: str) -> str:
    """The one markdown cell of `notebook` that starts with `start`."""
    cells = json.loads((NOTEBOOKS / notebook).read_text(encoding="utf-8"))["cells"]
    texts = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    hits = [text for text in texts if text.startswith(start)]
    assert len(hits) == 1, (notebook, start, len(hits))
    return hits[0]


def quoted(notebook: str) -> dict[tuple[str, int, int], list[str]]:
    """(source, first, last) -> the quoted block, for every marked quotation of `notebook`."""
    return {(source, first, last): block for source, first, last, block, _ in quotes(NOTEBOOKS / notebook)}


def string_literals(lines: list[str]) -> list[str]:
    return re.findall(r'"([^"]*)"', "\n".join(lines))


def lecture_prefixes() -> list[str]:
    lines = seed_lines("003")[242:252]  # lines 243-252: the slide's eng_prefixes = ( ... )
    assert "eng_prefixes = (" in lines[0]
    return string_literals(lines)


def dissected_prefixes() -> list[str]:
    lines = seed_lines("000")[123:131]  # lines 124-131: eng_prefixes = ( ... )
    assert lines[0].strip() == "eng_prefixes = ("
    return string_literals(lines)


def trimmed_counts(source: str) -> list[tuple[int, int]]:
    """(line number, count) of every printed "Trimmed to N sentence pairs" in a source."""
    pattern = re.compile(r"\s*Trimmed to (\d+) sentence pairs")
    return [(number, int(m.group(1))) for number, line in enumerate(seed_lines(source), 1)
            if (m := pattern.fullmatch(line))]


# ------------------------------------------------------------------------------------------------- 01, the filter
def test_the_course_filters_with_the_tutorials_prefixes_as_carton_prints_them():
    assert lecture_prefixes() == list(data.ENG_PREFIXES)
    assert [p for p in data.ENG_PREFIXES if not p.endswith(" ")] == ["he is", "she is", "you are", "we are", "they are"]


def test_the_dissected_notebooks_list_differs_by_the_space_after_she_s():
    dissected = dissected_prefixes()
    assert [p for p in dissected if p not in data.ENG_PREFIXES] == ["she s"]
    assert [p for p in data.ENG_PREFIXES if p not in dissected] == ["she s "]
    said = data.Pair("elle a dit oui .", "she said yes .")
    assert data.keep_pair(said, prefixes=tuple(dissected)) and not data.keep_pair(said)
    assert ("000", 126, 127) in quoted("01_data.ipynb")


def test_on_the_corpus_the_missing_space_is_the_whole_difference_between_the_two_filters():
    try:
        path = corpus.find_corpus(download=False)
    except corpus.CorpusError as error:
        pytest.skip(f"no local corpus ({error}); CI sets COURSE_CORPUS")
    dissected = tuple(dissected_prefixes())
    lines = [line for line in corpus.read_corpus_lines(path) if "she" in line.split("\t")[0].lower()]
    pairs = data.read_pairs(lines)  # every pair either list can treat differently has "she" in its English
    extra = [p for p in data.filter_pairs(pairs, prefixes=dissected) if not data.keep_pair(p)]
    assert extra and not [p for p in data.filter_pairs(pairs) if not data.keep_pair(p, prefixes=dissected)]
    assert all(p.target.startswith("she s") and p.target[5] != " " for p in extra)
    assert {"said", "seems"} <= {p.target.split(" ")[1] for p in extra}  # the examples notebook 01 names


def test_notebook_01_states_the_counts_the_sources_print():
    [(_, lecture)], [(_, dissected)] = trimmed_counts("003"), trimmed_counts("000")
    assert (lecture, dissected) == (10599, 10853)
    anchored_line = next(n for n, line in enumerate(seed_lines("003"), 1) if 'r"^[^a-zA-Z.!?]+"' in line)
    assert trimmed_counts("003")[0][0] > anchored_line  # printed on a later slide than the anchored regex
    box = cell_text("01_data.ipynb", "**A source's bug: the anchored regex.**")
    assert f"`Trimmed to {lecture} sentence pairs`" in box and ("003", anchored_line, anchored_line) in quoted(
        "01_data.ipynb")
    prefixes = cell_text("01_data.ipynb", "Three details, checked by the last lines above.")
    assert f"`Trimmed to {dissected} sentence pairs`" in prefixes and f"prints {lecture}" in prefixes


# ------------------------------------------------------------------------------ 03, the location attention's buffer
def test_the_tutorials_buffer_has_no_slot_for_an_eleventh_token_and_the_package_says_so():
    lines = seed_lines("000")
    make_buffer, store = lines[510].strip(), lines[522].strip()  # lines 511 and 523, quoted in notebook 03
    assert make_buffer.startswith("encoder_outputs = torch.zeros(MAX_LENGTH")
    assert store.startswith("encoder_outputs[ei]")
    scope = {"torch": torch, "MAX_LENGTH": MAX_LENGTH, "device": "cpu", "encoder": SimpleNamespace(hidden_size=4),
             "encoder_output": torch.ones(1, 1, 4)}
    exec(make_buffer, scope)
    for ei in range(MAX_LENGTH):  # a source of MAX_LENGTH tokens fills the buffer
        exec(store, {**scope, "ei": ei})
    with pytest.raises(IndexError):  # the 11th token: ei = 10
        exec(store, {**scope, "ei": MAX_LENGTH})
    decoder = AttnDecoderRNN(4, 7)
    keys, mask = torch.zeros(1, MAX_LENGTH + 1, 4), torch.ones(1, MAX_LENGTH + 1, dtype=torch.bool)
    with pytest.raises(ValueError, match="MAX_LENGTH"):
        decoder.prepare_memory(keys, mask)
    assert {("000", 246, 256), ("000", 511, 523)} <= set(quoted("03_attention_decoder.ipynb"))


# --------------------------------------------------------------------------------------- A1, the lecture's two runs
def test_a1_quotes_the_lectures_two_training_logs_with_their_final_numbers():
    lines = seed_lines("003")
    assert lines[805].strip() == "Without attention" and lines[823].strip() == "With attention"  # 806, 824
    found = quoted("A1_comparing_recipes.ipynb")
    final = {}
    for name, first, last in (("none", 817, 821), ("attention", 836, 840)):
        assert ("003", first, last) in found and not mismatches("003", first, last, found["003", first, last])
        match = re.fullmatch(r"(\d+m \d+s) \(- 0m 0s\) \(25000 100%\) (\d\.\d{4})", lines[last - 1].strip())
        assert match, lines[last - 1]
        final[name] = match.groups()  # (time, loss) after 25,000 pairs
    cell = cell_text("A1_comparing_recipes.ipynb", "**One run each, as in Carton's lecture.**")
    (time_none, loss_none), (time_attention, loss_attention) = final["none"], final["attention"]
    assert f"Attention ends at {loss_attention} against {loss_none}" in cell
    assert f"took {time_attention} against {time_none}" in cell
    assert float(loss_attention) < float(loss_none)  # what the lecture's runs show, and all they show


# ----------------------------------------------------------------------------- A4, the alternatives to teacher forcing
def test_a4_counts_the_lectures_alternatives_to_teacher_forcing():
    lines = seed_lines("003")
    assert lines[26].strip() == "- Alternatives"  # line 27, under "Training RNNs"
    alternatives = [a.strip() for a in lines[27].strip(" -").split(",")]  # line 28
    assert alternatives == ["Minimum risk", "reinforcement learning", "GANs"]
    cell = cell_text("A4_training_further.ipynb", "**What the data says**, for any run. On the proxy")
    assert f"Carton's lecture lists {NUMBERS[len(alternatives)]}" in cell and ("003", 27, 28) in quoted(
        "A4_training_further.ipynb")
