"""The kernel's mt_magic state is reached one way (mt_magic.kernel): attached by %load_ext, found by the Python
API, read() and query()/live(), detached by %unload_ext; outside a kernel each says how to fix it."""

from __future__ import annotations

import pytest

from mt_magic import kernel
from mt_magic.errors import MtMagicError


class _Session:
    connection = "the kernel's connection"

    def live_views(self) -> None:
        return None

    def close(self) -> None:
        pass


def test_outside_a_kernel_every_entry_point_says_how_to_load_the_extension(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from mt_magic.queries import query
    from mt_magic.reader import read

    monkeypatch.setattr("IPython.get_ipython", lambda: None)  # a script: no shell

    assert kernel.kernel_session() is None
    with pytest.raises(MtMagicError, match=r"Fix: run `%load_ext mt_magic` first, or pass connection="):
        query("SELECT 1")
    with pytest.raises(MtMagicError, match=r"Fix: run `%load_ext mt_magic` first, or pass connection="):
        read("t")


def test_a_shells_session_is_found_until_it_is_detached() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    from mt_magic.api.session import service

    shell = InteractiveShell.instance()
    session = _Session()
    kernel.attach(shell, session)
    try:
        assert kernel.kernel_session() is session
        assert kernel.require_kernel_session() is session
        with pytest.raises(AttributeError, match="service"):  # the API asked the kernel's connection, not a new one
            service()
    finally:
        assert kernel.detach(shell) is session
    assert kernel.kernel_session() is None and kernel.detach(shell) is None
