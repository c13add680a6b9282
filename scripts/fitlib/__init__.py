"""The fit scripts' library: what ``scripts/fit_*.py`` share, each script being a thin command line over it.

It lives beside the scripts, not in the product: it needs the ``fit`` extra (torch, sentence-transformers,
scikit-learn) and the project's data folder (``../shared``), which ``admit`` itself never reads. A script run as
``python scripts/fit_x.py`` finds it because Python puts the script's folder first on ``sys.path``; tests put
``scripts/`` there themselves. ``admit`` is whichever is importable (installed, or ``PYTHONPATH=src``).

Modules:

* :mod:`fitlib.args`: ``FitArgs``, a typed dataclass per model that is also its command line;
* :mod:`fitlib.data`: the one reader of the labelled list files (``read_file``, ``read_folder``, ``family``,
  ``labels``) and the default data folders;
* :mod:`fitlib.vectors`: the one vector cache (``VectorCache``, MiniLM vectors by text hash);
* :mod:`fitlib.curves`: retained recall / compression of keep masks and top-N cuts, R@68 through the
  evaluation's ``recall_at``;
* the models: :mod:`fitlib.setwise` (with ``setwise_data``, ``setwise_fit``, ``setwise_report``),
  :mod:`fitlib.answerability`, :mod:`fitlib.cross_train` (with ``cross_data``, ``cross_cache``, ``cross_torch``),
  :mod:`fitlib.cross_answerability`, :mod:`fitlib.fusion`, :mod:`fitlib.injection`.
"""
