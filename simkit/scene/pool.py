"""Running many independent jobs as Ray tasks (or one after another in this process), each
failed job retried once, every outcome handed to a callback as it arrives.

Ray is imported only here and only when a :class:`RayRunner` is made: simkit works without
it. A runner uses the Ray already initialized in this process when there is one (then
``address`` and ``num_cpus`` are not used), else joins the cluster at ``address``, else
starts a local Ray (``num_cpus``: its CPUs, default all) that :meth:`RayRunner.close` shuts
down again.

Example::

    with RayRunner(num_cpus=2) as runner:
        runner.run(run_point, [(k, {"scene_path": path, "overrides": o}) for k, o in enumerate(points)],
                   on_outcome=lambda outcome: print(outcome.key, outcome.ok))
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterable

RAY_MISSING = ("sweeps and multi-start optimization run on Ray, which is not installed: pip install 'simkit[ray]' "
               "(or pip install 'ray>=2.9'); from Python, use_ray=False runs them one after another without it")


@dataclass
class Outcome:
    """How one job ended: ``ok`` with its ``value``, or not with ``error`` (one line);
    ``attempts`` is 1, or 2 when the first attempt failed.

    Example::

        if not outcome.ok:
            print(f"job {outcome.key} failed twice: {outcome.error}")
    """

    key: Any
    ok: bool
    value: Any
    error: str | None
    attempts: int


def describe_error(e: BaseException) -> str:
    """An exception as one line: ``"SimulationError: ..."`` (a Ray task's error is the
    exception raised in the task).

    Example::

        describe_error(ValueError("bad"))      # 'ValueError: bad'
    """
    cause = getattr(e, "cause", None)
    if isinstance(cause, BaseException):
        e = cause
    text = " ".join(str(e).split())
    if len(text) > 800:
        text = text[:797] + "..."
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


Job = tuple[Any, dict]


class LocalRunner:
    """Runs the jobs one after another in this process (no Ray), with the same retry rule.

    Example::

        with LocalRunner() as runner:
            runner.run(fn, jobs, on_outcome)
    """

    def __enter__(self) -> "LocalRunner":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to release.

        Example::

            runner.close()
        """

    def run(self, fn: Callable[..., Any], jobs: Iterable[Job], on_outcome: Callable[[Outcome], None],
            retries: int = 1) -> None:
        """Call ``fn(**kwargs)`` for each ``(key, kwargs)`` of ``jobs``; an exception (not an
        interrupt) retries the job up to ``retries`` times, then reports it failed.

        Example::

            runner.run(fn, [(0, {"x": 1})], print)
        """
        for key, kwargs in jobs:
            for attempt in range(1, retries + 2):
                try:
                    value = fn(**kwargs)
                except Exception as e:
                    if attempt > retries:
                        on_outcome(Outcome(key, False, None, describe_error(e), attempt))
                    continue
                on_outcome(Outcome(key, True, value, None, attempt))
                break


class RayRunner:
    """Runs the jobs as Ray tasks of ``cpus_per_job`` CPUs each (see the module docstring for
    which cluster). A RuntimeError saying what to install when Ray is not installed.

    Example::

        with RayRunner(address="auto") as runner:
            runner.run(fn, jobs, on_outcome)
    """

    def __init__(self, address: str | None = None, num_cpus: int | None = None, cpus_per_job: float = 1):
        try:
            import ray
        except ImportError:
            raise RuntimeError(RAY_MISSING) from None
        self.ray = ray
        self.cpus_per_job = cpus_per_job
        self.started = False
        if not ray.is_initialized():
            options: dict = {"include_dashboard": False, "logging_level": logging.ERROR, "log_to_driver": False}
            if address is None:
                options["num_cpus"] = num_cpus
            ray.init(address=address, **options)
            self.started = True

    def __enter__(self) -> "RayRunner":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Shut down the local Ray this runner started (a joined or an existing one stays).

        Example::

            runner.close()
        """
        if self.started:
            self.ray.shutdown()
            self.started = False

    def run(self, fn: Callable[..., Any], jobs: Iterable[Job], on_outcome: Callable[[Outcome], None],
            retries: int = 1) -> None:
        """Submit ``fn(**kwargs)`` for every ``(key, kwargs)`` of ``jobs`` as a task, and call
        ``on_outcome`` as each finishes (in the order they finish); a failed task (an
        exception, or its worker died) is submitted again up to ``retries`` times, then
        reported failed. On an interrupt the tasks still running are cancelled.

        Example::

            runner.run(run_point, jobs, on_outcome=table.record)
        """
        ray = self.ray
        remote = ray.remote(fn).options(num_cpus=self.cpus_per_job, max_retries=0)
        pending: dict = {}
        try:
            for key, kwargs in jobs:
                pending[remote.remote(**kwargs)] = (key, kwargs, 1)
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                ref = done[0]
                key, kwargs, attempt = pending.pop(ref)
                try:
                    value = ray.get(ref)
                except (KeyboardInterrupt, SystemExit):
                    raise
                except Exception as e:
                    if attempt <= retries:
                        pending[remote.remote(**kwargs)] = (key, kwargs, attempt + 1)
                    else:
                        on_outcome(Outcome(key, False, None, describe_error(e), attempt))
                    continue
                on_outcome(Outcome(key, True, value, None, attempt))
        except BaseException:
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # already finished or gone: nothing left to stop
                    pass
            raise


def make_runner(use_ray: bool, address: str | None = None, num_cpus: int | None = None,
                cpus_per_job: float = 1) -> LocalRunner | RayRunner:
    """A :class:`RayRunner` (``use_ray``) or a :class:`LocalRunner`.

    Example::

        with make_runner(True, num_cpus=2) as runner: ...
    """
    if not use_ray:
        if address is not None:
            raise ValueError("address: a Ray cluster address needs use_ray=True")
        return LocalRunner()
    return RayRunner(address=address, num_cpus=num_cpus, cpus_per_job=cpus_per_job)


__all__ = ["Outcome", "LocalRunner", "RayRunner", "make_runner", "describe_error", "RAY_MISSING"]
