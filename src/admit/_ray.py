"""The one start of Ray (extra ``admit[ray]``) for the two places that run on it: ``admit eval --engine ray``
(:class:`admit.eval.engine.RayEngine`) and ``admit ingest --engine ray`` (:class:`admit.kb.ray_ingest.RayWriter`).

Example:
    >>> ray = import_ray()  # doctest: +SKIP
    >>> start_ray(ray, address=None, num_cpus=2)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from admit.errors import MissingExtraError

__all__ = ["import_ray", "start_ray"]


def import_ray() -> Any:
    """The ``ray`` module with ``ray.data`` loaded.

    Raises:
        MissingExtraError: If ``ray[data]`` is not installed (the message names ``pip install "admit[ray]"``).
    """
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise MissingExtraError("ray[data]", "ray") from exc
    return ray


def start_ray(ray: Any, *, address: str | None, num_cpus: int | None) -> None:
    """Start Ray unless it is running: the cluster at ``address``, else a local instance of ``num_cpus`` (no
    dashboard, no driver logs); Ray Data's progress bars off either way."""
    if not ray.is_initialized():
        if address:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
