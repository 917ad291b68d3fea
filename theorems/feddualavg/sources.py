"""Where the FedDualAvg paper states each reading the catalog tests: its words (quoted from
``shared/papers/feddualavg-federated-composite-optimization.md``), the place, and the setting it is stated in; the
deviations of the scaled-down experiments; the sources of the audited proof steps.

Quotes are the paper's words (prose copied from the paper file; "[...]" stands for its mathematics, written out where
it matters, "..." for an elision).  A reading tested outside the stated setting is an analysis with its deviation
named.
"""
from fedcheck import Deviation, Source

# ---- the readings ------------------------------------------------------------------------------------------
_A1 = ("Assumption 1: psi closed convex, h Legendre and 1-strongly convex, f(.; xi) convex and L-smooth, "
       "sigma^2-bounded variance in the dual norm, full participation (any norm)")
SRC_E1 = Source(
    quote="Assuming Assumption 1, then for any [eta in (0, 1/(4KL)]], for any initialization [w_0 in dom psi], there "
          "exists an [eta_c^max > 0] (which may depend on [eta] and [w_0]) such that for any [eta_c in (0, eta_c^max]], "
          "FedDualAvg yields",
    place="Theorem E.1 (detailed Theorem 4.1), (E.1)-(E.3)",
    setting=f"FedDualAvg (Alg. 3); {_A1}; any eta = eta_s eta_c in (0, 1/(4KL)], eta_c below an unstated eta_c^max "
            "(swept: eta_s = 1, 10, 100 at fixed eta); output (1/R) sum_(r=1..R) w_(r,0); any data")
SRC_41_MAIN = Source(
    quote="Assuming Assumption 1, then for sufficiently small client learning rate [eta_c], and server learning rate "
          "[eta_s = Theta(min{1/(eta_c K L), B^(1/2) M^(1/2)/(eta_c K^(1/2) R^(1/2) sigma)})], both FedDualAvg and "
          "FedMiD can output [w_hat] such that",
    place="Theorem 4.1 (main text), (4.3); proved in Theorem E.1 for FedDualAvg only",
    setting=f"FedDualAvg (Alg. 3) and FedMiD (Alg. 2); {_A1}; small eta_c, eta_s as stated; the output w_hat is not "
            "defined in the main text (read: E.1's average of the server iterates); (4.3)'s <~ hides absolute constants "
            "(read with E.1's, (E.3)); the rate O(1/R) at sigma = 0 is constant-free")
SRC_OSP = Source(
    quote="Theoretically, it is not hard to establish similar rates of Theorem 4.1 for FedMiD-OSP with finite [psi]. "
          "For infinite [psi], we need extension of [f] outside [dom psi] to fix regularity. To keep this paper focused, "
          "we will not establish these results formally.",
    place="Appendix A.1 (paragraph before Algorithm 4)",
    setting=f"FedMiD-OSP (Alg. 4) with a finite psi; {_A1}; 'similar rates' read as Theorem 4.1 with E.1's constants "
            "and output (not proved in the paper)")
SRC_C1 = Source(
    quote="Assume Assumption 3, then for any initialization [w_0 in dom psi], for unit server learning rate [eta_s = 1] "
          "and any client learning rate [eta_c <= 1/(4L)], FedDualAvg yields",
    place="Theorem C.1 (detailed Theorem 4.2), (C.2)-(C.4)",
    setting=f"FedDualAvg (Alg. 3); Assumption 3 ({_A1}, and sup over dom psi of ||grad f(w, xi)||_* <= G); eta_s = 1, "
            "eta_c <= 1/(4L) (or (C.3)); output (4.4), the average of the virtual iterates; any data")
SRC_D1 = Source(
    quote="Assuming Assumption 2, then for any initialization [w_0 in dom psi], for unit server learning rate "
          "[eta_s = 1] and any client learning rate [eta_c <= 1/(4L)], FedDualAvg yields",
    place="Theorem D.1 (detailed Theorem 4.3), (D.1)-(D.3)",
    setting="FedDualAvg (Alg. 3); Assumption 2: F(w) = w^T Q w/2 + c^T w, Q > 0, heterogeneity (4.7) printed "
            "'<= zeta^2' and read '<= zeta' as its proof (D.51) uses, Assumption 1 in the Q/||Q||_2 norm; eta_s = 1, "
            "eta_c <= 1/(4L) (or (D.2)); output (4.4); any data")
SRC_C2 = Source(
    quote="Assume Assumption 1, then for any initialization [w_0 in dom psi], for any reference point [w in dom psi], "
          "for [eta_s = 1], for any [eta_c <= 1/(4L)], FedDualAvg yields",
    place="Lemma C.2 (= Lemma 4.4), (C.5)",
    setting=f"FedDualAvg (Alg. 3); {_A1} (sigma = 0 allowed: exact gradients); eta_s = 1, eta_c <= 1/(4L); any w in "
            "dom psi; every R")
SRC_C3 = Source(
    quote="Lemma C.3 (Stability of FedDualAvg under bounded gradient assumption). In the same settings of Theorem C.1, "
          "it is the case that",
    place="Lemma C.3, (C.6); its proof (C.51)",
    setting="the setting of Theorem C.1 (Assumption 3, eta_s = 1, eta_c <= 1/(4L)); the statement gives no range of k "
            "(z^m_{r,k} is defined for k = 0..K; Theorem C.1's use (C.5) needs k <= K-1)")
SRC_C5 = Source(
    quote="Claim C.5. Under the same assumptions of Lemma C.2, the following inequality holds",
    place="Claim C.5, (C.12)-(C.13); Proposition B.10, (B.8)",
    setting=f"FedDualAvg (Alg. 3), {_A1}, eta_s = 1; any w in dom psi; every step r, k (deterministic, any noise)")
SRC_D2 = Source(
    quote="In the same settings of Theorem D.1, the following inequality holds for any [k in {0, 1, ..., K}] and "
          "[r in {0, 1, ..., R}],",
    place="Lemma D.2 (= Lemma 4.5), (D.4)",
    setting="the setting of Theorem D.1 (Assumption 2 with (4.7) read '<= zeta', eta_s = 1, eta_c <= 1/(4L)); dual "
            "norm ||z||_*^2 = ||Q||_2 z^T Q^-1 z (Claim D.7); every r and k = 0..K")
SRC_D5 = Source(
    quote="Claim D.5. In the same settings of Proposition D.3, the following inequality holds",
    place="Claim D.5, (D.15)",
    setting="the setting of Theorem D.1 (Assumption 2, eta_s = 1, eta_c <= 1/(4L)); every client pair, every step, "
            "conditional expectation given F_{r,k}")
SRC_VARIANCE = Source(
    quote="(by bounded variance assumption and independence) ... The result in Theorem 4.2 not only matches the rate by "
          "Stich (2019) for smooth, unconstrained FedAvg but also allows for a general non-smooth composite",
    place="(C.25) last line, (E.19); remark after Theorem 4.2 ('... and arbitrary norm')",
    setting="Assumption 1 in an arbitrary norm: independent zero-mean client noises with E||eps_m||_*^2 <= sigma^2 "
            "(4.2), the step E||(1/M) sum_m eps_m||_*^2 <= sigma^2/M used for that norm")
SRC_ENTROPIC = Source(
    quote="The result in Theorem 4.2 not only matches the rate by Stich (2019) for smooth, unconstrained FedAvg but also "
          "allows for a general non-smooth composite [psi], general Bregman divergence induced by [h], and arbitrary "
          "norm",
    place="remark after Theorem 4.2; Assumption 1(b); Theorems C.1 (C.2)-(C.4) and E.1 (E.1)",
    setting="FedDualAvg (Alg. 3) with any Legendre h 1-strongly convex w.r.t. any norm (here the negative entropy on "
            "the simplex, l1 norm, l_inf dual); the theorems' steps and outputs; any data")
SRC_CURSE = Source(
    quote="Constrained problem: Suppose the optimum of the aforementioned constrained problem resides on a non-flat "
          "boundary [of C]. Even when each client is able to obtain a local solution on the boundary, the average of them will "
          "almost surely be off the boundary (and hence away from the optimum) due to the curvature.",
    place="Section 3.2 (curse of primal averaging), first example; 'the curse of primal averaging indeed hampers the "
          "performance of FedMiD'",
    setting="FedMiD (Alg. 2) on any constrained problem whose optimum lies on a curved boundary; no data, steps or "
            "horizon stated")
SRC_OVERCOMES = Source(
    quote="Since both levels of averaging operate in the dual space, we can show that FedDualAvg provably overcomes the "
          "curse of primal averaging.",
    place="Section 1 (and Section 3.3)",
    setting="FedDualAvg (Alg. 3) on the same kind of problem (any; here the curved-boundary example)")
SRC_CURSE_L1 = Source(
    quote="Suppose each client obtains a local sparse solution, simply averaging them across clients will invariably "
          "yield a non-sparse solution.",
    place="Section 3.2 (curse of primal averaging), second example; Figure 2",
    setting="any federated l1-regularized problem whose clients reach sparse local solutions (FedMiD); no data stated")
SRC_OSP_NO_GUARANTEE = Source(
    quote="There is no theoretical guarantee on the convergence of FedDualAvg-OSP.",
    place="Appendix A.1 (Algorithm 5)",
    setting="FedDualAvg-OSP (Alg. 5) on any FCO problem (here l1, exact gradients, full participation)")
#: The setting of A.2's dataset (I) (federated LASSO), as data: "d1 = 512 ones and d0 = 512 zeros. We generate M = 64
#: training clients where each client possesses 128 pairs of samples ... We test 49 different combinations ... We draw
#: 10 clients uniformly at random at each communication round and let the selected clients run local algorithms with
#: batch size 10 for one epoch ... We run 500 rounds in total".  A.3's dataset (I) the same with a 32 x 32 matrix of
#: rank 16.
STATED_LASSO = {"d": 1024, "true features": 512, "clients": 64, "samples per client": 128, "clients per round": 10,
                "minibatch": 10, "local epochs": 1, "rounds": 500, "grid": 49}
STATED_NUCLEAR = {"matrix size": 32, "rank": 16, "clients": 64, "samples per client": 128, "clients per round": 10,
                  "minibatch": 10, "local epochs": 1, "rounds": 500, "grid": 49}
#: A.4.1 (fMRI): "There are 59 training clients ... We let each client run its local algorithm with batch-size one for
#: one epoch per round. At the beginning of each round, we draw 20 clients uniformly at random. We run each
#: configuration for 300 rounds"; 49 combinations (A.4.2 shows those with eta_c eta_s in [0.003, 0.3]).
FMRI = "Haxby (2001) fMRI, 39,912 voxels"
STATED_FMRI = {"data": FMRI, "clients": 59, "clients per round": 20, "minibatch": 1, "local epochs": 1, "rounds": 300,
               "grid": 49}
STATED_FIG12 = {"data": FMRI, "clients": 59, "clients per round": 20, "minibatch": 1, "local epochs": 1, "rounds": 300}
SRC_FIG3 = Source(
    quote="Observe that FedDualAvg not only identifies most of the sparsity pattern but also is fastest. It is also "
          "worth noting that the less-principled FedDualAvg-OSP is also very competitive. ... which is corroborated "
          "empirically by the least sparse solution obtained by FedMiD.",
    place="Figure 3 caption (Section 5.1); Appendix A.2, Figures 6-8",
    setting="federated LASSO (A.1), synthetic dataset (I): d = 1024 (512 ones), M = 64 clients x 128 samples, 10 "
            "clients per round, batch size 10, one local epoch, 500 rounds, 49 (eta_c, eta_s) tuned for the best F1",
    stated=STATED_LASSO)
SRC_51_BEST = Source(
    quote="The best learning rates configuration is [eta_c = 0.01, eta_s = 1] for FedDualAvg, and [eta_c = 0.001, "
          "eta_s = 0.3] for other algorithms (including FedMiD).",
    place="Section 5.1",
    setting="as Figure 3 (dataset (I), the 7 x 7 grid)", stated=STATED_LASSO)
SRC_FIG4 = Source(
    quote="We observe that FedDualAvg finds the solution with exact rank in less than 100 communication rounds. FedMiD "
          "and FedMiD-OSP converge slower in loss and rank. The unprincipled FedDualAvg-OSP can generate low-rank "
          "solutions but is far less accurate.",
    place="Figure 4 caption (Section 5.2); Appendix A.3, Figures 9-11",
    setting="nuclear-norm matrix estimation (A.5), synthetic dataset (I): 32 x 32 ground truth of rank 16, M = 64 "
            "clients x 128 samples, 10 clients per round, batch size 10, one local epoch, 500 rounds, tuned for the "
            "best recovery error", stated=STATED_NUCLEAR)
SRC_FIG5 = Source(
    quote="We observe that FedDualAvg yields sparse and accurate solutions that are comparable with the centralized "
          "baseline. FedMiD and FedMiD-OSP provides denser solutions that are relatively less accurate. The "
          "unprincipled FedDualAvg-OSP can provide sparse solutions but far less accurate.",
    place="Figure 5 caption (Section 5.3); Figure 1; Appendix A.4",
    setting="l1 logistic regression on Haxby's fMRI data (39,912 voxels, 59 training clients of 18 scans, 20 per "
            "round, batch size one, one epoch), 300 rounds, tuned for the lowest validation loss", stated=STATED_FMRI)
SRC_FIG12 = Source(
    quote="We can observe that most FedDualAvg configurations reach the upper-left region of the box, which indicates "
          "sparse and accurate solutions. FedDualAvg-OSP reaches to the mid-left region of the box, which indicates "
          "sparse but less accurate solutions. The majority of FedMiD and FedMiD-OSP lands on the right side region "
          "box",
    place="Appendix A.4.2, Figure 12; Section 5.3 ('behaves most robust to learning-rate configurations')",
    setting="the fMRI experiment of A.4 (Haxby's data), every (eta_c, eta_s) of the 7 x 7 grid with eta_c eta_s in "
            "[0.003, 0.3], read after 10, 30, 100, 300 rounds; the box's regions are not given numerically",
    stated=STATED_FIG12)
# The experiments' deviations from those settings, as data.  The generator's sizes are fixed by the instance (the run
# records them from it): the quick run's sizes against dataset (I)'s (A.2, A.3); --full runs the paper's sizes and
# declares none of them (a measurement keeps a declared deviation only where the run's value is not the paper's).  The
# horizon and the grid depend on the mode (quick or --full), and each measurement adds theirs when they differ
# (:func:`mode_deviations`).
DEV_LASSO = (Deviation("d", paper=1024, run=32), Deviation("true features", paper=512, run=4),
             Deviation("clients", paper=64, run=16), Deviation("samples per client", paper=128, run=32),
             Deviation("clients per round", paper=10, run=4), Deviation("minibatch", paper=10, run=4))
DEV_NUCLEAR = (Deviation("matrix size", paper=32, run=6), Deviation("rank", paper=16, run=2),
               Deviation("clients", paper=64, run=8), Deviation("samples per client", paper=128, run=32),
               Deviation("clients per round", paper=10, run=4), Deviation("minibatch", paper=10, run=4))
# a stand-in: Haxby (2001)'s fMRI data ship in no registry package (checked once more with `pip download --no-deps`:
# nilearn 0.14.1 holds templates, atlases' tables and haxby2001.rst, a description; nilearn.datasets.fetch_haxby
# downloads the scans on demand; no `haxby` package exists)
BREAST_CANCER = "scikit-learn's breast-cancer data (569 x 30)"
DEV_FMRI = (Deviation("data", paper=FMRI, run=BREAST_CANCER),
            Deviation("clients", paper=59, run=12), Deviation("clients per round", paper=20, run=4),
            Deviation("minibatch", paper=1, run=4))

# Theorem E.1 at eta_c = eta: eta_s = 1 puts the client step at the largest eta, not below E.1's eta_c^max
DEV_E1_ETA_S = Deviation("eta_s", paper="large enough that eta_c = eta/eta_s <= eta_c^max (not stated)", run=1.0)


def mode_deviations(stated: dict, **run) -> tuple:
    """The deviations of the parameters a run sets by its mode (``rounds=``, ``grid=``: the run's values), for those
    whose value differs from the paper's (``stated``)."""
    return tuple(Deviation(p, paper=stated[p], run=v) for p, v in run.items() if stated[p] != v)


# ---- the proof steps (fedcheck audit) -----------------------------------------------------------------------
_LEMMA_C2_SETTING = "Lemma C.2's assumptions (Assumption 1, eta_s = 1, eta_c <= 1/(4L), any w in dom psi)"
SRC_STEP = {
    "C.6": Source("Claim C.6. Under the same assumptions of Lemma C.2, it is the case that", "Claim C.6, (C.14)-(C.15)",
                  _LEMMA_C2_SETTING + "; deterministic: every step of every run"),
    "C.4": Source("Proposition C.4 (One step analysis of FedDualAvg). Under the same assumptions of Lemma C.2, the "
                  "following inequality holds", "Proposition C.4, (C.10)-(C.11)",
                  _LEMMA_C2_SETTING + "; the conditional expectation given F_{r,k}"),
    "C.25": Source("Now we take conditional expectation. Note that ... (by definition of dual norm [||.||_*]) ... (by "
                   "bounded variance assumption and independence)", "(C.25), proof of Proposition C.4",
                   _LEMMA_C2_SETTING + "; E[<a, b> | F_{r,k}] with a the clients' mean gradient noise and b = "
                   "w^_{k+1} - w^_k, which depends on the same noise"),
    "C.28": Source("Plugging the above inequality to Eq. C.24 gives", "(C.19)-(C.21), (C.26)-(C.28)",
                   _LEMMA_C2_SETTING + "; the quadratic steps of the proof"),
    "D.4": Source("Claim D.4. In the same settings of Proposition D.3, the following inequality holds",
                  "Claim D.4, (D.13)-(D.14)", "Theorem D.1's setting; deterministic: every client pair and step"),
    "D.23": Source("[z^m_{r,k+1} = z^m_{r,k} - eta_c grad f(w^m_{r,k}; xi^m_{r,k}) (D.22) = z^m_{r,k} - eta_c grad "
                   "F(w^m_{r,k}) + eta_c (grad F_m(w^m_{r,k}) - grad F(w^m_{r,k})) + eta_c (grad f(w^m_{r,k}; "
                   "xi^m_{r,k}) - grad F_m(w^m_{r,k})) (D.23)]", "(D.22)-(D.24), proof of Claim D.4",
                   "an identity (any w, any noise)"),
    "D.6": Source("Claim D.6. In the same settings of Proposition D.3, the following inequality holds",
                  "Claim D.6, (D.16)", "Theorem D.1's setting (heterogeneity read '<= zeta' as (D.51) uses)"),
    "D.7": Source("Claim D.7. In the same settings of Proposition D.3, the dual norm [||.||_*] corresponds to the "
                  "[||Q||_2 Q^-1]-norm", "Claim D.7", "the norm of Assumption 2(c), ||w|| = (w^T Q w/||Q||_2)^(1/2)"),
    "E.2": Source("Lemma E.2. Under the same settings of Theorem E.1, the following inequality holds.",
                  "Lemma E.2, (E.4)-(E.6)", "Theorem E.1's setting; deterministic: every round"),
    "E.28": Source("Note that ... (since [eta <= 1/(4KL)]) ... (by quadratic optimum)", "(E.26)-(E.28), proof of "
                   "Lemma E.3", "Theorem E.1's setting, eta <= 1/(4KL)"),
    "E.3": Source("Lemma E.3. Under the same settings of Theorem E.1, there exists an [eta_c^max > 0] (which may depend "
                  "on [eta] and [w_0]) such that for any [eta_c in (0, eta_c^max]], FedDualAvg yields",
                  "Lemma E.3, (E.7); Theorem E.1: 'Telescoping Lemma E.3 and dropping the negative terms gives' (E.8)",
                  f"Theorem E.1's setting ({_A1}; sigma = 0 allowed: exact gradients); any eta in (0, 1/(4KL)]; every "
                  "round r, with one eta_c^max for all r (the telescoping over r = 0..R-1 for every R needs it)"),
    "E.33": Source("There exists an upper bound [eta_c^max] such that for any [eta_c in (0, eta_c^max]], it is the case "
                   "that", "(E.32)-(E.33), proof of Lemma E.3",
                   f"Theorem E.1's setting ({_A1}; sigma = 0 allowed); the product bounded by eta K sigma^2/L"),
}
