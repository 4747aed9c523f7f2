"""The embedded Iceberg REST catalog server: a FastAPI app (:mod:`.app`) over pyiceberg's ``SqlCatalog``.

Requests pass the edge first (:mod:`.edge`: path decoding, bounded and parsed bodies; :mod:`.wire`: the
spec's request models and name checks), then the routes (``routes_*``) call the stores (``*_store``,
:mod:`.namespaces`), which own the catalog database rows and keep every location inside the storage roots
(:mod:`.locations`, :mod:`.purge`; names become safe directories in :mod:`.names`). :mod:`.commits` and
:mod:`.views` hold the pure commit rules, and :mod:`.errors_http` turns every failure into the spec's
``IcebergErrorResponse``. :mod:`.storage_credentials` hands clients that ask (``X-Iceberg-Access-Delegation``)
temporary S3 credentials scoped to one table. Nothing here is imported by the client side of :mod:`mt_magic.catalog`
(``serve``'s command line reads only :mod:`.storage_credentials`' settings).
"""
