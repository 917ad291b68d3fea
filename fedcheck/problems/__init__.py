"""The problem library: what a claim is checked on (public; imported lazily, so ``import fedcheck.problems.sets``
stays light)::

    from fedcheck.problems import RandomFamily, Instance, load_instance, solve_consensus   # generic federated problems
    from fedcheck.problems import L1Ball, L2Ball, Box, Simplex, NuclearBall                # feasible sets (lmo, project)
    from fedcheck.problems import Loss, LeastSquares, Logistic                             # the one loss hierarchy
    from fedcheck.problems import register_constant, Value                                 # your own named constants
    from fedcheck.problems import NetworkFamily, MLP, CNN, network_solver                  # neural networks (numpy)
    from fedcheck.problems import StronglyConvexFamily, Unconstrained                      # mu, L known exactly; R^p

Modules: ``sets``, ``losses``, ``regularizers``, ``compression`` (the objects methods use); ``instances`` (the generic
federated instance, its families and its ``.npz`` format), ``composite`` (loss + regularizer), ``constrained``
(a functional constraint), ``io`` (any instance file); ``solve`` (exact, certified optima), ``constants`` (the
named constants bounds read), ``nonconvex`` and ``suprema`` (constants known by certified intervals), ``networks``
(MLP and CNN losses, network families, their constants as certified intervals), ``datasets`` (the synthetic data
of [52] and federated splits) and ``strongly_convex`` (least squares whose ``mu`` and ``L`` are the family's, with
client weights ``p_k = n_k / N``).
"""
_EXPORTS = {
    **dict.fromkeys(("Instance", "InstanceBatch", "InstanceError", "RandomFamily", "load_instance", "save_instance",
                     "instance_rng"), "fedcheck.problems.instances"),
    **dict.fromkeys(("FeasibleSet", "L1Ball", "L2Ball", "Box", "Simplex", "NuclearBall", "ProductSet", "make_set",
                    "Unconstrained"),
                    "fedcheck.problems.sets"),
    **dict.fromkeys(("Loss", "LeastSquares", "Logistic", "Sigmoid", "SignedQuadratic", "LAD", "Hinge", "MaxAffine",
                     "L2Residual", "Distance", "WeightedLogistic", "Huber", "Affine", "make_loss"),
                    "fedcheck.problems.losses"),
    **dict.fromkeys(("Regularizer", "Zero", "L1", "Nuclear", "SquaredL2", "L1BallIndicator", "L2BallIndicator",
                     "make_regularizer"), "fedcheck.problems.regularizers"),
    **dict.fromkeys(("Solution", "solve_consensus"), "fedcheck.problems.solve"),
    **dict.fromkeys(("Value", "InstanceContext", "register_constant", "known_constants", "resolve"),
                    "fedcheck.problems.constants"),
    **dict.fromkeys(("QuadInstance", "FiniteSumInstance", "FiniteSumLoss", "solve_composite", "batch_of", "save_problem"),
                    "fedcheck.problems.composite"),
    **dict.fromkeys(("ConstrainedInstance", "solve_constrained"), "fedcheck.problems.constrained"),
    "load_problem": "fedcheck.problems.io",
    **dict.fromkeys(("MLP", "CNN", "NetworkInstance", "NetworkFamily", "network_constants", "network_solver"),
                    "fedcheck.problems.networks"),
    **dict.fromkeys(("synthetic_li", "federated_split", "mnist_images", "MNIST_PAPER_IMAGES"), "fedcheck.problems.datasets"),
    **dict.fromkeys(("log_softmax", "repeat_runs", "sampled_smoothness"), "fedcheck.problems.networks"),
    **dict.fromkeys(("Interval", "nonconvex_constants", "nonconvex_solver"), "fedcheck.problems.nonconvex"),
    **dict.fromkeys(("Compressor", "UniformStream", "make_compressor"), "fedcheck.problems.compression"),
    **dict.fromkeys(("ConstrainedBatch", "component"), "fedcheck.problems.constrained"),
    **dict.fromkeys(("resolve_all",), "fedcheck.problems.constants"),
    "sup_grad_norm_sq": "fedcheck.problems.suprema",
    "take_rows": "fedcheck.problems.losses",
    "SolutionCache": "fedcheck.problems.solve",
    "solver_versions": "fedcheck.problems.solve",
    **dict.fromkeys(("StronglyConvexFamily", "client_spectra"), "fedcheck.problems.strongly_convex"),
    "check_weights": "fedcheck.problems.instances",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        import importlib
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fedcheck.problems' has no attribute {name!r}")
