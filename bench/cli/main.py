"""`python -m bench`: the engine from a terminal, with the same runs, store and JSON records as the dashboard.

Bad input exits with status 2 and a one-paragraph message on stderr (no traceback); a run that fails exits 1.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, TextIO, cast

from bench.cli import cluster as cli_cluster, machines as cli_machines, overhead, store as cli_store
from bench.vocab import records as records_module
from bench.vocab import safe_text
from bench.vocab import target as target_module
from bench.analysis import metrics, run_summary
from bench.cli.args import EXIT_NOT_STORED, PROG, UsageError, build_parser, config_from_args
from bench.vocab.config import ConfigError, DeviceInventory, RunConfig
from bench.output import display
from bench.vocab.readings import GpuReading
from bench.vocab.records import Comparison, RunRecord, Status

if TYPE_CHECKING:  # the hardware layer loads with the command that needs it
    from bench.hardware.peak_cache import PeakEntry


def cmd_doctor(args: argparse.Namespace) -> int:
    from bench.hardware import doctor

    report = doctor.diagnose(framework_timeout_s=float(args.timeout))
    print(records_module.json_text(report.model_dump(mode="json")) if args.json else doctor.render(report))
    return 0 if report.gpu_ready else 1


def cmd_devices(args: argparse.Namespace) -> int:
    from bench.hardware import devices

    if getattr(args, "cluster", None) is not None:
        return cli_cluster.devices(args)
    hw = devices.discover()
    data = hw.to_dict()
    readings, refused = _gpu_readings() if hw.gpus else ([], {})
    data["gpu_readings"] = [r.to_dict() for r in readings]
    data["gpu_not_measured"] = refused
    if args.probe:
        probe = devices.probe_framework(hw.framework)
        data["framework_probe"] = probe.model_dump()
    if args.json:
        print(records_module.json_text(data))
        return 0
    cpu = hw.cpu
    print(f"CPU   {safe_text.terminal(cpu.model)} · {cpu.logical_cores} logical cores ({cpu.physical_cores or '?'} physical) · "
          f"{(cpu.ram_total_mib or 0) / 1024:.1f} GiB RAM")
    if hw.gpus:
        for g in hw.gpus:
            mem = f"{g.mem_total_mib / 1024:.0f} GiB" if g.mem_total_mib else "memory not measured"
            runtime = f"CUDA {safe_text.terminal(g.cuda_driver_version or '?')}" if hw.vendor in (None, "nvidia") \
                else f"read by {safe_text.terminal(hw.gpu_source.name if hw.gpu_source else '?')}"
            print(f"GPU {g.index} {safe_text.terminal(g.name)} · {mem} · driver {safe_text.terminal(g.driver or '?')}"
                  f" · {runtime}")
        for r in readings:
            util = "not measured" if r.util_percent is None else f"{r.util_percent:.0f} %"
            mem_used = "not measured" if r.mem_used_mib is None else f"{r.mem_used_mib:,.0f} MiB"
            power = "not measured" if r.power_w is None else f"{r.power_w:.0f} W"
            print(f"      gpu:{r.index} now: utilization {util}, memory in use {mem_used}, power {power}")
            for name, why in refused.get(f"gpu:{r.index}", {}).items():
                print(f"      gpu:{r.index} {safe_text.terminal(name)} {safe_text.terminal(why)}")
    else:
        print(f"GPU   none usable: {safe_text.terminal(hw.gpu_reason)}")
    cuda = {True: "built with CUDA", False: "built without CUDA", None: "CUDA support unknown"}[hw.framework_cuda]
    print(f"Framework  {hw.framework} {hw.framework_version or '(not installed)'} · {cuda}")
    print(f"Devices    {', '.join(devices.device_choices(hw))}")
    if args.probe:
        print(f"Probe      {probe.error or ', '.join(probe.devices)}")
    return 0


def _gpu_readings() -> tuple[list[GpuReading], dict[str, dict[str, str]]]:
    """One reading of every GPU, from the source that answers here ([] where none does or it fails), and why each
    figure its bounds refused is not measured ("gpu:N" -> {reading: why})."""
    from bench.hardware.monitor import sources

    found = sources.find()
    if found.source is None:
        return [], {}
    try:
        collector = found.source.collector()
        readings = collector.collect()
        refused = collector.not_measured
        collector.close()
    except Exception:  # noqa: BLE001 - a listing of devices never fails on a reading
        return [], {}
    return readings, refused


class _ProgressLine:
    """A one-line terminal progress bar on stderr (a line per epoch when stderr is not a terminal)."""

    def __init__(self, stream: Any = None):
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.printed_epochs = 0
        self.last_phase = ""

    def update(self, snap: Any) -> None:
        for e in snap.epochs[self.printed_epochs:]:
            tag = " (includes tracing)" if e.includes_tracing else ""
            acc_text = f" · val acc {e.val_accuracy:.3f}" if e.val_accuracy is not None else ""
            rate = f"{e.samples_per_s:,.0f}" if e.samples_per_s is not None else "—"
            loss = f"{e.loss:.4f}" if e.loss is not None else "—"
            self._line(f"epoch {e.epoch}/{snap.config.epochs}: {e.epoch_seconds:.2f} s · {rate} samples/s · "
                       f"loss {loss}{acc_text}{tag}", final=True)
        self.printed_epochs = len(snap.epochs)
        if not self.tty:
            if snap.phase != self.last_phase:
                self.last_phase = snap.phase
                print(f"[{snap.status}] {snap.phase}", file=self.stream, flush=True)
            return
        prog = snap.progress
        if prog and snap.active:
            frac = prog.batch / max(prog.batches, 1)
            bar = "#" * int(frac * 30)
            eta = snap.eta_s()
            eta_text = f" · ETA {metrics.format_seconds(eta)}" if eta is not None else ""
            self._line(f"epoch {prog.epoch}/{snap.config.epochs} [{bar:<30}] {prog.batch}/{prog.batches}{eta_text}")
        elif snap.active:
            self._line(f"[{snap.status}] {snap.phase}…")

    def _line(self, text: str, final: bool = False) -> None:
        if self.tty:  # the line's own CR and erase go out as they are; its text, through the stream's escaping
            if isinstance(self.stream, safe_text.TerminalStream):
                self.stream.control("\r\033[K")
            else:
                self.stream.write("\r\033[K")
            self.stream.write(text + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


def _write_json(path: str, data: Any) -> None:
    """``data`` (a record, or rows of them as JSON) as strict JSON text in ``path``."""
    from bench.output import report

    report.write_file(path, records_module.json_text(data.to_dict() if hasattr(data, "to_dict") else data))


def _check_out(path: str | None, option: str) -> None:
    """Refuse an output file that cannot be written, before any training: nothing measured is lost to it later."""
    if path is None:
        return
    from bench.output import report

    try:
        report.check_writable(path)
    except OSError as exc:
        raise UsageError(f"{option} {path} cannot be written ({exc.strerror or exc}); pick a writable folder or "
                         f"file name.") from None


def _open_store() -> Any:
    from bench.store import Store, StoreError

    try:
        return Store()
    except StoreError as exc:
        print(f"warning: {exc} Results stay in memory (use --json to keep them).", file=sys.stderr)
        return None


def _new_manager(launcher: Any = None) -> Any:
    """The run queue of one command, on the store, with the worker and peak stand-ins BENCH_WORKER_TARGET and
    BENCH_PEAK_TARGET name (as the dashboard's); a bad value is bad input. With ``launcher`` (bench.cli.cluster) its
    runs go to the cluster."""
    from bench.vocab import settings
    from bench.runs.jobs import JobManager

    try:
        target, peak = settings.worker_target(), settings.peak_target()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if launcher is not None:
        return JobManager(_open_store(), worker_target=target, peak_target=peak, hardware=launcher.machine,
                          launcher=launcher)
    return JobManager(_open_store(), worker_target=target, peak_target=peak)


def execute_run(config: RunConfig, *, manager: Any = None) -> tuple[RunRecord, bool]:
    """Run one config in the foreground with a progress line; returns its record and whether the store holds all
    of it. Ctrl-C stops it cleanly."""
    own_manager = manager is None
    manager = manager or _new_manager()
    run_id = manager.submit(config)
    bar = _ProgressLine()
    try:
        while True:
            snap = manager.snapshot(run_id)
            bar.update(snap)
            if not snap.active:
                break
            time.sleep(0.2)
    except KeyboardInterrupt:
        print("\nstopping…", file=sys.stderr)
        manager.stop(run_id)
        snap = manager.wait(run_id, timeout_s=30)
    if own_manager and not snap.saved and snap.id > 0:
        manager.shutdown()  # a last try at writing what a failing store missed
        snap = manager.snapshot(run_id) or snap
    return snap.record(), snap.saved


def _keep_unsaved(data: RunRecord | Comparison, *, reason: str | None, epochs: int, json_path: str | None) -> None:
    """The store does not hold all of a run: make sure a JSON file does (the user's --json file, else a fallback
    file in the current folder or the temp folder), and say so once, with how to get it into the store later."""
    reason = reason or "the run store could not be opened."
    path = json_path
    if path is None:
        name = f"bench-unsaved-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.json"
        for folder in (Path.cwd(), Path(tempfile.gettempdir())):
            try:
                _write_json(str(folder / name), data)
            except OSError:
                continue
            path = str(folder / name)
            break
    if path is None:
        print(f"error: {reason}\nerror: the record could not be written to a file either: it is lost.",
              file=sys.stderr)
        return
    print(f"error: {reason}\nEverything measured ({epochs} epochs) is in {path}; `{PROG} import {path}` adds it "
          f"to the store once the store works again.", file=sys.stderr)


def _print_summary(record: RunRecord) -> None:
    s = run_summary.summary_of(record)
    info = record.info
    print(f"status     {record.status}")
    if info.placement:
        print(f"trained on {info.placement} ({info.framework or '?'})")
    print(f"steady epoch time  {metrics.format_seconds(s.steady_epoch_seconds)} "
          f"(first epoch, with tracing: {metrics.format_seconds(s.first_epoch_seconds)})")
    if s.mean_cpu_percent is not None:
        print(f"mean CPU   {s.mean_cpu_percent:.0f} %")
    gpu = s.mean_gpu_util_percent
    print(f"mean GPU   {'n/a (no GPU sampled)' if gpu is None else f'{gpu:.0f} %'}")
    steps = record.config.steps_per_execution
    if steps != 1:
        print(f"steps per execution  {steps}")
    if record.status in (Status.FINISHED, Status.STOPPED):
        print(f"diagnosis  {run_summary.diagnosis_of(record).verdict}")
    if record.error:
        err = record.error
        print(f"error      {err.headline}\nwhat to do {err.hint}", file=sys.stderr)


def _this_machine() -> DeviceInventory:
    """This machine's hardware, the one a config from the terminal is checked against."""
    from bench.hardware import devices

    return devices.discover()


def cmd_run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    launcher = cli_cluster.launcher(args)
    config.validate(launcher.machine if launcher is not None else _this_machine())
    _check_out(args.json_path, "--json")
    mlflow = cli_store.mlflow_uri(args)
    record, saved = execute_run(config, manager=_new_manager(launcher) if launcher is not None else None)
    if args.json_path:
        _write_json(args.json_path, record)
    _print_summary(record)
    if mlflow is not None:  # a server that is down is a warning: the exit code stays the run's
        cli_store.send_run(mlflow, record)
    if not saved:
        _keep_unsaved(record, reason=record.store_error, epochs=len(record.epochs), json_path=args.json_path)
        return EXIT_NOT_STORED
    return 0 if record.status == Status.FINISHED else 1


def _run_many(configs: list[RunConfig], manager: Any = None) -> tuple[list[RunRecord], list[bool]]:
    manager = manager or _new_manager()
    if manager.launcher is not None:
        return cli_cluster.run_side_by_side(configs, manager)
    records, saved = [], []
    for i, config in enumerate(configs, 1):
        print(f"== {i}/{len(configs)}: {safe_text.terminal(config.label())}", file=sys.stderr)
        record, ok = execute_run(config, manager=manager)
        records.append(record)
        saved.append(ok)
        if record.status != Status.FINISHED:
            print(f"   run ended {record.status}: {record.error.headline if record.error else ''}", file=sys.stderr)
    if not all(saved):
        manager.shutdown()  # a last try at writing what a failing store missed
        snaps = [manager.snapshot(r.id) for r in records]
        saved = [snap.saved if snap is not None else ok for snap, ok in zip(snaps, saved)]
    return records, saved


def _unsaved_exit(records: list[RunRecord], saved: list[bool], json_path: str | None) -> int | None:
    """After a comparison or sweep: the runs the store missed are kept in a JSON file (see _keep_unsaved)."""
    unsaved = [r for r, ok in zip(records, saved) if not ok]
    if not unsaved:
        return None
    from bench.analysis import compare

    _keep_unsaved(compare.comparison_record(unsaved), reason=unsaved[0].store_error,
                  epochs=sum(len(r.epochs) for r in unsaved), json_path=json_path)
    print(f"{len(unsaved)} of {len(records)} runs are not in the store.", file=sys.stderr)
    return EXIT_NOT_STORED


def cmd_compare(args: argparse.Namespace) -> int:
    from bench.analysis import compare, pricing

    targets = compare.parse_targets(args.targets)
    if len(targets) < 2:
        raise UsageError("compare needs at least two targets, e.g. --targets cpu/1,cpu")
    launcher = cli_cluster.launcher(args)
    hardware = launcher.machine if launcher is not None else _this_machine()
    target_module.refuse_duplicates(targets, hardware)
    _check_out(args.json_path, "--json")
    mlflow = cli_store.mlflow_uri(args)
    prices = pricing.parse_prices(args.price, targets)
    configs = compare.target_configs(config_from_args(args, device="cpu"), targets, hardware)
    records, saved = _run_many(configs, _new_manager(launcher) if launcher is not None else None)
    result = compare.comparison_record(records, prices)
    if args.json_path:
        _write_json(args.json_path, result)
    for pair in result.comparison.pairs if result.comparison is not None else ():
        print(pair.headline)
        print(f"  first epoch (includes tracing): {pair.baseline_target} "
              f"{metrics.format_seconds(pair.first_epoch_seconds_a)}, {pair.target} "
              f"{metrics.format_seconds(pair.first_epoch_seconds_b)}")
        for name, price, per_epoch, per_run in (
                (pair.baseline_target, pair.price_per_hour_a, pair.cost_per_epoch_a, pair.cost_per_run_a),
                (pair.target, pair.price_per_hour_b, pair.cost_per_epoch_b, pair.cost_per_run_b)):
            if price is not None:
                print(f"  cost of {name} at {price:g} per hour: {display.cost(per_epoch)} per steady epoch, "
                      f"{display.cost(per_run)} for the run (start-up included)")
        if compare.caution(pair):
            print(f"  caution: {compare.caution(pair)}")
    if mlflow is not None:
        from bench.output import mlflow_log, report

        cli_store.send_group(mlflow, "comparison", records, mlflow_log.comparison_headline(result),
                             lambda: report.to_json(result))
    unsaved = _unsaved_exit(records, saved, args.json_path)
    if unsaved is not None:
        return unsaved
    return 0 if all(r.status == Status.FINISHED for r in records) else 1


def cmd_sweep(args: argparse.Namespace) -> int:
    from bench.analysis import compare, sweeps

    _check_out(args.json_path, "--json")
    mlflow = cli_store.mlflow_uri(args)
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    batches = None
    if args.batch_sizes is not None:
        try:
            batches = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
        except ValueError:
            raise UsageError(f"--batch-sizes {args.batch_sizes!r}: give whole numbers, e.g. 64,256") from None
    steps = None
    if args.steps_per_execution is not None:
        try:
            steps = [int(n) for n in args.steps_per_execution.split(",") if n.strip()]
        except ValueError:
            raise UsageError(f"--steps-per-execution {args.steps_per_execution!r}: give whole numbers, "
                             "e.g. 1,8,32") from None
    counts = None
    if args.devices is not None:
        try:
            counts = [int(n) for n in args.devices.split(",") if n.strip()]
        except ValueError:
            raise UsageError(f"--devices {args.devices!r}: give whole numbers of devices, e.g. 1,2,4") from None
    targets = compare.parse_targets(args.targets)
    launcher = cli_cluster.launcher(args)
    hardware = launcher.machine if launcher is not None else _this_machine()
    target_module.refuse_duplicates(targets, hardware)
    configs = sweeps.sweep_configs(config_from_args(args, device="cpu"), sizes, targets, batches,
                                    hardware, steps_per_execution=steps, devices=counts)
    from bench.hardware import peak_cache, probe
    manager = _new_manager(launcher)
    entries: dict[str, peak_cache.PeakEntry | None] = {}
    if launcher is not None and not args.no_peak:  # the peaks probed here are this machine's, not the nodes'
        print("on a cluster the points are not measured against a matmul peak (this machine's is not the "
              "nodes'): as with --no-peak", file=sys.stderr)
        args.no_peak = True
    if not args.no_peak:
        for target in targets:  # in the run queue: a probe never overlaps a run
            print(f"measuring the matmul peak of {target} (best of several sizes, or the cached best)…",
                  file=sys.stderr)
            try:
                entries[str(target)] = manager.peaks.queue(target.device, cpu_threads=target.cpu_threads).result()
            except (ValueError, probe.ProbeError) as exc:
                print(f"   no peak for {target}: {exc}", file=sys.stderr)
                entries[str(target)] = None
    records, saved = _run_many(configs, manager)
    if not args.no_peak:
        entries = _peaks_after_runs(manager, entries)
    rows = sweeps.with_scaling([sweeps.sweep_row(r, entries.get(compare.target(r))) for r in records])
    peaks = {t: e.peak_gflops if e is not None else None for t, e in entries.items()}
    if args.json_path:
        document = sweeps.sweep_record(rows, peaks, records)
        document["peaks"] = {t: e.to_dict() if e is not None else None for t, e in entries.items()}  # where each peak came from: sizes, date, conditions
        _write_json(args.json_path, document)
    wide = sweeps.wide_window_rows(rows)
    print(f"{'size':>4} {'batch':>6} {'steps':>5} {'target':>7} {'dev':>3} {'params':>12} {'steady s':>9} "
          f"{'samples/s':>10} {'scaling':>7} {'GFLOP/s':>8} {'peak':>8} {'of peak':>8} {'GPU %':>6} {'CPU %':>6}  "
          "diagnosis")
    for row in rows:
        def f(v: Any, fmt: str) -> str:
            return format(v, fmt) if v is not None else "—"
        share = "re-probe" if row.peak_stale else f(row.peak_fraction, ".0%")
        print(f"{row.size:>4} {row.batch_size:>6} {row.steps_per_execution:>5} {row.target:>7} "
              f"{row.devices:>3} {f(row.params, ',d'):>12} "
              f"{f(row.steady_epoch_seconds, '.3f'):>9} {f(row.samples_per_s, ',.0f'):>10} "
              f"{f(row.scaling_efficiency, '.0%'):>7} "
              f"{f(row.achieved_gflops, '.1f'):>8} {f(row.peak_gflops, '.1f'):>8} {share:>8} "
              f"{f(row.mean_gpu_util_percent, '.0f'):>6} {f(row.mean_cpu_percent, '.0f'):>6}"
              f"{' *' if row in wide else '  '} {row.diagnosis_kind or '—'}")
    for target_text, entry in entries.items():
        if entry is not None:
            print(f"peak of {target_text}: {entry.peak_gflops:.1f} GFLOP/s, {peak_cache.describe(entry)}")
    if any(row.peak_stale for row in rows):
        print("re-probe: the run achieved more than the measured peak, so its share is not shown; the peak is "
              "measured again when no run is active (`python -m bench.hardware.probe --refresh`).")
    if wide:
        print(f"* {sweeps.WIDE_WINDOW_NOTE}")
    exchange = sweeps.exchange_bound_summary(rows)
    if exchange:
        print(exchange)
    if mlflow is not None:
        from bench.output import mlflow_log

        cli_store.send_group(mlflow, "sweep", records, mlflow_log.sweep_headline(rows),
                             lambda: records_module.json_text(sweeps.sweep_record(rows, peaks, records)))
    unsaved = _unsaved_exit(records, saved, args.json_path)
    if unsaved is not None:
        return unsaved
    return 0 if all(r.status == Status.FINISHED for r in records) else 1


def _peaks_after_runs(manager: Any, entries: dict[str, PeakEntry | None]) -> dict[str, PeakEntry | None]:
    """After a sweep: wait for the re-probes of peaks that a run beat (queued by the manager), then take each
    target's peak from the cache as it now stands (its best, or still stale when a probe failed)."""
    from bench.hardware import peak_cache
    from bench.vocab.target import Target

    pending = manager.peaks.pending()
    if pending:
        print(f"a run beat a measured peak: measuring it again ({len(pending)} probe(s))…", file=sys.stderr)
    for future in pending:
        try:
            future.result()
        except Exception as exc:  # noqa: BLE001 - reported; the row stays flagged
            print(f"   the new probe failed: {exc}", file=sys.stderr)
    out: dict[str, PeakEntry | None] = {}
    for text, entry in entries.items():
        if entry is None:
            out[text] = None
            continue
        target = Target.parse(text)
        out[text] = peak_cache.lookup(target.device, cpu_threads=target.cpu_threads, backend=entry.backend,
                                      dtype=entry.dtype or "float32") or entry
    return out


def cmd_suite(args: argparse.Namespace) -> int:
    """The machine suite on every target here, written as one machine bundle (bench.runs.suite)."""
    from bench.analysis import pricing
    from bench.hardware import devices, probe
    from bench.runs import suite

    variant = "smoke" if args.smoke else "quick" if args.quick else "full"
    launcher = cli_cluster.launcher(args)
    if launcher is not None:
        return cli_cluster.suite(args, launcher, variant, manager_of=_new_manager, run=execute_run,
                                 out=_check_out, write=_write_json, store=_open_store)
    hw = devices.discover()
    targets = suite.suite_targets(hw)
    prices = pricing.parse_prices(args.price, targets)
    out = args.out or f"bench-bundle-{time.strftime('%Y%m%d-%H%M%S')}.json"
    _check_out(out, "--out")
    configs = suite.suite_configs(variant, targets, hw)
    print(f"suite {suite.SUITE_VERSION} ({variant}): {len(suite.workloads(variant))} workloads on "
          f"{', '.join(map(str, targets))}: {len(configs)} runs", file=sys.stderr)
    manager = _new_manager()
    peaks: dict[str, float | None] = {}
    for target in [] if args.no_peak else targets:
        print(f"measuring the matmul peak of {target}…", file=sys.stderr)
        try:
            peaks[str(target)] = manager.peaks.queue(target.device,
                                                     cpu_threads=target.cpu_threads).result().peak_gflops
        except (ValueError, probe.ProbeError) as exc:
            print(f"   no peak for {target}: {exc}", file=sys.stderr)
            peaks[str(target)] = None
        except KeyboardInterrupt:
            print("\nstopped before any run: no bundle written", file=sys.stderr)
            return 1
    ctrl_c = _watch_ctrl_c()
    result = suite.run_suite(configs, lambda c: execute_run(c, manager=manager),
                             lambda text: print(text, file=sys.stderr, flush=True), ctrl_c.is_set)
    doc = suite.bundle(result, machine=suite.fingerprint(hw), variant=variant, label=args.label, prices=prices,
                       peaks_gflops=peaks)
    if not doc["runs"]:
        print("error: no run finished: no bundle written", file=sys.stderr)
        return 1
    _write_json(out, doc)
    store = _open_store()
    if store is not None:
        store.bundles.add(doc)
    print(f"wrote {out}: {len(doc['runs'])} of {len(configs)} runs ({doc['notes']})")
    manager.shutdown()
    return 0 if len(doc["runs"]) == len(configs) else 1


def _watch_ctrl_c() -> Any:
    """An Event set by Ctrl-C, which still raises KeyboardInterrupt as usual: the terminal sends the signal to the
    worker too, so a run cut short may end failed rather than stopped; the suite asks the event, not the status."""
    import signal
    import threading

    pressed = threading.Event()

    def on_sigint(signum: int, frame: Any) -> None:
        pressed.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    return pressed


def cmd_machines(args: argparse.Namespace) -> int:
    """The machine bundles (shipped and stored) and the ranking for one model (bench.cli.machines)."""
    return cli_machines.cmd_machines(args, _open_store())


COMMANDS = {"devices": cmd_devices, "doctor": cmd_doctor, "run": cmd_run, "runs": cli_store.cmd_runs,
            "compare": cmd_compare, "sweep": cmd_sweep, "suite": cmd_suite, "machines": cmd_machines,
            "export": cli_store.cmd_export, "import": cli_store.cmd_import, "overhead": overhead.cmd_overhead}


def _tolerant_output() -> None:
    """Under a locale whose encoding lacks a character the CLI prints ("—", "²"), print a stand-in, not a
    traceback (files are written as UTF-8 whatever the locale)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and (stream.encoding or "").lower().replace("-", "") != "utf8":
            reconfigure(errors="replace")


def main(argv: Sequence[str] | None = None) -> int:
    """Carry out one command; everything it prints (listings, errors, argparse's usage) goes through
    :class:`bench.vocab.safe_text.TerminalStream`, so outside text never reaches the terminal as a control sequence."""
    _tolerant_output()
    streams = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, safe_text.TerminalStream(sys.stdout))
    sys.stderr = cast(TextIO, safe_text.TerminalStream(sys.stderr))
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = streams


def _main(argv: Sequence[str] | None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # say it in the words of the command that was given, with its own --help
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        commands.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return COMMANDS[args.command](args)
    except (ConfigError, UsageError) as exc:
        errors = getattr(exc, "errors", None) or [str(exc)]
        print("error: " + "\nerror: ".join(errors), file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - the CLI reports, never dumps a traceback on the user
        from bench.store import StoreError

        if isinstance(exc, StoreError):
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
