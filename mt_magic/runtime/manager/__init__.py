"""The RefreshManager: when each table refreshes (``refresh_manager``: API and thread; ``loop``: one scheduling
pass and the worker pool; ``state``: transitions, no I/O; ``tracked``: one table's runs and failures;
``schedule``: cron, interval, backoff; ``backend``: what it needs from the engine; ``lease``: the plan of who
refreshes which table, no I/O; ``leasing``: its turn at the catalog's lease map)."""
