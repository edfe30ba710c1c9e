"""claims: properties asserted on the learner's run, observations shown beside the stored run's (both in one report at
the end of a notebook, nothing printed where they are made); and the evidence
file (benchmarks/results/claims.json) that backs every property a notebook asserts."""
import json
import re
from pathlib import Path

import pytest

from course_utils import claims

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9A][0-9]_*.ipynb"))  # core, further and appendix (A1_...)
EVIDENCE = ROOT / "benchmarks" / "results" / "claims.json"
STORED_RUN = ROOT / "notebooks" / "stored_run.json"


def code_of(notebook: Path) -> str:
    cells = json.loads(notebook.read_text())["cells"]
    return "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")


def asserted_properties() -> dict[str, list[str]]:
    """property name -> notebooks whose code calls claims.check with it."""
    found = {}
    for notebook in NOTEBOOKS:
        for name in re.findall(r'claims\.check\(\s*"([^"]+)"', code_of(notebook)):
            found.setdefault(name, []).append(notebook.stem)
    return found


@pytest.fixture
def full_mode(tmp_path):
    """A full-mode Claims on the repository's evidence, logging to and storing in tmp_path; .folder is tmp_path."""
    judge = claims.Claims(EVIDENCE, tmp_path / "stored_run.json", fast=False, log=tmp_path / "log.jsonl",
                          record=False)
    judge.folder = tmp_path
    return judge


def log_records(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "log.jsonl").read_text().splitlines()]


def test_a_property_that_holds_passes_and_is_logged(full_mode, capsys):
    assert full_mode.check("05.attention_wins_every_length_bucket", gains=[12.5, 0.1, 14.2]) is True
    assert capsys.readouterr().out == ""  # nothing where it is checked: the report at the end shows it
    assert full_mode.report() is None  # printed, not returned (a notebook cell would show it twice)
    report = capsys.readouterr().out
    assert "holds on your run; held in " in report and "attention beats no attention in every length bucket" in report
    (record,) = log_records(full_mode.folder)
    assert record == {"kind": "property", "name": "05.attention_wins_every_length_bucket", "held": True,
                      "values": {"gains": [12.5, 0.1, 14.2]}, "fast": False}


def test_a_property_that_fails_raises_in_full_mode_only(full_mode, capsys):
    with pytest.raises(AssertionError, match=r"attention beats no attention in every length bucket.*-0\.5"):
        full_mode.check("05.attention_wins_every_length_bucket", gains=[12.5, -0.5, 14.2])
    assert log_records(full_mode.folder)[0]["held"] is False  # logged before it raised
    full_mode.fast = True
    assert full_mode.check("05.attention_wins_every_length_bucket", gains=[-1.0]) is False
    capsys.readouterr()
    full_mode.report()
    report = capsys.readouterr().out
    assert report.startswith("(fast mode: smoke-test models; properties are reported, not asserted)")
    assert "does not hold on your run" in report


def test_values_are_logged_as_plain_json(full_mode):
    torch = pytest.importorskip("torch")
    full_mode.check("A4.exposure_bias_grows_with_teacher_forcing", gap={1.0: torch.tensor(1.7), 0.5: 0.4, 0.0: -0.01})
    assert log_records(full_mode.folder)[0]["values"] == {"gap": {"1.0": pytest.approx(1.7), "0.5": 0.4, "0.0": -0.01}}


def test_an_observation_is_reported_beside_the_stored_run_and_never_asserts(full_mode, capsys):
    stored = {"06.sharpest_softest": ["lecture-scaled_general", "lecture-scaled_dot"]}
    full_mode.stored_run_file.write_text(json.dumps(stored))
    assert full_mode.observe("06.sharpest_softest", ["lecture-concat", "lecture-bahdanau"]) == ["lecture-concat",
                                                                                            "lecture-bahdanau"]
    full_mode.observe("06.new_thing", 0.25, show="{:.0%}".format)
    assert capsys.readouterr().out == ""  # nothing where it is made
    full_mode.report()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Observations (one run each: the stored run, then yours)"
    assert out[1] == ("  06.sharpest_softest  stored run: ['lecture-scaled_general', 'lecture-scaled_dot']  |  "
                      "your run: ['lecture-concat', 'lecture-bahdanau']")
    assert out[2] == "  06.new_thing         stored run: (none recorded)  |  your run: 25%"
    assert [r["kind"] for r in log_records(full_mode.folder)] == ["observation", "observation"]
    assert json.loads(full_mode.stored_run_file.read_text()) == {"06.sharpest_softest": ["lecture-scaled_general",
                                                                                 "lecture-scaled_dot"]}


def test_recording_the_stored_run_writes_full_mode_values_only(full_mode, capsys):
    full_mode.record = True
    full_mode.observe("06.best_rows_below_0.8", 0.52)
    full_mode.fast = True
    full_mode.observe("06.best_rows_below_0.8", 0.99)  # a smoke-test model is never the stored run
    assert json.loads(full_mode.stored_run_file.read_text()) == {"06.best_rows_below_0.8": 0.52}


def test_the_log_and_recording_default_to_the_environment_the_caller_set(tmp_path, monkeypatch):
    monkeypatch.setenv(claims.LOG_ENV, str(tmp_path / "log.jsonl"))
    monkeypatch.setenv(claims._RECORD_ENV, "1")
    judge = claims.Claims(EVIDENCE, tmp_path / "stored_run.json")
    assert (judge.log, judge.record, judge.fast) == (str(tmp_path / "log.jsonl"), True, False)
    monkeypatch.delenv(claims.LOG_ENV)
    monkeypatch.delenv(claims._RECORD_ENV)
    assert (claims.Claims(EVIDENCE, STORED_RUN).log, claims.Claims(EVIDENCE, STORED_RUN).record) == (None, False)


def test_every_property_a_notebook_asserts_is_defined_once_and_every_definition_is_used():
    used = asserted_properties()
    assert set(used) == set(claims.PROPERTIES), "a notebook asserts an undefined property, or one is unused"
    for name, notebooks in used.items():
        assert notebooks == [next(nb.stem for nb in NOTEBOOKS if nb.stem.startswith(name.split(".")[0]))], name


def test_no_notebook_asserts_on_a_trained_model_outside_claims():
    for notebook in NOTEBOOKS:
        assert not re.search(r"if not FAST[^\n]*:\s*(#[^\n]*)?\n\s+assert", code_of(notebook)), notebook.stem


def test_every_observation_printed_by_a_notebook_has_a_stored_value():
    stored = json.loads(STORED_RUN.read_text())
    for notebook in NOTEBOOKS:
        for name in re.findall(r'claims\.observe\(\s*"([^"]+)"', code_of(notebook)):
            assert name in stored, f"{notebook.stem}: {name} (execute the notebooks with {claims._RECORD_ENV}=1)"


# ------------------------------------------------------------------------------------- the evidence file
@pytest.fixture(scope="module")
def evidence():
    return json.loads(EVIDENCE.read_text())


def test_the_evidence_covers_seeds_devices_and_corpora(evidence):
    runs = evidence["runs"]
    assert len({run["seed"] for run in runs}) >= 5
    assert {run["device"] for run in runs} >= {"cpu", "cuda"}
    assert {run["corpus"] for run in runs} >= {"mirror", "derived"}
    for device in ("cpu", "cuda"):
        for corpus in ("mirror", "derived"):
            assert any(run["device"] == device and run["corpus"] == corpus for run in runs), (device, corpus)
    assert not any(run["fast"] for run in runs), "fast-mode runs are smoke tests, not evidence"


def test_every_asserted_property_held_in_every_run_of_the_evidence(evidence):
    for run in evidence["runs"]:
        recorded = {record["name"]: record for record in run["properties"]}
        for name in asserted_properties():
            if claims.PROPERTIES[name].evidence is not None:
                continue  # its own results file: the next test
            assert name in recorded, f"{name} was not evaluated in run {run['label']}: rerun the evidence"
            assert claims.PROPERTIES[name].holds(recorded[name]["values"]), f"{name} fails in run {run['label']}"


def test_a_property_with_its_own_results_file_held_in_every_run_of_it_over_three_seeds_or_more():
    own = [prop for prop in claims.PROPERTIES.values() if prop.evidence is not None]
    assert own, "notebooks 09 and 10's properties are judged on their own results files"
    judge = claims.Claims(EVIDENCE, STORED_RUN)
    for prop in own:
        path, runs = judge.evidence_values(prop)
        results = json.loads((ROOT / path).read_text())
        seeds = {run["seed"] for run in results.get("runs", results.get("records", []))}
        assert len(runs) >= 3 and len(seeds) >= 3, f"{prop.name}: {len(runs)} runs, seeds {seeds} in {path}"
        assert all(prop.holds(values) for values in runs), f"{prop.name} fails in a run of {path}"


def test_the_report_judges_the_evidence_as_the_property_is_defined_now(tmp_path, capsys):
    # a run logged as held under an earlier, looser threshold must not count now (as the evidence test judges it)
    evidence = tmp_path / "claims.json"
    logged = lambda unk: {"name": "07.never_writes_unk", "held": True, "values": {"unk_outputs": unk, "sources": 100}}
    evidence.write_text(json.dumps({"runs": [{"properties": [logged(0)]}, {"properties": [logged(5)]}]}))
    claims._evidence_runs.cache_clear()
    try:
        judge = claims.Claims(evidence, tmp_path / "stored_run.json", log=None)
        judge.check("07.never_writes_unk", unk_outputs=0, sources=100)
        judge.report()
    finally:
        claims._evidence_runs.cache_clear()
    report = capsys.readouterr().out
    assert f"holds on your run; held in 1 of 2 runs of {evidence}: " in report
