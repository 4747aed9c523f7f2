"""The catalog name the integration and incremental tests share (served by tests/conftest.py's server).

Imported by name: pytest puts ``tests/`` on sys.path for its conftest.py.
"""

CATALOG = "mtit"
