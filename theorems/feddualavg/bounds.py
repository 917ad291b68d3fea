"""The bounds of the FedDualAvg paper as SymPy expressions (Theorems C.1, D.1, E.1 and the lemmas the catalog
checks), each beside the formula the paper prints (its LaTeX, with the notation map), and the symbolic facts: the tuned
bounds follow from the general ones, branch by branch of the min, and their orders in R.
"""
import sympy as sp

from fedcheck import Bound, Fact, order_fact
from fedcheck import verdicts as V
from fedcheck.symbols import B, G, K, L, M, R, eta_c, sigma, zeta
from theorems.feddualavg.symbols import Disc, eta

third, twothird = sp.Rational(1, 3), sp.Rational(2, 3)
c_eta = sp.Symbol("c_eta", positive=True)       # a general step as a fraction of its largest allowed value
Dh_w = sp.Symbol("Dh_w", nonnegative=True)       # D_h(w, w_0) for a reference point w (Lemma C.2)

# ---- Theorem E.1 (= 4.1): FedDualAvg, small client step; eta = eta_s eta_c <= 1/(4KL) -----------------
E1_bound = B / (eta * K * R) + 3 * eta * sigma**2 / M                                         # (E.1)
E2_eta = sp.Min(1 / (4 * K * L), sp.sqrt(B * M) / (sp.sqrt(K * R) * sigma))                     # (E.2)
E3_bound = 4 * L * B / R + 4 * sigma * sp.sqrt(B) / sp.sqrt(M * K * R)                          # (E.3)
E_eta_general = c_eta / (4 * K * L)                                                            # any eta <= 1/(4KL)

# ---- Theorem C.1 (= 4.2): bounded gradients G; eta_s = 1, eta_c <= 1/(4L) ------------------------------
C2_bound = B / (eta_c * K * R) + eta_c * sigma**2 / M + 4 * eta_c**2 * L * (K - 1)**2 * G**2    # (C.2)
C3_eta = sp.Min(1 / (4 * L), sp.sqrt(M * B) / (sigma * sp.sqrt(K * R)),
                B**third / (L**third * K * R**third * G**twothird))                            # (C.3) = (C.7)
C4_bound = (4 * L * B / (K * R) + 2 * sigma * sp.sqrt(B) / sp.sqrt(M * K * R)
            + 5 * L**third * B**twothird * G**twothird / R**twothird)                          # (C.4)
C5_rhs = Dh_w / (eta_c * K * R) + eta_c * sigma**2 / M + L * Disc / (M * K * R)                # (C.5)
C6_stab = 4 * eta_c**2 * (K - 1)**2 * G**2                                                     # (C.6)

# ---- Theorem D.1 (= 4.3): quadratic F, heterogeneity zeta, Q-geometry; eta_s = 1, eta_c <= 1/(4L) -------
D1_bound = (B / (eta_c * K * R) + eta_c * sigma**2 / M + 7 * eta_c**2 * L * K * sigma**2
            + 14 * eta_c**2 * L * K**2 * zeta**2)                                              # (D.1)
D2_eta = sp.Min(1 / (4 * L), sp.sqrt(M * B) / (sigma * sp.sqrt(K * R)),
                B**third / (L**third * K**twothird * R**third * sigma**twothird),
                B**third / (L**third * K * R**third * zeta**twothird))                          # (D.2) = (D.7)
D3_bound = (4 * L * B / (K * R) + 2 * sigma * sp.sqrt(B) / sp.sqrt(M * K * R)
            + 8 * L**third * B**twothird * sigma**twothird / (K**third * R**twothird)
            + 15 * L**third * B**twothird * zeta**twothird / R**twothird)                      # (D.3)
D4_stab = 7 * eta_c**2 * K * sigma**2 + 14 * eta_c**2 * K**2 * zeta**2                         # (D.4)

# ---- the bounds as the paper prints them (verbatim LaTeX of the .md), with the notation map ----------------
# ``\eta_{\mathrm{c}}`` is eta_c; B, K, R, L, M, G, sigma, zeta match the declared symbols by name; ``(K-1)^{2}`` is
# named so that ``L(K-1)^{2}`` reads as L (K-1)^2 (a letter before a parenthesis is a product, not a function).
ETA_C_TEX = r"\eta_{\mathrm{c}}"
E1_TEX = r"\frac{B}{\eta KR}+\frac{3\eta\sigma^{2}}{M}"
E3_TEX = r"\frac{4LB}{R}+\frac{4\sigma B^{\frac{1}{2}}}{M^{\frac{1}{2}}K^{\frac{1}{2}}R^{\frac{1}{2}}}"
C2_TEX = (r"\frac{B}{\eta_{\mathrm{c}}KR}+\frac{\eta_{\mathrm{c}}\sigma^{2}}{M}"
          r"+4\eta_{\mathrm{c}}^{2}L(K-1)^{2}G^{2}")
C4_TEX = (r"\frac{4LB}{KR}+\frac{2\sigma B^{\frac{1}{2}}}{M^{\frac{1}{2}}K^{\frac{1}{2}}R^{\frac{1}{2}}}"
          r"+\frac{5L^{\frac{1}{3}}B^{\frac{2}{3}}G^{\frac{2}{3}}}{R^{\frac{2}{3}}}")
D1_TEX = (r"\frac{B}{\eta_{\mathrm{c}}KR}+\frac{\eta_{\mathrm{c}}\sigma^{2}}{M}+7\eta_{\mathrm{c}}^{2}LK\sigma^{2}"
          r"+14\eta_{\mathrm{c}}^{2}LK^{2}\zeta^{2}")
D3_TEX = (r"\frac{4LB}{KR}+\frac{2\sigma B^{\frac{1}{2}}}{M^{\frac{1}{2}}K^{\frac{1}{2}}R^{\frac{1}{2}}}"
          r"+\frac{8L^{\frac{1}{3}}B^{\frac{2}{3}}\sigma^{\frac{2}{3}}}{K^{\frac{1}{3}}R^{\frac{2}{3}}}"
          r"+\frac{15L^{\frac{1}{3}}B^{\frac{2}{3}}\zeta^{\frac{2}{3}}}{R^{\frac{2}{3}}}")
C5_DISC_TEX = (r"\left[\sum_{r=0}^{R-1}\sum_{k=0}^{K-1}\sum_{m=1}^{M}\operatorname{\mathbb{E}}"
               r"\left\|\overline{z_{r,k}}-z_{r,k}^{m}\right\|_{*}^{2}\right]")
C5_TEX = (r"\frac{1}{\eta_{\mathrm{c}}KR}D_{h}(w,w_{0})+\frac{\eta_{\mathrm{c}}\sigma^{2}}{M}+\frac{L}{MKR}"
          + C5_DISC_TEX)
C6_TEX = r"4\eta_{\mathrm{c}}^{2}(K-1)^{2}G^{2}"
D4_TEX = r"7\eta_{\mathrm{c}}^{2}K\sigma^{2}+14\eta_{\mathrm{c}}^{2}K^{2}\zeta^{2}"
TEX_ETA_C = {ETA_C_TEX: eta_c}
TEX_KM1 = {"(K-1)^{2}": (K - 1)**2}
# the printed definitions the notation map's values are checked against (Bound.latex_definitions): the steps
# (E.2), (C.3), (D.2) as printed, the largest step 1/(4KL) of Theorem E.1 ("\eta\in(0,\frac{1}{4KL}]"), and the
# printed (K-1)^{2} itself (its value is that snippet read as a power)
E2_TEX = r"\min\left\{\frac{1}{4KL},\frac{B^{\frac{1}{2}}M^{\frac{1}{2}}}{K^{\frac{1}{2}}R^{\frac{1}{2}}\sigma}\right\}"
C3_TEX = (r"\min\left\{\frac{1}{4L},\frac{M^{\frac{1}{2}}B^{\frac{1}{2}}}{\sigma K^{\frac{1}{2}}R^{\frac{1}{2}}},"
          r"\frac{B^{\frac{1}{3}}}{L^{\frac{1}{3}}KR^{\frac{1}{3}}G^{\frac{2}{3}}}\right\}")
D2_TEX = (r"\min\left\{\frac{1}{4L},\frac{M^{\frac{1}{2}}B^{\frac{1}{2}}}{\sigma K^{\frac{1}{2}}R^{\frac{1}{2}}},"
          r"\frac{B^{\frac{1}{3}}}{L^{\frac{1}{3}}K^{\frac{2}{3}}R^{\frac{1}{3}}\sigma^{\frac{2}{3}}},"
          r"\frac{B^{\frac{1}{3}}}{L^{\frac{1}{3}}KR^{\frac{1}{3}}\zeta^{\frac{2}{3}}}\right\}")
ETA_MAX_TEX = r"\frac{1}{4KL}"
PRINTED_KM1 = {"(K-1)^{2}": "(K-1)^{2}"}
STEP_NOTE = {
    "E.2": "(E.1) at the step (E.2): the printed eta replaced by the declared (E.2), which the paper prints as "
           "min{1/(4KL), B^(1/2) M^(1/2)/(K^(1/2) R^(1/2) sigma)}",
    "C.3": "(C.2) at the step (C.3): the printed eta_c replaced by the declared (C.3), printed as min{1/(4L), "
           "M^(1/2) B^(1/2)/(sigma K^(1/2) R^(1/2)), B^(1/3)/(L^(1/3) K R^(1/3) G^(2/3))}",
    "D.2": "(D.1) at the step (D.2): the printed eta_c replaced by the declared (D.2), printed as min{1/(4L), "
           "M^(1/2) B^(1/2)/(sigma K^(1/2) R^(1/2)), B^(1/3)/(L^(1/3) K^(2/3) R^(1/3) sigma^(2/3)), "
           "B^(1/3)/(L^(1/3) K R^(1/3) zeta^(2/3))}",
}


def paper_bound(name, expr, tex, symbols=None, note="", definitions=None, **kw):
    """A bound with the paper's printed formula beside it (``Bound.latex``); ``definitions``: the printed definitions
    of notation values (``Bound.latex_definitions``; the printed ``(K-1)^{2}`` is added where the map names it)."""
    symbols = dict(symbols or {})
    defs = {**{k: v for k, v in PRINTED_KM1.items() if k in symbols}, **dict(definitions or {})}
    return Bound(name, expr, latex=tex, latex_symbols=symbols, latex_note=note, latex_definitions=defs or None, **kw)


B_E1_GENERAL = paper_bound("(E.1) at eta = c_eta/(4KL)", E1_bound.subs(eta, E_eta_general), E1_TEX,
                           {r"\eta": E_eta_general}, "(E.1) at the general step eta = c_eta/(4KL) the check runs")
B_E3 = paper_bound("(E.3)", E3_bound, E3_TEX)
B_E1_AT_E2 = paper_bound("(E.1) at the step (E.2)", E1_bound.subs(eta, E2_eta), E1_TEX, {r"\eta": E2_eta}, STEP_NOTE["E.2"],
                         {r"\eta": E2_TEX})
B_C2 = paper_bound("(C.2)", C2_bound, C2_TEX, {**TEX_ETA_C, **TEX_KM1})
B_C4 = paper_bound("(C.4)", C4_bound, C4_TEX)
B_C2_AT_C3 = paper_bound("(C.2) at the step (C.3)", C2_bound.subs(eta_c, C3_eta), C2_TEX, {ETA_C_TEX: C3_eta, **TEX_KM1},
                         STEP_NOTE["C.3"], {ETA_C_TEX: C3_TEX})
B_D1 = paper_bound("(D.1)", D1_bound, D1_TEX, TEX_ETA_C)
B_D3 = paper_bound("(D.3)", D3_bound, D3_TEX)
B_D1_AT_D2 = paper_bound("(D.1) at the step (D.2)", D1_bound.subs(eta_c, D2_eta), D1_TEX, {ETA_C_TEX: D2_eta},
                         STEP_NOTE["D.2"], {ETA_C_TEX: D2_TEX})
B_C5 = paper_bound("(C.5)", C5_rhs, C5_TEX, {**TEX_ETA_C, "D_{h}(w,w_{0})": Dh_w, C5_DISC_TEX: Disc},
                   "Disc is the measured sum_(r<R, k<K, m) ||zbar_(r,k) - z^m_(r,k)||_*^2 (its expectation: a mean over runs)")
B_C6 = paper_bound("(C.6)", C6_stab, C6_TEX, {**TEX_ETA_C, **TEX_KM1})
B_D4 = paper_bound("(D.4)", D4_stab, D4_TEX, TEX_ETA_C)


# ----------------------------------------------------------------------------------------------------
# symbolic claims: the tuned bounds follow from the general ones, branch by branch of the min
def _derivation(general_terms, step, branches, tuned, note=""):
    """``general_terms``: ``[(term, how)]`` with ``how = "max"`` for the term decreasing in the step (at
    ``step = min(branches)`` it is the max of its branch values, at most their sum) or the index of the
    branch at which an increasing term is evaluated (at the min it is at most that).  Proves that the
    sum of those upper bounds is (at most) ``tuned``."""
    def prove():
        total, lines = sp.Integer(0), []
        for term, how in general_terms:
            if how == "max":
                vals = [sp.powsimp(sp.simplify(term.subs(step, b)), force=True) for b in branches]
                total += sum(vals)
                lines.append(f"{sp.sstr(term)} = max over branches <= " + " + ".join(sp.sstr(v) for v in vals))
            else:
                v = sp.powsimp(sp.simplify(term.subs(step, branches[how])), force=True)
                total += v
                lines.append(f"{sp.sstr(term)} <= {sp.sstr(v)} (branch {how + 1})")
        diff = sp.simplify(sp.powsimp(sp.expand(tuned - total), force=True))
        if diff == 0:
            return V.HOLDS, "; ".join(lines) + f"; the sum equals the tuned bound{note}"
        if diff.is_nonnegative:
            return V.HOLDS, "; ".join(lines) + f"; the tuned bound exceeds the sum by {sp.sstr(diff)}{note}"
        if diff.is_negative:
            return V.VIOLATED, "; ".join(lines) + f"; the sum exceeds the tuned bound by {sp.sstr(-diff)}"
        return V.INCONCLUSIVE, "; ".join(lines) + f"; residual {sp.sstr(diff)} undecided"
    return prove


_C_terms = [(B / (eta_c * K * R), "max"), (eta_c * sigma**2 / M, 1), (4 * eta_c**2 * L * K**2 * G**2, 2)]
_D_terms = [(B / (eta_c * K * R), "max"), (eta_c * sigma**2 / M, 1), (7 * eta_c**2 * L * K * sigma**2, 2),
            (14 * eta_c**2 * L * K**2 * zeta**2, 3)]
_E_terms = [(B / (eta * K * R), "max"), (3 * eta * sigma**2 / M, 1)]


def _constants_7_14():
    a, b = 4 * (sp.E - 1), 8 * (sp.E - 1)
    ok = bool(a < 7) and bool(b < 14)
    return (V.HOLDS if ok else V.VIOLATED,
            f"4(e-1) = {sp.N(a, 6)} < 7 and 8(e-1) = {sp.N(b, 6)} < 14 (telescoping (D.19) with (1+1/K)^k <= e)")


def _one_plus_inv_K():
    k = sp.Symbol("k", positive=True)
    f = k * sp.log(1 + 1 / k)
    lim = sp.limit(f, k, sp.oo)
    d = sp.diff(f, k)                              # log(1+1/k) - 1/(k+1) > 0 (log(1+u) > u/(1+u))
    u = sp.Symbol("u", positive=True)
    g = sp.log(1 + u) - u / (1 + u)                # g(0) = 0, g' = u/(1+u)^2 > 0
    ok = lim == 1 and sp.simplify(sp.diff(g, u) - u / (1 + u)**2) == 0 and g.subs(u, 0) == 0
    return (V.HOLDS if ok else V.INCONCLUSIVE,
            f"K log(1+1/K) -> {lim}, derivative {sp.sstr(d)} > 0, so (1+1/K)^K < e for every K")


def _crossover():
    ratio = sp.simplify((L**third * B**twothird * G**twothird / R**twothird) / (L * B / R))
    ok = sp.simplify(ratio - (R * G**2 / (L**2 * B))**third) == 0
    return (V.HOLDS if ok else V.VIOLATED,
            f"(third term of (4.6))/(first term of (4.3)) = {sp.sstr(ratio)} = (R G^2/(L^2 B))^(1/3), "
            "<= 1 iff R <= L^2 B/G^2")


def _main_text_eta_s():
    main = [1 / (eta_c * K * L), sp.sqrt(B) * sp.sqrt(M) / (eta_c * sp.sqrt(K) * sp.sqrt(R) * sigma)]
    e2 = [1 / (4 * K * L), sp.sqrt(B * M) / (sp.sqrt(K * R) * sigma)]
    ratios = [sp.simplify(m * eta_c / e) for m, e in zip(main, e2)]
    ok = all(r.is_number and r > 0 for r in ratios)
    return (V.HOLDS if ok else V.INCONCLUSIVE,
            f"eta_s eta_c of Theorem 4.1 / (E.2), branch by branch: {[sp.sstr(r) for r in ratios]} (constants)")


def _rate(name, bound, rate):
    """``bound`` is Theta(R^rate) as R -> oo (the core's order fact, named as before)."""
    return order_fact(bound, rate, R, name=f"{name} is of order R^({sp.sstr(rate)})")


SYM_C = (Fact("(C.2) at the step (C.3) is at most (C.4) (with (K-1)^2 <= K^2)",
              _derivation(_C_terms, eta_c,
                          [1 / (4 * L), sp.sqrt(M * B) / (sigma * sp.sqrt(K * R)),
                           B**third / (L**third * K * R**third * G**twothird)], C4_bound)),
         Fact("(4.6) beats (4.3) iff R <= L^2 B / G^2 (remark after Theorem 4.2)", _crossover),
         _rate("(C.4) with sigma = 0", C4_bound.subs(sigma, 0), -twothird),
         _rate("(C.4)", C4_bound, -sp.Rational(1, 2)))
SYM_D = (Fact("(D.1) at the step (D.2) is at most (D.3)",
              _derivation(_D_terms, eta_c,
                          [1 / (4 * L), sp.sqrt(M * B) / (sigma * sp.sqrt(K * R)),
                           B**third / (L**third * K**twothird * R**third * sigma**twothird),
                           B**third / (L**third * K * R**third * zeta**twothird)], D3_bound)),
         Fact("4(e-1) < 7 and 8(e-1) < 14 ((D.19))", _constants_7_14),
         Fact("(1 + 1/K)^K < e for K >= 1 (telescoping of (D.11))", _one_plus_inv_K),
         _rate("(D.3)", D3_bound, -sp.Rational(1, 2)))
SYM_E = (Fact("(E.1) at the step (E.2) is at most (E.3)",
              _derivation(_E_terms, eta, [1 / (4 * K * L), sp.sqrt(B * M) / (sp.sqrt(K * R) * sigma)],
                          E3_bound)),
         Fact("Theorem 4.1's eta_s is (E.2)/eta_c up to constants", _main_text_eta_s),
         _rate("(E.3)", E3_bound, -sp.Rational(1, 2)))
