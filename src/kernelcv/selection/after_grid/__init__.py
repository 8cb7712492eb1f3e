"""What follows the grid of a search: the exact checks of an approximate method
(``safeguards``), a resumed search's recomputed choice (``resume_check``), the notes on
grid edges and on the constant prediction (``edges``, ``baseline``) and the
probabilities of the choice (``calibration``). The CV methods' after-grid hooks
(:meth:`kernelcv.selection.methods.CVMethod.check_grid` and the others) call them.

The package imports nothing at load time: import its modules.
"""
