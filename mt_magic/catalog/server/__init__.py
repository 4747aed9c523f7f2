"""The embedded Iceberg REST catalog server: a FastAPI app (:mod:`.app`) over pyiceberg's ``SqlCatalog``.

Routes (``routes_*``) parse and validate requests at the edge (:mod:`.wire`), the stores
(``*_store``, :mod:`.namespaces`) own the catalog database rows, :mod:`.commits` and :mod:`.views` hold the
pure commit rules, and :mod:`.errors_http` turns every failure into the spec's ``IcebergErrorResponse``.
Nothing here is imported by the client side of :mod:`mt_magic.catalog`.
"""
