"""Scale-out of a sweep on a Dask distributed cluster (pip install privrl[dask]): each run is one task,
results come back to the client, which files them exactly as a local sweep does."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from privrl.experiment.config import ConfigError, RunSpec, check_address

__all__ = ["dask_results", "connect", "check_address"]

_HINT = "the Dask scheduler needs dask.distributed: pip install 'privrl[dask]'"


def connect(scheduler: Any) -> tuple[Any, bool]:
    """(Client, owned): a Client for an address like tcp://host:8786, a cluster object or a Client."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise ImportError(_HINT) from exc
    if isinstance(scheduler, Client):
        return scheduler, False
    if isinstance(scheduler, str):
        check_address(scheduler)
        try:
            return Client(scheduler, timeout="20s"), True
        except OSError as exc:
            raise ConfigError("scheduler", f"cannot reach the Dask scheduler at {scheduler}: {exc}") from exc
    if hasattr(scheduler, "scheduler_address"):
        return Client(scheduler), True
    raise ConfigError(
        "scheduler", f"expected an address, a Dask cluster or a Client, got {type(scheduler).__name__}"
    )


def dask_results(
    specs: Sequence[RunSpec], envs: Mapping[str, Any], bar: Any, scheduler: Any, task: Callable[..., dict]
) -> Iterator[dict]:
    """Submit one task per run, ``task(spec, env)`` (a module-level function the workers import),
    and yield the results as they finish (the caller writes them)."""
    if not specs:
        return
    from distributed import as_completed

    client, owned = connect(scheduler)
    try:
        # Environments given as objects go to every worker once, not once per task.
        scattered = {name: client.scatter(env, broadcast=True) for name, env in envs.items()}
        futures = [
            client.submit(
                task, s, scattered.get(s.study), key=f"privrl-run-{s.run_id}", pure=False, retries=1
            )
            for s in specs
        ]
        try:
            for fut in as_completed(futures):
                payload = fut.result()
                bar.episodes(
                    int(payload["spec"].episodes if "error" in payload else payload["meta"]["episodes"])
                )
                yield payload
        finally:
            for fut in futures:
                fut.cancel()
    finally:
        if owned:
            client.close()
