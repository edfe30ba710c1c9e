"""How idle OpenMP threads wait (read when torch loads OpenMP): the course leaves OpenMP's own default (a lone
training keeps its speed; trainings share the cores by taking turns instead, runtime.cpu_turn), the environment may
choose (OMP_WAIT_POLICY or GOMP_SPINCOUNT); runtime.wait_policy reports it and set_threads' line prints it, and the
same seed and thread count give the same losses under every policy."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TRAIN = """
import json
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


def run(**env) -> dict:
    clean = {key: value for key, value in os.environ.items() if key not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    result = subprocess.run([sys.executable, "-c", TRAIN], cwd=ROOT, env={**clean, **env}, capture_output=True,
                            text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_wait_policy_is_the_environments_and_never_changes_the_losses():
    course, passive, active = run(), run(OMP_WAIT_POLICY="PASSIVE"), run(OMP_WAIT_POLICY="active")
    spin = run(GOMP_SPINCOUNT="300000")  # GNU OpenMP's own default spin
    waiting = [run_["policy"].split(";")[0] for run_ in (course, passive, active, spin)]
    assert waiting[0] == "OpenMP's default (spin, then sleep)", "importing course_utils sets no wait policy"
    assert waiting[1:3] == ["passive", "active"], "a policy the environment set wins"
    assert waiting[3] == "spin 300000 rounds, then sleep (GOMP_SPINCOUNT)", "a spin count set is reported"
    assert course["losses"] == passive["losses"] == active["losses"] == spin["losses"]


def test_set_threads_reports_the_wait_policy():
    from course_utils import runtime

    before = runtime.torch.get_num_threads()
    lines = []
    try:
        runtime.set_threads(1, log=lines.append)
    finally:
        runtime.torch.set_num_threads(before)
    assert lines == [f"CPU threads: 1 (asked for); waiting threads: {runtime.wait_policy()}"]
