"""The teacher pass on Ray: one teacher per worker, one shard per task, the cache owned by the driver.

Ray Core actors, not Ray Data: the unit of work is a whole cache shard with a side effect (its
files, written by the worker into the output folder, which every worker must see), the teacher
loads once per worker and serves shard after shard, and the driver commits shards in index
order. An actor per worker does that as it stands; Ray Data would cut the corpus into its own
row blocks, which would then have to be mapped back to shards, and adds a streaming executor
between the corpus and the writer for nothing. Faults are Ray's: a worker process that dies is
restarted (``max_restarts``) and its queued shards rerun on it (``max_task_retries``); a shard
rewritten by a rerun has the same bytes. A killed driver is resumed by running the same command.

The driver streams the corpus: at most ``DEPTH`` shards per worker are out at once, counted from
the oldest one not yet recorded, so its memory does not grow with the corpus (the per-word sums
of finished shards wait in Ray's object store until their turn).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

import numpy as np

from ctx2static.errors import OptionError, UserError, spell
from ctx2static.pipeline.config import EngineConfig, ExtractConfig, TeacherConfig
from ctx2static.pipeline.models import resolve
from ctx2static.pipeline.shard import Progress, ShardDone, ShardMaker
from ctx2static.text.vocab import Vocab

log = logging.getLogger(__name__)

RETRIES = 3  # restarts of a worker process that dies, and reruns of each of its shards
DEPTH = 2  # shards queued per worker: the next one is waiting when the current one ends


def _ray() -> ModuleType:
    """Ray, imported only when the Ray engine is asked for."""
    try:
        import ray
    except ImportError:
        raise OptionError(
            f"{spell('engine', 'ray')}: Ray is not installed; pip install 'ctx2static[scale]'", "engine"
        ) from None
    return ray


class ShardWorker:
    """One Ray worker: the teacher (from its resolved source) loaded by the first call, then shard by shard.

    Set up by its first call, not by its constructor: a restarted worker sets itself up again from
    the call it reruns, and a teacher that fails to load is that call's error (a plain one-line
    :class:`UserError`). Every call carries ``vocab``, ``[ref]`` of the :class:`Vocab` in Ray's
    object store, nested so that Ray does not deserialise it for calls that do not need it.
    """

    def __init__(
        self, name: str, source: str, config: TeacherConfig, cfg: ExtractConfig, lowercase: bool
    ) -> None:
        self.args = (name, source, config, cfg, lowercase)
        self.maker: ShardMaker | None = None

    def _setup(self, vocab: list[Any]) -> ShardMaker:
        if self.maker is None:
            import ray
            import torch

            from ctx2static.pipeline.teacher import Teacher

            name, source, config, cfg, lowercase = self.args
            torch.set_num_threads(max(config.threads, 1))
            teacher = Teacher.load(source, config)
            teacher.name = name  # the name the user gave, as the local engine records it
            self.maker = ShardMaker(teacher, ray.get(vocab[0]), cfg, lowercase)
        return self.maker

    def pid(self) -> int:
        """The process id of this worker."""
        return os.getpid()

    def identity(self, vocab: list[Any]) -> dict:
        """The teacher's part of the cache identity, as this worker computes it."""
        return self._setup(vocab).identity()

    def resolve(self, vocab: list[Any], cfg: ExtractConfig) -> ExtractConfig:
        """``cfg`` as this worker's teacher runs it (:meth:`ShardMaker.resolve`)."""
        return self._setup(vocab).resolve(cfg)

    def make(
        self,
        vocab: list[Any],
        folder: str,
        index: int,
        sents: list[tuple[int, list[str]]],
        pca: dict[str, np.ndarray] | None,
    ) -> ShardDone:
        """Compute and write one shard (:meth:`ShardMaker.make`)."""
        return self._setup(vocab).make(Path(folder), index, sents, pca)

    def tables(self, vocab: list[Any]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], str]:
        """The per-vocabulary tables (:meth:`ShardMaker.tables`)."""
        return self._setup(vocab).tables()

    def width(self, vocab: list[Any]) -> int:
        """The width of the teacher's hidden states (:meth:`ShardMaker.width`)."""
        return self._setup(vocab).width()


_NO_CLUSTER = "start one with 'ray start --head' or leave --address empty for a local one"


def _init(ray: ModuleType, engine: EngineConfig) -> None:
    """Start a local Ray, or join the cluster at ``--address`` within ``--connect-timeout`` seconds.

    ``ray.init`` has no timeout: where no cluster answers it retries for about 13 minutes (20 tries
    of ~40 s) without a line. So the address is probed first (a refused or silent port is one line
    at once), and the join runs in a daemon thread that the driver stops waiting for at the timeout.
    """
    address, timeout = engine.address, engine.connect_timeout
    if address:
        _probe(address, timeout)
    failed: list[BaseException | None] = []

    def join() -> None:
        try:
            with _off_main_thread_quiet(), _isolated(local=not address) as runtime_env:
                ray.init(
                    address=address or None,
                    include_dashboard=False,
                    logging_level=logging.WARNING,
                    runtime_env=runtime_env,
                )
            failed.append(None)
        except Exception as exc:  # any failure of the join is reported by the driver, in one line
            failed.append(exc)

    if not address:  # a local Ray: nothing to wait for, and it keeps Ray's handlers of the main thread
        join()
    else:
        thread = threading.Thread(target=join, name="ray-join", daemon=True)
        thread.start()
        thread.join(timeout)
    if not failed:
        raise OptionError(
            f"{spell('address', address)}: no Ray cluster answered within {timeout:g} s; check the address, "
            f"{_NO_CLUSTER}, or raise {spell('connect_timeout')}",
            "address",
            "connect_timeout",
        )
    if failed[0] is not None:
        first = (str(failed[0]).strip() or type(failed[0]).__name__).splitlines()[0]
        raise OptionError(f"{spell('address', address or '(local)')}: Ray did not start ({first})", "address")


@contextlib.contextmanager
def _isolated(local: bool) -> Iterator[dict[str, Any]]:
    """The runtime environment that keeps Ray's workers to the code this process runs, while Ray starts.

    Ray puts the driver's working folder first on every worker's path (a ``tokenizers.py`` where
    the user runs extract would run in each worker) unless the job has a ``working_dir``: an empty
    folder of our own is that. A local Ray's processes, and so its workers, are started with this
    process's environment but none of its interpreter options: where it was started with ``-E``
    (or ``-I``) the ``PYTHON*`` variables it ignores are left out of theirs, and with ``-s`` they are
    told ``PYTHONNOUSERSITE``. A cluster joined at ``--address`` keeps its own environment.
    """
    ignored = local and sys.flags.ignore_environment
    hidden = [k for k in os.environ if k.startswith("PYTHON")] if ignored else []
    told = {"PYTHONNOUSERSITE": "1"} if local and sys.flags.no_user_site else {}
    before = {k: os.environ.get(k) for k in [*hidden, *told]}
    with tempfile.TemporaryDirectory(prefix="ctx2static-ray-") as empty:
        try:
            for k in hidden:
                del os.environ[k]
            os.environ.update(told)
            yield {"working_dir": empty}
        finally:
            for k, v in before.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _probe(address: str, timeout: float) -> None:
    """One TCP connection to ``[ray://]HOST:PORT`` (not ``auto``): a refused or silent port fails now."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return  # ``auto`` or a form Ray reads itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else exc.strerror or type(exc).__name__
        raise OptionError(
            f"{spell('address', address)}: nothing answers at {host}:{port} ({reason}); {_NO_CLUSTER}",
            "address",
        ) from None


@contextlib.contextmanager
def _off_main_thread_quiet() -> Iterator[None]:
    """Silence Ray's warning that a join off the main thread sets no SIGTERM handler (ours stays)."""

    def keep(record: logging.LogRecord) -> bool:
        return "not the main thread" not in record.getMessage()

    logger = logging.getLogger("ray._private.worker")
    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)


def _n_workers(resources: dict[str, float], cpus: int, gpus: float) -> int:
    """As many workers as the cluster's GPUs (GPU workers) or CPUs hold."""
    if gpus:
        if not resources.get("GPU"):
            raise OptionError(
                f"{spell('gpus_per_worker')}: the Ray cluster has no GPUs; use 0 for CPU workers",
                "gpus_per_worker",
            )
        return max(int(resources["GPU"] / gpus), 1)
    return max(int(resources.get("CPU", 1) / cpus), 1)


class RayEngine:
    """Shards spread over Ray workers, yielded in index order (see the module docstring)."""

    def __init__(self, ray: ModuleType, actors: list[Any], vocab: Vocab, started: bool) -> None:
        self.ray, self.actors, self.started = ray, actors, started
        self.vocab = [ray.put(vocab)]  # held for the whole run: workers fetch it, restarted ones again
        idents = self._get([a.identity.remote(self.vocab) for a in actors])
        if any(i != idents[0] for i in idents):
            diff = sorted(k for k in idents[0] if any(i.get(k) != idents[0][k] for i in idents))
            raise UserError(
                f"the Ray workers load different teachers (differ in {', '.join(diff)}); "
                "give every node the same model files and software"
            )
        self._identity = idents[0]
        self._width: int = self._get(actors[0].width.remote(self.vocab))

    @classmethod
    def start(
        cls,
        teacher: str,
        config: TeacherConfig,
        vocab: Vocab,
        cfg: ExtractConfig,
        lowercase: bool,
        engine: EngineConfig,
    ) -> RayEngine:
        """Join or start a Ray cluster and load the teacher on each worker (``--workers``, 0: fill it)."""
        gpu = config.device.startswith("cuda")
        if gpu != bool(engine.gpus_per_worker):
            raise OptionError(
                f"{spell('device', config.device)} with {spell('gpus_per_worker', engine.gpus_per_worker)}: "
                f"Ray workers on GPUs need both {spell('device', 'cuda')} and "
                f"{spell('gpus_per_worker')} > 0, on CPUs neither",
                "device",
                "gpus_per_worker",
            )
        source = resolve(teacher)  # every worker loads the same files (a path all nodes see, or a hub id)
        ray = _ray()
        started = not ray.is_initialized()
        if started:
            _init(ray, engine)
        cpus = max(config.threads, 1)
        n = engine.workers or _n_workers(ray.cluster_resources(), cpus, engine.gpus_per_worker)
        worker = ray.remote(ShardWorker).options(
            num_cpus=cpus,
            num_gpus=engine.gpus_per_worker,
            max_restarts=RETRIES,
            max_task_retries=RETRIES,
        )
        actors = [worker.remote(teacher, source, config, cfg, lowercase) for _ in range(n)]
        log.info(
            "ray: %d workers x %d CPU%s, teacher %s",
            n,
            cpus,
            f" + {engine.gpus_per_worker:g} GPU" if engine.gpus_per_worker else "",
            source,
        )
        return cls(ray, actors, vocab, started)

    def __enter__(self) -> RayEngine:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Stop the workers (and the Ray instance this engine started)."""
        for actor in self.actors:
            self.ray.kill(actor)
        if self.started:
            self.ray.shutdown()

    def _get(self, refs: Any) -> Any:
        """``ray.get``, a worker's user error raised as itself (one line, not Ray's traceback)."""
        try:
            return self.ray.get(refs)
        except self.ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, UserError):
                raise exc.cause from None
            raise

    def identity(self) -> dict:
        """The teacher's part of the cache identity (every worker's alike)."""
        return self._identity

    def resolve(self, cfg: ExtractConfig) -> ExtractConfig:
        """``cfg`` as the workers' teacher runs it (every worker's alike: their identities agree)."""
        return self._get(self.actors[0].resolve.remote(self.vocab, cfg))

    def watch(self, progress: Progress) -> bool:
        """Workers run elsewhere: False, the driver reports whole shards."""
        return False

    def width(self) -> int:
        """The width of the teacher's hidden states (every worker's alike: their identities agree)."""
        return self._width

    def pids(self) -> list[int]:
        """The workers' process ids (ask before :meth:`map`: calls to a worker run one at a time)."""
        return self._get([a.pid.remote() for a in self.actors])

    def map(
        self, folder: Path, jobs: Iterable[tuple[int, list]], pca: dict[str, np.ndarray] | None
    ) -> Iterator[ShardDone]:
        """Write each job's shard on the least busy worker; yield them in job order."""
        ray = self.ray
        pca_ref = ray.put(pca)
        load = [0] * len(self.actors)
        order: deque[Any] = deque()  # calls in job order, not yet yielded
        running: dict[Any, int] = {}  # calls not yet seen finished -> their worker
        jobs = iter(jobs)
        while True:
            while len(order) < DEPTH * len(self.actors) and (job := next(jobs, None)) is not None:
                w = load.index(min(load))
                ref = self.actors[w].make.remote(self.vocab, str(folder), job[0], job[1], pca_ref)
                order.append(ref)
                running[ref] = w
                load[w] += 1
            if not order:
                break
            ready, _ = ray.wait(list(running), num_returns=1, fetch_local=False)
            for ref in ready:
                load[running.pop(ref)] -= 1
            while order and order[0] not in running:
                yield self._get(order.popleft())
        for tmp in folder.glob(".shard_*.tmp"):  # left by a worker killed while writing
            tmp.unlink(missing_ok=True)

    def tables(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], str]:
        """The per-vocabulary tables, computed by one worker."""
        return self._get(self.actors[0].tables.remote(self.vocab))
