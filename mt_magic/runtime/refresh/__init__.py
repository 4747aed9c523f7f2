"""One refresh: ``engine`` (the manager's backend), ``run`` (dispatch and the full recompute), ``incremental/``
(plan, deltas, strategies, the in-process path), ``start`` (START_MODE), ``context`` (pinned sources, results
conformed to the table, options), ``commit`` (THE commit), ``retention`` (snapshot expiry), ``phases`` (timing);
what a refresh decided and cost: ``deciding`` and ``decision`` (its record), ``recorded`` (the table's refreshes as
its snapshots record them), ``cost`` (ADAPTIVE's cost model)."""
