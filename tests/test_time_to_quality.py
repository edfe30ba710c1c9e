"""benchmarks/time_to_quality.py's table: the ratio to the classic recipe, also when that baseline scored 0 BLEU
(a short --classic-steps run) or was skipped."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
try:
    import time_to_quality
finally:
    sys.path.remove(str(ROOT / "benchmarks"))


def test_ratio_to_the_classic_recipe():
    assert time_to_quality.versus_classic(56.07, 31.03) == "1.81x"


def test_no_ratio_without_a_baseline_or_against_zero_bleu():
    assert time_to_quality.versus_classic(12.16, 0.0) == "-"  # a 30-step classic run scores 0 BLEU
    assert time_to_quality.versus_classic(56.07, None) == "-"  # --skip-classic
