"""runtime.cpu_turn: a training step on the CPU holds as many of the machine's cores as it has threads, so two
course processes that train at once alternate their steps; it changes no number, nests, and does nothing on another
device or with COURSE_CPU_TURNS=0. Each process below takes all the machine's cores (threads = cores)."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

from course_utils import runtime

ROOT = Path(__file__).resolve().parent.parent

# One process: `turns` turns of `hold` seconds each; prints [start, end] of each turn (wall clock).
TURNS = """
import json, sys, time
import torch
from course_utils import runtime
from course_utils.runtime import cpu_turn
torch.set_num_threads(runtime._Turns().cores)
turns, hold, start_at = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
while time.time() < start_at:
    time.sleep(0.005)
spans = []
for _ in range(turns):
    with cpu_turn(torch.device(sys.argv[4])):
        began = time.time()
        while time.time() - began < hold:  # busy, as a training step is
            pass
        spans.append([began, time.time()])
print(json.dumps(spans))
"""


def _two_at_once(turns: int, hold: float, device: str = "cpu", **env) -> list[list[list[float]]]:
    start_at = time.time() + 4.0  # both processes have imported torch by then
    command = [sys.executable, "-c", TURNS, str(turns), str(hold), str(start_at), device]
    environment = {**os.environ, **env}
    processes = [subprocess.Popen(command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, text=True)
                 for _ in range(2)]
    try:
        outputs = [process.communicate(timeout=60)[0] for process in processes]
    finally:  # a deadlock must not outlive the test (its processes would hold the cores for the next ones)
        for process in processes:
            process.kill()
    assert all(process.returncode == 0 for process in processes)
    return [json.loads(output.strip().splitlines()[-1]) for output in outputs]


def _overlap(first: list[list[float]], second: list[list[float]]) -> float:
    """Seconds during which a turn of `first` and a turn of `second` ran at the same time."""
    return sum(max(0.0, min(a_end, b_end) - max(a_start, b_start))
               for a_start, a_end in first for b_start, b_end in second)


def test_two_processes_never_hold_the_cores_at_once_and_alternate():
    first, second = _two_at_once(turns=12, hold=0.05)
    assert _overlap(first, second) == 0.0
    order = sorted([(start, "a") for start, _ in first] + [(start, "b") for start, _ in second])
    switches = sum(one[1] != two[1] for one, two in zip(order, order[1:]))
    assert switches >= 18, f"the processes should alternate (23 switches at most), got {switches}: {order}"


def test_without_turns_or_off_the_cpu_the_processes_run_together():
    for spans in (_two_at_once(turns=4, hold=0.3, COURSE_CPU_TURNS="0"), _two_at_once(turns=4, hold=0.3,
                                                                                         device="cuda")):
        assert _overlap(*spans) > 0.3  # no waiting: the two runs of 1.2 s overlap for most of their time


def test_a_turn_nests_and_is_given_back():
    with runtime.cpu_turn(torch.device("cpu")):
        with runtime.cpu_turn(torch.device("cpu")):  # a step inside a step: no deadlock on its own lock
            assert runtime._turns.depth == 2 and runtime._turns.held
        assert runtime._turns.held
    assert runtime._turns.depth == 0 and runtime._turns.held == []


def test_turns_never_change_the_losses():
    script = """
import json, sys, torch
from course_utils.seq2seq import ModelConfig, Seq2Seq
from course_utils.data import Batch
from course_utils.train import TrainConfig, make_optimizer, train_step
torch.set_num_threads(2)
torch.manual_seed(0)
model = Seq2Seq(ModelConfig(40, 30, embedding_size=16, hidden_size=32))
config = TrainConfig(learning_rate=1e-2)
optimizer = make_optimizer(model, config)
src, tgt = torch.randint(4, 40, (8, 7)), torch.randint(4, 30, (8, 6))
batch = Batch(src, torch.full((8,), 7), torch.ones(8, 7, dtype=torch.bool), tgt, torch.full((8,), 6))
print(json.dumps([train_step(model, batch, optimizer, config).loss for _ in range(5)]))
"""
    losses = [json.loads(subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                                        check=True, env={**os.environ, "COURSE_CPU_TURNS": turns}).stdout)
              for turns in ("1", "0")]
    assert losses[0] == losses[1] and len(set(losses[0])) == 5


def test_the_wait_policy_line_says_whether_steps_take_turns(monkeypatch):
    monkeypatch.setenv("COURSE_CPU_TURNS", "0")
    assert runtime.wait_policy().endswith("take turns with other course processes: off (COURSE_CPU_TURNS=0)")
    monkeypatch.delenv("COURSE_CPU_TURNS")
    assert runtime.wait_policy().endswith("take turns with other course processes: on")
