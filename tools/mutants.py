"""The named mutants of the mutation campaign (``make mutate``, ``tools/mutate.py``).

Each mutant is one plausible bug a developer could write: a sign, a factor of two, an
off-by-one, a dropped term, a wrong default, a swapped argument, a missing residual, a
wrong axis. It is given as a snippet of a library file and its replacement, and names
the test files that should notice it. A snippet is matched token by token: whitespace,
line breaks, comments and a formatter's trailing comma between its tokens do not matter
(:func:`locate`), so reformatting the code keeps every mutant. A snippet that is not
found exactly once makes the campaign refuse to run (STALE), so that a mutant cannot
silently stop testing anything after the code itself changes: update the snippet.

Mutants sit on core lines (the mathematics, the wiring, the defaults and initial
values), not on argument validation or docstrings. ``accepted`` explains a mutant that
the tests are known not to kill and why that is acceptable (an equivalent mutant, or a
property the library does not promise); the report prints it next to the survivor.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Between two tokens of a snippet: any whitespace and comments, as a formatter or a
# re-wrapped comment leaves them.
_GAP = r"(?:\s|#[^\n]*)*"
_TOKEN = re.compile(r"\w+|[^\w\s]")


def pattern(snippet: str) -> re.Pattern:
    """The snippet as a regular expression that ignores its formatting.

    Its tokens (words, numbers, single punctuation marks; its comments dropped) in
    order, with any whitespace or comments between them, and an optional trailing
    comma before a closing bracket (the "magic trailing comma" a formatter adds when
    it splits a call over lines).
    """
    tokens = _TOKEN.findall(re.sub(r"#[^\n]*", "", snippet))  # comments aside
    out = ""
    for before, token in zip([None, *tokens], tokens):
        if before is not None:
            # Two words keep a separator between them (``is None``, not ``isNone``).
            word = before[-1].isalnum() or before[-1] == "_"
            out += _GAP.replace("*", "+") if word and token[0].isalnum() else _GAP
        if token in ")]}":
            out += f"(?:,{_GAP})?"
        out += re.escape(token)
    return re.compile(out)


def locate(text: str, snippet: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans of ``snippet`` in ``text``, formatting aside."""
    return [m.span() for m in pattern(snippet).finditer(text)]


def apply(text: str, mutant: Mutant) -> str:
    """``text`` with the mutant's one occurrence replaced (ValueError unless one)."""
    spans = locate(text, mutant.original)
    if len(spans) != 1:
        raise ValueError(f"{mutant.name}: snippet found {len(spans)} times")
    start, end = spans[0]
    return text[:start] + mutant.replacement + text[end:]


@dataclass(frozen=True)
class Mutant:
    name: str  # unique, kebab-case: what the bug is
    file: str  # path from the repository root
    original: str  # snippet found exactly once in the file (formatting aside)
    replacement: str
    tests: tuple[str, ...]  # test files (or node ids) that should kill it
    accepted: str = ""  # why surviving is acceptable, if it is


def M(name, file, original, replacement, *tests, accepted=""):
    return Mutant(name, file, original, replacement, tuple(tests), accepted)


T_ATT = "tests/test_attention.py"
T_KR = "tests/test_kernel_regression.py"
T_KS = "tests/test_kernel_regression_kernelsums.py"
T_DEN = "tests/test_denoise.py"
T_LLE = "tests/test_lle.py"
T_LLE_E = "tests/test_lle_embedding.py"
T_SUB = "tests/test_subspace.py"
T_LASSO = "tests/test_subspace_lasso.py"
T_NORM = "tests/test_normalizers.py"
T_CONT = "tests/test_continuous.py"
T_CONT_X = "tests/test_continuous_experiments.py"
T_SYM = "tests/test_symmetry.py"
T_SYM_X = "tests/test_symmetry_experiments.py"
T_MUX = "tests/test_mux.py"
T_UTILS = "tests/test_utils.py"
T_TRAIN = "tests/test_training.py"
T_DATA = "tests/test_data.py"
T_PLOT = "tests/test_plotting.py"
T_ROUTE = "tests/test_mux_experiments_routing.py"
T_MANI = "tests/test_lle_experiments.py"
T_DENX = "tests/test_denoise_experiments_cnn.py"
T_SEX = "tests/test_subspace_experiments.py"
T_SC = "tests/test_subspace_sparse_coding.py"
T_TRI = "tests/test_triton_kernels.py"

A = "attnlib/"
MUTANTS: list[Mutant] = [
    # ---- textbook (issue 47): the badges that fold the checks, and what measures them
    M(
        "reading-audit-ignores-open-checking-code",
        "tools/reading_audit.py",
        'if (!inside && next && next.classList.contains("cell")) {',
        "if (false) {",
        "tests/test_site.py::test_the_reading_checks_fail_on_planted_problems",
    ),
    M(
        "reading-audit-counts-every-badge-as-one-line",
        "tools/reading_audit.py",
        "out.badge_lines = Math.max(out.badge_lines, Math.round(h(s) / line));",
        "out.badge_lines = 1;",
        "tests/test_site.py::test_the_reading_checks_fail_on_planted_problems",
    ),
    M(
        "svg-text-not-scaled-to-its-display",
        "tools/reading_audit.py",
        'return fig["svg_text"] * fig["shown"] / fig["svg_width"]',
        'return fig["svg_text"]',
        "tests/test_site.py::test_the_reading_checks_fail_on_planted_problems",
    ),
    M(
        "raster-text-ignores-its-dpi",
        "tools/reading_audit.py",
        'return points / 72 * (dpi or 100) * fig["shown"] / fig["natural"]',
        'return points / 72 * 100',
        "tests/test_site.py::test_the_reading_checks_fail_on_planted_problems",
    ),
    M(
        "lesson-check-cells-folded-too",
        "book/_ext/claim_badges.py",
        'if "claim-lesson" in box["classes"]:',
        "if False:",
        "tests/test_site.py::test_a_lesson_check_keeps_its_code_open",
    ),
    M(
        "badge-without-execution-count",
        "book/_ext/claim_badges.py",
        'attributes["data-exec-count"] = str(node["exec_count"])',
        "pass",
        "tests/test_site.py::test_every_claim_cell_ran_in_its_badge",
    ),
    # ------------------------------------------------------------------ attention
    M(
        "mha-value-projection-from-kdim",
        A + "layers.py",
        "self.v_proj = nn.Linear(vdim, embed_dim, **made)",
        "self.v_proj = nn.Linear(kdim, embed_dim, **made)",
        T_ATT,
    ),
    M(
        "encoder-feedforward-width-2d",
        A + "layers.py",
        "4 * d_model\n            if dim_feedforward is None",
        "2 * d_model\n            if dim_feedforward is None",
        T_ATT,
    ),
    M(
        "encoder-first-residual-dropped",
        A + "layers.py",
        "x = self.norm1(x + self._attend(x, masks))",
        "x = self.norm1(self._attend(x, masks))",
        T_ATT,
    ),
    M(
        "mha-value-defaults-to-query",
        A + "layers.py",
        "value = key if value is None else",
        "value = query if value is None else",
        T_ATT,
    ),
    M(
        "scaled-dot-temperature-d-not-sqrt-d",
        A + "attention/__init__.py",
        "temperature = math.sqrt(d) if score",
        "temperature = d if score",
        T_ATT,
    ),
    M(
        "neg-sq-dist-without-half",
        A + "attention/__init__.py",
        "return -0.5 * sq.clamp_min(0)",
        "return -sq.clamp_min(0)",
        T_ATT,
    ),
    M(
        "neg-l1-is-euclidean",
        A + "attention/__init__.py",
        "return -torch.cdist(q, k, p=1)",
        "return -torch.cdist(q, k, p=2)",
        T_ATT,
    ),
    # ------------------------------------------------------------ kernel regression
    M(
        "boxcar-open-boundary",
        A + "kernel_regression/core.py",
        '(SCORES["neg_sq_dist"](q, k) >= -0.5)',
        '(SCORES["neg_sq_dist"](q, k) > -0.5)',
        T_KR,
    ),
    M(
        "epanechnikov-half-width",
        A + "kernel_regression/core.py",
        'return (1 + 2 * SCORES["neg_sq_dist"](q, k)).clamp_min(0)',
        'return (1 + SCORES["neg_sq_dist"](q, k)).clamp_min(0)',
        T_KR,
    ),
    M(
        "biweight-is-epanechnikov",
        A + "kernel_regression/core.py",
        "return _epanechnikov(q, k) ** 2",
        "return _epanechnikov(q, k) ** 1",
        T_KR,
    ),
    M(
        "metric-nw-initial-metric-not-scaled",
        A + "kernel_regression/estimators.py",
        "torch.from_numpy(directions[:p] / self.init_bandwidth_)",
        "torch.from_numpy(directions[:p] * 1.0)",
        T_KR,
    ),
    M(
        "metric-nw-loss-keeps-self",
        A + "kernel_regression/estimators.py",
        "model(X[idx], X, y, mask=not_self)",
        "model(X[idx], X, y)",
        T_KR,
    ),
    M(
        "loo-predictions-without-mask",
        A + "kernel_regression/core.py",
        "_kernel_attention(xt, xt, y, kernel, bandwidth, mask=not_self)",
        "_kernel_attention(xt, xt, y, kernel, bandwidth)",
        T_KR,
    ),
    M(
        "gaussian-scale-not-squared",
        A + "kernel_regression/core.py",
        '1 / bandwidth / bandwidth if kernel == "gaussian"',
        '1 / bandwidth if kernel == "gaussian"',
        T_KR,
    ),
    M(
        "kernel-sums-gaussian-without-half",
        A + "kernel_regression/_kernelsums.py",
        "1 / bandwidth if l1 else 0.5 / bandwidth / bandwidth",
        "1 / bandwidth if l1 else 1 / bandwidth / bandwidth",
        T_KS,
        T_KR,
    ),
    M(
        "kernel-sums-exp64-coefficient",
        A + "utils/fastexp.py",
        "p = p * f + 1 / 720\n",
        "p = p * f + 1 / 700\n",
        T_KS,
    ),
    M(
        "kernel-sums-rescale-sign",
        A + "kernel_regression/_kernelsums.py",
        "old_scale = math.exp(-c * (low - new))",
        "old_scale = math.exp(c * (low - new))",
        T_KS,
        T_KR,
    ),
    # -------------------------------------------------------------------- denoise
    M(
        "denoiser-learned-bandwidth-scale-halved",
        A + "denoise/learned.py",
        "torch.exp(2 * self.log_h_scale.double())",
        "torch.exp(self.log_h_scale.double())",
        T_DEN,
    ),
    M(
        "denoiser-positional-score-halved",
        A + "denoise/learned.py",
        '2 * SCORES["neg_sq_dist"](pos, pos) / (hh * ww)',
        'SCORES["neg_sq_dist"](pos, pos) / (hh * ww)',
        T_DEN,
    ),
    M(
        "denoiser-heads-averaged-twice",
        A + "denoise/learned.py",
        "* out).sum(1)  # (B, n, C)",
        "* out).mean(1)  # (B, n, C)",
        T_DEN,
    ),
    M(
        "denoiser-window-strict",
        A + "denoise/common.py",
        "return (queries[:, None, :] - keys[None, :, :]).abs().amax(-1) <= radius",
        "return (queries[:, None, :] - keys[None, :, :]).abs().amax(-1) < radius",
        T_DEN,
    ),
    M(
        "patch-kernel-width",
        A + "denoise/filters.py",
        "a = (s - 1) / 4",
        "a = (s - 1) / 2",
        T_DEN,
    ),
    M(
        "patch-tokens-ignore-channels",
        A + "denoise/filters.py",
        "scale = (g2 / (c * h * h * g2.sum())).sqrt()",
        "scale = (g2 / (h * h * g2.sum())).sqrt()",
        T_DEN,
    ),
    M(
        "gaussian-filter-radius-truncated",
        A + "denoise/filters.py",
        "radius = int(min(truncate * sigma + 0.5, max(h, w)))",
        "radius = int(min(truncate * sigma, max(h, w)))",
        T_DEN,
    ),
    M(
        "nlm-compiled-symmetric-half-dropped",
        A + "denoise/_nlm.py",
        "bwd[j] += w[j]",
        "bwd[j] += 0.0 * w[j]",
        T_DEN,
    ),
    # ------------------------------------------------------------------------ LLE
    M(
        "lle-sign-convention-flipped",
        A + "lle/embedding.py",
        "signs = np.sign(vectors[np.abs(vectors).argmax(0)",
        "signs = -np.sign(vectors[np.abs(vectors).argmax(0)",
        T_LLE,
        T_LLE_E,
    ),
    M(
        "lle-ridge-not-scaled-by-trace",
        A + "lle/weights.py",
        "torch.where(trace > 0, reg * trace, ",
        "torch.where(trace > 0, reg + 0 * trace, ",
        T_LLE,
    ),
    M(
        "lle-weights-not-normalised",
        A + "lle/weights.py",
        "w = w / w.sum(-1, keepdim=True)",
        "w = w",
        T_LLE,
    ),
    M(
        "lle-cost-matrix-transposed",
        A + "lle/embedding.py",
        "M = (A.T @ A).tocsc()",
        "M = (A @ A.T).tocsc()",
        T_LLE,
        T_LLE_E,
    ),
    M(
        "lle-transform-ignores-reg",
        A + "lle/embedding.py",
        "_weights_on_neighbors(X, self.X_fit_, ind, self.reg, dense=False)",
        "_weights_on_neighbors(X, self.X_fit_, ind, 0.0, dense=False)",
        T_LLE,
        T_LLE_E,
    ),
    # ------------------------------------------------------------------- subspace
    M(
        "ssc-objective-without-half",
        A + "subspace/expression.py",
        "return float(0.5 * (R * R).sum() + (lam * l1).sum())",
        "return float((R * R).sum() + (lam * l1).sum())",
        T_SUB,
    ),
    M(
        "lsr-zero-diagonal-wrong-axis",
        A + "subspace/expression.py",
        "return np.eye(N) - Z / np.diag(Z)[:, None]",
        "return np.eye(N) - Z / np.diag(Z)[None, :]",
        T_SUB,
    ),
    M(
        "lrsc-shrinks-sigma-not-sigma-squared",
        A + "subspace/expression.py",
        "weights = np.maximum(1.0 - lam / sigma**2, 0.0)",
        "weights = np.maximum(1.0 - lam / sigma, 0.0)",
        T_SUB,
    ),
    M(
        "affinity-l2-without-sqrt",
        A + "subspace/clustering.py",
        'scale = np.sqrt(scale) if normalize == "l2" else scale',
        "scale = scale",
        T_SUB,
    ),
    M(
        "affinity-keep-off-by-one",
        A + "subspace/clustering.py",
        "cut = -np.partition(-W, keep - 1, axis=1)[:, keep - 1 : keep]",
        "cut = -np.partition(-W, keep, axis=1)[:, keep : keep + 1]",
        T_SUB,
    ),
    M(
        "ista-step-not-squared",
        A + "subspace/sparse_coding.py",
        "/ torch.linalg.matrix_norm(k, ord=2)\n            .square()",
        "/ torch.linalg.matrix_norm(k, ord=2)\n            .abs()",
        T_SC,
    ),
    M(
        "ista-threshold-not-scaled-by-step",
        A + "subspace/sparse_coding.py",
        "C = shrink(C - s_t * (C @ kk - qk), s_t * lam_t)",
        "C = shrink(C - s_t * (C @ kk - qk), lam_t)",
        T_SC,
    ),
    M(
        "clustering-accuracy-minimises",
        A + "subspace/clustering.py",
        "linear_sum_assignment(counts, maximize=True)",
        "linear_sum_assignment(counts)",
        T_SUB,
    ),
    M(
        "unrolled-ista-initial-step",
        A + "subspace/sparse_coding.py",
        "torch.full((n_iter,), math.log(math.e - 1))",
        "torch.full((n_iter,), 0.0)",
        T_SC,
        T_SEX,
    ),
    # ---------------------------------------------------------------------- lasso
    M(
        "soft-threshold-loses-sign",
        A + "subspace/_lasso/common.py",
        "return torch.sign(x) * torch.relu(x.abs() - threshold)",
        "return torch.relu(x.abs() - threshold)",
        T_LASSO,
        T_SUB,
    ),
    M(
        "ista-lipschitz-not-squared",
        A + "subspace/_lasso/iterative.py",
        "np.full((len(self.rows), 1), np.linalg.norm(self.X, 2) ** 2)",
        "np.full((len(self.rows), 1), np.linalg.norm(self.X, 2))",
        T_LASSO,
        T_SUB,
    ),
    # ---------------------------------------------------------------- normalizers
    M(
        "fenchel-young-masked-scores-not-zeroed",
        A + "normalizers/tsallis.py",
        "theta = scores.masked_fill(torch.isneginf(scores), 0.0)",
        "theta = scores",
        T_NORM,
    ),
    M(
        "tsallis-entropy-without-alpha",
        A + "normalizers/tsallis.py",
        "return (1 - p.pow(alpha).sum(dim)) / (alpha * (alpha - 1))",
        "return (1 - p.pow(alpha).sum(dim)) / (alpha - 1)",
        T_NORM,
    ),
    M(
        "softmax-backward-drops-p",
        A + "normalizers/maps.py",
        "return pg - p * pg.sum(-1, keepdim=True)",
        "return pg - pg.sum(-1, keepdim=True)",
        T_NORM,
    ),
    M(
        "entmax-backward-exponent",
        A + "normalizers/maps.py",
        "s = torch.where(support, p_in.pow(2 - alpha), 0)",
        "s = torch.where(support, p_in.pow(alpha - 1), 0)",
        T_NORM,
    ),
    # ------------------------------------------- Triton kernels and their dispatch
    M(
        "triton-rows-backward-mean-sign",
        A + "normalizers/_triton_entmax.py",
        "gx = sg - s * mean",
        "gx = sg + s * mean",
        T_TRI,
    ),
    M(
        "triton-rows-bisection-keeps-wrong-half",
        A + "normalizers/_triton_entmax.py",
        "lo = tl.where(big, mid, lo)",
        "lo = tl.where(big, lo, mid)",
        T_TRI,
    ),
    M(
        "triton-rows-backward-divides-by-an-empty-support",
        A + "normalizers/_triton_entmax.py",
        "mean = tl.sum(sg, axis=0) / tl.where(ssum > 0, ssum, 1.0)",
        "mean = tl.sum(sg, axis=0) / ssum",
        T_TRI,
    ),
    M(
        "flash-skips-live-blocks",
        A + "attention/_triton_flash.py",
        "if tl.max(tl.max(z, axis=1), axis=0) > 0:",
        "if tl.max(tl.max(z, axis=1), axis=0) > 1:",
        T_TRI,
    ),
    M(
        "flash-causal-excludes-the-diagonal",
        A + "attention/_triton_flash.py",
        "keep = keep & (offs_n[None, :] <= offs_m[:, None])",
        "keep = keep & (offs_n[None, :] < offs_m[:, None])",
        T_TRI,
    ),
    M(
        "flash-dk-unscaled",
        A + "attention/_triton_flash.py",
        "offs_n, skn, n_k, offs_d, d, dk * scale)",
        "offs_n, skn, n_k, offs_d, d, dk)",
        T_TRI,
    ),
    M(
        "flash-mask-broadcast-over-queries-lost",
        A + "attention/_triton_flash.py",
        "m4 = m.reshape(-1, *m.shape[-3:]).expand(-1, b[-1], n_q, n_k)",
        "m4 = m.reshape(-1, *m.shape[-3:])[..., :1, :].expand(-1, b[-1], n_q, n_k)",
        T_TRI,
    ),
    M(
        "flash-overflow-not-flagged",
        A + "attention/_triton_flash.py",
        'out = tl.where(bad[:, None], float("nan"), out)',
        "out = out",
        T_TRI,
    ),
    M(
        "flash-all-minus-inf-row-not-flagged",
        A + "attention/_triton_flash.py",
        '| (~empty & (m == float("-inf")))',
        "",
        T_TRI,
    ),
    M(
        "flash-ignores-the-temperature",
        A + "attention/__init__.py",
        "scale=1 / _temperature(temperature, score, q.shape[-1]),\n    )",
        "scale=None,\n    )",
        T_TRI,
    ),
    M(
        "refused-kernel-not-caught",
        A + "utils/kernels.py",
        "except REFUSALS as err:",
        "except ZeroDivisionError as err:",
        T_TRI,
    ),
    M(
        "rows-dispatch-bypasses-the-kernels",
        A + "normalizers/maps.py",
        "if triton_entmax.accepts(x):",
        "if False:",
        T_TRI,
    ),
    M(
        "attention-dispatch-bypasses-flash",
        A + "attention/__init__.py",
        "and triton_flash.accepts(q, k, v)",
        "and False",
        T_TRI,
    ),
    M(
        "entmax-bisection-too-few-steps",
        A + "normalizers/_entmax.py",
        "n_iter = 64 if z.dtype == torch.float64 else 36",
        "n_iter = 16 if z.dtype == torch.float64 else 12",
        T_NORM,
    ),
    M(
        "entmax-compiled-slope",
        A + "normalizers/_entmax_loops.c",
        "    case 2:\n        return SQRT(p);",
        "    case 2:\n        return p;",
        T_NORM,
    ),
    M(
        "exp-beta-not-clamped",
        A + "normalizers/tsallis.py",
        "return (1 + (1 - beta) * u).clamp_min(0).pow(1 / (1 - beta))",
        "return (1 + (1 - beta) * u).pow(1 / (1 - beta))",
        T_NORM,
    ),
    M(
        "log-beta-sign",
        A + "normalizers/tsallis.py",
        "return (u.pow(1 - beta) - 1) / (1 - beta)",
        "return (u.pow(1 - beta) - 1) / (beta - 1)",
        T_NORM,
    ),
    # ----------------------------------------------------------------- continuous
    M(
        "moment-matched-variance-not-centred",
        A + "continuous/modules.py",
        "var = (weights @ positions**2 - mu**2).clamp_min(0)",
        "var = (weights @ positions**2).clamp_min(0)",
        T_CONT,
        T_CONT_X,
    ),
    M(
        "grid-cells-at-corners",
        A + "continuous/modules.py",
        "rows = (torch.arange(height, dtype=dtype, device=device) + 0.5) / height",
        "rows = torch.arange(height, dtype=dtype, device=device) / height",
        T_CONT,
        T_CONT_X,
    ),
    M(
        "moment-matched-covariance-not-centred",
        A + "continuous/modules.py",
        'torch.einsum("bl,bli,blj->bij", weights, centred, centred)',
        'torch.einsum("bl,bli,blj->bij", weights, positions, positions)',
        T_CONT,
        T_CONT_X,
    ),
    M(
        "ridge-penalty-dropped",
        A + "continuous/basis.py",
        "torch.linalg.cholesky(F.T @ F + lam * eye)",
        "torch.linalg.cholesky(F.T @ F + eye)",
        T_CONT,
    ),
    M(
        "rbf-2d-normaliser-1d",
        A + "continuous/basis.py",
        "- 0.5 * d * torch.log(2 * math.pi * s2)",
        "- 0.5 * torch.log(2 * math.pi * s2)",
        T_CONT,
    ),
    M(
        "truncated-parabola-threshold-exponent",
        A + "continuous/densities.py",
        "lam = -0.5 * (1.5 / torch.sqrt(sigma2)) ** (2 / 3)",
        "lam = -0.5 * (1.5 / torch.sqrt(sigma2)) ** (1 / 3)",
        T_CONT,
    ),
    M(
        "truncated-parabola-radius",
        A + "continuous/integrals.py",
        "return (1.5 * sigma2) ** (1 / 3)",
        "return (3 * sigma2) ** (1 / 3)",
        T_CONT,
    ),
    M(
        "continuous-1d-backward-variance-factor",
        A + "continuous/attention.py",
        "grad_s2 = (grad_r * cov_xx).sum(-1) / (2 * sigma2 * sigma2)",
        "grad_s2 = (grad_r * cov_xx).sum(-1) / (sigma2 * sigma2)",
        T_CONT,
    ),
    M(
        "gaussian-2d-normaliser-det",
        A + "continuous/integrals.py",
        "/ (2 * math.pi * torch.sqrt(det))",
        "/ (2 * math.pi * det)",
        T_CONT,
    ),
    # ------------------------------------------------------------------- symmetry
    M(
        "rbf-kernel-ignores-a",
        A + "symmetry/heads.py",
        "q = y @ a\n",
        "q = y\n",
        T_SYM,
        T_SYM_X,
    ),
    M(
        "linear-value-not-transposed",
        A + "symmetry/heads.py",
        "else (heads @ w.transpose(-2, -1)).sum(-3)",
        "else (heads @ w).sum(-3)",
        T_SYM,
        T_SYM_X,
    ),
    M(
        "knowledge-attention-residual-dropped",
        A + "symmetry/heads.py",
        "h = h + mixed if self.residual else mixed",
        "h = mixed",
        T_SYM,
        T_SYM_X,
    ),
    M(
        "higher-order-moment-wrong-count",
        A + "symmetry/heads.py",
        "second_moment = y.transpose(-2, -1) @ y / y.shape[-2]",
        "second_moment = y.transpose(-2, -1) @ y / y.shape[-1]",
        T_SYM,
        T_SYM_X,
    ),
    M(
        "householder-projection-not-reflection",
        A + "symmetry/groups.py",
        "- 2 * torch.outer(u, u) / norm2",
        "- torch.outer(u, u) / norm2",
        T_SYM,
    ),
    M(
        "quadratic-kernel-default-temperature-one",
        A + "symmetry/heads.py",
        'score="scaled_dot",',
        'score="dot",',
        T_SYM,
        T_SYM_X,
    ),
    M(
        "random-orthogonal-without-sign-fix",
        A + "symmetry/groups.py",
        "return (q * torch.where(signs == 0, torch.ones_like(signs), signs)).to(dtype)",
        "return q.to(dtype)",
        T_SYM,
    ),
    # ------------------------------------------------------------------------ mux
    M(
        "conv-router-residual-dropped",
        A + "mux/models.py",
        "h = h + torch.relu(\n                conv(h)\n            )",
        "h = torch.relu(\n                conv(h)\n            )",
        T_MUX,
    ),
    M(
        "positions-added-to-queries-only",
        A + "mux/models.py",
        "q, k = q + self.pos[: x.shape[1]], k + self.pos[: x.shape[1]]",
        "q, k = q + self.pos[: x.shape[1]], k",
        T_MUX,
    ),
    M(
        "conv-matrix-kernel-flipped",
        A + "mux/tasks.py",
        "kernel[(offsets + half).clamp(0, 2 * half)]",
        "kernel[(half - offsets).clamp(0, 2 * half)]",
        T_MUX,
    ),
    M(
        "straight-through-gradient-sign",
        A + "mux/maps.py",
        "return _hardmax(scores) + soft - soft.detach()",
        "return _hardmax(scores) - soft + soft.detach()",
        T_MUX,
    ),
    M(
        "weekday-target-ignores-rota",
        A + "mux/tasks.py",
        "target = prefs.gather(1, rota[day][:, None]).squeeze(1)",
        "target = prefs.gather(1, day[:, None]).squeeze(1)",
        T_MUX,
    ),
    M(
        "conv-router-receptive-field-off-by-one",
        A + "mux/models.py",
        "self.receptive_field = 1 + depth * (kernel_size - 1)",
        "self.receptive_field = depth * (kernel_size - 1)",
        T_MUX,
    ),
    # ----------------------------------------------------- utils, training, data
    M(
        "set-seed-ignores-seed-for-torch",
        A + "utils/runtime.py",
        "torch.manual_seed(seed)",
        "torch.manual_seed(0)",
        T_UTILS,
    ),
    M(
        "to-device-skips-named-tuples",
        A + "training.py",
        "return type(batch)(*(_to_device(x, device) for x in batch))",
        "return batch",
        T_TRAIN,
    ),
    M(
        "train-never-zeroes-gradients",
        A + "training.py",
        "opt.zero_grad(set_to_none=True)",
        "pass",
        T_TRAIN,
    ),
    M(
        "translation-targets-inverse-permutation",
        A + "data.py",
        "tgt_words = torch.empty_like(words).scatter_(1, perm, words)",
        "tgt_words = words.gather(1, perm)",
        T_DATA,
    ),
    M(
        "caption-target-is-word-slot",
        A + "data.py",
        "target[b, 2 * j : 2 * j + 2] = i",
        "target[b, 2 * j : 2 * j + 2] = j",
        T_DATA,
    ),
    # ---------------------------------------------------------------- experiments
    M(
        "green-function-scale",
        A + "mux/experiments/routing.py",
        "(n + 1 - np.maximum.outer(i, i)) / (n + 1)",
        "(n + 1 - np.maximum.outer(i, i)) / n",
        T_ROUTE,
    ),
    M(
        "span-weights-off-by-one",
        A + "continuous/experiments/documents.py",
        "(pos < start[:, None] + self.span)",
        "(pos <= start[:, None] + self.span)",
        T_CONT_X,
    ),
    M(
        "combined-model-drops-discrete-context",
        A + "continuous/experiments/documents.py",
        "context = context + cont.context",
        "context = cont.context",
        T_CONT_X,
    ),
    M(
        "monotone-alignment-scale",
        A + "continuous/experiments/alignment.py",
        "* (S - 1) / (T - 1)",
        "* S / T",
        T_CONT_X,
    ),
    M(
        "closed-groups-weak-components",
        A + "lle/experiments.py",
        'connected_components(mask, connection="strong")',
        'connected_components(mask, connection="weak")',
        T_MANI,
    ),
    M(
        "cnn-parameter-count-drops-a-bias",
        A + "denoise/experiments/cnn.py",
        "return k2 * w + w + k2 * w * w + w + k2 * w + 1",
        "return k2 * w + w + k2 * w * w + k2 * w + 1",
        T_DENX,
    ),
    M(
        "heatmap-signed-colours-not-centred",
        A + "plotting/heatmaps.py",
        "lo = -lim if vmin is None else vmin",
        "lo = 0.0 if vmin is None else vmin",
        T_PLOT,
    ),
    M(
        "heatmap-zeros-not-drawn-apart",
        A + "plotting/heatmaps.py",
        "shown = np.ma.masked_equal(W, 0.0) if zero_color is not None else W",
        "shown = W",
        T_PLOT,
    ),
    M(
        "slider-shows-every-frame",
        A + "plotting/slider.py",
        "f\"{'' if i == self.default else ' hidden'}>\"",
        "f\"{''}>\"",
        T_PLOT,
    ),
    M(
        "table-keeps-the-numeric-index",
        A + "plotting/tables.py",
        "    if not index:",
        "    if index:",
        T_PLOT,
    ),
    M(
        "self-expressive-net-keeps-diagonal",
        A + "subspace/experiments/held_out.py",
        "C = C * (1 - torch.eye(C.shape[0], dtype=C.dtype, device=C.device))",
        "C = C * torch.ones_like(C)",
        T_SEX,
    ),
    M(
        "learned-ista-step-range",
        A + "subspace/experiments/held_out.py",
        "base * 2 * torch.sigmoid(self.raw_step[t])",
        "base * torch.sigmoid(self.raw_step[t])",
        T_SEX,
    ),
    M(
        "sequences-needed-interpolates-linearly",
        A + "symmetry/experiments/curves.py",
        "np.exp(np.interp(np.log(target), np.log(errors[::-1]), np.log(sizes[::-1])))",
        "np.interp(target, errors[::-1], sizes[::-1])",
        T_SYM_X,
    ),
    M(
        "scaled-input-mean-not-sum",
        A + "symmetry/experiments/baselines.py",
        "self.scale.data = ((x * y).sum() / power).to(dtype)",
        "self.scale.data = ((x * y).mean() / power).to(dtype)",
        T_SYM_X,
    ),
    M(
        "tuning-validates-on-the-training-part",
        A + "symmetry/experiments/curves.py",
        "return (x[:-n_val], y[:-n_val]), (x[-n_val:], y[-n_val:])",
        "return (x[:-n_val], y[:-n_val]), (x[:-n_val], y[:-n_val])",
        T_SYM_X,
    ),
    M(
        "accuracy-last-batch-dropped",
        A + "continuous/experiments/classify.py",
        "for i in range(0, n, batch):",
        "for i in range(0, n - batch + 1, batch):",
        T_CONT_X,
    ),
    # --- issue 38: torch's and entmax's conventions, sample weights, train()
    M(
        "sdpa-scale-not-inverted",
        A + "attention/__init__.py",
        'temperature = 1 / check_positive(scale, "scale")',
        'temperature = check_positive(scale, "scale")',
        "tests/test_sdpa_arguments.py",
    ),
    M(
        "sdpa-subnormal-scale-accepted",
        A + "attention/__init__.py",
        "if math.isinf(temperature):",
        "if math.isnan(temperature):",
        "tests/test_sdpa_arguments.py",
    ),
    M(
        "sdpa-causal-mask-upper",
        A + "attention/__init__.py",
        "dtype=torch.bool, device=q.device\n        ).tril()",
        "dtype=torch.bool, device=q.device\n        ).triu()",
        "tests/test_sdpa_arguments.py",
    ),
    M(
        "sdpa-additive-mask-ignored",
        A + "attention/__init__.py",
        "scores = scores + bias.to(device=scores.device, dtype=scores.dtype)",
        "scores = scores",
        "tests/test_sdpa_arguments.py",
    ),
    M(
        "sdpa-dropout-before-normalising",
        A + "attention/__init__.py",
        "weights = torch.nn.functional.dropout(weights, dropout_p)",
        "weights = weights * (1 - dropout_p)",
        "tests/test_sdpa_arguments.py",
    ),
    M(
        "mha-key-padding-polarity-flipped",
        A + "layers.py",
        'kpm = additive(key_padding_mask, True, "key_padding_mask")',
        'kpm = additive(key_padding_mask, False, "key_padding_mask")',
        "tests/test_layers.py",
    ),
    M(
        "mha-state-dict-q-and-k-swapped",
        A + "layers.py",
        'for name, w in zip("qkv", packed.split(e)):',
        'for name, w in zip("kqv", packed.split(e)):',
        "tests/test_layers.py",
    ),
    M(
        "mha-dropout-at-evaluation",
        A + "layers.py",
        "dropout_p=self.dropout if self.training else 0.0",
        "dropout_p=self.dropout",
        "tests/test_layers.py",
    ),
    M(
        "encoder-pre-norm-second-block-unnormalised",
        A + "layers.py",
        "x = x + self._feed_forward(self.norm2(x))",
        "x = x + self._feed_forward(x)",
        "tests/test_layers.py",
    ),
    M(
        "entmax-loss-mean-over-all-rows",
        A + "normalizers/modules.py",
        'return total if self.reduction == "sum" else total / keep.sum()',
        'return total if self.reduction == "sum" else total / keep.numel()',
        "tests/test_entmax_modules.py",
    ),
    M(
        "entmax-loss-ignored-rows-kept",
        A + "normalizers/modules.py",
        "losses = losses * keep",
        "losses = losses",
        "tests/test_entmax_modules.py",
    ),
    M(
        "learned-alpha-without-softplus-inverse",
        A + "normalizers/modules.py",
        "self.rho = nn.Parameter(torch.log(torch.expm1(start - 1)))",
        "self.rho = nn.Parameter(start - 1)",
        "tests/test_entmax_modules.py",
    ),
    M(
        "nw-weights-ignored-in-the-denominator",
        A + "kernel_regression/estimators.py",
        "return sums[:, :-1] / total",
        "return sums[:, :-1]",
        "tests/test_estimators.py",
    ),
    M(
        "nw-bandwidth-candidates-accept-zero",
        A + "kernel_regression/estimators.py",
        "bad = ~(np.isfinite(grid) & (grid > 0))",
        "bad = ~(np.isfinite(grid) & (grid >= 0))",
        T_KR,
    ),
    M(
        "nw-loo-errors-unweighted",
        A + "kernel_regression/estimators.py",
        "return float(np.average(errors, weights=weights))",
        "return float(np.average(errors))",
        "tests/test_estimators.py",
    ),
    M(
        "train-clips-after-the-step",
        A + "training.py",
        "nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)\n"
        "        opt.step()",
        "opt.step()\n"
        "        nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)",
        "tests/test_training.py",
    ),
    M(
        "train-divergence-step-off-by-the-batch",
        A + "training.py",
        "first = len(history) + int(bad[0, 0])",
        "first = len(history)",
        "tests/test_training.py",
    ),
    M(
        "train-seed-leaks-to-the-caller",
        A + "training.py",
        "with torch.random.fork_rng(devices=cuda):",
        "with contextlib.nullcontext():",
        T_TRAIN,
    ),
    M(
        "train-seed-not-applied",
        A + "training.py",
        "torch.default_generator.manual_seed(seed)",
        "pass",
        T_TRAIN,
    ),
    M(
        "scorers-score-in-training-mode",
        A + "training.py",
        "model.eval()  # a module's own train() override, if any, still runs",
        "pass",
        T_TRAIN,
        T_CONT_X,
        "tests/test_mux_experiments_scores.py",
        T_SYM_X,
    ),
    M(
        "strings-parsed-as-numbers",
        A + "utils/validation.py",
        'if kind in ("U", "S"):',
        "if False:",
        T_UTILS,
        "tests/test_battery.py",
    ),
]
