"""What the notebooks say about trained models, in two kinds a reader can tell apart. Introduced in notebook 05.

- A **property of the method** (PROPERTIES: the sentence and its test) holds for any reasonable run: `check` asserts it
  in full mode and reports the runs of the evidence file (benchmarks/claims_evidence.py) or its own results file.
- An **observation of one run** is shown beside the stored run's value and never asserted.

Neither prints where it is made: `report()` shows them all at the end of a notebook, in one table.
"""
from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from course_utils.corpus import display_path

__all__ = ["PROPERTIES", "Property", "Claims", "LOG_ENV"]

LOG_ENV = "COURSE_CLAIMS_LOG"  # a file: every check and observe appends one JSON line to it (the evidence runs)
_RECORD_ENV = "COURSE_RECORD_STORED_RUN"  # 1: observe() writes this run's values into the stored-run file (full mode)


@dataclass(frozen=True)
class Property:
    """A statement a notebook makes about any reasonable trained model, and its test on the measured values."""
    name: str  # "<notebook>.<what>", e.g. "05.attention_wins_every_length_bucket"
    statement: str  # the sentence, as the notebook says it
    holds: Callable[[Mapping[str, Any]], bool]  # values (keyword arguments of check) -> does it hold?
    # (a results file beside the evidence file, its JSON -> each run's values), when not the evidence file's runs
    evidence: tuple[str, Callable[[Mapping[str, Any]], list[Mapping[str, Any]]]] | None = None


def _increasing(values) -> bool:
    return all(a < b for a, b in zip(values, values[1:]))


def _alignment_runs(results: Mapping[str, Any], mask_eos: bool = False) -> list[Mapping[str, Any]]:
    return [r for r in results["runs"] if r["kind"] != "ibm1" and r["mask_eos"] == mask_eos]


def _transformer_chrf_evidence(results: Mapping[str, Any]) -> list[dict]:
    pairs: dict[tuple, dict] = {}
    for r in results["records"]:
        if r.get("split") == "test" and r.get("variant") == "recipe":
            pairs.setdefault((r.get("corpus"), r["kind"], r["seed"]), {})[r["recipe"]] = r["chrf"]
    return [{"transformer_chrf": p["lecture-transformer"], "gru_chrf": p["lecture-bahdanau"]}
            for p in pairs.values() if len(p) == 2]


def _shift_evidence(results: Mapping[str, Any]) -> list[dict]:
    return [{"aer": {method: r["aer"][method]["aer"] for method in r["aer"]}} for r in _alignment_runs(results)]


def _eos_mask_evidence(results: Mapping[str, Any]) -> list[dict]:
    masked = {(r["kind"], r["seed"]): r for r in _alignment_runs(results, mask_eos=True)}
    return [{"plain": r["aer"]["attention argmax"]["aer"], "masked": masked[r["kind"], r["seed"]]["aer"][
        "attention argmax"]["aer"]} for r in _alignment_runs(results) if (r["kind"], r["seed"]) in masked]


PROPERTIES: dict[str, Property] = {p.name: p for p in [
    Property("00.attention_holds_with_length", "copying random sequences, the model without attention loses more than "
             "0.3 of its accuracy from the shortest to the longest, the model with attention less than two thirds as "
             "much, and at the longest length attention is more than 0.4 ahead",
             lambda v: v["none"][0] - v["none"][-1] > 0.3 and v["bahdanau"][0] - v["bahdanau"][-1]
             < (v["none"][0] - v["none"][-1]) * 2 / 3 and v["bahdanau"][-1] > v["none"][-1] + 0.4,
             ("bottleneck_toy.json", lambda results: [{"none": r["none"], "bahdanau": r["bahdanau"]}
                                                      for r in results["runs"]])),
    Property("A1.seed_noise_matters", "for the scaled Luong recipes the seed spread is larger than one run's bootstrap "
             "standard error; for Bahdanau and concat the two are within a factor of 2",
             lambda v: all(v["bootstrap_se"][n] < v["seed_sd"][n] for n in ("lecture-scaled_dot",
                                                                            "lecture-scaled_general"))
             and all(0.5 < v["bootstrap_se"][n] / v["seed_sd"][n] < 2 for n in ("lecture-bahdanau", "lecture-concat"))),
    Property("A4.exposure_bias_grows_with_teacher_forcing", "the more teacher forcing in training, the larger the gap "
             "between a model's free-running and teacher-forced dev loss",
             lambda v: _increasing([v["gap"][r] for r in ("0.0", "0.5", "1.0")])),
    Property("A4.teacher_forcing_learns_fastest", "full teacher forcing ends with the best greedy dev BLEU of the "
             "three short runs, free running with the worst",
             lambda v: max(v["final_bleu"], key=v["final_bleu"].get) == "1.0"
             and min(v["final_bleu"], key=v["final_bleu"].get) == "0.0"),
    Property("05.attention_wins_every_length_bucket", "attention beats no attention in every length bucket of the test "
             "split", lambda v: all(gain > 0 for gain in v["gains"])),
    Property("05.gain_ratio_flat_over_length", "the ratio of the two models' BLEU hardly depends on length: the "
             "largest bucket's ratio is less than 1.25 times the smallest's",
             lambda v: min(v["ratios"]) > 0 and max(v["ratios"]) / min(v["ratios"]) < 1.25),
    Property("06.three_scorers_beat_none_by_5_chrf", "the Bahdanau, scaled dot and concat models are each more than 5 "
             "chrF points ahead of the model without attention (mean sentence chrF and corpus chrF)",
             lambda v: all(v["chrf"][n][k] > v["chrf"]["lecture-none"][k] + 5
                           for n in ("lecture-bahdanau", "lecture-scaled_dot", "lecture-concat") for k in (0, 1))),
    Property("07.beam_beats_greedy", "beam search beats greedy decoding at some width",
             lambda v: max(v["beam_bleu"][w] for w in v["beam_bleu"] if w != "1") > v["beam_bleu"]["1"]),
    Property("07.wider_beams_help_less", "wider beams help less and less: going from width 5 to 10 adds less test BLEU "
             "than going from 1 (greedy) to 3",
             lambda v: v["beam_bleu"]["10"] - v["beam_bleu"]["5"] < v["beam_bleu"]["3"] - v["beam_bleu"]["1"]),
    Property("07.raw_log_p_prefers_short_outputs", "ranked by raw log P, the wider the beam, the shorter its outputs: "
             "width 10 shorter than width 2, width 2 shorter than greedy",
             lambda v: v["raw_words"]["10"] < v["raw_words"]["2"] < v["greedy_words"]),
    Property("07.raw_log_p_close_to_normalised", "at width 10, ranking the hypotheses by raw log P instead of log P / "
             "T changes test BLEU by less than 5 points (the sentences are short)",
             lambda v: abs(v["bleu"]["normalised"] - v["bleu"]["raw"]) < 5),
    Property("07.sampling_below_greedy", "sampling scores below greedy decoding at every temperature, and the hotter, "
             "the worse", lambda v: all(b < v["greedy_bleu"] for b in v["sample_bleu"].values())
             and _increasing([-v["sample_bleu"][t] for t in sorted(v["sample_bleu"], key=float)])),
    Property("07.unknown_words_are_common", "between a tenth and a quarter of the test sources contain a French word "
             "that the training split does not have", lambda v: 0.1 < v["unknown"] / v["sources"] < 0.25),
    Property("07.never_writes_unk", "a model whose vocabulary keeps every training word (almost) never writes <unk>: "
             "at most 1% of the test outputs", lambda v: v["unk_outputs"] <= 0.01 * v["sources"]),
    Property("07.attention_finds_the_unknown_word", "copying the source word the <unk> row attends to most picks an "
             "unknown French word more often than copying the word on the diagonal",
             lambda v: v["attention_unknown"] > v["diagonal_unknown"]),
    Property("07.few_copies_are_right", "fewer than a quarter of the copied French words are in the reference",
             lambda v: v["right"] < v["copies"] / 4),
    Property("07.copying_helps_chrf_more_than_bleu", "copying the attended word instead of a placeholder that matches "
             "nothing never lowers BLEU, and raises chrF more than BLEU",
             lambda v: v["bleu_gain"] > -1e-9 and v["chrf_gain"] > v["bleu_gain"]),
    Property("08.the_task_is_easy", "every classifier without a sparsity penalty names over 90% of the test subjects",
             lambda v: min(v["accuracy"].values()) > 0.9),
    Property("08.bag_of_words_points_at_the_pronoun", "the bag of words' top word is the gold pronoun in over 95% of "
             "the test sentences that have one", lambda v: v["precision"]["bag of words"] > 0.95),
    Property("09.transformer_chrf_above_gru", "the course's Transformer's test chrF is above the course's GRU's "
             "(test BLEU has no clear winner)", lambda v: v["transformer_chrf"] > v["gru_chrf"],
             ("transformer_vs_gru.json", _transformer_chrf_evidence)),
    Property("09.transformer_ahead_on_new_english", "on the test pairs whose English side never occurs in training, "
             "the course's Transformer's BLEU is above the course's GRU's",
             lambda v: v["transformer_bleu"] > v["gru_bleu"],
             ("unseen_english.json", lambda results: [{"gru_bleu": r["gru_unseen_bleu"], "transformer_bleu": r[
                 "transformer_unseen_bleu"]} for r in results["runs"]])),
    Property("10.shift_hurts_rnn_decoders", "for an RNN decoder, reading the weights one step later (shifted "
             "attention, which helps Transformers) aligns worse than the attention argmax",
             lambda v: v["aer"]["shifted attention"] > v["aer"]["attention argmax"],
             ("alignment.json", _shift_evidence)),
    Property("10.eos_mask_lowers_aer", "taking <eos> out of the keys lowers the attention argmax's alignment error",
             lambda v: v["masked"] < v["plain"], ("alignment.json", _eos_mask_evidence)),
]}


def _plain(value: Any) -> Any:
    """`value` as JSON data: tensors and numpy numbers as numbers, tuples as lists, keys and non-finite as strings."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


@functools.lru_cache(maxsize=8)
def _evidence_runs(path: Path) -> tuple[dict, ...]:
    """The runs of the evidence file, read once per process (() where it is missing or unreadable)."""
    try:
        return tuple(json.loads(path.read_text())["runs"])
    except (OSError, ValueError, KeyError):
        return ()


def _holds(prop: Property, values: Mapping[str, Any]) -> bool:
    try:
        return bool(prop.holds(values))
    except ArithmeticError:  # a division by a zero score (a smoke-test model): it does not hold
        return False


class Claims:
    """Judges a notebook's claims against its evidence file and records them in its stored-run file (JSON); fast:
    smoke-test models (nothing asserted or recorded). log (a JSON-lines file) and record (write observations to
    `stored_run`), when None, come from COURSE_CLAIMS_LOG and COURSE_RECORD_STORED_RUN=1. Introduced in notebook 05."""

    def __init__(self, evidence: str | os.PathLike, stored_run: str | os.PathLike, fast: bool = False,
                 log: str | os.PathLike | None = None, record: bool | None = None):
        self.evidence, self.stored_run_file, self.fast = Path(evidence).resolve(), Path(stored_run), fast
        self.log = log if log is not None else (os.environ.get(LOG_ENV, "").strip() or None)
        self.record = record if record is not None else os.environ.get(_RECORD_ENV, "").strip() == "1"
        self._properties: dict[str, bool] = {}  # name -> held on this run, in the order checked
        self._observations: dict[str, tuple[str, str]] = {}  # name -> (stored run's value, this run's), as shown

    def _log(self, record: dict) -> None:
        if self.log:
            with open(self.log, "a", encoding="utf-8") as file:
                file.write(json.dumps({**record, "fast": self.fast}) + "\n")

    def evidence_values(self, prop: Property) -> tuple[str, list[Mapping[str, Any]]]:
        """(the file holding the evidence of `prop`, the values of each of its runs)."""
        if prop.evidence is not None:
            name, runs_of = prop.evidence
            path = self.evidence.parent / name
            try:
                return display_path(path), list(runs_of(json.loads(path.read_text())))
            except (OSError, ValueError, KeyError):
                return display_path(path), []
        return display_path(self.evidence), [record["values"] for run in _evidence_runs(self.evidence)
                                             for record in run["properties"] if record["name"] == prop.name]

    def check(self, name: str, **values: Any) -> bool:
        """Judge property `name` on this run's `values` and log it; returns whether it held, and in full mode raises
        AssertionError when it does not. `report()` shows the verdict. Introduced in notebook 05."""
        prop = PROPERTIES[name]
        values = _plain(values)
        held = _holds(prop, values)
        self._log({"kind": "property", "name": name, "held": held, "values": values})
        if held or self.fast:
            self._properties[name] = held
            return held
        raise AssertionError(f"property {name!r} ({prop.statement}) does not hold on this run: {values}. It held in "
                             f"every run of {self.evidence_values(prop)[0]}: please report this run (seed, device, "
                             "corpus)")

    def stored_run(self) -> dict[str, Any]:
        """The observations of the stored run, {} when there is none."""
        try:
            return json.loads(self.stored_run_file.read_text())
        except (OSError, ValueError):
            return {}

    def observe(self, name: str, value: Any, show: Callable[[Any], str] = str) -> Any:
        """Log observation `name` ("06.sharpest_scorer") of this run, and store it when recording in full mode;
        `report()` shows it beside the stored run's value (`show` formats both). Never asserts; returns `value`.
        Introduced in notebook 05."""
        value = _plain(value)
        stored = self.stored_run()
        before = show(stored[name]) if name in stored else "(none recorded)"
        if self.record and not self.fast:
            stored[name] = value
            self.stored_run_file.write_text(json.dumps(stored, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
            before = show(value)  # this run is the stored run
        self._log({"kind": "observation", "name": name, "value": value})
        self._observations[name] = (before, show(value))
        return value

    def report(self) -> None:
        """Print the notebook's claims in one table: each property, whether it held on this run and in
        how many runs of its evidence; each observation, the stored run's value beside this run's. Introduced in
        notebook 05."""
        lines = ["(fast mode: smoke-test models; properties are reported, not asserted)"] if self.fast else []
        if self._properties:
            lines.append("Properties (asserted on your run; the evidence: many runs over seeds, devices, corpora)")
            for name, held in self._properties.items():
                prop = PROPERTIES[name]
                path, runs = self.evidence_values(prop)
                judged = [_holds(prop, run) for run in runs]  # each evidence run, by the property as defined now
                evidence = f"held in {sum(judged)} of {len(judged)} runs of {path}" if judged else "no evidence runs"
                lines.append(f"  {'holds' if held else 'does not hold'} on your run; {evidence}: {prop.statement}")
        if self._observations:
            lines.append("Observations (one run each: the stored run, then yours)")
            width = max(map(len, self._observations))
            for name, (stored, yours) in self._observations.items():
                lines.append(f"  {name:{width}}  stored run: {stored}  |  your run: {yours}")
        print("\n".join(lines) or "(no properties or observations in this notebook)")
