"""The CI gate family: what a run or a lint found, checked against what a project accepted.

`baseline` (the accepted sync sites, on disk), `gate` (fail on sites the baseline does not
have), `combine` (one report from several processes or ranks), `confirm` (static findings
matched with the syncs a run saw). They read reports and lint output; they run nothing.
"""
