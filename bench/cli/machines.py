"""The machine-bundle commands of `python -m bench`: ``machines`` (the gallery and the ranking for one model) and
``import`` of a bundle. The suite that writes a bundle is ``bench suite`` (bench.runs.suite, run from bench.cli.main).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench.vocab import limits, records
from bench.cli.args import PROG, UsageError
from bench.vocab.config import ConfigError
from bench.output import display
from bench.vocab.safe_text import terminal


def import_bundle(path: str) -> int:
    """``bench import`` of a machine bundle: kept once in the store, then ranked by ``bench machines``; one that
    cannot be read, shown or kept whole stores nothing (exit 2, saying why)."""
    from bench.analysis import machines
    from bench.output import gallery, report
    from bench.store import Store

    try:
        bundle = gallery.read_bundle(path)
        name = terminal(machines.machine_name(bundle))  # what is said is made before anything is stored
        bundle_id, new = Store().bundles.add(bundle.to_dict())  # one it cannot keep whole: RecordError, nothing kept
    except report.RecordError as exc:
        raise UsageError(str(exc)) from None
    print(f"{'imported' if new else 'already in the store:'} machine bundle #{bundle_id} "
          f"({name}, {len(bundle.runs)} runs); `{PROG} machines` ranks it")
    return 0


def names_a_bundle(path: str) -> bool:
    """Whether a file to import says it is a machine bundle (bench.bundle/1); anything else is read as a record."""
    from bench.output import gallery

    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    if b'"bench.bundle/1"' not in head:
        return False
    try:
        return gallery.is_bundle(json.loads(Path(path).read_bytes()))
    except (ValueError, OSError):
        return False


def cmd_machines(args: argparse.Namespace, store: Any) -> int:
    """The machine bundles (shipped and stored) and the ranking for one model, in a terminal."""
    from bench.analysis import machines
    from bench.output import gallery

    gallery_machines, problems = gallery.gallery(store)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    numbered = {str(i): m for i, m in enumerate(gallery_machines, 1)}
    entered = _machine_prices(args.price, numbered)
    baseline = None
    if args.baseline:
        number, _, target = args.baseline.partition(":")
        if number not in numbered or target not in machines.targets_of(numbered[number]):
            raise UsageError(f"--baseline {args.baseline!r}: write MACHINE:TARGET with MACHINE a number from the list "
                             f"and a target it was measured on, e.g. 1:cpu")
        baseline = (numbered[number].key, target)
    ranked = machines.ranking(gallery_machines, args.model, args.size, args.batch_size,
                              prices=machines.prices_of(gallery_machines, entered), baseline=baseline)
    if args.json:
        print(records.json_text({
            "machines": [{"number": i, "key": m.key, "source": m.source, "name": m.name, "suite": m.suite,
                          "targets": machines.targets_of(m), "machine": m.bundle.machine.to_dict(), "notes": m.bundle.notes,
                          "runs": len(m.bundle.runs)} for i, m in enumerate(gallery_machines, 1)],
            "ranking": ranked.model_dump(mode="json")}))
        return 0
    for i, m in enumerate(gallery_machines, 1):
        print(f"{i:>3}  {terminal(m.name)}  [{m.source}, suite {m.suite}, {len(m.bundle.runs)} runs, "
              f"targets {', '.join(machines.targets_of(m))}]")
    point = args.model if ranked.size is None else f"{args.model} {ranked.size}"
    print(f"\nfor {point} at batch {args.batch_size}, fastest first (seconds per 1,000 training samples):")
    for row in ranked.by_time:
        cost = f" · {display.cost(row.cost_per_1k)} per 1,000" if row.cost_per_1k is not None else ""
        speedup = f" · {row.speedup:.2f}x the baseline" if row.speedup is not None else ""
        flags = f" · unequal: {'; '.join(row.flags)}" if row.flags else ""
        print(f"  {row.seconds_per_1k:9.4f} s  {terminal(row.machine_name)} · {row.target}{cost}{speedup}  ({row.how}: "
              f"{terminal(row.note)}){flags}")
    for row in ranked.unranked:
        print(f"  {'—':>11}  {terminal(row.machine_name)} · {row.target}: {terminal(row.note)}")
    print("\ncheapest first (cost per 1,000 training samples at the hourly prices entered):" if ranked.by_cost
          else "\nno cost ranking: no measured machine has an hourly price (--price 1:gpu:0=2.50)")
    for row in ranked.by_cost:
        print(f"  {display.cost(row.cost_per_1k):>9}  {terminal(row.machine_name)} · {row.target} at {row.price_per_hour:g} per hour")
    return 0


def _machine_prices(text: str | None, keys: dict[str, Any]) -> dict[tuple[str, str], float]:
    """``1:gpu:0=2.50,2:cpu=0.10`` (machine number as listed : target = hourly price) -> {(key, target): price};
    ``keys``: the listed number -> its machines.GalleryEntry."""
    from bench.analysis import machines, pricing
    from bench.vocab.target import Target

    out: dict[tuple[str, str], float] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        number, _, rest = part.strip().partition(":")
        target, sep, price = rest.partition("=")
        if number not in keys or not sep:
            raise UsageError(f"--price {part.strip()!r}: write MACHINE:TARGET=PRICE with MACHINE a number from the "
                             f"list (1..{len(keys)}), e.g. 1:gpu:0=2.50")
        try:
            name = str(Target.parse(target.strip()))
        except ConfigError:
            raise UsageError(f"--price {part.strip()!r}: {target.strip()!r} is not a target (cpu, cpu/N, gpu:N)") \
                from None
        measured = machines.targets_of(keys[number])
        if name not in measured:
            raise UsageError(f"--price {part.strip()!r}: machine {number} was measured on {', '.join(measured)}, "
                             f"not {name}")
        value = pricing.price_value(price, f"--price {part.strip()}")
        if value is None:
            raise UsageError(f"--price {part.strip()!r} has no price; e.g. 1:gpu:0=2.50")
        problem = limits.entered_problem(value, "price_per_hour")
        if problem is not None:
            raise UsageError(f"--price {part.strip()!r}: {problem}")
        out[(keys[number].key, name)] = value
    return out
