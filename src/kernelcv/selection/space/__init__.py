"""The search space's defaults: the papers' grids and lam grids (``grids``) and the
gamma grid derived from the data's distances, with the degenerate settings a walk does
not start from (``gamma_range``). :class:`kernelcv.selection.options.SearchSpace` uses
them.

The package imports nothing at load time: import its modules.
"""
