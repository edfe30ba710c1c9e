"""Every quotation of a source in the notebooks is the source's own lines (tests/seeds.py says how a quotation is
marked), and the cell that quotes names the source's author."""

import pytest
from seeds import ROOT, SOURCES, mismatches, quotes

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
QUOTES = [(notebook, *quote) for notebook in NOTEBOOKS for quote in quotes(notebook)]


@pytest.mark.parametrize("notebook, source, first, last, block, cell", QUOTES,
                         ids=[f"{q[0].stem}-{q[1]}-{q[2]}" for q in QUOTES])
def test_a_quotation_is_the_sources_own_lines(notebook, source, first, last, block, cell):
    assert source in SOURCES, f"{notebook.name}: no source {source}"
    assert not mismatches(source, first, last, block), (notebook.name, mismatches(source, first, last, block))
    assert SOURCES[source] in cell, f"{notebook.name}: a quotation of {source} that does not name {SOURCES[source]}"


def test_a_wrong_quotation_is_caught():
    source, first, last, block = "003", 209, 209, ['15     s = re.sub(r"^[^a-zA-Z.!?]+", r" ", s)']
    assert not mismatches(source, first, last, block)
    assert mismatches(source, first, last, ['15     s = re.sub(r"[^a-zA-Z.!?]+", r" ", s)'])  # the ^ dropped
    assert mismatches(source, 208, 209, block)  # the block does not start where it says
    assert mismatches("003", 210, 212, ["16     return s", "```", ""])  # a source's fence ends the notebook's block


def test_the_readme_credits_every_source():
    credits = (ROOT / "README.md").read_text().split("## Licence and credits", 1)[-1]
    for words in (["Robertson", "seq2seq_translation_tutorial"], ["Dissected Attention Network", "878"],
                  ["Jake Tae", "jaketae.github.io"], ["buomsoo-kim", "Alignment Models (3)"],
                  ["Samuel Carton", "lecture 18"], ["Gabriel Loye", "floydhub"]):
        assert all(word in credits for word in words), words


def test_every_source_is_quoted_from_its_text():
    assert {quote[1] for quote in QUOTES} == set(SOURCES)
