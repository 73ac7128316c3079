"""The guided lesson: four steps of the CPU-vs-GPU story, each one click, each explained for a class.

Every step runs live on this machine's targets through the JobManager (small runs: a step ends in under a minute on
two cores). Where there is no GPU, each step also shows the figures this project measured on an NVIDIA H100
(docs/results/, docs/GPU.md), labelled as such. The step texts and their configs need no Streamlit; ``render_step``
draws one step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from bench.vocab import records, safe_text
from bench.output import charts
from bench.analysis import compare, metrics, sweeps
from bench.analysis.sweeps import SweepRow
from bench.hardware import devices
from bench.vocab.config import RunConfig
from bench.runs.jobs import JobManager
from ui import common, machine, present, results
from ui.safe_text import escape

SHIPPED_LABEL = "Measured on an NVIDIA H100 by this project, not live"
SWEEP_SIZES = "h100-sweep-sizes.json"
SWEEP_BATCH = "h100-sweep-batch.json"
GROUP_PREFIX = "lesson-"
# small enough for a step (two runs, worker start included) to end in under a minute on two CPU cores
LESSON_BASE = RunConfig(dataset="synthetic-mnist", model="mlp", size="xs", epochs=3, batch_size=128,
                        limit_samples=4000, sample_interval_s=0.2)


@dataclass(frozen=True)
class Step:
    """One step of the lesson: what to look at, why it comes out so, and what it runs."""

    key: str
    title: str
    text: str  # markdown, written for a class
    kind: str  # "speedup": one model on two targets; "points": one target, several models or batch sizes


STEPS: tuple[Step, ...] = (
    Step("small", "1 · A small model: the GPU barely wins, or loses", kind="speedup", text=(
        "A tiny network (about 25,000 parameters) learns to read handwritten digits. Each training step multiplies "
        "a few small matrices: a few million operations, done in microseconds by either chip.\n\n"
        "**Why the GPU does not win:** every step also has fixed costs that do not shrink with the model: Python "
        "and Keras decide what to run, the batch is copied to the GPU, the GPU is told to start each piece of work. "
        "On a GPU those fixed costs are most of the step, so it spends most of its time waiting. A CPU core pays "
        "smaller fixed costs and can be *faster* here.")),
    Step("large", "2 · A large model: the GPU wins big", kind="speedup", text=(
        "The same task with a much larger network (millions of parameters). Now each step is a lot of arithmetic: "
        "big matrix multiplications, exactly what a GPU's thousands of cores are built for.\n\n"
        "**Why the GPU wins:** the fixed costs per step stay the same, but the work per step grew hundreds of "
        "times over (about 230x from the small model to size l, 1,450x to xl). "
        "The CPU must do all that arithmetic on a few cores; the GPU spreads it over thousands. The bigger the "
        "model, the larger the GPU's lead.")),
    Step("batch", "3 · Batch size: more work per step, more done per second", kind="points", text=(
        "Same model, different batch sizes: how many examples go through the network in one step.\n\n"
        "**What to watch:** samples per second and achieved GFLOP/s (billions of arithmetic operations per second "
        "that the training actually did) climb as the batch grows. A bigger batch pays the same fixed costs once "
        "for more examples, and gives the chip bigger matrices to work on. (Very large batches can learn less per "
        "example, so a faster step is not always a better model.)")),
    Step("utilization", "4 · What NVML's 'utilization' does and does not mean", kind="points", text=(
        "The GPU % in this dashboard comes from NVML, NVIDIA's monitoring library. It measures **the share of time "
        "in which at least one piece of work (a kernel) was running on the GPU**, not how much of the chip was "
        "busy.\n\n"
        "**So:** a GPU can show 100 % while most of its cores sit idle, running one small kernel after another. "
        "And it can show a low % while the work it does is large, when it finishes each step quickly and waits for "
        "the next. To know how hard a chip works, compare the arithmetic it achieved (GFLOP/s) with its measured "
        "peak, as below.")),
)
STEP_BY_KEY = {s.key: s for s in STEPS}


def gpu_target(hardware: devices.Hardware) -> str | None:
    """The GPU a lesson step runs on, or None when this machine has none usable."""
    choices = devices.device_choices(hardware)
    return "gpu:0" if "gpu:0" in choices else None


def live_targets(hardware: devices.Hardware) -> list[str]:
    """The two sides of a speed-up step here: CPU vs GPU, or one core vs all cores where there is no GPU."""
    gpu = gpu_target(hardware)
    if gpu:
        return ["cpu", gpu]
    return ["cpu/1", "cpu"] if (hardware.cpu.logical_cores or 1) > 1 else ["cpu"]


def step_configs(step: Step, hardware: devices.Hardware) -> list[RunConfig]:
    """The runs one click of ``step`` queues on this machine."""
    fastest = gpu_target(hardware) or "cpu"
    if step.key == "small":
        return [LESSON_BASE.with_target(t) for t in live_targets(hardware)]
    if step.key == "large":
        return [LESSON_BASE.replace(size="l", limit_samples=2000).with_target(t) for t in live_targets(hardware)]
    if step.key == "batch":
        return [LESSON_BASE.replace(size="m", batch_size=b).with_target(fastest) for b in (32, 512)]
    return [LESSON_BASE.replace(size=s, limit_samples=2000).with_target(fastest) for s in ("xs", "l")]


# -- the shipped H100 figures -------------------------------------------------------------------------------------------
def shipped_sweep(name: str) -> records.Sweep | None:
    """A shipped H100 sweep (None when it is absent, as in a copy without docs/)."""
    path = results.BUNDLED_DIR / name
    if not path.is_file():
        return None
    sweep = records.load_json(Path(path).read_text(encoding="utf-8"))
    return sweep if isinstance(sweep, records.Sweep) else None


def shipped_rows(name: str) -> list[SweepRow]:
    """The sweep rows of a shipped H100 file ([] when it is absent)."""
    return _rows(shipped_sweep(name))


def _rows(sweep: records.Sweep | None) -> list[SweepRow]:
    return list(sweep.rows) if sweep is not None else []


def _epoch_samples(sweep: records.Sweep, run_id: Any) -> int | None:
    """How many training samples an epoch of one of the sweep's runs held, as that run recorded it."""
    run = next((r for r in sweep.runs if r.id == run_id), None)
    n = run.info.n_train if run is not None else None
    return n if n is not None and n > 0 else None


def _pick(rows: Sequence[SweepRow], **match: Any) -> list[SweepRow]:
    return [r for r in rows if all(getattr(r, k) == v for k, v in match.items())]


def shipped_speedup(size: str) -> dict[str, Any] | None:
    """CPU (16 cores) and H100 steady epoch of one MLP size at batch 128, and their ratio."""
    sweep = shipped_sweep(SWEEP_SIZES)
    rows = _rows(sweep)
    cpu, gpu = _pick(rows, size=size, target="cpu"), _pick(rows, size=size, target="gpu:0")
    if not cpu or not gpu or not cpu[0].steady_epoch_seconds or not gpu[0].steady_epoch_seconds:
        return None
    return {"params": gpu[0].params, "cpu_s": cpu[0].steady_epoch_seconds,
            "gpu_s": gpu[0].steady_epoch_seconds, "gpu_util": gpu[0].mean_gpu_util_percent,
            "speedup": cpu[0].steady_epoch_seconds / gpu[0].steady_epoch_seconds,
            "epoch_samples": _epoch_samples(sweep, gpu[0].run_id) if sweep is not None else None}


def speedup_text(factor: float | None, baseline: str, other: str) -> str:
    """'<other> is Nx faster than <baseline>' (or 'Nx slower'), for a headline; '—' without a factor."""
    if factor is None:
        return "—"
    if factor >= 1:
        return f"{escape(other)} is {factor:.1f}x faster than {escape(baseline)}"
    return f"{escape(other)} is {1 / factor:.1f}x slower than {escape(baseline)}"


def _fmt(value: float | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def points_figure(rows: Sequence[SweepRow], labels: Sequence[str], title: str) -> go.Figure:
    """Achieved GFLOP/s for a few runs (log scale), each bar labelled with the run's mean utilization."""
    def util(row: SweepRow) -> str:
        on_gpu = sweeps.on_gpu(row)
        value = row.mean_gpu_util_percent if on_gpu else row.mean_cpu_percent
        return f"{'GPU' if on_gpu else 'CPU'} {_fmt(value, '.0f')} %"

    fig = go.Figure()
    fig.add_bar(x=[safe_text.chart(label) for label in labels], y=[r.achieved_gflops for r in rows], name="achieved GFLOP/s",
                marker={"color": charts.PALETTE[0]}, text=[util(r) for r in rows], textposition="outside",
                cliponaxis=False, hovertemplate="%{x}: %{y:,.0f} GFLOP/s, %{text}<extra></extra>")
    fig.update_layout(yaxis={"title": "achieved GFLOP/s", "type": "log", "dtick": 1},
                      title={"text": title + "<br><sup>bars: arithmetic done; label: mean utilization</sup>",
                             "x": 0.01},
                      height=400, template="plotly_white", margin={"l": 70, "r": 20, "t": 80, "b": 60},
                      showlegend=False, uniformtext={"minsize": 14})
    return fig


def _point_label(row: SweepRow) -> str:
    return f"{row.size}, batch {row.batch_size}, {row.target}"


def _points_table(rows: Sequence[SweepRow]) -> None:
    results.sweep_table(rows, ["size", "batch_size", "target", "params", "steady_epoch_seconds", "samples_per_s",
                               "achieved_gflops", "peak_gflops", "mean_cpu_percent", "mean_gpu_util_percent"])


def show_shipped(step: Step) -> None:
    """The H100 figures for ``step``, labelled as measured elsewhere."""
    st.markdown(f"**{SHIPPED_LABEL}** (16-core Xeon beside it; docs/GPU.md):")
    if step.kind == "speedup":
        size = "xs" if step.key == "small" else "xl"
        found = shipped_speedup(size)
        if found is None:
            st.caption("The H100 results are not in this copy (docs/results/).")
            return
        c1, c2, c3, c4 = st.columns(4)
        c1.metric("H100 vs 16 CPU cores", f"{found['speedup']:.2f}x",
                  help=speedup_text(found["speedup"], "16 CPU cores", "the H100"))
        c2.metric("CPU steady epoch", metrics.format_seconds(found["cpu_s"]))
        c3.metric("H100 steady epoch", metrics.format_seconds(found["gpu_s"]))
        c4.metric("H100 utilization (NVML)", f"{_fmt(found['gpu_util'], '.0f')} %")
        held = f"{found['epoch_samples']:,} samples an epoch" if found["epoch_samples"] else "samples not recorded"
        st.caption(f"MLP {size} ({found['params']:,} parameters), batch 128, synthetic MNIST ({held}): "
                   f"{speedup_text(found['speedup'], 'the CPU', 'the H100')}.")
        return
    if step.key == "batch":
        rows = _pick(shipped_rows(SWEEP_BATCH), size="xl")
        title = "H100, MLP xl: achieved GFLOP/s and NVML utilization by batch size"
    else:
        sizes = shipped_rows(SWEEP_SIZES)
        rows = [*_pick(sizes, size="xs", target="gpu:0"), *_pick(sizes, size="xl", target="gpu:0"),
                *_pick(shipped_rows(SWEEP_BATCH), size="xl", batch_size=2048)]
        title = "H100: NVML utilization beside the arithmetic actually done"
    if not rows:
        st.caption("The H100 results are not in this copy (docs/results/).")
        return
    if step.key == "utilization":
        cols = st.columns(len(rows))
        for col, row in zip(cols, rows):
            share = (row.achieved_gflops / row.peak_gflops * 100
                     if row.achieved_gflops and row.peak_gflops else None)
            col.metric(f"MLP {escape(row.size)}, batch {escape(row.batch_size)}",
                       f"{_fmt(row.mean_gpu_util_percent, '.0f')} % busy",
                       help="NVML utilization, averaged over the run")
            col.caption(f"…while doing {_fmt(share, '.2f')} % of the measured matmul peak "
                        f"({_fmt(row.achieved_gflops, ',.0f')} of {_fmt(row.peak_gflops, ',.0f')} "
                        "GFLOP/s)")
    st.plotly_chart(present.styled(points_figure(rows, [_point_label(r) for r in rows], title)),
                    key=f"lesson_{step.key}_shipped", config=results.CHART_CONFIG)


# -- live -------------------------------------------------------------------------------------------------------------
def measure_text(hardware: devices.Hardware) -> str:
    """What GPU % means on this machine's GPU, named by its source: NVML's measure on an NVIDIA GPU (and where there is
    none, the shipped H100's), AMD SMI's or sysfs's GFX busy share on an AMD GPU, IOAccelerator's (or macmon's) busy
    share on a Mac."""
    name, measure = machine.utilization_measure(hardware)
    if not hardware.gpus or hardware.gpu_reason is not None:
        return f"No GPU here: the shipped H100 figures are {measure}."
    where = ", ".join(dict.fromkeys(g.name or "GPU" for g in hardware.gpus))
    return f"On this machine's GPU ({where}) GPU % comes from {name}: {measure}."


def start_step(manager: JobManager, step: Step, hardware: devices.Hardware) -> int:
    """Queue ``step``'s runs as one group; returns its id. Raises ConfigError for a config this machine refuses."""
    configs = step_configs(step, hardware)
    gpu = gpu_target(hardware)
    # the utilization step sets achieved GFLOP/s against the GPU's measured peak (probed before the runs, never during)
    peaks = {gpu: configs[0]} if step.key == "utilization" and gpu else None
    return manager.groups.submit(GROUP_PREFIX + step.key, configs, targets=[str(c.target()) for c in configs],
                                 peaks=peaks)


def show_live(manager: JobManager, step: Step) -> None:
    """The latest live run of ``step`` on this machine: its runs' lines and its two charts (time per epoch,
    utilization), grown live from the group's stream, then its figures once it has ended. Drawn in a fragment
    without a timer: the stream reruns it when a run ends."""
    if step.key == "utilization":
        st.info(escape(measure_text(common.get_hardware()), limit=800), icon=":material/speed:")
    kind = GROUP_PREFIX + step.key
    publisher, gs = results.live_lines(manager, kind)
    if gs is not None:
        st.markdown("**Live on this machine:**")
        if not gs.active:
            results.group_status(list(gs.runs))
    results.lines_view(publisher, kind)
    if gs is None or gs.active:
        return
    group, runs = gs.group, list(gs.runs)
    clean = [snap.record() for snap in runs]
    if step.kind == "speedup" and len(clean) >= 2:
        pair = compare.pairs(clean)[0]
        factor = pair.speedup_median
        c1, c2 = st.columns([1, 3])
        c1.metric(f"Live: {escape(pair.target)} vs {escape(pair.baseline_target)}",
                  f"{factor:.2f}x" if factor else "—")
        # the comparison's own headline: it says "about as fast" when the spread crosses 1x, as the pages do
        # the engine's sentence names the targets: escaped whole (its own words have no markdown)
        c2.markdown(f"**{escape(compare.headline(pair).rstrip('.'), limit=1000)}**; epoch 1, with tracing, left out.")
        note = compare.caution(pair)
        if note:
            c2.caption(note)
        return  # its two charts are the live view's, complete
    rows = [sweeps.sweep_row(r, group.peak(compare.target(r)).gflops) for r in clean]
    _points_table(rows)
    st.plotly_chart(present.styled(points_figure(rows, [_point_label(r) for r in rows], "This machine")),
                    key=f"lesson_{step.key}_live_fig", config=results.CHART_CONFIG)
