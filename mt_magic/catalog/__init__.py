"""The Iceberg REST side of mt_magic: the catalog client, the embedded REST catalog server, and the
materialized-table metadata kept in table properties and snapshot summaries.

Import the submodules directly (``mt_magic.catalog.client``, ``mt_magic.catalog.embedded``, …); this package
imports nothing, so loading the client never pulls in the server's dependencies.
"""
