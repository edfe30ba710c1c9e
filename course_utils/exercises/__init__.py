"""Self-checks for the notebooks' exercises: run a student's function in place and say whether it is right.

Every checker has the same contract, so the notebooks share one pattern:

    def my_normalize(s):
        return None          # the starter: replace with your code
    exercises.check_normalize(my_normalize)

- the student's function returns None (the starter)  -> prints "not attempted yet";
- it gives a wrong answer                           -> raises AssertionError naming the input and a hint;
- it raises RuntimeError, IndexError, TypeError or  -> the same AssertionError with the exercise's hint (a shape
  ValueError (wrong shapes, dtypes, arguments)         mistake reads like any other wrong answer);
- it calls a function the exercise asks it not to   -> AssertionError "<exercise>: this exercise asks you to write
  call (a "write it yourself" exercise)                it without calling <name>";
- it is right on every case                         -> prints a success message ("<exercise>: correct! ...").
Checkers return None, so a notebook cell that ends with the call shows only the message.

The forbidden functions are patched where the student's code looks them up (`torch.softmax`, `F.softmax`,
`x.softmax()`, `data.normalize_string`, ...); a notebook that did `from course_utils.data import normalize_string`
holds its own reference, which the check cannot see.

One module per notebook with exercises (nb01_data ... nb08_attention_classification) holds that notebook's
checkers and cases; `contract` holds the shared pieces and `solutions` the answer key
(`SOLUTIONS = {"check_normalize": normalize, ...}`). To add a checker: write `check_<thing>(student_fn)` in its
notebook's module; call the student's function ONLY through
`call_student(exercise, student_fn, args, hint, forbidden=...)`, pass the first result to `attempted` (return if
it is False), use `expect` for each comparison and end with `passed(...)`; re-export it here, add its reference
solution to `solutions.SOLUTIONS` and its typical mistakes to tests/test_exercises_nbNN.py.

`questions` holds each notebook's "predict the shape" and concept questions (`QUESTIONS`); a notebook's last cell
lists them with `exercises.show_questions("NN")`, and their answers are on the site's solutions page only.

Introduced in notebook 01.
"""
from course_utils.exercises.nb01_data import (
    ENCODE_CASES,
    ENCODE_VOCAB_SENTENCES,
    NORMALIZE_CASES,
    PAD_FRACTION_SOURCES,
    check_encode,
    check_normalize,
    check_pad_fraction,
)
from course_utils.exercises.nb02_encoder import (
    FINAL_STATE_LENGTHS,
    GRU_STEP_SIZES,
    check_embedding_lookup,
    check_final_state,
    check_gru_step,
)
from course_utils.exercises.nb03_attention_decoder import (
    ATTENTION_LENGTHS,
    check_context,
    check_dot_attention,
    check_masked_softmax,
)
from course_utils.exercises.nb04_bahdanau_vs_luong import (
    ATTENTION_PARAMETER_CASES,
    SCORE_SIZES,
    check_attention_parameters,
    check_bahdanau_score,
    check_general_score,
)
from course_utils.exercises.nb05_training import (
    GREEDY_MAX_LENGTH,
    GREEDY_SOURCES,
    MASKED_NLL_LENGTHS,
    PERPLEXITY_CASES,
    check_greedy_decode,
    check_masked_nll,
    check_perplexity,
)
from course_utils.exercises.nb06_heatmaps import (
    check_argmax_alignment,
    check_attention_entropy,
    check_diagonal_deviation,
)
from course_utils.exercises.nb07_decoding import (
    BEAM_STEP_CASES,
    check_beam_step,
    check_replace_unknown,
    check_sampling_distribution,
)
from course_utils.exercises.nb08_attention_classification import (
    SPARSITY_LENGTHS,
    check_bag_of_words_logits,
    check_rationale_precision_recall,
    check_sparsity,
)
from course_utils.exercises.questions import QUESTIONS, Question, show_questions

__all__ = [
    "ATTENTION_LENGTHS", "ATTENTION_PARAMETER_CASES", "BEAM_STEP_CASES", "ENCODE_CASES", "ENCODE_VOCAB_SENTENCES",
    "FINAL_STATE_LENGTHS",
    "GREEDY_MAX_LENGTH", "GREEDY_SOURCES", "GRU_STEP_SIZES", "MASKED_NLL_LENGTHS", "NORMALIZE_CASES",
    "PAD_FRACTION_SOURCES", "PERPLEXITY_CASES", "SCORE_SIZES", "SPARSITY_LENGTHS",
    "check_argmax_alignment", "check_attention_entropy", "check_attention_parameters", "check_bahdanau_score",
    "check_context", "check_diagonal_deviation", "check_dot_attention", "check_embedding_lookup", "check_encode",
    "check_final_state", "check_general_score", "check_greedy_decode", "check_gru_step", "check_masked_nll",
    "check_masked_softmax", "check_normalize", "check_pad_fraction", "check_perplexity",
    "check_bag_of_words_logits", "check_rationale_precision_recall", "check_sparsity",
    "check_beam_step", "check_replace_unknown", "check_sampling_distribution",
    "QUESTIONS", "Question", "show_questions",
]
