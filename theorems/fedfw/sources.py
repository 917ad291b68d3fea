"""Where the FedFW paper states each reading the catalog tests: its words (quoted exactly from
``shared/papers/fedfw-federated-frank-wolfe.md``, short), the place, and the setting it is stated in.

``tests/test_fedfw_sources.py`` checks every quote against the paper's text.  A reading tested in another setting is
an analysis (``paper=False``) that names its deviation beside the source of the statement it departs from.
"""
from fedcheck import Source

CONVEX = "L-smooth convex f_i, D convex compact of diameter D, any n; FedFW (Algorithm 1), full participation"
THM1_SETTING = CONVEX + "; eta_t = 2/(t+1), lambda_t = lambda_0 sqrt(t+1), any lambda_0 > 0; iterates t >= 2"
PARTIAL = ("L-smooth convex f_i; each client takes part with probability p in (0, 1], non-participants keep x_i; "
           "eta_t = 2/(p(t-1)+2), lambda_t = lambda_0 sqrt(p(t-1)+2)")
STO = ("L-smooth convex f_i = E f_i(., omega_i), unbiased stochastic gradients of variance <= sigma^2 (Assumption 1); "
       "FedFW-sto, eta_t = 9/(t+8), lambda_t = lambda_0 sqrt(t+8), rho_t = 4/(t+7)^(2/3), d_i^1 = 0")
NONCONVEX = ("L-smooth f_i (not necessarily convex), X^1 in C; fixed eta = T^(-2/3), lambda = lambda_0 T^(1/3), "
             "any lambda_0 > 0")

THEOREM1 = Source("Consider problem (1) with L-smooth and convex loss functions f_i", "Theorem 1, (10); explicit "
                  "(38), Appendix B.1", THM1_SETTING)
LEMMA2_STATEMENT = Source("Lemma 2 (Boundedness of the gradient).", "Lemma 2 (its statement's G = LD/n + max "
                          "||grad F^(X*)||), used in (38)", "f_i L-smooth, X in D^n")
LEMMA2_PROOF_END = Source("We complete the proof by combining this with the previous inequality",
                          "proof of Lemma 2 (its end: G = LD/sqrt(n) + n ||grad F(x*)||), used in (38)",
                          "f_i L-smooth, X in D^n")
# the steps of Theorem 1's proof (Appendix B.1) and of Lemma 2's, as ``fedcheck audit theorem1`` checks them
STEP_30_START = Source("where the equality holds simply from $\\eta_1 = 1$", "Appendix B.1, (30): the initial term "
                       "(F^_0(X^1) - F^(X*)) prod_(i<=t) (1 - eta_i) vanishes", THM1_SETTING)
STEP_30_31 = Source("Substituting $\\eta_t = 2/(t+1)$, $\\lambda_t = \\lambda_0 \\sqrt{t+1}$, and $\\hat{L}_t := "
                    "(\\frac{L}{n} + \\lambda_t)$ into (30), it is easy to verify that", "Appendix B.1, (30) => (31)",
                    "eta_t = 2/(t+1), lambda_t = lambda_0 sqrt(t+1), L^_t = L/n + lambda_t, any lambda_0 > 0, t >= 1")
STEP_38 = Source("where in the last line, we used bounds (35) and (37)", "Appendix B.1, (38): (35) at t-1 plus G times "
                 "(37), second line, at t-1 (G of Lemma 2)", THM1_SETTING)
STEP_25_28 = Source("Substituting (27) into (26), we obtain", "Appendix B.1, (25) (its last line), (26)-(28) (the first "
                    "line of (28))", THM1_SETTING)
STEP_26 = Source("Combining (24) and (25), and subtracting $\\hat{F}(\\mathbf{X}^*)$ from both sides, we get",
                 "Appendix B.1, (24)-(26): one FedFW step from X^t", "L-smooth convex f_i, X^t in D^n, S^t the LMO "
                 "output of (7), L^_t of Lemma 1; eta_t = 2/(t+1), lambda_t = lambda_0 sqrt(t+1)")
STEP_34 = Source("Given that $\\mathbf{X}^{t+1} \\in \\mathcal{D}^n$, we can write", "Appendix B.1, (33)-(34)",
                 "L-smooth convex f_i, Y* a solution of the dual of (3) (Lagrangian (32)), a point of D^n")
LEMMA2_LINE1 = Source("Using the smoothness and boundedness assumptions, we can write", "proof of Lemma 2, its first "
                      "display: ||grad F^(X)||_F <= (L/n) ||X - X*||_F + ||grad F^(X*)||_F <= LD/sqrt(n) + "
                      "||grad F^(X*)||_F", "f_i L-smooth, X in D^n, X* a solution of (3)")
THEOREM1_PROOF_END = Source("This completes the proof.", "Appendix B.1, (38) with Lemma 2's G", THM1_SETTING)
SURROGATE_31 = Source("This gives the convergence rate for the surrogate function", "Appendix B.1, (30)-(31), (35)",
                      THM1_SETTING)
STEP_24 = Source("the third line holds since \\mathcal{D} is compact", "Appendix B.1, (24), third line: "
                 "||S^t - X^t||_F^2 <= nD^2, used in (30)-(31)", "FedFW as Algorithm 1 states it ('input x_i^1 in "
                 "R^p'; Theorem 1 states no condition on the start), Theorem 1's schedules; starts outside D")
CONSENSUS_37 = Source("Solving the quadratic inequality in terms of $dist(\\mathbf{X}^{t+1}",
                      "Appendix B.1, (36)-(37), its three lines", THM1_SETTING)
CONDITION_29 = Source("where the second line holds because, for all $t \\geq 1$", "Appendix B.1, (28)-(29)",
                      "eta_t = 2/(t+1), lambda_t = lambda_0 sqrt(t+1), t >= 1")
LEMMA1 = Source("is \\hat{L}_t -smooth, where $\\hat{L}_t = \\frac{L}{n} + \\lambda_t$", "Lemma 1, (23), Appendix B",
                "f_i L-smooth; any lambda_t >= 0")
LEMMA2_STEP = Source("since \\mathbf{X}^* is a feasible point, we get", "proof of Lemma 2: ||grad F^(X*)||_F <= "
                     "n ||grad F(x*)||", "f_i L-smooth, X* = x* 1^T a solution of (3)")
PARTIAL_44 = Source("Following the same steps in (38) and (39)", "Section 4.2, (17); Appendix B.2, (43)-(44)", PARTIAL)
PARTIAL_17 = Source("converges to a solution with rate", "Section 4.2, (17)", PARTIAL)
CONDITION_42 = Source("where in the second line we used the fact that the problem is block separable",
                      "Appendix B.2, (42) (zeta_t < 0)", "eta_t = 2/(p(t-1)+2), lambda_t = lambda_0 sqrt(p(t-1)+2), "
                      "t >= 1, p in (0, 1]")
THEOREM3 = Source("Theorem 3. Consider problem (13) with L-smooth and convex loss functions f_i",
                  "Theorem 3, (16); explicit (68), Appendix D.1", STO)
LEMMA3 = Source("Lemma 3 is a direct application of Theorem 2 in [34]", "Lemma 3, (66)-(67), Appendix D", STO)
LEMMA3_IN_68 = Source("where we used Lemmas 2 and 3", "Appendix D.1, (68): (67) used as a bound on E||Xbar^t - X^t||_F",
                      STO)
THEOREM2 = Source("Theorem 2. Consider problem (1) with L-smooth loss functions f_i", "Theorem 2, (12); explicit "
                  "(52), (57), (62), Appendix C.1", NONCONVEX)
# the steps of Theorem 2's proof (Appendix C.1), as ``fedcheck audit theorem2`` checks them
STEP_54 = Source("Then, by using the Cauchy-Schwarz inequality, and the gradient bound in Lemma 1, we can write",
                 "Appendix C.1, (53)-(54) (the gradient bound G is Lemma 2's; the text says Lemma 1)",
                 "L-smooth f_i (not necessarily convex), X^t in D^n, lambda = lambda_0 T^(1/3) for any lambda_0 > 0")
STEP_55 = Source("By solving this quadratic inequality, we get", "Appendix C.1, (54)-(55)",
                 "lambda > 0, G >= 0, gap^(X^t) >= 0 (lambda = lambda_0 T^(1/3))")
STEP_62 = Source("By combining (60) with (61) and rearranging, we get", "Appendix C.1, (58)-(62)",
                 "L-smooth f_i (not necessarily convex), X in D^n, xbar its column mean; G of Lemma 2")
PARTIAL_NC = Source("Similarly, if we consider the non-convex setting of Theorem 2 with randomized client participation",
                    "Section 4.2, (18); Appendix C.2, (63)-(65) ('The rest of the proof follows similarly')",
                    "L-smooth f_i, X^1 in C; participation probability p; eta = (pT+1)^(-2/3), "
                    "lambda = lambda_0 (pT+1)^(1/3)")
NAIVE_21 = Source("this algorithm fails to solve the following 1-dimensional problem", "Appendix A, (20)-(22)",
                  "procedure (20) on instance (21), D = [-1, 1], xbar^1 = 0, any eta_1 in [0, 1]")
NAIVE_LOCAL = Source("Similar arguments hold even if we run multiple local training steps before the aggregation",
                     "Appendix A, after (22)", "procedure (20) with several local steps, instance (21)")
NAIVE_FAIL = Source("We conclude that this method may fail", "Appendix A, after (22)",
                    "procedure (20) (naive FW with model averaging) on problem (19)")
FEDFW_PLUS = Source("an empirically faster version of FEDFW by incorporating an augmented Lagrangian dual update",
                    "Section 6 (Conclusions); Section 4.4, Algorithm 1 (FedFW+)",
                    "stated without qualification; the paper's evidence is Section 5 (MCLR, CNN, DNN)")
SPLIT = Source("This modification does not affect the solution set, due to the consensus constraint", "Section 4.3",
               "client sets D_i with intersection D (e.g. a Euclidean ball containing D for a straggler)")
MESSAGES = Source("the communicated signals are the extreme points of \\mathcal{D}", "Section 3.2 (communication)",
                  "FedFW's messages s_i; D an l1 ball (1-sparse) or a nuclear-norm ball (rank one)")
PRIVACY_L1 = Source("merely reveals the sign of the maximum entry of the gradient", "Section 3.2 (privacy)",
                    "one LMO message s_i on the l1 ball")
PRIVACY_BOX = Source("only reveals the gradient signs", "Section 3.2 (privacy)", "one LMO message s_i on a box")
PRIVACY_GENERAL = Source("Retrieving the gradient from its linear minimization output is generally unfeasible",
                         "Section 3.2 (privacy); Figure 1", "'generally'; the paper's experiment: Deep Leakage on "
                         "CIFAR-100, l1 and l2 balls, 10^5 iterations (Figure 1)")
PRIVACY_NUCLEAR = Source("unveils only the top eigenvectors of the gradient", "Section 3.2 (privacy)",
                         "one LMO message s_i on a nuclear-norm ball")
TABLE1 = Source("Table 1 presents the test accuracy results for the algorithms with IID and non-IID data distributions",
                "Section 5.1, Table 1", "MCLR on MNIST (and CIFAR-10, synthetic), 10 clients, full participation, "
                "100 rounds, one local step, l1 and l2 balls of radius 10, IID and non-IID (3 labels per client)",
                stated={"data": "MNIST", "clients": 10, "rounds": 100, "radius": 10})
TABLE1_SYNTHETIC = Source("Table 1 presents the test accuracy results for the algorithms with IID and non-IID data "
                          "distributions", "Section 5.1, Table 1 (synthetic columns); Section 5 (Datasets)",
                          "MCLR on the synthetic data of [52] (60 features, 10 labels; non-IID: 'each user has data "
                          "from only 3 labels'), 10 clients, full participation, 100 rounds, one local step, l1 and l2 "
                          "balls of radius 10", stated={"data": "synthetic", "clients": 10, "rounds": 100, "radius": 10})
FEASIBLE = Source("we establish the convergence of $\\bar{\\mathbf{x}}^t$, representing a feasible point",
                  "Remark 1", "FedFW's server point xbar^t (a convex combination of points of D)")
TABLE3 = Source("FEDFW-STO outperformed FEDDR in our experiments in the stochastic setting", "Section 5.3, Table 3",
                "MCLR on EMNIST-10, EMNIST-62, CIFAR10, synthetic; 100 clients, minibatch 64, one local step, 300 "
                "rounds, l2 ball", stated={"data": "EMNIST-10, EMNIST-62, CIFAR10, synthetic", "clients": 100,
                                           "minibatch": 64, "rounds": 300})
TABLE3_SYNTHETIC = Source("FEDFW-STO outperformed FEDDR in our experiments in the stochastic setting",
                          "Section 5.3, Table 3 (synthetic columns); Section 5 (Datasets)",
                          "MCLR on the synthetic data of [52] (60 features, 10 labels; non-IID: 'each user has data "
                          "from only 3 labels'); 100 clients, minibatch 64, one local step, 300 rounds, l2 ball",
                          stated={"data": "synthetic", "clients": 100, "minibatch": 64, "rounds": 300})
INEXACT = Source("is robust against additive and multiplicative errors in the linear minimization step [24]",
                 "Section 3.2", "errors as in [24] (Jaggi 2013): an additive error of the LMO at most "
                 "(delta/2) eta_t C_f, shrinking with the step; a multiplicative error of the FW direction")
NOISE = Source("we can introduce noise to augment data privacy without compromising the convergence guarantees",
               "Section 3.2 ('consequently', after the robustness of FW to LMO errors [24])",
               "FedFW's clients' LMO messages; the paper states neither the noise's distribution nor its scale")
NONUNIFORM = Source("non-uniform participation can be addressed similarly", "Section 4.2",
                    "client-specific participation probabilities p_i in (0, 1]; the convex setting of (17)")
PARTICIPATION = Source("Both convex and non-convex experiments show faster convergence for higher participation "
                       "probability", "Section 5.4, Figures 2-3", "MCLR on synthetic data (l1 ball, two lambda_0) "
                       "and a DNN on synthetic data (l2 ball); 'variations in lambda_0 do not alter the influence of p'")
LAMBDA0 = Source("A higher λ_0 leads to a larger gap in the initial iterations of the algorithm due to its "
                 "regularization effect", "Section 5.4, Figure 4", "MCLR on MNIST (p = 0.5, l1 and l2 balls), DNN on "
                 "synthetic data; explained by the penalty pulling the direction towards consensus")
PLAIN_STO = Source("FW does not readily extend to stochastic settings by replacing the gradient with an unbiased "
                   "estimator of bounded variance. Instead, adapting FW for stochastic settings, in general, requires a "
                   "variance reduction strategy", "Section 4.1", "FW with plain unbiased stochastic gradients of "
                   "bounded variance (Assumption 1); no experiment, no stall and no counterexample stated")
ALGORITHM1_START = Source("input \\mathbf{x}_{i}^{1} \\in \\mathbb{R}^{p}, \\forall i \\in [n]", "Algorithm 1 (input); "
                          "Theorem 1", "any starting points x_i^1 of the clients (the proof's step (24) uses X^1 in "
                          "D^n)")
