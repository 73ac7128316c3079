"""`python -m bench runs | export | import`: the stored runs from a terminal (listed, written out, read in), every
outside text through bench.safe_text.terminal; a run this version cannot read is listed apart, and exported raw."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench import cli_machines, safe_text
from bench import records as records_module
from bench.analysis import metrics
from bench.cli_args import UsageError


def cmd_runs(args: argparse.Namespace) -> int:
    from bench.store import Store

    listing = Store().listing()
    runs = [(r, metrics.steady_epoch_seconds(r.epochs)) for r in listing.runs]  # each steady time once
    if args.json:
        print(records_module.json_text([{
            "id": r.id,
            "status": str(r.status),
            "config": r.config,
            "epochs_done": len(r.epochs),
            "steady_epoch_seconds": steady,
            "created_at": r.created_at,
            "label": r.label,
        } for r, steady in runs]))
        for odd in listing.unreadable:  # stdout stays a list of runs; each unreadable one is said apart
            print(safe_text.terminal(odd.message), file=sys.stderr)
        return 0
    if not runs and not listing.unreadable:
        print("no runs stored yet: try `python -m bench run`")
    for run, steady in runs:
        print(f"{run.id:>5}  {str(run.status):<11} {len(run.epochs):>3} epochs  "
              f"steady {metrics.format_seconds(steady):>9}  {safe_text.terminal(run.label or '')}")
    for odd in listing.unreadable:
        print(safe_text.terminal(odd.message))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from bench.output import report
    from bench.store import Store

    if args.raw:
        return _export_raw(args)
    run = Store().get_run(args.run_id)  # a run this version cannot read: RunUnreadable, exit 2 with what to do
    if run is None:
        raise UsageError(f"there is no run {args.run_id}; `python -m bench runs` lists them")
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
    """``export N --raw``: the run's rows as the store holds them (store_rows.RawRun), read or not, as JSON."""
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

    if cli_machines.names_a_bundle(args.path):
        return cli_machines.import_bundle(args.path)
    try:
        record = report.load_record_file(args.path)
    except report.RecordError as exc:
        raise UsageError(str(exc)) from None
    ids = report.import_into_store(Store(), record)
    print(f"imported {len(ids)} run(s) as {', '.join(f'#{i}' for i in ids)}")
    return 0
