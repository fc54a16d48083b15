"""Runs release the GIL: threads run in parallel, and Ctrl-C stops a run."""

import _thread
import signal
import threading
import time

import pandas as pd
import pytest

import sluice
from conftest import LONGER, QUICKSTART


def test_two_threads_finish_with_the_results_of_sequential_runs():
    seeds = [1, 2]
    results = {}
    errors = []

    def work(seed):
        try:
            results[seed] = sluice.run(QUICKSTART, set=LONGER, seed=seed)
        except Exception as e:  # reported below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in seeds]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    assert sorted(results) == seeds
    for seed in seeds:
        alone = sluice.run(QUICKSTART, set=LONGER, seed=seed)
        pd.testing.assert_frame_equal(results[seed].fct, alone.fct)
        assert results[seed].summary == alone.summary


def test_other_threads_run_while_a_simulation_does():
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    thread = threading.Thread(target=ticker)
    thread.start()
    time.sleep(0.05)
    start = time.monotonic()
    # Four times the other tests' runs: about a second on a fast machine, long enough to tell.
    sluice.run(QUICKSTART, set={"workload.0.duration": "20ms"})
    end = time.monotonic()
    done.set()
    thread.join()
    during = [t for t in ticks if start <= t <= end]
    # A run that held the GIL would leave one gap as long as itself; released, the ticker keeps going.
    points = [start, *during, end]
    longest_gap = max(b - a for a, b in zip(points, points[1:]))
    assert end - start > 0.3, "the run is too short to tell"
    assert longest_gap < 0.5 * (end - start), (longest_gap, end - start, len(during))


def test_keyboard_interrupt_stops_a_run(tmp_path):
    # Python turns SIGINT into KeyboardInterrupt only if its parent did not ignore SIGINT (a shell
    # ignores it for a background job without job control): the handler is set here, whoever started
    # the tests.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.5, _thread.interrupt_main)
        start = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            sluice.run(QUICKSTART, set={"workload.0.duration": "200ms"}, out=tmp_path / "out")
        elapsed = time.monotonic() - start
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert elapsed < 10, elapsed
    assert not (tmp_path / "out").exists(), "an interrupted run writes nothing"
    assert list(tmp_path.iterdir()) == []
