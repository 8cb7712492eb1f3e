"""Model selection in random-feature space (Feng & Liao): one package for the concept.

The feature maps themselves (random Fourier features, Nystroem landmarks) stay in
:mod:`kernelcv.features`, two layers down, because the saved models and the machines
use them too. Everything above them lives here:

=================  ==========================================================================
``linear_cv``      exact t-fold CV of a linear machine on D features, every lam from one
                   factorisation (square loss) or by Newton steps (squared hinge)
``newton``         the squared-hinge path from per-fold sums, row chunk by row chunk
``sums``           the per-fold sums of the features (D x D and D numbers per fold)
``multiclass``     every binary machine of a one-vs-one / one-vs-rest scheme on the features
``kernel_refit``   exact refit CV of the final kernel machine (SVC for svm)
``method``         the CV method object ``FeatureSpace`` (a search's ``method="rff"``)
``growth``         the adaptive number of features D
``notes``          what the report says about a feature-space search
``rowmap``         rows mapped to features chunk by chunk (in memory)
``dask_rows``      the same sums on a Dask cluster
``resident``       the squared hinge's Newton passes with their state kept on the workers
``refine``         the exact local refinement of the feature-space choice
``final``          the final model: the kernel machine or the linear model in feature space
=================  ==========================================================================

The package imports nothing at load time: import its modules.
"""
