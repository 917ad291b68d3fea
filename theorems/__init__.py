"""The catalog: one folder per paper, listed here (the index).

Each folder ``theorems/<key>/`` holds the paper's claims (``claims.py``, ending with ``CLAIMS``, the tuple of its
:class:`fedcheck.core.claim.Claim` declarations, re-exported by the folder's ``__init__``) and whatever only that
paper uses (measurements, instance builders, proof-step data, PEP models).  The registry
(``fedcheck.catalog.registry``) reads the ``CLAIMS`` of the folders named here.  Adding a paper is a new folder
and one line below."""

PAPERS = (
    "fedfw",
    "fedsgm",
    "fedmls",
    "feddualavg",
)
