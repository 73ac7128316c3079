"""The words of `python -m bench`: its commands, their options and the types that check them, and a run's settings
read from them. bench.cli.main carries the commands out."""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from bench.vocab import limits, settings
from bench.vocab.config import OPTIMIZERS, ConfigError, RunConfig, preset_training
from bench.plans.model_file import MODEL_FILE_MAX_MB, file_model_name


def _run_id(text: str) -> int:
    """A run id as the store numbers runs: a whole number from 1 (argparse says what is wrong otherwise)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a run id; `python -m bench runs` lists them") from None
    if not 1 <= value <= limits.ID_MAX:
        raise argparse.ArgumentTypeError(f"{text} is not a run id (ids run from 1); `python -m bench runs` lists them")
    return value


class UsageError(Exception):
    """Bad command-line input; the message says what to do."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    return value


def _bounded(key: str, convert: Any) -> Any:
    """An argparse type: ``convert`` the text, then refuse a value outside ``bench.vocab.limits.ENTERED[key]``, the bound
    named."""
    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        problem = limits.entered_problem(value, key)
        if problem is not None:
            raise argparse.ArgumentTypeError(problem)
        return value
    parse.__name__ = key  # argparse names the type in its messages
    return parse


_timeout_s = _bounded("timeout_s", float)


def _batch_size(text: str) -> int:
    """A batch size within ``bench.vocab.limits.BatchSize``, the bound a run config holds it to."""
    value = _positive_int(text)
    problem = limits.problem(value, "batch_size")
    if problem is not None:
        raise argparse.ArgumentTypeError(f"the batch size {problem}")
    return value


def _prices(text: str) -> str:
    """``--price TARGET=PRICE,...`` checked where it is read: each a target and a price within
    ``bench.vocab.limits.ENTERED["price_per_hour"]``; the text itself is kept (the command matches it to its targets)."""
    from bench.analysis import pricing

    try:
        prices = pricing.parse_prices(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError("; ".join(exc.errors)) from None
    problems = [f"{name}: {problem}" for name, value in prices.items()
                if (problem := limits.entered_problem(value, "price_per_hour")) is not None]
    if problems:
        raise argparse.ArgumentTypeError("; ".join(problems))
    return text


def _mlflow_uri(text: str) -> str:
    """``--mlflow URI`` checked where it is read (``settings.parse_mlflow_uri``: the one rule)."""
    try:
        return settings.parse_mlflow_uri(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _FromEnv:
    """``--mlflow`` given without a URI: BENCH_MLFLOW_URI's (not text, so that argparse does not parse it as one)."""

    def __repr__(self) -> str:
        return "BENCH_MLFLOW_URI"


MLFLOW_FROM_ENV = _FromEnv()


def add_mlflow_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--mlflow", type=_mlflow_uri, nargs="?", const=MLFLOW_FROM_ENV, default=None, metavar="URI",
                   help=f"also log {what} to this MLflow tracking server or store (default: BENCH_MLFLOW_URI), "
                        "e.g. http://localhost:5000 or sqlite:///mlflow.db; needs `pip install -r "
                        "requirements-mlflow.txt`. A server that is down is retried once, then a warning: the run "
                        "stays finished and stored, and `export RUN --mlflow URI` sends it later")


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


PROG = "python -m bench"
EXIT_NOT_STORED = 3  # the run ended but the store does not hold all of it; the record went to a JSON file


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse prints usage + exits 2; keep it, but say what to do
        self.print_usage(sys.stderr)
        command = self.prog[len(PROG):].strip()
        where = f"{PROG} {command}" if command else PROG
        self.exit(2, f"error: {message}\nRun `{where} --help` for the options.\n")


def add_run_options(p: argparse.ArgumentParser, *, with_device: bool = True, steps_list: bool = False) -> None:
    d = RunConfig()
    p.add_argument("--dataset", default=d.dataset, help=f"dataset name (default {d.dataset})")
    p.add_argument("--npz", dest="npz_path", default=None, help="your .npz file (with --dataset npz)")
    p.add_argument("--model", default=d.model, help="mlp, cnn, text or a seed preset (default mlp)")
    p.add_argument("--size", default=d.size, help="xs, s, m, l, xl (default s)")
    p.add_argument("--model-file", dest="model_file", default=None, metavar="PATH",
                   help=f"your own .keras file instead of --model/--size (at most {MODEL_FILE_MAX_MB} MB; loaded in "
                        "Keras's safe mode: no Lambda or custom layers)")
    p.add_argument("--epochs", type=_positive_int, default=d.epochs)
    p.add_argument("--batch-size", type=_positive_int, default=d.batch_size)
    if with_device:
        p.add_argument("--device", default=d.device, help="cpu, gpu:N or gpus (default cpu)")
    p.add_argument("--cpu-threads", type=_positive_int, default=None, help="CPU threads (default all cores)")
    p.add_argument("--limit-samples", type=_positive_int, default=d.limit_samples,
                   help=f"use the first N training samples (default {d.limit_samples}; 0 = all)")
    p.add_argument("--sample-interval", type=_number, default=d.sample_interval_s, help="seconds between samples")
    p.add_argument("--seed", type=_positive_int, default=d.seed)
    p.add_argument("--optimizer", default=None,
                   help=f"{', '.join(OPTIMIZERS)} (default {d.optimizer}; a seed preset: its article's, e.g. sgd)")
    p.add_argument("--learning-rate", type=_number, default=None,
                   help="default: the optimizer's own (a seed preset with its own optimizer: its article's)")
    p.add_argument("--precision", default=d.precision, help="float32 or mixed_float16")
    p.add_argument("--jit-compile", action="store_true", help="compile with XLA (off by default)")
    if steps_list:
        p.add_argument("--devices", dest="devices", default=None,
                       help="comma list of device counts, a sweep axis, e.g. 1,2,4: data-parallel on the first N "
                            "devices of each target (cpu: N logical CPU devices; gpus: the first N GPUs)")
        p.add_argument("--steps-per-execution", dest="steps_per_execution", default=None,
                       help="comma list of training steps per compiled call, a sweep axis, e.g. 1,8,32 (default 1)")
    else:
        p.add_argument("--devices", dest="devices", type=_positive_int, default=None,
                       help="train data-parallel on the first N devices of the target's kind (cpu: N logical CPU "
                            "devices; gpus: the first N GPUs); tensorflow and jax backends (default: one device, "
                            "every GPU for gpus)")
        p.add_argument("--steps-per-execution", dest="steps_per_execution", type=_positive_int,
                       default=d.steps_per_execution,
                       help="training steps per compiled call (default 1; tensorflow and jax backends)")


def config_from_args(args: argparse.Namespace, **overrides: Any) -> RunConfig:
    values = dict(
        dataset=args.dataset, npz_path=args.npz_path, model=args.model, size=args.size, epochs=args.epochs,
        batch_size=args.batch_size, device=getattr(args, "device", "cpu"), cpu_threads=args.cpu_threads,
        limit_samples=args.limit_samples or None, sample_interval_s=args.sample_interval, seed=args.seed,
        optimizer=args.optimizer, learning_rate=args.learning_rate, precision=args.precision,
        jit_compile=args.jit_compile,
    )
    if args.optimizer is None:  # not named: a seed preset trains with its article's optimizer and learning rate
        values.update({"optimizer": RunConfig().optimizer, **preset_training(args.model)})
        if args.learning_rate is not None:
            values["learning_rate"] = args.learning_rate
    spe = getattr(args, "steps_per_execution", None)
    if isinstance(spe, int):
        values["steps_per_execution"] = spe
    count = getattr(args, "devices", None)
    if isinstance(count, int):
        values["devices"] = count
    for name in ("workers", "worker_index"):
        if getattr(args, name, None) is not None:
            values[name] = getattr(args, name)
    if getattr(args, "model_file", None) is not None:  # a user's .keras file instead of --model/--size
        values.update(model=file_model_name(args.model_file), size=None, model_file=args.model_file)
    values.update(overrides)
    return RunConfig(**values)


def _cluster_address(text: str) -> str:
    """``--cluster ADDRESS`` as given: blank text is refused (it would else read as no cluster, and the command would
    run on this machine as if the option were not there)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("--cluster needs an address: HOST:PORT of the cluster's head, or auto on a "
                                         "node of it; leave --cluster out to run on this machine")
    return text.strip()


def add_cluster_options(p: argparse.ArgumentParser, what: str) -> None:
    """``--cluster ADDRESS`` and ``--on WHERE``: run on a Ray cluster (docs/CLUSTER.md)."""
    p.add_argument("--cluster", type=_cluster_address, default=None, metavar="ADDRESS",
                   help=f"run {what} on the Ray cluster at ADDRESS (HOST:PORT of its head, or auto on a node of it; "
                        "default: BENCH_RAY_ADDRESS, else this machine): each run alone on a node's device, side by "
                        "side on as many as match; needs `pip install -r requirements-ray.txt`")
    p.add_argument("--on", dest="cluster_on", default=None, metavar="WHERE",
                   help="with --cluster: only the nodes named by WHERE: an accelerator type (H100), a custom "
                        "resource (node_b), a node's address or the start of its id (`bench devices --cluster` "
                        "lists them)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Train on CPU and GPU, measure time and utilization.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("devices", help="what hardware exists and what the framework sees")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--probe", action="store_true", help="also import the framework in a subprocess and list its devices")
    p.add_argument("--cluster", type=_cluster_address, default=None, metavar="ADDRESS",
                   help="list the nodes of the Ray cluster at ADDRESS (or BENCH_RAY_ADDRESS) and their hardware")

    p = sub.add_parser("doctor", help="what the GPU story needs on this machine: a checklist with fixes "
                                      "(exit 0 when a GPU run is possible here, 1 when not)")
    p.add_argument("--json", action="store_true", help='print {"gpu_ready": bool, "checks": [...]}')
    p.add_argument("--timeout", type=_timeout_s, default=60.0,
                   help="seconds the framework may take to list its devices in a child process (default 60)")
    p = sub.add_parser("run", help="train one model, live progress, JSON record")
    add_run_options(p)
    p.add_argument("--workers", default=None,
                   help="a multi-worker run: every member's HOST:PORT, the same list in each member, the first "
                        "coordinating, e.g. host-a:7000,host-b:7000 (KERAS_BACKEND=jax; start one process per member)")
    p.add_argument("--worker-index", dest="worker_index", type=_positive_int, default=None,
                   help="with --workers: which member this process is (0 = the first)")
    p.add_argument("--json", dest="json_path", default=None, help="write the run record to this file")
    add_mlflow_option(p, "the run (params, per-epoch metrics, system metrics, record and report)")
    add_cluster_options(p, "the run")

    p = sub.add_parser("runs", help="list stored runs, oldest first")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("compare", help="one config on several targets, one after the other; speed-up headline")
    add_run_options(p, with_device=False)
    p.add_argument("--targets", required=True, help="comma list of cpu, cpu/N, gpu:N, gpus (first = baseline)")
    p.add_argument("--price", type=_prices, default=None, help="hourly price per target for the cost per epoch and per run, "
                   "e.g. cpu=0.40,gpu:0=2.50 (no price is assumed for a target left out)")
    p.add_argument("--json", dest="json_path", default=None, help="write runs + comparison to this file")
    add_mlflow_option(p, "the comparison (a parent run, its headline as a tag, one child run per target)")
    add_cluster_options(p, "the comparison's runs")

    p = sub.add_parser("sweep", help="model size (and batch size, steps per execution) vs speed and utilization")
    add_run_options(p, with_device=False, steps_list=True)
    p.add_argument("--sizes", default="xs,s,m", help="comma list of xs, s, m, l, xl (default xs,s,m)")
    p.add_argument("--targets", default="cpu", help="comma list of targets (default cpu)")
    p.add_argument("--batch-sizes", default=None, help="comma list of batch sizes (default: --batch-size)")
    p.add_argument("--no-peak", action="store_true", help="skip the matmul peak probe")
    p.add_argument("--json", dest="json_path", default=None, help="write the sweep rows to this file")
    add_mlflow_option(p, "the sweep (a parent run, its headline as a tag, one child run per point)")
    add_cluster_options(p, "the sweep's points")

    p = sub.add_parser("suite", help="the fixed machine suite on every target of this machine: one machine bundle "
                                     "for the Machines page (docs/MACHINES.md)")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="fewer samples and sizes: within 10 minutes on 2 cores")
    size.add_argument("--smoke", action="store_true", help="every kind of workload once, a few batches each: checks "
                                                           "that the suite runs, in a minute (not a machine's figures)")
    p.add_argument("--price", type=_prices, default=None, help="hourly price per target of this machine, e.g. cpu=0.40,gpu:0=2.50")
    p.add_argument("--label", default=None, help='what to call this machine, e.g. "team workstation"')
    p.add_argument("--out", default=None, help="bundle file (default bench-bundle-DATE.json in the current folder)")
    p.add_argument("--no-peak", action="store_true", help="skip the matmul peak probe")
    add_cluster_options(p, "the suite once on each kind of node (one bundle per kind)")

    p = sub.add_parser("machines", help="the machine bundles (stored and shipped) and the ranking for one model")
    p.add_argument("--model", default="mlp", help="a family (mlp, cnn, text) or a seed preset (default mlp)")
    p.add_argument("--size", default="s", help="xs, s, m, l, xl (default s; ignored by presets)")
    p.add_argument("--batch-size", type=_batch_size, default=128, help="default 128")
    p.add_argument("--price", default=None, help="hourly prices, MACHINE:TARGET=PRICE comma list (MACHINE as "
                                                 "listed), e.g. 1:gpu:0=2.50,2:cpu=0.10")
    p.add_argument("--baseline", default=None, help="MACHINE:TARGET the speed-ups are against, e.g. 2:cpu")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("export", help="export a stored run as JSON, CSV (zip) or a self-contained HTML report")
    p.add_argument("run_id", type=_run_id)
    p.add_argument("--format", choices=("json", "csv", "html"), default="json")
    p.add_argument("--out", default=None, help="output file (default run-ID.FORMAT in the current folder)")
    p.add_argument("--raw", action="store_true", help="the run's rows as the store holds them, as JSON (default "
                                                      "file run-ID.raw.json): for a run this version cannot read")
    add_mlflow_option(p, "the stored run, in place of writing a file (a run whose logging failed)")

    p = sub.add_parser("import", help="import a JSON run, comparison or machine bundle measured elsewhere into "
                                      "the store")
    p.add_argument("path", help="a JSON record file; with --mlflow, the id of an MLflow run that `--mlflow` logged "
                                "(its record artifact bench/run.json, or a comparison's parent run)")
    p.add_argument("--mlflow", type=_mlflow_uri, nargs="?", const=MLFLOW_FROM_ENV, default=None, metavar="URI",
                   help="read the run from this MLflow tracking server or store (default: BENCH_MLFLOW_URI)")

    # The measuring harness lives beside the engine (benchmarks/ in the checkout); it owns its options and --help.
    p = sub.add_parser("overhead", add_help=False, prefix_chars="+",
                       help="what the dashboard costs a run (engine, watched page and sampler vs bare Keras, latency, "
                            "memory), measured by the checkout's benchmarks/ harness; --quick, --json PATH, and "
                            "--write-doc to rewrite docs/PERFORMANCE.md (see `overhead --help`)")
    p.add_argument("harness_args", nargs=argparse.REMAINDER)
    return parser


# -- commands -----------------------------------------------------------------------------------------------------
