"""The kernel's mt_magic state, reached one way.

``%load_ext mt_magic`` attaches the magics to the IPython shell (:func:`attach`); the Python API, ``read`` and
``query``/``live`` find the kernel's connection and live views here (:func:`kernel_session`), and ``%unload_ext``
detaches them. A process without a kernel (a script, an Airflow task) gets ``None`` and connects on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from mt_magic.errors import MtMagicError

if TYPE_CHECKING:
    from mt_magic.runtime.connection import Connection
    from mt_magic.widgets.live import LiveViews

SHELL_ATTR = "_mt_magic_magics"
"""Where the magics live on the shell between ``%load_ext`` and ``%unload_ext``."""


class KernelSession(Protocol):
    """What the kernel's magics offer the rest of mt_magic."""

    @property
    def connection(self) -> Connection: ...

    def live_views(self) -> LiveViews | None: ...

    def close(self) -> None: ...


def attach(shell: Any, session: KernelSession) -> None:
    """Make ``session`` the kernel's (``%load_ext``)."""
    setattr(shell, SHELL_ATTR, session)


def detach(shell: Any) -> KernelSession | None:
    """Forget the kernel's session (``%unload_ext``) and return it, ``None`` when none was attached."""
    session: KernelSession | None = getattr(shell, SHELL_ATTR, None)
    if session is not None:
        delattr(shell, SHELL_ATTR)
    return session


def kernel_session() -> KernelSession | None:
    """The session of the IPython shell this runs in, ``None`` outside a shell or before ``%load_ext mt_magic``."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency; a trimmed install still works
        return None
    shell = get_ipython()
    return getattr(shell, SHELL_ATTR, None) if shell is not None else None


def require_kernel_session(alternative: str = "") -> KernelSession:
    """:func:`kernel_session`, or an error whose Fix says how to load the extension (``alternative``: another way
    the caller accepts, e.g. passing a connection).

    Raises:
        MtMagicError: no shell, or the extension is not loaded in it.
    """
    session = kernel_session()
    if session is None:
        also = f", or {alternative}" if alternative else ""
        raise MtMagicError("No mt_magic connection in this kernel", fix=f"run `%load_ext mt_magic` first{also}")
    return session
