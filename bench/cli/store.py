"""`python -m bench runs | export | import`: the stored runs from a terminal (listed, written out, read in), every
outside text through bench.vocab.safe_text.terminal; a run this version cannot read is listed apart, and exported raw."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bench.cli import machines as cli_machines
from bench.vocab import safe_text, settings
from bench.vocab import records as records_module
from bench.analysis import metrics
from bench.output import display
from bench.cli.args import MLFLOW_FROM_ENV, PROG, UsageError
from bench.vocab.records import RunRecord

if TYPE_CHECKING:  # the module itself is imported where MLflow is asked for: it loads the report's charts
    from bench.output.mlflow_log import Outcome


def cmd_runs(args: argparse.Namespace) -> int:
    from bench.store import Store

    listing = Store().listing()
    runs = [(r, metrics.steady_epoch_seconds(r.epochs)) for r in listing.runs]  # each steady time once
    if args.json:
        print(records_module.json_text([{
            "id": r.id,
            "status": str(r.status),
            "config": r.config.to_dict(),
            "epochs_done": len(r.epochs),
            "steady_epoch_seconds": steady,
            "created_at": r.created_at,
            "label": r.label,
            "imported": _provenance(r),
        } for r, steady in runs]))
        for odd in listing.unreadable:  # stdout stays a list of runs; each unreadable one is said apart
            print(safe_text.terminal(odd.message), file=sys.stderr)
        return 0
    if not runs and not listing.unreadable:
        print("no runs stored yet: try `python -m bench run`")
    for run, steady in runs:
        origin = display.imported(run.info)
        print(f"{run.id:>5}  {str(run.status):<11} {len(run.epochs):>3} epochs  "
              f"steady {metrics.format_seconds(steady):>9}  {safe_text.terminal(run.label or '')}"
              + (f"  [{safe_text.terminal(origin)}]" if origin else ""))
    for odd in listing.unreadable:
        print(safe_text.terminal(odd.message))
    return 0


def _provenance(run: RunRecord) -> dict[str, object] | None:
    """``bench runs --json``'s word on where a run came from: None for one measured here, else the import's source."""
    info = run.info
    if not info.imported:
        return None
    return {"from": display.imported_from(info), "source_id": info.source_id, "imported_at": info.imported_at,
            "source_hardware": info.source_hardware}


def cmd_export(args: argparse.Namespace) -> int:
    from bench.output import report
    from bench.store import Store

    if args.raw:
        return _export_raw(args)
    uri = mlflow_uri(args)
    run = Store().get_run(args.run_id)  # a run this version cannot read: RunUnreadable, exit 2 with what to do
    if run is None:
        raise UsageError(f"there is no run {args.run_id}; `python -m bench runs` lists them")
    if uri is not None:
        return 0 if send_run(uri, run) else 1
    out = Path(args.out or f"run-{args.run_id}.{'zip' if args.format == 'csv' else args.format}")
    if args.format == "json":
        report.write_file(out, report.to_json(run))
    elif args.format == "html":
        report.write_file(out, report.to_html(run))
    else:
        report.write_file(out, report.to_csv_zip(run))
    print(f"wrote {out}")
    return 0


def _export_raw(args: argparse.Namespace) -> int:
    """``export N --raw``: the run's rows as the store holds them (bench.store.RawRun), read or not, as JSON."""
    from bench.output import report
    from bench.store import Store

    if args.format != "json":
        raise UsageError(f"--raw writes the stored rows as JSON; leave out --format {args.format}")
    raw = Store().raw_run(args.run_id)
    if raw is None:
        raise UsageError(f"there is no run {args.run_id}; `python -m bench runs` lists them")
    out = Path(args.out or f"run-{args.run_id}.raw.json")
    report.write_file(out, records_module.json_text(raw.to_dict()))
    print(f"wrote {out}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from bench.output import report
    from bench.store import Store

    uri = mlflow_uri(args)
    if uri is None and cli_machines.names_a_bundle(args.path):
        return cli_machines.import_bundle(args.path)
    try:
        record = report.load_record_file(args.path if uri is None else _mlflow_record(uri, args.path))
    except report.RecordError as exc:
        raise UsageError(str(exc)) from None
    source = f"file {Path(args.path).name}" if uri is None else \
        f"MLflow run {args.path.removeprefix('mlflow:').strip()} at {uri}"
    print(report.import_record(Store(), record, source=source).said())
    return 0


# -- MLflow (bench.output.mlflow_log) ---------------------------------------------------------------------------------
def mlflow_uri(args: argparse.Namespace) -> str | None:
    """The tracking URI ``--mlflow`` names (BENCH_MLFLOW_URI when given without one), None without ``--mlflow``;
    checked before any training: a client that is not installed, or no URI, is bad input.

    Raises:
        UsageError: ``--mlflow`` without a URI and BENCH_MLFLOW_URI unset or not a URI, or no MLflow client installed.
    """
    from bench.output import mlflow_log

    if args.mlflow is None:
        return None
    uri: str | None = args.mlflow if isinstance(args.mlflow, str) else None
    if args.mlflow is MLFLOW_FROM_ENV:
        try:
            uri = settings.mlflow_uri()
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if uri is None:
            raise UsageError("--mlflow without a URI logs to BENCH_MLFLOW_URI, which is not set: give one, e.g. "
                             "--mlflow http://localhost:5000")
    if not mlflow_log.available():
        raise UsageError(f"--mlflow needs the MLflow client, which is not installed here: `{mlflow_log.PIP_LINE}` "
                         "(or `pip install mlflow-skinny`), then run this again")
    return uri


def _said(uri: str, outcome: Outcome, later: Sequence[RunRecord]) -> bool:
    """Print what a send did: the MLflow runs logged, or a warning with how to send the runs later; whether all
    was logged."""
    shown = safe_text.terminal(uri)
    if outcome.ok:
        parent = f"parent run {outcome.parent_id}, " if outcome.parent_id else ""
        print(f"logged to MLflow at {shown}: {parent}run(s) {', '.join(outcome.run_ids)}", file=sys.stderr)
        return True
    stored = [r.id for r in later if r.id is not None and r.id > 0]
    commands = "; ".join(f"`{PROG} export {i} --mlflow {shown}`" for i in stored)
    print(f"warning: MLflow at {shown} did not take it after a retry ({safe_text.terminal(outcome.error or '')}). "
          "The run is unaffected: its status, its exit code and the store are as they would be without --mlflow. "
          + (f"Send it later: {commands}" if commands else "Send it later, once it is in the store: "
             f"`{PROG} import FILE`, then `{PROG} export RUN --mlflow {shown}`"), file=sys.stderr)
    return False


def send_run(uri: str, run: RunRecord) -> bool:
    """Log one run to MLflow and say how it went (a failing server: a warning, never an error)."""
    from bench.output import mlflow_log

    return _said(uri, mlflow_log.log_run(uri, run), [run])


def send_group(uri: str, kind: str, runs: Sequence[RunRecord], headline: str, document: Callable[[], str]) -> bool:
    """Log a comparison or sweep to MLflow as a parent run with one child per run, and say how it went."""
    from bench.output import mlflow_log

    return _said(uri, mlflow_log.log_group(uri, kind, runs, headline=headline, document=document), runs)


def _mlflow_record(uri: str, run_id: str) -> bytes:
    """The record an MLflow run was logged with, for the checked import (``report.load_record_file``)."""
    from bench.output import mlflow_log

    return mlflow_log.fetch_record(uri, run_id.removeprefix("mlflow:").strip())
