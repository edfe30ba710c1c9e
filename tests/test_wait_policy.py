"""The course's OpenMP policy: importing course_utils before torch makes waiting threads sleep (OMP_WAIT_POLICY=
PASSIVE) unless the environment already chose; the same seed and thread count give the same losses either way."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TRAIN = """
import json, sys
if sys.argv[1] == "torch-first":
    import torch
import course_utils
import torch
from course_utils import runtime
from course_utils.seq2seq import ModelConfig, Seq2Seq
torch.set_num_threads(2)
torch.manual_seed(0)
model = Seq2Seq(ModelConfig(40, 30, embedding_size=16, hidden_size=32))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
src, tgt = torch.randint(4, 40, (8, 7)), torch.randint(4, 30, (8, 6))
losses = []
for _ in range(5):
    out = model(src, torch.full((8,), 7), tgt)
    loss = torch.nn.functional.nll_loss(out.log_probs.flatten(0, 1), tgt.flatten())
    optimizer.zero_grad(); loss.backward(); optimizer.step(); losses.append(loss.item())
print(json.dumps({"policy": runtime.wait_policy(), "losses": losses}))
"""


def run(order: str, **env) -> dict:
    clean = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    result = subprocess.run([sys.executable, "-c", TRAIN, order], cwd=ROOT, env={**clean, **env},
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_importing_course_utils_first_makes_waiting_threads_passive_and_keeps_the_losses():
    course = run("course-first")
    spinning = run("torch-first")
    active = run("course-first", OMP_WAIT_POLICY="ACTIVE")
    assert course["policy"] == "passive"
    assert spinning["policy"].startswith("spinning (torch was imported before course_utils")
    assert active["policy"] == "active", "a policy the environment chose is kept"
    assert course["losses"] == spinning["losses"] == active["losses"], "the wait policy never changes the numbers"


def test_set_threads_reports_the_wait_policy():
    from course_utils import runtime

    before = runtime.torch.get_num_threads()
    lines = []
    try:
        runtime.set_threads(1, log=lines.append)
    finally:
        runtime.torch.set_num_threads(before)
    assert lines == [f"CPU threads: 1 (asked for); waiting threads: {runtime.wait_policy()}"]
