"""Build the image, start it and check it as a user would, then remove what it made (`make image-check`).

With a Docker daemon that answers, it uses `docker` and the official base image. Without one it uses Debian's
`buildah` (as root) in a private storage directory that it deletes at the end, on a local Debian bookworm base
made once with `mmdebstrap` and cached as a tarball in $BENCH_IMAGE_CACHE (default ~/.cache/bench-image): the
only thing it leaves on the disk.

Checks, on the CPU image by default:
  - the image's HEALTHCHECK answers within 60 s of the start;
  - the server runs as the image's non-root user;
  - in headless Chromium the Train page loads from the container and a short run started there finishes, with
    its charts;
  - `python -m bench run` inside the container finishes a tiny run;
  - the runs are still listed after the container is replaced by a new one on the same volume.
It prints the image's size and build time; its last line is `image-check: ok ...` or `image-check: FAILED: ...`.

    python scripts/image_check.py                         # what `make image-check` runs
    python scripts/image_check.py --variant gpu --build-only   # build the GPU image, report size and time, remove it
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

APP_UID = 10001  # the Dockerfile's USER
APP_PORT = 8501  # the Dockerfile's EXPOSE / CMD
HEALTH_DEADLINE_S = 60.0
TINY_RUN = ["python", "-m", "bench", "run", "--dataset", "synthetic-mnist", "--model", "mlp", "--size", "xs",
            "--epochs", "2", "--limit-samples", "2000", "--device", "cpu"]
LIST_RUNS = ["python", "-m", "bench", "runs", "--json"]
BROWSER_EPOCHS = 3
ARTIFACTS = ROOT / "test-artifacts"  # only written when a check fails

# The local base: Debian bookworm with its Python 3.11 in a venv at /usr/local, so that `python` and `pip` are in
# /usr/local/bin as in the official python image and `pip install` is allowed (Debian's python3 refuses it).
BASE_NAME = "localhost/bench-base:bookworm"
MMDEBSTRAP = ["mmdebstrap", "--variant=minbase", "--format=tar", "--include=python3,python3-venv,ca-certificates",
              "--customize-hook=chroot \"$1\" python3 -m venv /usr/local", "bookworm"]
BASE_ENV = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"]
WORK_PARENT, WORK_PREFIX = "/var/tmp", "bench-image-check."  # buildah's storage, containers and volume, per check
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"  # the host's, mounted into RUN steps so that pip trusts this network


class CheckFailed(Exception):
    """A check did not pass; the message says which and what was seen."""


def say(message: str) -> None:
    print(f"image-check: {message}", flush=True)


def duration(seconds: float) -> str:
    return f"{int(seconds // 60)}m{seconds % 60:04.1f}s" if seconds >= 60 else f"{seconds:.1f}s"


def gigabytes(size_bytes: int) -> str:
    return f"{size_bytes / 1e9:.2f} GB"


def sh(argv: list[str], *, timeout_s: float | None = 120, check: bool = True, quiet: bool = True,
       what: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command; with quiet, capture its output (shown when it fails)."""
    try:
        proc = subprocess.run(argv, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE if quiet else None,
                              stderr=subprocess.STDOUT if quiet else None)
    except subprocess.TimeoutExpired as exc:
        raise CheckFailed(f"{what or argv[0]} did not finish within {timeout_s:.0f} s") from exc
    if check and proc.returncode != 0:
        tail = "\n".join((proc.stdout or "").strip().splitlines()[-25:])
        raise CheckFailed(f"{what or ' '.join(argv[:3])} exited with status {proc.returncode}"
                          + (f":\n{tail}" if tail else ""))
    return proc


def port_answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthcheck_argv(test: list[str] | None) -> list[str]:
    """The command a Docker HEALTHCHECK runs, from the image config's Healthcheck.Test."""
    if not test or test[0] == "NONE":
        raise CheckFailed("the image has no HEALTHCHECK")
    if test[0] == "CMD":
        return list(test[1:])
    if test[0] == "CMD-SHELL":
        return ["/bin/sh", "-c", test[1]]
    raise CheckFailed(f"unexpected HEALTHCHECK form {test!r}")


@dataclass
class Container:
    name: str
    url: str
    log: Path
    id: str = ""
    proc: subprocess.Popen[bytes] | None = None
    started: float = field(default_factory=time.monotonic)


# ---------------------------------------------------------------- buildah (no daemon)


class Buildah:
    """Rootful buildah in a private storage directory; containers run with chroot isolation on the host network."""

    def __init__(self, cache_dir: Path) -> None:
        if os.geteuid() != 0:
            raise CheckFailed("without a Docker daemon this check builds with buildah, which needs root here")
        for tool in ("buildah", "mmdebstrap"):
            if shutil.which(tool) is None:
                raise CheckFailed(f"no Docker daemon answers and {tool} is not installed "
                                  "(apt-get install buildah mmdebstrap; bash .ci/run installs them)")
        self.cache_dir = cache_dir
        remove_stale_workdirs()
        self.work = Path(tempfile.mkdtemp(prefix=WORK_PREFIX, dir=WORK_PARENT))
        (self.work / "owner.pid").write_text(str(os.getpid()), encoding="utf-8")
        self.data = self.work / "data"
        (self.work / "tmp").mkdir()
        self.driver = os.environ.get("BENCH_IMAGE_STORAGE_DRIVER") or self._pick_driver()
        self.containers: list[Container] = []

    def describe(self) -> str:
        return f"buildah {self._version()} ({self.driver} storage in {self.work}, removed at the end)"

    def _version(self) -> str:
        return sh(["buildah", "--version"]).stdout.split()[2]

    def _cmd(self, *args: str, driver: str | None = None) -> list[str]:
        # TMPDIR: buildah chroots a container into a directory made there, so its processes can be found by their
        # root (processes_rooted_in) and nothing is left in /var/tmp.
        return ["env", f"TMPDIR={self.work / 'tmp'}", "buildah", "--root", str(self.work / "storage"),
                "--runroot", str(self.work / "run"), "--storage-driver", driver or self.driver, *args]

    def _pick_driver(self) -> str:
        """overlay when the kernel lets buildah mount it here (no full copy of every layer), else vfs."""
        probe = subprocess.run(self._cmd("from", "--name", "probe", "scratch", driver="overlay"),
                               capture_output=True, text=True, timeout=60)
        ok = probe.returncode == 0 and subprocess.run(
            self._cmd("mount", "probe", driver="overlay"), capture_output=True, timeout=60).returncode == 0
        subprocess.run(self._cmd("rm", "--all", driver="overlay"), capture_output=True, timeout=60)
        self._unmount_all()
        shutil.rmtree(self.work / "storage", ignore_errors=True)
        shutil.rmtree(self.work / "run", ignore_errors=True)
        return "overlay" if ok else "vfs"

    # -- base

    def prepare_base(self) -> str:
        key = hashlib.sha256(json.dumps(MMDEBSTRAP + BASE_ENV).encode()).hexdigest()[:12]
        tarball = self.cache_dir / f"debian-bookworm-python3-{key}.tar"
        if not tarball.is_file():
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            for old in self.cache_dir.glob("debian-bookworm-python3-*"):
                old.unlink()  # a base made by another version of this script, or a partial one
            partial = tarball.with_name(tarball.name + ".partial")
            t0 = time.monotonic()
            try:
                sh(MMDEBSTRAP + [str(partial)], timeout_s=900, what="mmdebstrap (the local Debian base)")
            except BaseException:
                partial.unlink(missing_ok=True)
                raise
            partial.replace(tarball)
            say(f"made the local base {tarball} with mmdebstrap in {duration(time.monotonic() - t0)} "
                f"({gigabytes(tarball.stat().st_size)}, kept for the next run)")
        else:
            say(f"local base: {tarball} (cached)")
        t0 = time.monotonic()
        cid = sh(self._cmd("from", "--name", "bench-base", "scratch")).stdout.strip()
        mount = sh(self._cmd("mount", cid)).stdout.strip()
        sh(["tar", "-xf", str(tarball), "-C", mount], timeout_s=300, what="unpacking the base")
        sh(self._cmd("umount", cid))
        sh(self._cmd("config", *[a for env in BASE_ENV for a in ("--env", env)], cid))
        sh(self._cmd("commit", "--quiet", "--rm", cid, BASE_NAME), timeout_s=300, what="committing the base")
        say(f"imported the base as {BASE_NAME} in {duration(time.monotonic() - t0)}")
        return BASE_NAME

    # -- image

    def build(self, tag: str, variant: str, base: str | None) -> None:
        argv = self._cmd("bud", "--isolation", "chroot", "--format", "docker",
                         "-v", f"{CA_BUNDLE}:{CA_BUNDLE}:ro", "--build-arg", f"VARIANT={variant}",
                         "--tag", tag, "--file", str(ROOT / "Dockerfile"))
        if base:
            argv += ["--build-arg", f"BASE_IMAGE={base}"]
        sh(argv + [str(ROOT)], timeout_s=3600, quiet=False, what="buildah bud")

    def _image(self, tag: str) -> dict[str, Any]:
        return json.loads(sh(self._cmd("inspect", "--type", "image", tag)).stdout)

    def size_bytes(self, tag: str) -> int:
        """The unpacked size of the image's layers, as `docker image inspect` reports Size."""
        manifest = json.loads(self._image(tag)["Manifest"])
        return sum(int(layer["size"]) for layer in manifest["layers"])

    # -- containers

    def new_volume(self) -> None:
        self.data.mkdir(mode=0o755)
        os.chown(self.data, APP_UID, APP_UID)

    def start(self, name: str, tag: str) -> Container:
        if port_answers(APP_PORT):
            raise CheckFailed(f"port {APP_PORT} is already in use on this host; buildah runs the container on the "
                              "host's network, so stop what listens there first")
        config = self._image(tag)["Docker"]["config"]
        command = (config.get("Entrypoint") or []) + (config.get("Cmd") or [])
        if "/data" not in (config.get("Volumes") or {}):
            raise CheckFailed("the image does not declare VOLUME /data")
        c = Container(name=name, url=f"http://127.0.0.1:{APP_PORT}", log=self.work / f"{name}.log")
        c.id = sh(self._cmd("from", "--pull-never", "--name", name, tag)).stdout.strip()
        self.containers.append(c)
        # buildah 1.28 mounts a volume of its own for an image's VOLUME over the bind mount given for the same path
        # (docker uses the given one), so the working container drops the declaration and gets the host directory.
        sh(self._cmd("config", "--volume", "/data-", c.id))
        with c.log.open("wb") as log:
            c.proc = subprocess.Popen(self._run_argv(c, command), stdin=subprocess.DEVNULL, stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        c.started = time.monotonic()
        return c

    def check_store_on_volume(self) -> None:
        if not (self.data / "runs.sqlite3").is_file():
            raise CheckFailed(f"the store is not in the volume: {self.data} holds {sorted(os.listdir(self.data))}")

    def _run_argv(self, c: Container, command: list[str]) -> list[str]:
        return self._cmd("run", "--isolation", "chroot", "--volume", f"{self.data}:/data", c.id, "--", *command)

    def exec(self, c: Container, command: list[str], *, timeout_s: float = 300,
             check: bool = True) -> subprocess.CompletedProcess[str]:
        return sh(self._run_argv(c, command), timeout_s=timeout_s, check=check, what=" ".join(command[:4]))

    def wait_healthy(self, c: Container, tag: str) -> float:
        """Run the image's HEALTHCHECK command inside the container until it passes (buildah does not run it)."""
        hc = self._image(tag)["Docker"]["config"].get("Healthcheck") or {}
        argv = healthcheck_argv(hc.get("Test"))
        timeout_s = (hc.get("Timeout") or 30e9) / 1e9
        while True:
            self._ensure_running(c)
            try:
                if self.exec(c, argv, timeout_s=timeout_s + 10, check=False).returncode == 0:
                    return time.monotonic() - c.started
            except CheckFailed:
                pass
            if time.monotonic() - c.started > HEALTH_DEADLINE_S:
                raise CheckFailed(f"the health check did not pass within {HEALTH_DEADLINE_S:.0f} s of the start; "
                                  f"server log:\n{self._log_tail(c)}")
            time.sleep(1)

    def _ensure_running(self, c: Container) -> None:
        if c.proc is not None and c.proc.poll() is not None:
            raise CheckFailed(f"the container's server exited with status {c.proc.returncode}:\n{self._log_tail(c)}")

    @staticmethod
    def _log_tail(c: Container) -> str:
        try:
            return "\n".join(c.log.read_text(encoding="utf-8", errors="replace").splitlines()[-25:])
        except OSError:
            return "(no log)"

    def server_processes(self, c: Container) -> list[tuple[int, int, str]]:
        """(pid, uid, command line) of every process chrooted into this check's storage: the container's."""
        return processes_rooted_in(self.work)

    def stop(self, c: Container) -> None:
        if c.proc is not None and c.proc.poll() is None:
            _signal_group(c.proc.pid, signal.SIGTERM)
            try:
                c.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                _signal_group(c.proc.pid, signal.SIGKILL)
                c.proc.wait(timeout=10)
        _end_processes_rooted_in(self.work)
        if c.id:
            sh(self._cmd("rm", c.id), check=False)
        if c in self.containers:
            self.containers.remove(c)

    def cleanup(self) -> list[str]:
        for c in list(self.containers):
            try:
                self.stop(c)
            except Exception as exc:  # noqa: BLE001 - cleanup goes on
                say(f"warning: stopping {c.name}: {exc}")
        _end_processes_rooted_in(self.work)
        subprocess.run(self._cmd("rm", "--all"), capture_output=True, timeout=120)
        subprocess.run(self._cmd("rmi", "--all", "--force"), capture_output=True, timeout=300)
        self._unmount_all()
        remove_tree(self.work)
        left = []
        if self.work.exists():
            left.append(f"directory {self.work}")
        left += [f"process {pid} ({cmd[:60]})" for pid, _, cmd in processes_rooted_in(self.work)]
        left += [f"mount {m}" for m in mounts_under(self.work)]
        return left

    def _unmount_all(self) -> None:
        unmount_under(self.work)


def unmount_under(path: Path) -> None:
    for mount in sorted(mounts_under(path), key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True, timeout=60)


def remove_tree(path: Path) -> None:
    """rm -rf that stays on this file system (a mount left under path is not followed)."""
    subprocess.run(["rm", "-rf", "--one-file-system", str(path)], check=False, timeout=600)


def remove_stale_workdirs() -> None:
    """Remove what a check that was killed (SIGKILL, power) left: work directories whose owner has gone."""
    for work in Path(WORK_PARENT).glob(WORK_PREFIX + "*"):
        try:
            owner: int | None = int((work / "owner.pid").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            owner = None
        if owner is None and time.time() - work.stat().st_mtime < 600:
            continue  # just made: its owner is not written yet
        if owner is not None and Path(f"/proc/{owner}").exists():
            continue  # another check is running
        say(f"removing {work}, left by a check that did not finish")
        _end_processes_rooted_in(work)
        unmount_under(work)
        remove_tree(work)


def mounts_under(path: Path) -> list[str]:
    prefix = str(path)
    found = []
    for line in Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines():
        mount_point = line.split()[4].replace("\\040", " ")
        if mount_point == prefix or mount_point.startswith(prefix + "/"):
            found.append(mount_point)
    return found


def processes_rooted_in(path: Path) -> list[tuple[int, int, str]]:
    """Processes whose root directory lies under path (chrooted into a container there)."""
    prefix = str(path)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            root = os.readlink(entry / "root")
            if not (root == prefix or root.startswith(prefix + "/")):
                continue
            uid = next(int(line.split()[1]) for line in (entry / "status").read_text(encoding="utf-8").splitlines()
                       if line.startswith("Uid:"))
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, StopIteration, ValueError):
            continue
        found.append((int(entry.name), uid, cmdline))
    return found


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def _end_processes_rooted_in(path: Path, grace_s: float = 15) -> None:
    """SIGTERM, then SIGKILL, whatever still runs inside a container under path (the server's workers)."""
    deadline = time.monotonic() + grace_s
    sig = signal.SIGTERM
    while procs := processes_rooted_in(path):
        if time.monotonic() > deadline:
            sig = signal.SIGKILL
        for pid, _, _ in procs:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(0.5)
        if sig == signal.SIGKILL and time.monotonic() > deadline + 10:
            break


# ---------------------------------------------------------------- docker (a daemon answers)


class Docker:
    """The docker CLI against a running daemon; the official base image is pulled by the build."""

    def __init__(self) -> None:
        self.suffix = f"{os.getpid()}"
        self.volume = f"bench-image-check-{self.suffix}"
        self.work = Path(tempfile.mkdtemp(prefix="bench-image-check."))
        self.containers: list[Container] = []
        self.images: list[str] = []
        self.volume_made = False

    @staticmethod
    def available() -> bool:
        if shutil.which("docker") is None:
            return False
        try:
            return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def describe(self) -> str:
        version = sh(["docker", "version", "--format", "{{.Server.Version}}"]).stdout.strip()
        return f"docker (daemon {version})"

    def prepare_base(self) -> str | None:
        return None  # the Dockerfile's default, pulled by `docker build`

    def build(self, tag: str, variant: str, base: str | None) -> None:
        self.images.append(tag)
        sh(["docker", "build", "--build-arg", f"VARIANT={variant}", "--tag", tag, str(ROOT)],
           timeout_s=3600, quiet=False, what="docker build")

    def size_bytes(self, tag: str) -> int:
        return int(sh(["docker", "image", "inspect", "--format", "{{.Size}}", tag]).stdout.strip())

    def new_volume(self) -> None:
        sh(["docker", "volume", "create", self.volume])
        self.volume_made = True

    def start(self, name: str, tag: str) -> Container:
        volumes = json.loads(sh(["docker", "image", "inspect", "--format", "{{json .Config.Volumes}}", tag]).stdout)
        if "/data" not in (volumes or {}):
            raise CheckFailed("the image does not declare VOLUME /data")
        port = free_port()
        c = Container(name=f"bench-image-check-{name}-{self.suffix}", url=f"http://127.0.0.1:{port}",
                      log=self.work / f"{name}.log")
        self.containers.append(c)
        c.id = sh(["docker", "run", "--detach", "--name", c.name, "--publish", f"127.0.0.1:{port}:{APP_PORT}",
                   "--volume", f"{self.volume}:/data", tag]).stdout.strip()
        c.started = time.monotonic()
        return c

    def check_store_on_volume(self) -> None:
        pass  # the restart on the same named volume shows it

    def exec(self, c: Container, command: list[str], *, timeout_s: float = 300,
             check: bool = True) -> subprocess.CompletedProcess[str]:
        return sh(["docker", "exec", c.name, *command], timeout_s=timeout_s, check=check,
                  what=" ".join(command[:4]))

    def wait_healthy(self, c: Container, tag: str) -> float:
        """Poll the health status that the daemon's own HEALTHCHECK runs keep."""
        while True:
            state = json.loads(sh(["docker", "inspect", "--format", "{{json .State}}", c.name]).stdout)
            health = (state.get("Health") or {}).get("Status")
            if health is None:
                raise CheckFailed("the container has no health status: the image has no HEALTHCHECK")
            if health == "healthy":
                return time.monotonic() - c.started
            if not state.get("Running"):
                raise CheckFailed(f"the container stopped (exit {state.get('ExitCode')}):\n{self._logs(c)}")
            if health == "unhealthy" or time.monotonic() - c.started > HEALTH_DEADLINE_S:
                raise CheckFailed(f"the container is not healthy {HEALTH_DEADLINE_S:.0f} s after the start "
                                  f"({health}):\n{self._logs(c)}")
            time.sleep(1)

    @staticmethod
    def _logs(c: Container) -> str:
        proc = subprocess.run(["docker", "logs", "--tail", "25", c.name], capture_output=True, text=True)
        return (proc.stdout + proc.stderr).strip()

    def server_processes(self, c: Container) -> list[tuple[int, int, str]]:
        out = sh(["docker", "top", c.name, "-o", "pid,uid,args"]).stdout.splitlines()[1:]
        procs = []
        for line in out:
            pid, uid, args = line.split(None, 2)
            procs.append((int(pid), int(uid), args))
        return procs

    def stop(self, c: Container) -> None:
        sh(["docker", "stop", "--time", "20", c.name], check=False, timeout_s=60)
        sh(["docker", "rm", "--force", c.name], check=False)
        if c in self.containers:
            self.containers.remove(c)

    def cleanup(self) -> list[str]:
        for c in list(self.containers):
            self.stop(c)
        for tag in list(self.images):
            subprocess.run(["docker", "image", "rm", "--force", tag], capture_output=True, timeout=120)
        if self.volume_made:
            subprocess.run(["docker", "volume", "rm", "--force", self.volume], capture_output=True, timeout=60)
        shutil.rmtree(self.work, ignore_errors=True)
        left = sh(["docker", "ps", "--all", "--quiet", "--filter", f"name=bench-image-check-.*-{self.suffix}"],
                  check=False).stdout.split()
        return [f"container {cid}" for cid in left]


# ---------------------------------------------------------------- the checks


def check_non_root(engine: Buildah | Docker, c: Container) -> None:
    procs = [p for p in engine.server_processes(c) if "streamlit" in p[2]]
    if not procs:
        raise CheckFailed("no streamlit process found in the container")
    root_owned = [p for p in procs if p[1] == 0]
    if root_owned:
        raise CheckFailed(f"the server runs as root: {root_owned}")
    uid = engine.exec(c, ["id", "-u"]).stdout.strip()
    if uid != str(APP_UID) or any(p[1] != APP_UID for p in procs):
        raise CheckFailed(f"expected uid {APP_UID}; `id -u` says {uid}, the server processes {procs}")
    say(f"the server (pid {procs[0][0]}) and `id -u` in the container run as uid {APP_UID}, not root")


def check_in_browser(url: str) -> float:
    """In headless Chromium: open the Train page, start a short CPU run, wait until it finishes with its charts."""
    from playwright.sync_api import sync_playwright

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # the project's Chromium settings and polling helper, shared with its tests
    from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS
    from tests.polling import wait_for

    if not Path(CHROMIUM).exists():
        raise CheckFailed(f"Chromium not found at {CHROMIUM} (apt-get install chromium; bash .ci/run does)")
    t0 = time.monotonic()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1300})
        page.set_default_timeout(30_000)

        def bars() -> int:
            return page.locator(".js-plotly-plot").first.locator(".barlayer .point").count()

        def set_number(label: str, value: int) -> None:
            box = page.get_by_label(label, exact=True)
            box.fill(str(value))
            box.press("Enter")
            page.wait_for_timeout(400)

        try:
            page.goto(url)
            page.get_by_role("heading", name="Train").wait_for(timeout=60_000)
            set_number("Epochs", BROWSER_EPOCHS)
            set_number("Training samples (0 = all)", 4000)
            set_number("Batch size", 32)
            page.get_by_role("button", name="Start").click()
            page.get_by_text("Run #").first.wait_for(timeout=60_000)
            wait_for(lambda: page.get_by_text("Finished: steady epoch").count() > 0, 180, "the run to finish")
            wait_for(lambda: page.locator(".js-plotly-plot").count() >= 2, 30, "the epoch and utilization charts")
            wait_for(lambda: bars() == BROWSER_EPOCHS, 30, f"the epoch chart to show {BROWSER_EPOCHS} epochs")
            wait_for(lambda: page.locator(".js-plotly-plot").nth(1).locator(".scatterlayer .trace").count() >= 1,
                     30, "a CPU utilization line")
            if page.get_by_text("trained on").count() == 0:
                raise AssertionError("the page does not say where the run trained")
        except Exception as exc:
            ARTIFACTS.mkdir(exist_ok=True)
            shot = ARTIFACTS / "image-check-failure.png"
            page.screenshot(path=str(shot), full_page=True)
            raise CheckFailed(f"in the browser: {exc} (screenshot: {shot})") from exc
        finally:
            browser.close()
    return time.monotonic() - t0


def listed_runs(engine: Buildah | Docker, c: Container) -> dict[int, str]:
    rows = json.loads(engine.exec(c, LIST_RUNS, timeout_s=120).stdout)
    return {int(r["id"]): r["status"] for r in rows}


def run_checks(engine: Buildah | Docker, tag: str) -> None:
    engine.new_volume()
    first = engine.start("first", tag)
    health_s = engine.wait_healthy(first, tag)
    say(f"health check passed {health_s:.1f} s after the start (limit {HEALTH_DEADLINE_S:.0f} s)")
    check_non_root(engine, first)

    browser_s = check_in_browser(first.url)
    say(f"Chromium: the Train page loaded from the container and a {BROWSER_EPOCHS}-epoch run finished "
        f"with its charts ({duration(browser_s)})")

    t0 = time.monotonic()
    out = engine.exec(first, TINY_RUN, timeout_s=300).stdout
    if "status     finished" not in out:
        raise CheckFailed(f"`python -m bench run` in the container did not finish a run:\n{out[-2000:]}")
    say(f"`python -m bench run` in the container finished a tiny run ({duration(time.monotonic() - t0)})")

    before = listed_runs(engine, first)
    engine.check_store_on_volume()
    finished = sorted(i for i, status in before.items() if status == "finished")
    if len(finished) < 2:
        raise CheckFailed(f"expected the browser's and the CLI's runs in the store, found {before}")

    engine.stop(first)
    second = engine.start("second", tag)
    health_s = engine.wait_healthy(second, tag)
    after = listed_runs(engine, second)
    lost = [i for i in finished if after.get(i) != "finished"]
    if lost:
        raise CheckFailed(f"after the restart on the same volume runs {lost} are gone: before {before}, after {after}")
    say(f"restarted on the same volume (healthy after {health_s:.1f} s): runs {finished} still listed")
    engine.stop(second)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", choices=("cpu", "gpu"), default="cpu", help="which image to build (default cpu)")
    parser.add_argument("--build-only", action="store_true", help="build, report size and time, remove; no checks")
    parser.add_argument("--engine", choices=("auto", "docker", "buildah"), default="auto",
                        help="auto: docker when a daemon answers, else buildah")
    args = parser.parse_args(argv)

    def interrupted(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)

    t_start = time.monotonic()
    cache = Path(os.environ.get("BENCH_IMAGE_CACHE")
                 or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bench-image")
    tag = f"localhost/cpu-gpu-bench:check-{args.variant}"
    failure: str | None = None
    summary = ""
    engine: Buildah | Docker | None = None
    try:
        use_docker = args.engine == "docker" or (args.engine == "auto" and Docker.available())
        engine = Docker() if use_docker else Buildah(cache)
        say(f"engine: {engine.describe()}")
        base = engine.prepare_base()
        t0 = time.monotonic()
        say(f"building the {args.variant} image {tag} ...")
        engine.build(tag, args.variant, base)
        build_s = time.monotonic() - t0
        size = engine.size_bytes(tag)
        say(f"built the {args.variant} image in {duration(build_s)}; image size {gigabytes(size)} ({size} bytes)")
        summary = f"{args.variant} image {gigabytes(size)}, built in {duration(build_s)}"
        if not args.build_only:
            run_checks(engine, tag)
    except CheckFailed as exc:
        failure = str(exc)
    except KeyboardInterrupt as exc:
        failure = f"interrupted ({exc or 'Ctrl-C'})"
    except Exception as exc:  # noqa: BLE001 - report any error as a failed check, after cleaning up
        failure = f"{type(exc).__name__}: {exc}"
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # let the cleanup finish
        if engine is not None:
            left = engine.cleanup()
            if left and failure is None:
                failure = "left behind after cleanup: " + ", ".join(left)
            elif left:
                say("left behind after cleanup: " + ", ".join(left))
    total = duration(time.monotonic() - t_start)
    if failure is not None:
        say(f"FAILED after {total}: {failure}")
        return 1
    checks = "built only" if args.build_only else "health, non-root, browser run, CLI run, store kept on restart"
    say(f"ok ({summary}; {checks}; {total} in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
