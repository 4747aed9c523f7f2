"""The RefreshManager: when each table refreshes (``refresh_manager``: API and thread; ``loop``: one scheduling
pass and the worker pool; ``state``: transitions, no I/O; ``tracked``: one table's runs and failures;
``schedule``: cron, interval, backoff; ``backend``: what it needs from the engine; ``lease_keeper``: who refreshes
which table — the plan, decided without I/O, and its compare-and-set write; ``lease_pass``: the manager's turn at
the catalog's lease map in each scheduling pass)."""
