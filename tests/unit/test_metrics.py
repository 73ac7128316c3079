"""The arithmetic behind the headline numbers, on known inputs."""

from __future__ import annotations

import pytest

from bench.analysis import metrics, run_summary
from bench.vocab.readings import epochs_of, samples_of


def ep(n: int, seconds: float, tracing: bool = False, rate: float | None = None) -> dict:
    return {"epoch": n, "epoch_seconds": seconds, "includes_tracing": tracing, "samples_per_s": rate}


def test_steady_state_excludes_the_tracing_epoch():
    epochs = [ep(1, 10.0, True), ep(2, 2.0), ep(3, 4.0), ep(4, 3.0)]
    assert metrics.steady_epoch_seconds(epochs_of(epochs)) == 3.0
    assert metrics.steady_epoch_seconds(epochs_of([ep(1, 10.0, True)])) is None


def test_speedup_median_spread_and_total_ratio():
    cpu = [ep(1, 30.0, True), ep(2, 20.0), ep(3, 22.0), ep(4, 24.0)]
    gpu = [ep(1, 8.0, True), ep(2, 2.0), ep(3, 2.0), ep(4, 2.5)]
    result = metrics.speedup(epochs_of(cpu), epochs_of(gpu))
    assert result.speedup_median == pytest.approx(22.0 / 2.0)
    assert result.speedup_min == pytest.approx(20.0 / 2.5)
    assert result.speedup_max == pytest.approx(24.0 / 2.0)
    assert result.total_time_ratio == pytest.approx(96.0 / 14.5)
    assert result.first_epoch_seconds_a == 30.0 and result.first_epoch_seconds_b == 8.0
    assert result.speedup_min <= result.speedup_median <= result.speedup_max


def test_speedup_needs_steady_epochs_on_both_sides():
    assert metrics.speedup(epochs_of([ep(1, 3.0, True)]), epochs_of([ep(1, 1.0, True), ep(2, 1.0)])) is None


def test_missing_readings_are_left_out_not_zero():
    samples = samples_of([{"t_s": 0.0, "cpu_percent": 50.0,
                           "gpus": [{"index": 0, "util_percent": None}, {"index": 1, "util_percent": 80.0}]},
                          {"t_s": 1.0, "cpu_percent": None, "gpus": [{"index": 0, "util_percent": 40.0}]}])
    assert metrics.mean_or_none(s.cpu_percent for s in samples) == 50.0
    assert metrics.mean_gpu_util_percent(samples) == 60.0
    assert metrics.mean_gpu_util_percent(samples_of([{"t_s": 0.0, "cpu_percent": 1.0, "gpus": []}])) is None


def test_summary_block():
    epochs = [ep(1, 5.0, True, 100.0), ep(2, 1.0, rate=500.0), ep(3, 2.0, rate=250.0)]
    samples = [{"t_s": 0.0, "cpu_percent": 90.0, "process_cpu_percent": 150.0, "process_rss_mib": 300.0, "gpus": []}]
    summary = run_summary.summarize(epochs_of(epochs), samples_of(samples))
    assert summary.steady_epoch_seconds == 1.5
    assert summary.first_epoch_seconds == 5.0
    assert summary.total_seconds == 8.0
    assert summary.steady_samples_per_s == pytest.approx(500 / 1.5)  # 500 samples an epoch / median 1.5 s
    assert summary.mean_cpu_percent == 90.0
    assert summary.mean_gpu_util_percent is None
    assert summary.epochs_done == 3


def test_achieved_gflops():
    assert metrics.achieved_gflops(1.2e6, 20000.0) == pytest.approx(24.0)
    assert metrics.achieved_gflops(1.2e6, None) is None


@pytest.mark.parametrize(("seconds", "text"), [(0.841, "0.84 s"), (12.34, "12.3 s"), (485, "8 min 05 s"),
                                               (None, "—")])
def test_format_seconds(seconds, text):
    assert metrics.format_seconds(seconds) == text


def test_caution_when_the_spread_crosses_one_or_a_side_has_one_steady_epoch():
    from bench.analysis import compare

    settled = metrics.speedup(epochs_of([ep(1, 30.0, True), ep(2, 20.0), ep(3, 22.0)]),
                              epochs_of([ep(1, 5.0, True), ep(2, 2.0), ep(3, 2.5)]))
    assert compare.caution(settled) is None
    crossing = metrics.speedup(epochs_of([ep(1, 3.0, True), ep(2, 0.2), ep(3, 0.4)]),
                               epochs_of([ep(1, 3.0, True), ep(2, 0.1), ep(3, 0.3)]))
    assert crossing.speedup_min < 1 < crossing.speedup_max
    assert "crosses 1x" in compare.caution(crossing)
    single = metrics.speedup(epochs_of([ep(1, 30.0, True), ep(2, 20.0)]),
                             epochs_of([ep(1, 5.0, True), ep(2, 2.0), ep(3, 2.5)]))
    assert "one steady epoch" in compare.caution(single)


def test_steady_rate_matches_the_median_epoch_time_not_the_median_of_rates():
    epochs = epochs_of([ep(1, 1.0, True, 10_000.0), ep(2, 0.2, rate=50_000.0), ep(3, 0.6, rate=10_000 / 0.6)])
    assert metrics.steady_samples_per_s(epochs) == pytest.approx(25_000.0)
    assert run_summary.summarize(epochs, ()).steady_samples_per_s == pytest.approx(25_000.0)


def test_utilization_means_cover_the_steady_epochs_only():
    epochs = [{**ep(1, 2.0, True, 1.0), "t_start_s": 4.0, "t_end_s": 6.0},
              {**ep(2, 2.0, rate=1.0), "t_start_s": 6.5, "t_end_s": 8.5}]
    samples = [{"t_s": t, "cpu_percent": cpu, "gpus": []} for t, cpu in
               [(1.0, 50.0), (3.0, 50.0), (5.0, 70.0), (7.0, 100.0), (7.5, 98.0), (8.0, 96.0), (9.0, 10.0)]]
    assert run_summary.summarize(epochs_of(epochs), samples_of(samples)).mean_cpu_percent == pytest.approx(98.0)
    no_times = [ep(1, 2.0, True), ep(2, 2.0)]
    assert run_summary.summarize(epochs_of(no_times), samples_of(samples)).mean_cpu_percent == pytest.approx(474 / 7)


def test_a_mean_over_fewer_than_three_steady_samples_is_not_called_the_steady_epochs():
    """0.16 s steady epochs sampled every 0.5 s (an H100 run, docs/GPU.md) held one sample: its 0 % was given as the
    steady epochs' mean. Below metrics.MIN_WINDOW_SAMPLES the next window is taken, and named."""
    epochs = [{**ep(1, 4.0, True, 1.0), "t_start_s": 0.0, "t_end_s": 4.0},
              {**ep(2, 0.16, rate=1.0), "t_start_s": 4.3, "t_end_s": 4.46},
              {**ep(3, 0.16, rate=1.0), "t_start_s": 4.5, "t_end_s": 4.66}]
    samples = [{"t_s": t, "cpu_percent": 50.0, "gpus": [{"index": 0, "util_percent": util}]}
               for t, util in [(1.0, 2.0), (2.0, 2.0), (3.0, 2.0), (4.5, 0.0), (5.0, 6.0)]]
    summary = run_summary.summarize(epochs_of(epochs), samples_of(samples))
    assert summary.gpu_util_window == "all epochs" and summary.mean_gpu_util_percent == pytest.approx(1.5)
    longer = [*samples, *({"t_s": t, "cpu_percent": 50.0, "gpus": [{"index": 0, "util_percent": 9.0}]}
                          for t in (4.35, 4.4))]
    summary = run_summary.summarize(epochs_of(epochs), samples_of(sorted(longer, key=lambda x: x["t_s"])))
    assert summary.gpu_util_window == "steady epochs" and summary.mean_gpu_util_percent == pytest.approx(6.0)


def test_a_gpu_mean_falls_back_to_wider_windows_when_the_steady_ones_hold_no_reading():
    epochs = [{**ep(1, 2.0, True, 1.0), "t_start_s": 1.0, "t_end_s": 3.0},
              {**ep(2, 2.0, rate=1.0), "t_start_s": 3.5, "t_end_s": 5.5}]
    gpu = [{"index": 0, "util_percent": 40.0}]
    lost = [{"index": 0, "util_percent": None}]
    samples = [{"t_s": 2.0, "cpu_percent": 50.0, "gpus": gpu},
               *({"t_s": t, "cpu_percent": 90.0, "gpus": lost} for t in (3.6, 4.0, 4.4))]
    summary = run_summary.summarize(epochs_of(epochs), samples_of(samples))
    assert summary.mean_cpu_percent == 90.0  # the steady window has a CPU reading
    assert summary.mean_gpu_util_percent == 40.0  # it has no GPU reading: the tracing epoch's counts
    assert summary.cpu_util_window == "steady epochs"
    assert summary.gpu_util_window == "all epochs"  # and the summary says so


def test_sweep_rows_whose_utilization_is_not_from_steady_epochs_are_flagged():
    from bench.analysis import sweeps
    from bench.vocab.records import RunRecord

    epochs = [{**ep(1, 2.0, True, 1.0), "t_start_s": 1.0, "t_end_s": 3.0},
              {**ep(2, 0.1, rate=1.0), "t_start_s": 3.2, "t_end_s": 3.3}]  # shorter than the sampling interval
    samples = [{"t_s": t, "cpu_percent": 50.0, "gpus": [{"index": 0, "util_percent": 80.0}]}
               for t in (0.5, 2.0, 3.4, 3.5, 3.6)]

    def record(device: str, epochs_: list) -> RunRecord:
        return RunRecord.model_validate({"config": {"device": device, "size": "s", "batch_size": 128}, "info": {},
                             "epochs": epochs_, "samples": samples, "status": "finished"})

    short = sweeps.sweep_row(record("gpu:0", epochs), None)
    assert short.utilization_window == "all epochs"
    long_epochs = [epochs[0], {**epochs[1], "t_end_s": 4.0}]
    long = sweeps.sweep_row(record("gpu:0", long_epochs), None)
    assert long.utilization_window == "steady epochs"
    assert sweeps.wide_window_rows([short, long]) == [short]
    assert sweeps.sweep_row(record("cpu", epochs), None).utilization_window == "all epochs"


def test_rows_without_a_recorded_window_are_flagged_when_a_steady_epoch_is_shorter_than_the_interval():
    from bench.analysis import sweeps

    def row(**data: float) -> sweeps.SweepRow:  # a row read from a file written before the window was recorded
        return sweeps.SweepRow.model_validate({"size": "s", "batch_size": 128, "target": "cpu", **data})

    old_short = row(steady_epoch_seconds=0.15, sample_interval_s=0.2)
    old_long = row(steady_epoch_seconds=0.6, sample_interval_s=0.2)
    unknown = row(steady_epoch_seconds=0.15)
    assert sweeps.wide_window_rows([old_short, old_long, unknown]) == [old_short]


def _naive_within(spans, times):
    return [t for t in times if any(a <= t <= b for a, b in spans)]


def test_samples_in_epoch_windows_by_bisection_are_those_a_scan_finds():
    """training_windows finds a sample's epoch by bisection over merged spans; it must keep exactly the samples a
    scan of every span keeps: overlapping, touching, empty and reversed spans, times on the edges, in sample order."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    moments = st.integers(0, 40).map(lambda k: k / 4)  # on a grid, so edges and touching spans come up often

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.tuples(moments, moments), max_size=8), st.lists(moments, max_size=30))
    def check(spans, times):
        found = [t for t in times if metrics.in_spans(t, metrics.merged_spans(spans))]
        assert found == _naive_within(spans, times)

    check()
    epochs = epochs_of([{**ep(1, 1.0, True), "t_start_s": 0.0, "t_end_s": 1.0},
                        {**ep(2, 1.0), "t_start_s": 1.0, "t_end_s": 2.0},
                        {**ep(3, 0.5), "t_start_s": 2.5, "t_end_s": 3.0}])
    samples = samples_of({"t_s": t} for t in (0.5, 1.0, 2.2, 2.5, 3.0, 3.5))
    steady, every, whole = metrics.training_windows(epochs, samples)
    assert [s.t_s for s in steady] == [1.0, 2.5, 3.0]
    assert [s.t_s for s in every] == [0.5, 1.0, 2.5, 3.0]
    assert whole == list(samples)
