"""runtime.cpu_turn: a training step on the CPU holds as many of the machine's cores as it has threads, so two
course processes that train at once alternate their steps; it changes no number, nests, and does nothing on another
device or with COURSE_CPU_TURNS=0. Each process below takes all the machine's cores (threads = cores)."""
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

from course_utils import runtime

ROOT = Path(__file__).resolve().parent.parent

# One process: turns of `hold` busy seconds each, for `seconds` from `start_at`; prints [start, end] of each turn.
TURNS = """
import json, sys, time
import torch
from course_utils import runtime
from course_utils.runtime import cpu_turn
torch.set_num_threads(runtime._Turns().cores)
runtime._TURNS_DIR = sys.argv[5]  # the test's own lock files: a course training elsewhere on the machine joins none
hold, seconds, start_at = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
while time.time() < start_at:
    time.sleep(0.005)
spans = []
while time.time() < start_at + seconds:
    with cpu_turn(torch.device(sys.argv[4])):
        began = time.time()
        while time.time() - began < hold:  # busy, as a training step is
            pass
        spans.append([began, time.time()])
print(json.dumps(spans))
"""


def _two_at_once(hold: float | tuple[float, float], seconds: float = 2.0, device: str = "cpu",
                 **env) -> list[list[list[float]]]:
    """Two processes that take turns of `hold` seconds (a pair of values: one per process) for `seconds`."""
    start_at = time.time() + 4.0  # both processes have imported torch by then
    environment = {**os.environ, **env}
    holds = (hold, hold) if isinstance(hold, float) else hold
    folder = tempfile.mkdtemp()
    processes = [subprocess.Popen([sys.executable, "-c", TURNS, str(holds[i]), str(seconds), str(start_at), device,
                                   folder], cwd=ROOT, env=environment, stdout=subprocess.PIPE, text=True)
                 for i in range(2)]
    try:
        outputs = [process.communicate(timeout=60)[0] for process in processes]
    finally:  # a deadlock must not outlive the test (its processes would hold the cores for the next ones)
        for process in processes:
            process.kill()
    assert all(process.returncode == 0 for process in processes)
    return [json.loads(output.strip().splitlines()[-1]) for output in outputs]


def _busy(spans: list[list[float]]) -> float:
    return sum(end - start for start, end in spans)


def _overlap(first: list[list[float]], second: list[list[float]]) -> float:
    """Seconds during which a turn of `first` and a turn of `second` ran at the same time."""
    return sum(max(0.0, min(a_end, b_end) - max(a_start, b_start))
               for a_start, a_end in first for b_start, b_end in second)


def test_two_processes_never_hold_the_cores_at_once_and_alternate():
    first, second = _two_at_once(hold=0.05)
    assert _overlap(first, second) == 0.0
    order = sorted([(start, "a") for start, _ in first] + [(start, "b") for start, _ in second])
    switches = sum(one[1] != two[1] for one, two in zip(order, order[1:]))
    assert switches >= 5, f"the processes should alternate, about every {runtime._TURN_SECONDS} s: {order}"


@pytest.mark.parametrize("long_step", [0.2, 0.6])
def test_short_steps_beside_long_ones_get_a_fair_share_of_time(long_step):
    """Three seconds of 10 ms steps beside longer ones: about 1.5 s of work each. Turns of one step each would give
    the short steps 10 ms in every 210 (0.14 s); turns of 0.2 s, 0.2 s in every 0.8 beside 0.6 s steps (0.75 s)."""
    short, long = _two_at_once(hold=(0.01, long_step), seconds=3.0)
    assert _overlap(short, long) == 0.0
    assert _busy(short) > 1.1 and _busy(long) > 1.1, (_busy(short), _busy(long))


def test_without_turns_or_off_the_cpu_the_processes_run_together():
    for spans in (_two_at_once(hold=0.3, COURSE_CPU_TURNS="0"), _two_at_once(hold=0.3, device="cuda")):
        assert _overlap(*spans) > 1.0  # no waiting: the two runs of 2 s overlap for most of their time


def test_a_turn_nests_and_is_given_back_when_no_step_follows():
    with runtime.cpu_turn(torch.device("cpu")):
        with runtime.cpu_turn(torch.device("cpu")):  # a step inside a step: no deadlock on its own lock
            assert runtime._turns.depth == 2 and runtime._turns.held
        assert runtime._turns.held
    assert runtime._turns.depth == 0
    time.sleep(runtime._IDLE_SECONDS + 0.2)
    assert runtime._turns.held == [], "an idle process gives the cores back"


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


def test_a_wait_cut_short_leaves_no_mark_behind(tmp_path, monkeypatch):
    """Ctrl-C while waiting at the gate: the process must not stay marked as waiting (the holder would keep its cores
    between steps for nobody)."""
    import fcntl
    import signal

    class Interrupted(Exception):
        pass

    def interrupt(*_):
        raise Interrupted

    monkeypatch.setattr(runtime, "_TURNS_DIR", str(tmp_path))
    gatekeeper, waiter = runtime._Turns(), runtime._Turns()  # two sets of open files: two processes, for flock
    fcntl.flock(gatekeeper.file("gate"), fcntl.LOCK_EX)
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(Interrupted):
            waiter.take()  # blocks at the gate until the alarm
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        fcntl.flock(gatekeeper.file("gate"), fcntl.LOCK_UN)
    assert waiter.held == [] and not gatekeeper.others_wait()
