"""Reading data: one package for files and row sources.

=================  ==========================================================================
``files``          ``load_data`` / ``load_train_test`` (svmlight, CSV, npz; gzip), fold-id
                   files, the formats (``kernelcv.reading.files`` before 0.2)
``svmlight``       the svmlight/LIBSVM text parser (whole files)
``csvdata``        the CSV parser: header detection, the target column, text labels
``textchunks``     svmlight and CSV files read a block of lines at a time
``rowchunks``      row sources: arrays, memory maps, files and Dask arrays a chunk of
                   rows at a time
=================  ==========================================================================

Checking X, y and folds stays in :mod:`kernelcv.validation`. The package imports
nothing at load time: import its modules.
"""
