"""Self-checks for the notebooks' exercises: run a student's function in place and say whether it is right.

    def my_normalize(s):
        return None          # the starter: replace with your code
    exercises.check_normalize(my_normalize)

A checker prints "not attempted yet" for the starter (None) and a success message when every case is right; a
wrong answer, a RuntimeError/IndexError/TypeError/ValueError, or a call to a function the exercise forbids
raises AssertionError with a hint. Forbidden functions are patched where the student's code looks them up
(`torch.softmax`, `x.softmax()`, `data.normalize_string`); a name imported with `from ... import` escapes.

One module per notebook (nb01_data ... nb08_attention_classification) holds its checkers and cases; `contract`
the shared pieces (call the student ONLY through `call_student`), `solutions` the answer key, `questions` the
end-of-notebook questions (`show_questions("NN")`). Introduced in notebook 01.
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
    "FINAL_STATE_LENGTHS", "GREEDY_MAX_LENGTH", "GREEDY_SOURCES", "GRU_STEP_SIZES", "MASKED_NLL_LENGTHS",
    "NORMALIZE_CASES", "PAD_FRACTION_SOURCES", "PERPLEXITY_CASES", "SCORE_SIZES", "SPARSITY_LENGTHS",
    "check_argmax_alignment", "check_attention_entropy", "check_attention_parameters", "check_bahdanau_score",
    "check_context", "check_diagonal_deviation", "check_dot_attention", "check_embedding_lookup", "check_encode",
    "check_final_state", "check_general_score", "check_greedy_decode", "check_gru_step", "check_masked_nll",
    "check_masked_softmax", "check_normalize", "check_pad_fraction", "check_perplexity",
    "check_bag_of_words_logits", "check_rationale_precision_recall", "check_sparsity",
    "check_beam_step", "check_replace_unknown", "check_sampling_distribution",
    "QUESTIONS", "Question", "show_questions",
]
