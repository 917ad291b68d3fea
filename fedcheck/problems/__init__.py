"""Paper-specific problem classes (instance families, exact solves, constants, runners), one module per
paper: ``fedcheck.problems.<paper>`` (e.g. ``fedsgm``: federated problems with a functional constraint,
``min (1/n) sum_j f_j(w)  s.t.  (1/n) sum_j g_j(w) <= 0``, and ``fedsgm_measure``, its measurements).
``feddualavg``: federated composite problems ``min F + psi`` (quadratic clients with additive noise, finite-sum
least squares and logistic clients), exact optima with a Fenchel certificate, and the FedDualAvg paper's
instance families and experiment generators.
"""
