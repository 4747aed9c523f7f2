"""The engine: every Spark call, the RefreshManager thread, and what statements change.

Wiring at the top: ``connection`` (catalog → Spark → engine → manager → service), ``cell`` (a cell all or nothing),
``service`` (THE way in), the records every layer shares (``workspace``, ``status``, ``results``, ``graph``). Below
them, one package per concern: ``statements/`` (each statement's one home: its check, apply and undo, found by
``statements/registry.py``), ``inspect/`` (what the service answers
without changing anything), ``manager/`` (when to refresh), ``refresh/`` (how one refresh runs and commits),
``spark/`` (the session, jobs, quoting).
"""
