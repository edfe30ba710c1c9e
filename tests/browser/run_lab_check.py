"""Browser check of the attention lab (`python -m tools.site.lab`): exported, then run in headless Chromium offline and
compared with PyTorch.

Not collected by pytest (the name does not start with test_): it needs a browser. About a minute on the 2-core
machine. Setup as for tests/browser/run_site_check.py (chromium, chromium-driver); the model is the one
`python -m tools.site.lab` exports: lecture-bahdanau, its fast-mode copy when COURSE_FAST=1 (CI), trained first if not
cached. Run from the repository root:

    .venv/bin/python tests/browser/run_lab_check.py [--lab DIR] [--model NAME] [--sentences 50] [--screenshot PNG]

What it does (exit 0, or 1 with the reason):
  1. exports the lab into a temp folder with `python -m tools.site.lab --output DIR` (or checks DIR given by --lab,
     e.g. a built site's lab/), and loads the model it names in PyTorch;
  2. opens DIR/index.html as a file:// URL in headless Chromium with the network cut (run_site_check.OFFLINE_ARGS)
     and waits until the model is loaded (the load time is measured);
  3. normalisation: raw sentences with capitals, accents and punctuation give course_utils.data.normalize_string's
     tokens; an unknown word is marked;
  4. translates the first N distinct source sentences of the test split (default 50) by typing each and pressing
     Translate, and compares each with PyTorch's greedy decoding (course_utils.translate.translate_batch): the same
     output words, every attention weight within 1e-4;
  5. one edit through the page: steps to the second output word, clicks the source word it attends to least (the
     decoder reads only that word at that step), and compares the recomputed translation and weights with PyTorch's
     forced recomputation (decoder.step with the given weights at that step, greedy after it); then one zero-out (x)
     the same way, and one drag of a bar (W3C pointer actions); Reset must give the model's own translation back;
  6. bad input: an empty line, only unknown words, too long a sentence, digits, characters outside the corpus's
     alphabet, several lines: each gives its one-line message and no result panel;
  7. no request outside file:/data:/blob: and no error in the browser console; saves a screenshot.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # webdriver.py beside this file, also when imported
import webdriver  # noqa: E402
from run_site_check import OFFLINE_ARGS, check_page_hygiene  # noqa: E402
from webdriver import CHROMEDRIVER, CHROMIUM, CheckFailed, WebDriver, headless_chromium  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(1, str(REPO))  # tools.site.lab (the reference decoding with edits), as from the repository root
TOLERANCE = 1e-4
BAD_INPUTS = {  # kind -> (what is typed, a phrase its message must contain)
    "empty line": ("   ", "Nothing to translate"),
    "only unknown words": ("xyzzy plugh", "None of these words"),
    "too long": ("je pense que tu es un homme tres tres tres gentil .", "Too long"),
    "digits": ("j ai 20 ans .", "Digits"),
    "characters outside the alphabet": ("je suis 日本 .", "not in the corpus's alphabet"),
    "several lines": ("je suis fatigue .\nil est grand .", "One sentence at a time"),
}
RAW = ["Je suis TRÈS fatigué !", "Tu es sûr, n'est-ce pas ?", "Elle a l'air heureuse."]

RESULT_JS = "return window.lab ? {runs: lab.runs, result: lab.result, error: lab.error, message: lab.message} : null;"


def read_manifest(lab: Path) -> dict:
    text = (lab / "model.js").read_text(encoding="utf-8")
    found = re.search(r"window\.LAB_MODEL = (\{.*\});", text, re.S)
    if not found:
        raise CheckFailed(f"{lab / 'model.js'} holds no LAB_MODEL")
    return json.loads(found.group(1))


def export(folder: Path, model: str) -> float:
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "tools.site.lab", "--model", model, "--output", str(folder)],
                            cwd=REPO, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    if result.returncode != 0:
        raise CheckFailed(f"`python -m tools.site.lab --output {folder}` failed:\n{result.stdout}{result.stderr}")
    return time.monotonic() - start


def submit(browser: WebDriver, text: str, timeout: float = 60) -> dict:
    """Type `text` into the sentence box (set it, when it has several lines: typing a newline presses Enter), press
    Translate, wait for the page to finish; returns RESULT_JS's answer."""
    before = browser.run_js(RESULT_JS)["runs"]
    box = browser.find("#sentence")
    browser.clear(box)
    if "\n" in text or not text.strip():
        browser.run_js("document.getElementById('sentence').value = arguments[0];", text)
    else:
        browser.type(box, text)
    browser.click(browser.find("#translate"))
    return wait_run(browser, before, timeout, f"the page did not answer {text!r}")


def wait_run(browser: WebDriver, before: int, timeout: float, what: str) -> dict:
    return browser.wait_js(f"var r = (function () {{ {RESULT_JS} }})(); return r && r.runs > {before} ? r : null;",
                           timeout, what)


def compare(what: str, tokens: list[str], weights: list[list[float]], expected_tokens: list[str], expected) -> float:
    """The page's output words and weights (T x S) against PyTorch's; returns the largest weight difference."""
    if tokens != expected_tokens:
        raise CheckFailed(f"{what}: the page writes {' '.join(tokens)!r}, PyTorch {' '.join(expected_tokens)!r}")
    import torch

    got = torch.tensor(weights, dtype=torch.float64)
    expected = expected.to(torch.float64)
    if got.shape != expected.shape:
        raise CheckFailed(f"{what}: weights of shape {tuple(got.shape)}, PyTorch's {tuple(expected.shape)}")
    difference = float((got - expected).abs().max())
    if difference > TOLERANCE:
        raise CheckFailed(f"{what}: attention weights differ from PyTorch's by {difference:.2e} (> {TOLERANCE:g})")
    return difference


def check_normalisation(browser: WebDriver, src_vocab) -> None:
    from course_utils.data import normalize_string

    for raw in RAW:
        answer = submit(browser, raw)
        if answer["error"] or answer["result"]["words"] != normalize_string(raw).split():
            raise CheckFailed(f"{raw!r}: the page reads {answer['result'] and answer['result']['words']} "
                              f"({answer['error']}), the course's normalisation {normalize_string(raw).split()}")
    answer = submit(browser, "je suis xyzzy .")
    marked = browser.run_js("return Array.from(document.querySelectorAll('#tokens .token.unknown'))"
                            ".map(e => e.textContent);")
    if marked != [w for w in answer["result"]["words"] if w not in src_vocab]:
        raise CheckFailed(f"'je suis xyzzy .': unknown words marked {marked}")


def check_sentences(browser: WebDriver, trained, sentences: list[str]) -> tuple[float, list[float]]:
    from course_utils.translate import translate_batch

    references = translate_batch(trained.model, trained.src_vocab, trained.tgt_vocab, sentences)
    worst, timings = 0.0, []
    for sentence, reference in zip(sentences, references):
        answer = submit(browser, sentence)
        if answer["error"] or not answer["result"]:
            raise CheckFailed(f"{sentence!r}: no translation, message {answer['message']!r}")
        result = answer["result"]
        worst = max(worst, compare(repr(sentence), result["tokens"], result["weights"], reference.output_tokens,
                                   reference.attention))
        shown = browser.run_js("return document.getElementById('translation').textContent.trim();")
        if " ".join(shown.split()) != reference.text:
            raise CheckFailed(f"{sentence!r}: the page shows {shown!r}, PyTorch writes {reference.text!r}")
        timings.append(browser.run_js("return lab.timings[lab.timings.length - 1];"))
    return worst, timings


def check_edit(browser: WebDriver, trained, sentences: list[str]) -> str:
    """Edits through the page's controls, compared with tools.site.lab.graphs.decode_with_edits."""
    from tools.site.lab.graphs import decode_with_edits

    tgt = trained.tgt_vocab.index2word
    for sentence in sentences:  # one whose translation has at least two words before <eos>
        answer = submit(browser, sentence)
        if len(answer["result"]["output"]) >= 3:
            break
    else:
        raise CheckFailed("no test sentence translates into two words or more: nothing to edit at step 2")
    result = answer["result"]
    ids, own = result["ids"], result["output"]
    browser.click(browser.find("#next"))
    cursor = browser.run_js("return lab.result.cursor;")
    if cursor != 1:
        raise CheckFailed(f"'next word' moved the step to {cursor}, not 1")
    weights = result["weights"][1]
    target = min(range(len(ids) - 1), key=lambda j: weights[j])  # the word (not <eos>) read least at step 2
    before = browser.run_js(RESULT_JS)["runs"]
    browser.click(browser.find(f'#bars .bar-row[data-index="{target}"] .word'))
    edited = wait_run(browser, before, 60, "the page did not recompute after the edit")["result"]
    one_hot = [1.0 if j == target else 0.0 for j in range(len(ids))]
    expected_ids, expected_weights = decode_with_edits(trained.model, ids, {1: one_hot})
    difference = compare(f"{sentence!r} edited", edited["tokens"], edited["weights"], [tgt[i] for i in expected_ids],
                         expected_weights)
    if edited["output"][:1] != own[:1]:
        raise CheckFailed(f"the edit at step 2 changed step 1: {edited['output']} vs {own}")
    shown = browser.run_js("return document.getElementById('translation').textContent.trim();")
    if " ".join(shown.split()) != edited["text"]:
        raise CheckFailed(f"after the edit the page shows {shown!r}, its result is {edited['text']!r}")
    # a zero-out (x) of the word step 2 reads most, on top of the model's own weights (Reset first)
    before = browser.run_js(RESULT_JS)["runs"]
    browser.click(browser.find("#reset"))
    restored = wait_run(browser, before, 60, "Reset did not recompute")["result"]
    if restored["output"] != own or restored["edits"]:
        raise CheckFailed(f"Reset gives {restored['output']}, the model's own output is {own}")
    if browser.run_js("return lab.result.cursor;") != 1:
        browser.click(browser.find("#next"))
    strongest = max(range(len(ids)), key=lambda j: weights[j])
    before = browser.run_js(RESULT_JS)["runs"]
    browser.click(browser.find(f'#bars .bar-row[data-index="{strongest}"] .zero'))
    zeroed = wait_run(browser, before, 60, "the page did not recompute after the zero-out")["result"]
    given = zeroed["edits"]["1"]
    others = sum(weights) - weights[strongest]
    expected_given = [0.0 if j == strongest else w / others for j, w in enumerate(weights)]
    if max(abs(a - b) for a, b in zip(given, expected_given)) > TOLERANCE:
        raise CheckFailed(f"zeroing word {strongest} out gave weights {given}, expected {expected_given}")
    zero_ids, zero_weights = decode_with_edits(trained.model, ids, {1: given})
    difference = max(difference, compare(f"{sentence!r} zeroed", zeroed["tokens"], zeroed["weights"],
                                         [tgt[i] for i in zero_ids], zero_weights))
    # a drag: the bar of the word read least, from its middle 40 px to the left (W3C pointer actions), after Reset
    before = browser.run_js(RESULT_JS)["runs"]
    browser.click(browser.find("#reset"))
    wait_run(browser, before, 60, "Reset did not recompute")
    if browser.run_js("return lab.result.cursor;") != 1:
        browser.click(browser.find("#next"))
    before = browser.run_js(RESULT_JS)["runs"]
    track = browser.find(f'#bars .bar-row[data-index="{target}"] .track')
    browser._session("POST", "/actions", {"actions": [{"type": "pointer", "id": "mouse", "parameters": {
        "pointerType": "mouse"}, "actions": [
        {"type": "pointerMove", "duration": 0, "origin": {webdriver.ELEMENT_KEY: track}, "x": 0, "y": 0},
        {"type": "pointerDown", "button": 0}, {"type": "pointerMove", "duration": 150, "origin": "pointer", "x": -40,
                                               "y": 0}, {"type": "pointerUp", "button": 0}]}]})
    dragged = wait_run(browser, before, 60, "the page did not recompute after a drag")["result"]
    given = dragged["edits"].get("1")
    if not given or not 0.2 < given[target] < 0.5 or abs(sum(given) - 1) > TOLERANCE:
        raise CheckFailed(f"dragging the bar of word {target} to the left of its middle set the weights {given}")
    drag_ids, drag_weights = decode_with_edits(trained.model, ids, {1: given})
    difference = max(difference, compare(f"{sentence!r} dragged", dragged["tokens"], dragged["weights"],
                                         [tgt[i] for i in drag_ids], drag_weights))
    source = sentence.split()
    return (f"edit: {sentence!r} at step 2 (PyTorch and the page both write {' '.join(tgt[i] for i in own)!r}); "
            f"reading only {source[target]!r} the page writes {edited['text']!r}, zeroing "
            f"{(source + ['<eos>'])[strongest]!r} out {zeroed['text']!r}, dragging {source[target]!r} to "
            f"{given[target]:.2f} {dragged['text']!r}; each equals PyTorch's forced recomputation "
            f"(decoder.step with the page's weights at step 2, greedy after; words equal, weights within "
            f"{difference:.1e}); Reset restores the model's own")


def check_bad_inputs(browser: WebDriver) -> None:
    for kind, (text, phrase) in BAD_INPUTS.items():
        answer = submit(browser, text)
        message = answer["error"] or ""
        shown = browser.run_js("var m = document.getElementById('message'); return [m.textContent, m.className, "
                               "m.getBoundingClientRect().height > 0, document.getElementById('result').hidden];")
        if phrase not in message or shown[0] != message or shown[1] != "error" or not shown[2] or not shown[3]:
            raise CheckFailed(f"{kind} ({text!r}): message {message!r} (shown {shown}); expected one saying "
                              f"{phrase!r}, and no result panel")
        if "\n" in message:
            raise CheckFailed(f"{kind}: the message has several lines: {message!r}")


def check(lab: Path | None, model: str, count: int, screenshot: Path | None, chromium: str, chromedriver: str) -> str:
    folder = Path(tempfile.mkdtemp(prefix="lab-check-"))
    try:
        with headless_chromium(chromium, chromedriver, window=(1400, 1300), extra_args=OFFLINE_ARGS,
                               logging_prefs={"browser": "ALL"}) as browser:  # first: a missing browser fails fast
            return _check_lab(browser, lab, model, count, screenshot, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _check_lab(browser: WebDriver, lab: Path | None, model: str, count: int, screenshot: Path | None,
               folder: Path) -> str:
    exported = ""
    if lab is None:
        lab = folder / "lab"
        exported = f"exported in {export(lab, model):.0f} s; "
    lab = lab.resolve()
    manifest = read_manifest(lab)
    from course_utils.data import load_course_data
    from course_utils.zoo import load_or_train

    data = load_course_data(log=None)
    trained = load_or_train(manifest["model"], data=data, fast=manifest["fast"], log=None)
    trained.model.eval()
    if manifest["source_vocab"] != trained.src_vocab.index2word:
        raise CheckFailed(f"{lab} was exported from another {manifest['model']} (its vocabulary differs)")
    sentences = list(dict.fromkeys(pair.source for pair in data.splits.test))[:count]
    if len(sentences) < count:
        raise CheckFailed(f"the test split has only {len(sentences)} distinct sources, {count} asked")
    megabytes = sum(path.stat().st_size for path in lab.rglob("*") if path.is_file()) / 1e6
    started = time.monotonic()
    browser.get((lab / "index.html").as_uri())
    ready = browser.wait_js("return window.lab && (lab.ready || lab.error) ? {ready: lab.ready, error: lab.error, "
                            "loadMs: lab.loadMs, runs: lab.runs} : null;", 120, "the lab did not load")
    if not ready["ready"]:
        raise CheckFailed(f"the lab did not load: {ready['error']}")
    browser.wait_js("return lab.runs > 0 ? true : null;", 60, "the first translation did not finish")
    load_seconds = time.monotonic() - started
    check_normalisation(browser, trained.src_vocab)
    worst, timings = check_sentences(browser, trained, sentences)
    edit = check_edit(browser, trained, sentences)
    check_bad_inputs(browser)
    submit(browser, sentences[0])  # the page still works after bad input
    check_page_hygiene(browser, "lab/index.html")
    if screenshot:
        browser.screenshot(screenshot)
    mode = " (fast mode)" if manifest["fast"] else ""
    return (f"{exported}{manifest['model']}{mode}; page {megabytes:.1f} MB, loaded in {load_seconds:.1f} s (the "
            f"runtime and graphs {ready['loadMs'] / 1000:.1f} s); {len(sentences)}/{len(sentences)} test sentences "
            f"as PyTorch's greedy decoding (same words, weights within {worst:.1e}); translation "
            f"{statistics.median(timings):.0f} ms per sentence (median; mean {statistics.mean(timings):.0f}, max "
            f"{max(timings):.0f}); {edit}; {len(BAD_INPUTS)} kinds of bad input answered in one line; "
            "normalisation as the course's; no request outside file://, no console error")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lab", type=Path, default=None, help="check this exported lab (e.g. SITE/lab) instead")
    parser.add_argument("--model", default="lecture-bahdanau", help="the recipe to export (without --lab)")
    parser.add_argument("--sentences", type=int, default=50, help="test sentences compared with PyTorch")
    parser.add_argument("--screenshot", type=Path, default=Path(tempfile.gettempdir()) / "lab_screenshot.png")
    parser.add_argument("--chromium", default=CHROMIUM)
    parser.add_argument("--chromedriver", default=CHROMEDRIVER)
    args = parser.parse_args()
    try:
        summary = check(args.lab, args.model, args.sentences, args.screenshot, args.chromium, args.chromedriver)
    except CheckFailed as error:
        print(f"FAILED: {error}")
        return 1
    print(f"OK: the attention lab in headless Chromium, offline: {summary}; screenshot {args.screenshot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
