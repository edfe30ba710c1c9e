"""The command line's `train` (one model: test scores, checkpoint, attention figure) and `compare` (every attention
type under one budget, seed and data: one table) commands, over a lecture recipe with the command line's overrides.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from course_utils.cli.commands import _check_device, _error

__all__ = ["cmd_train", "add_recipe_arguments", "add_train_parser", "cmd_compare", "add_compare_parser"]


def _attention_choices() -> tuple[str, ...]:
    """seq2seq.ATTENTION_KINDS without the 2017 "location" exhibit, plus "transformer" (<prefix>-transformer)."""
    from course_utils.seq2seq import ATTENTION_KINDS

    return (*(kind for kind in ATTENTION_KINDS if kind != "location"), "transformer")


def _recipe_from_args(args: argparse.Namespace, attention: str | None = None):
    """The named recipe with the command line's overrides (None keeps the recipe's value). --attention starts from
    <prefix>-transformer for "transformer", and from <prefix>-bahdanau for a GRU attention on a Transformer recipe."""
    from course_utils.recipes import get_recipe

    named, prefix = get_recipe(args.recipe), args.recipe.split("-")[0]
    recipe = named
    if attention == "transformer":
        recipe = get_recipe(f"{prefix}-transformer")
    elif attention is not None and named.model.attention == "transformer":
        recipe = get_recipe(f"{prefix}-bahdanau")
    if recipe.model.attention == "transformer":
        attention = None  # the architecture, not a field to set
    model = {"attention": attention, "hidden_size": args.hidden}
    training = {"epochs": args.epochs, "seed": args.seed, "batch_size": args.batch_size, "learning_rate": args.lr,
                "time_budget": args.time_budget}
    recipe = recipe.with_model(**{k: v for k, v in model.items() if v is not None}).with_training(
        **{k: v for k, v in training.items() if v is not None})
    if recipe.model.attention != named.model.attention:
        recipe = recipe.with_model(name=f"{prefix}-{recipe.model.attention}")
    return recipe


def _start(args: argparse.Namespace, attention: str | None = None):
    """(recipe, None), or (None, exit status) once a bad option or device has been reported."""
    try:
        recipe = _recipe_from_args(args, attention)
    except (KeyError, ValueError) as error:
        return None, _error(str(error).strip("'\""), 2)
    if problem := _check_device(args.device):
        return None, _error(problem, 2)
    return recipe, None


def _explicit(args: argparse.Namespace) -> dict:
    """Overrides on top of fast mode's: an explicit --epochs wins over its one epoch."""
    return {"epochs": args.epochs} if args.epochs else {}


def _load_trainable_data():
    """(course, problem): problem is None when the data is there and large enough to train and evaluate on."""
    from course_utils import data
    from course_utils.train import enough_pairs_problem

    try:
        course = data.load_course_data()
    except data.CorpusError as error:
        return None, str(error)
    return course, enough_pairs_problem(course)


def cmd_train(args: argparse.Namespace) -> int:
    """Train one model, print its test scores, save the checkpoint and an attention figure of a few test sentences;
    everything that can be checked (options, device, a writable output, enough data) is checked before training."""
    from course_utils.checkpoints import CheckpointError, check_writable
    from course_utils.corpus import data_dir
    from course_utils.evaluate import evaluate
    from course_utils.runtime import set_threads
    from course_utils.zoo import FAST_EVAL_PAIRS, save_checkpoint, train_recipe, training_config

    recipe, status = _start(args, args.attention)
    if status is not None:
        return status
    fast = args.fast
    set_threads(log=print)
    output = Path(args.output or data_dir() / "models" / f"cli-{recipe.name}{'-fast' if fast else ''}.pt")
    try:
        check_writable(output)
    except CheckpointError as error:
        return _error(str(error), 2)
    course, problem = _load_trainable_data()
    if problem:
        return _error(problem)
    shown = dataclasses.replace(recipe, train=training_config(recipe, fast, **_explicit(args)))  # what it trains with
    print(f"Training {shown.name}{' in fast mode' if fast else ''} ({shown.train.epochs} epoch(s)): {shown}")
    trained = train_recipe(recipe, course, fast=fast, progress=not args.no_progress, device=args.device,
                           **_explicit(args))
    trained.model.cpu()
    try:
        saved = save_checkpoint(output, trained)  # first, so nothing after can lose it
    except OSError as error:
        return _error(f"cannot write {output}: {error.strerror or error}; train again with --output in a writable "
                      "folder")
    test_pairs = course.splits.test[:FAST_EVAL_PAIRS if fast else None]
    result = evaluate(trained.model, test_pairs, course.src_vocab, course.tgt_vocab, beam_width=recipe.beam_width)
    decoding = "greedy" if recipe.beam_width == 1 else f"beam search, width {recipe.beam_width}"
    print(f"\ntest ({len(test_pairs):,} pairs, {decoding}): BLEU {result.bleu:.2f}  chrF {result.chrf:.2f}  "
          f"loss {result.loss:.3f}  perplexity {result.perplexity:.2f}")
    print(f"sacreBLEU signature: {result.signature}\n")
    print(result.table(n=args.examples))
    print(f"\ncheckpoint saved to {saved}")
    if trained.model_config.attention == "none":
        print("no attention figure: this model has no attention")
        return 0
    from course_utils import viz
    from course_utils.translate import translate_batch

    sentences = [pair.source for pair in course.splits.test[:args.figure_sentences]]
    translations = translate_batch(trained.model, course.src_vocab, course.tgt_vocab, sentences)
    figure = viz.plot_sentence_grid(translations, title=f"{recipe.name}: attention on test sentences")
    try:  # the checkpoint is the result: a figure that cannot be written only warns
        path = viz.save_figure(figure, saved.with_suffix(".attention.png"))
    except OSError as error:
        print(f"warning: could not save the attention figure ({error.strerror or error})", file=sys.stderr)
    else:
        print(f"attention heatmaps of {len(sentences)} test sentences saved to {path}")
    return 0


def add_recipe_arguments(parser: argparse.ArgumentParser, default_recipe: str) -> None:
    """The options `train` and `compare` share: a recipe and overrides of its settings."""
    parser.add_argument("--recipe", default=default_recipe, help="a recipe of course_utils.recipes.RECIPES "
                        f"(default {default_recipe}); the options below override its settings")
    for flag, kind, text in (("--hidden", int, "hidden size H"), ("--epochs", int, None), ("--seed", int, None),
                             ("--batch-size", int, None), ("--lr", float, "Adam's learning rate"),
                             ("--time-budget", float, "stop training after this many seconds")):
        parser.add_argument(flag, type=kind, default=None, help=text)
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    parser.add_argument("--fast", action="store_true", help="train briefly on a few hundred pairs (as COURSE_FAST=1)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def add_train_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("train", help="train a model, report test BLEU/chrF, save a checkpoint")
    parser.add_argument("--attention", choices=_attention_choices(), help="attention type (default: the recipe's)")
    add_recipe_arguments(parser, "lecture-bahdanau")
    parser.add_argument("--output", default=None, help="checkpoint path (default data/models/cli-<recipe>.pt); "
                        "the attention figure goes next to it as <name>.attention.png")
    parser.add_argument("--examples", type=int, default=8, help="test sentences to print")
    parser.add_argument("--figure-sentences", type=int, default=4, help="test sentences in the attention figure")
    parser.set_defaults(func=cmd_train)


def cmd_compare(args: argparse.Namespace) -> int:
    """Train every attention type with one budget, seed and data; print one table and save the loss curves."""
    from course_utils import viz
    from course_utils.corpus import data_dir
    from course_utils.recipes import RECIPES
    from course_utils.runtime import set_threads
    from course_utils.train import sample_pairs

    base, status = _start(args)
    if status is not None:
        return status
    course, problem = _load_trainable_data()
    if problem:
        return _error(problem)
    set_threads(log=print)
    attentions = args.attention or [recipe.model.attention for name, recipe in RECIPES.items()
                                    if name.startswith("lecture-")]
    rows, histories = [], {}
    for attention in attentions:
        trained, row, test = _compare_row(args, base, attention, course)
        histories[attention] = trained.history
        rows.append(row)
    header = ["attention", "params", "s/epoch", "epochs", "dev BLEU", "test BLEU", "test chrF"]
    widths = [max(len(row[i]) for row in rows + [header]) for i in range(len(header))]
    print()
    for row in [header, ["-" * w for w in widths]] + rows:  # the first column left-aligned, the others right
        print("  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))))
    trained_on = len(sample_pairs(course.splits.train, trained.train_config.max_train_pairs, trained.train_config.seed))
    print(f"\nsame data (trained on {trained_on:,} of the {len(course.splits.train):,} training pairs), seed "
          f"{base.train.seed}, recipe {args.recipe}{' (fast mode)' if args.fast else ''}; sacreBLEU: {test.signature}")
    figure_path = Path(args.figure) if args.figure else data_dir() / "compare" / "loss_curves.png"
    try:
        viz.save_figure(viz.plot_history(histories, title=f"{args.recipe}: every attention type"), figure_path)
    except OSError as error:  # the table is the result: a figure that cannot be written only warns
        print(f"warning: could not save the loss curves to {figure_path} ({error.strerror or error}); pass "
              "--figure a writable path", file=sys.stderr)
    else:
        print(f"loss curves saved to {figure_path}")
    return 0


def _compare_row(args: argparse.Namespace, base, attention: str, course):
    """Train `base` with `attention` (one-way when its keys do not fit dot scores); (trained, table row, test)."""
    from course_utils.attention import check_key_size
    from course_utils.evaluate import evaluate
    from course_utils.seq2seq import count_parameters
    from course_utils.zoo import FAST_EVAL_PAIRS, train_recipe

    if attention == "transformer" or base.model.attention == "transformer":  # a Transformer in the table
        base = _recipe_from_args(args, "transformer" if attention == "transformer" else "bahdanau")
    model_fields = {} if attention == "transformer" else {"attention": attention}
    try:  # a bidirectional recipe gives 2H keys, which dot scores cannot read: train that row one-way, and say so
        if model_fields:
            check_key_size(attention, base.model.hidden_size, base.model.key_size)
    except ValueError as problem:
        print(f"note: {problem}; compare trains the {attention!r} row with bidirectional=False, unlike the others")
        model_fields["bidirectional"] = False
    recipe = base.with_model(name=f"{base.name.split('-')[0]}-{attention}", **model_fields)
    print(f"\n== {recipe.name}")
    trained = train_recipe(recipe, course, fast=args.fast, progress=not args.no_progress, device=args.device,
                           **_explicit(args))
    evaluated = FAST_EVAL_PAIRS if args.fast else None
    dev = evaluate(trained.model, course.splits.dev[:evaluated], course.src_vocab, course.tgt_vocab)
    test = evaluate(trained.model, course.splits.test[:evaluated], course.src_vocab, course.tgt_vocab,
                    beam_width=recipe.beam_width)
    history = trained.history
    row = [attention, f"{count_parameters(trained.model):,}", f"{history.train_seconds / history.epochs:.1f}",
           str(history.epochs), f"{dev.bleu:.2f}", f"{test.bleu:.2f}", f"{test.chrf:.2f}"]
    return trained, row, test


def add_compare_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("compare", help="train every attention type under one budget; one table")
    add_recipe_arguments(parser, "lecture-bahdanau")
    parser.add_argument("--attention", nargs="+", choices=_attention_choices(),
                        default=None, help="which attention types (default: those of the lecture recipes)")
    parser.add_argument("--figure", default=None, help="loss-curve PNG (default data/compare/loss_curves.png)")
    parser.set_defaults(func=cmd_compare)
