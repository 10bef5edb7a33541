"""The named mutants of the mutation campaign (``make mutate``, ``tools/mutate.py``).

Each mutant is one plausible bug a developer could write: a sign, a factor of two, an
off-by-one, a dropped term, a wrong default, a swapped argument, a missing residual, a
wrong axis. It is given as a snippet of a library file and its replacement, and names
the test files that should notice it. A snippet is matched token by token: whitespace,
line breaks, comments and a formatter's trailing comma between its tokens do not matter
(:func:`locate`), so reformatting the code keeps every mutant. A snippet that is not
found exactly once makes the campaign refuse to run (STALE), so that a mutant cannot
silently stop testing anything after the code itself changes: update the snippet.

A mutant is placed by its function as well as its file: ``where`` names the function
(``"attention"``, ``"NadarayaWatson.fit"``), found in the file's syntax tree, and the
snippet is looked for inside that function only. A function that moves to another
module of the package is found there (:func:`resolve`), so splitting a module keeps its
mutants; a snippet needs to be unique only within its function.

Mutants sit on core lines (the mathematics, the wiring, the defaults and initial
values), not on argument validation or docstrings. ``accepted`` explains a mutant that
the tests are known not to kill and why that is acceptable (an equivalent mutant, or a
property the library does not promise); the report prints it next to the survivor.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

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


def scopes(text: str) -> dict[str, tuple[int, int]]:
    """Every function and class of ``text`` by qualified name: its ``(start, end)``."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    found: dict[str, tuple[int, int]] = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                found[name] = (starts[first - 1], starts[child.end_lineno])
                visit(child, name + ".")

    visit(ast.parse(text), "")
    return found


def spans_in(text: str, mutant: Mutant) -> list[tuple[int, int]]:
    """The snippet's spans in ``text``, inside the mutant's function if it names one."""
    if not mutant.where:
        return locate(text, mutant.original)
    scope = scopes(text).get(mutant.where)
    if scope is None:
        return []
    start, end = scope
    return [(start + a, start + b) for a, b in locate(text[start:end], mutant.original)]


def resolve(mutant: Mutant, root: Path) -> tuple[str, list[tuple[int, int]]]:
    """The file (from ``root``) that holds the mutant's snippet, and its spans there.

    The mutant's own file first; a mutant placed by function whose function is not
    there any more is looked for in every module of the package that file was in
    (the function moved), and found there if exactly one module defines it.
    """
    path = root / mutant.file
    if path.exists():
        spans = spans_in(path.read_text(), mutant)
        if spans or not mutant.where:
            return mutant.file, spans
    if mutant.where:
        package = root / Path(mutant.file).parts[0]
        homes = [
            p
            for p in sorted(package.rglob("*.py"))
            if mutant.where in scopes(p.read_text())
        ]
        if len(homes) == 1:
            return str(homes[0].relative_to(root)), spans_in(
                homes[0].read_text(), mutant
            )
    return mutant.file, []


def apply(text: str, mutant: Mutant) -> str:
    """``text`` with the mutant's one occurrence replaced (ValueError unless one)."""
    spans = spans_in(text, mutant)
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
    where: str = ""  # the function (qualified name) that holds the snippet


def M(name, file, original, replacement, *tests, accepted="", where=""):
    return Mutant(name, file, original, replacement, tuple(tests), accepted, where)


T_ATT = "tests/test_attention.py"
T_KR = "tests/test_kernel_regression.py"
T_KS = "tests/test_kernel_regression_kernelsums.py"
T_KR_LOO = "tests/test_kernel_regression_loo.py"
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
T_CALLS = (
    "tests/test_benchmarks.py::test_calls_goals_and_the_cap_on_the_largest_fit",
    "tests/test_benchmarks.py::test_calls_agreement_compares_gradients_too",
)
T_EMOD = "tests/test_entmax_modules.py"
T_L = "tests/test_layers.py::"
T_B52 = "tests/test_bad_input_52.py::"

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
        where="smallest_text_px",
    ),
    M(
        "raster-text-ignores-its-dpi",
        "tools/reading_audit.py",
        'return points / 72 * (dpi or 100) * fig["shown"] / fig["natural"]',
        "return points / 72 * 100",
        "tests/test_site.py::test_the_reading_checks_fail_on_planted_problems",
        where="smallest_text_px",
    ),
    M(
        "lesson-check-cells-folded-too",
        "book/_ext/claim_badges.py",
        'if "claim-lesson" in box["classes"]:',
        "if False:",
        "tests/test_claim_badges.py",
        where="_place",
    ),
    M(
        "badge-without-execution-count",
        "book/_ext/claim_badges.py",
        'attributes["data-exec-count"] = str(node["exec_count"])',
        "pass",
        "tests/test_claim_badges.py",
        where="_visit_details",
    ),
    # ------------------------------------------------------------------ attention
    M(
        "scaled-dot-temperature-d-not-sqrt-d",
        A + "functional/scores.py",
        "temperature = math.sqrt(d) if score",
        "temperature = d if score",
        T_ATT,
        where="default_temperature",
    ),
    M(
        "neg-sq-dist-without-half",
        A + "functional/scores.py",
        "return -0.5 * sq.clamp_min(0)",
        "return -sq.clamp_min(0)",
        T_ATT,
        where="_neg_sq_dist",
    ),
    M(
        "neg-l1-is-euclidean",
        A + "functional/scores.py",
        "return -torch.cdist(q, k, p=1)",
        "return -torch.cdist(q, k, p=2)",
        T_ATT,
        where="_neg_l1",
    ),
    # ------------------------------------------------------------ kernel regression
    M(
        "boxcar-open-boundary",
        A + "kernel_regression/core.py",
        '(SCORES["neg_sq_dist"](q, k) >= -0.5)',
        '(SCORES["neg_sq_dist"](q, k) > -0.5)',
        T_KR,
        where="_boxcar",
    ),
    M(
        "epanechnikov-half-width",
        A + "kernel_regression/core.py",
        'return (1 + 2 * SCORES["neg_sq_dist"](q, k)).clamp_min(0)',
        'return (1 + SCORES["neg_sq_dist"](q, k)).clamp_min(0)',
        T_KR,
        where="_epanechnikov",
    ),
    M(
        "biweight-is-epanechnikov",
        A + "kernel_regression/core.py",
        "return _epanechnikov(q, k) ** 2",
        "return _epanechnikov(q, k) ** 1",
        T_KR,
        where="_biweight",
    ),
    M(
        "metric-nw-initial-metric-not-scaled",
        A + "kernel_regression/estimators.py",
        "torch.from_numpy(directions[:p] / self.init_bandwidth_)",
        "torch.from_numpy(directions[:p] * 1.0)",
        T_KR,
        where="MetricNadarayaWatson.fit",
    ),
    M(
        "metric-nw-loss-keeps-self",
        A + "kernel_regression/estimators.py",
        "model(X[idx], X, y, mask=not_self)",
        "model(X[idx], X, y)",
        T_KR,
        where="_loo_loss",
    ),
    M(
        "loo-predictions-without-mask",
        A + "kernel_regression/core.py",
        "_kernel_attention(xt, xt, y, kernel, bandwidth, mask=not_self)",
        "_kernel_attention(xt, xt, y, kernel, bandwidth)",
        T_KR,
        where="_loo",
    ),
    M(
        "gaussian-scale-not-squared",
        A + "kernel_regression/core.py",
        '1 / bandwidth / bandwidth if kernel == "gaussian"',
        '1 / bandwidth if kernel == "gaussian"',
        T_KR,
        where="_kernel_attention",
    ),
    M(
        "kernel-sums-gaussian-without-half",
        A + "kernel_regression/_kernelsums.py",
        "1 / bandwidth if l1 else 0.5 / bandwidth / bandwidth",
        "1 / bandwidth if l1 else 1 / bandwidth / bandwidth",
        T_KS,
        T_KR,
        where="lane_sums",
    ),
    M(
        "kernel-sums-exp64-coefficient",
        A + "utils/fastexp.py",
        "p = p * f + 1 / 720\n",
        "p = p * f + 1 / 700\n",
        T_KS,
        where="_exp64",
    ),
    M(
        "kernel-sums-rescale-sign",
        A + "kernel_regression/_kernelsums.py",
        "old_scale = math.exp(-c * (low - new))",
        "old_scale = math.exp(c * (low - new))",
        T_KS,
        T_KR,
        where="_nw_block",
    ),
    # -------------------------------------------------------------------- denoise
    M(
        "denoiser-learned-bandwidth-scale-halved",
        A + "denoise/learned.py",
        "torch.exp(2 * self.log_h_scale.double())",
        "torch.exp(self.log_h_scale.double())",
        T_DEN,
        where="PatchAttentionDenoiser.forward",
    ),
    M(
        "denoiser-positional-score-halved",
        A + "denoise/learned.py",
        '2 * SCORES["neg_sq_dist"](pos, pos) / (hh * ww)',
        'SCORES["neg_sq_dist"](pos, pos) / (hh * ww)',
        T_DEN,
        where="PatchAttentionDenoiser.forward",
    ),
    M(
        "denoiser-heads-averaged-twice",
        A + "denoise/learned.py",
        "* out).sum(1)  # (B, n, C)",
        "* out).mean(1)  # (B, n, C)",
        T_DEN,
        where="PatchAttentionDenoiser.forward",
    ),
    M(
        "denoiser-window-strict",
        A + "denoise/common.py",
        "return (queries[:, None, :] - keys[None, :, :]).abs().amax(-1) <= radius",
        "return (queries[:, None, :] - keys[None, :, :]).abs().amax(-1) < radius",
        T_DEN,
        where="_window_mask",
    ),
    M(
        "patch-kernel-width",
        A + "denoise/filters.py",
        "a = (s - 1) / 4",
        "a = (s - 1) / 2",
        T_DEN,
        where="_patch_kernel",
    ),
    M(
        "patch-tokens-ignore-channels",
        A + "denoise/filters.py",
        "(g2 / (c * g2.sum())).sqrt() / h",
        "(g2 / g2.sum()).sqrt() / h",
        T_DEN,
        where="_patch_tokens",
    ),
    M(
        "gaussian-filter-radius-truncated",
        A + "denoise/filters.py",
        "radius = int(min(truncate * sigma + 0.5, max(h, w)))",
        "radius = int(min(truncate * sigma, max(h, w)))",
        T_DEN,
        where="gaussian_filter_attention",
    ),
    M(
        "nlm-compiled-symmetric-half-dropped",
        A + "denoise/_nlm.py",
        "bwd[j] += w[j]",
        "bwd[j] += 0.0 * w[j]",
        T_DEN,
        where="_nlm_strip",
    ),
    # ------------------------------------------------------------------------ LLE
    M(
        "lle-sign-convention-flipped",
        A + "lle/embedding.py",
        "signs = np.sign(vectors[np.abs(vectors).argmax(0)",
        "signs = -np.sign(vectors[np.abs(vectors).argmax(0)",
        T_LLE,
        T_LLE_E,
        where="lle_embedding",
    ),
    M(
        "lle-ridge-not-scaled-by-trace",
        A + "lle/weights.py",
        "torch.where(trace > 0, reg * trace, ",
        "torch.where(trace > 0, reg + 0 * trace, ",
        T_LLE,
        where="barycenter_weights",
    ),
    M(
        "lle-weights-not-normalised",
        A + "lle/weights.py",
        "w = w / w.sum(-1, keepdim=True)",
        "w = w",
        T_LLE,
        where="barycenter_weights",
    ),
    M(
        "lle-cost-matrix-transposed",
        A + "lle/embedding.py",
        "M = (A.T @ A).tocsc()",
        "M = (A @ A.T).tocsc()",
        T_LLE,
        T_LLE_E,
        where="lle_embedding",
    ),
    M(
        "lle-transform-ignores-reg",
        A + "lle/embedding.py",
        "_weights_on_neighbors(X, self.X_fit_, ind, self.reg, dense=False)",
        "_weights_on_neighbors(X, self.X_fit_, ind, 0.0, dense=False)",
        T_LLE,
        T_LLE_E,
        where="LocallyLinearEmbedding.transform",
    ),
    # ------------------------------------------------------------------- subspace
    M(
        "ssc-objective-without-half",
        A + "subspace/expression.py",
        "return float(0.5 * (R * R).sum() + (lam * l1).sum())",
        "return float((R * R).sum() + (lam * l1).sum())",
        T_SUB,
        where="ssc_objective",
    ),
    M(
        "lsr-zero-diagonal-wrong-axis",
        A + "subspace/expression.py",
        "return np.eye(N) - Z / np.diag(Z)[:, None]",
        "return np.eye(N) - Z / np.diag(Z)[None, :]",
        T_SUB,
        where="_lsr",
    ),
    M(
        "lrsc-shrinks-sigma-not-sigma-squared",
        A + "subspace/expression.py",
        "weights = np.maximum(1.0 - lam / sigma**2, 0.0)",
        "weights = np.maximum(1.0 - lam / sigma, 0.0)",
        T_SUB,
        where="_lrsc",
    ),
    M(
        "affinity-l2-without-sqrt",
        A + "subspace/clustering.py",
        'scale = np.sqrt(scale) if normalize == "l2" else scale',
        "scale = scale",
        T_SUB,
        where="affinity",
    ),
    M(
        "affinity-keep-off-by-one",
        A + "subspace/clustering.py",
        "cut = -np.partition(-W, keep - 1, axis=1)[:, keep - 1 : keep]",
        "cut = -np.partition(-W, keep, axis=1)[:, keep : keep + 1]",
        T_SUB,
        where="_keep_largest",
    ),
    M(
        "ista-step-not-squared",
        A + "subspace/sparse_coding.py",
        "/ torch.linalg.matrix_norm(k, ord=2)\n            .square()",
        "/ torch.linalg.matrix_norm(k, ord=2)\n            .abs()",
        T_SC,
        where="_ista_codes",
    ),
    M(
        "ista-threshold-not-scaled-by-step",
        A + "subspace/sparse_coding.py",
        "C = shrink(C - s_t * (C @ kk - qk), s_t * lam_t)",
        "C = shrink(C - s_t * (C @ kk - qk), lam_t)",
        T_SC,
        where="_ista_codes",
    ),
    M(
        "clustering-accuracy-minimises",
        A + "subspace/clustering.py",
        "linear_sum_assignment(counts, maximize=True)",
        "linear_sum_assignment(counts)",
        T_SUB,
        where="clustering_accuracy",
    ),
    M(
        "unrolled-ista-initial-step",
        A + "subspace/sparse_coding.py",
        "torch.full((n_iter,), math.log(math.e - 1))",
        "torch.full((n_iter,), 0.0)",
        T_SC,
        T_SEX,
        where="UnrolledISTAAttention.__init__",
    ),
    # ---------------------------------------------------------------------- lasso
    M(
        "soft-threshold-loses-sign",
        A + "subspace/_lasso/common.py",
        "return torch.sign(x) * torch.relu(x.abs() - threshold)",
        "return torch.relu(x.abs() - threshold)",
        T_LASSO,
        T_SUB,
        where="soft_threshold",
    ),
    M(
        "ista-lipschitz-not-squared",
        A + "subspace/_lasso/iterative.py",
        "np.full((len(self.rows), 1), np.linalg.norm(self.X, 2) ** 2)",
        "np.full((len(self.rows), 1), np.linalg.norm(self.X, 2))",
        T_LASSO,
        T_SUB,
        where="DenseKeys.lipschitz",
    ),
    # ---------------------------------------------------------------- normalizers
    M(
        "fenchel-young-masked-scores-not-zeroed",
        A + "normalizers/tsallis.py",
        "theta = scores.masked_fill(torch.isneginf(scores), 0.0)",
        "theta = scores",
        T_NORM,
        where="_fenchel_young",
    ),
    M(
        "tsallis-entropy-without-alpha",
        A + "normalizers/tsallis.py",
        "return (1 - p.pow(alpha).sum(dim)) / (alpha * (alpha - 1))",
        "return (1 - p.pow(alpha).sum(dim)) / (alpha - 1)",
        T_NORM,
        where="_tsallis_entropy",
    ),
    M(
        "softmax-backward-drops-p",
        A + "normalizers/maps.py",
        "return pg - p * pg.sum(-1, keepdim=True)",
        "return pg - pg.sum(-1, keepdim=True)",
        T_NORM,
        where="_Softmax.backward",
    ),
    M(
        "entmax-backward-exponent",
        A + "normalizers/_entmax.py",
        "s = torch.where(support, p_in.pow(2 - alpha), 0)",
        "s = torch.where(support, p_in.pow(alpha - 1), 0)",
        T_NORM,
        where="entmax_alpha_vjp",
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
        A + "functional/_triton_flash.py",
        "if tl.max(tl.max(z, axis=1), axis=0) > 0:",
        "if tl.max(tl.max(z, axis=1), axis=0) > 1:",
        T_TRI,
    ),
    M(
        "flash-causal-excludes-the-diagonal",
        A + "functional/_triton_flash.py",
        "keep = keep & (offs_n[None, :] <= offs_m[:, None])",
        "keep = keep & (offs_n[None, :] < offs_m[:, None])",
        T_TRI,
    ),
    M(
        "flash-dk-unscaled",
        A + "functional/_triton_flash.py",
        "offs_n, skn, n_k, offs_d, d, dk * scale)",
        "offs_n, skn, n_k, offs_d, d, dk)",
        T_TRI,
    ),
    M(
        "flash-mask-broadcast-over-queries-lost",
        A + "functional/_triton_flash.py",
        "m4 = m.reshape(-1, *m.shape[-3:]).expand(-1, b[-1], n_q, n_k)",
        "m4 = m.reshape(-1, *m.shape[-3:])[..., :1, :].expand(-1, b[-1], n_q, n_k)",
        T_TRI,
        where="flash_entmax_attention",
    ),
    M(
        "flash-overflow-not-flagged",
        A + "functional/_triton_flash.py",
        'out = tl.where(bad[:, None], float("nan"), out)',
        "out = out",
        T_TRI,
    ),
    M(
        "flash-all-minus-inf-row-not-flagged",
        A + "functional/_triton_flash.py",
        '| (~empty & (m == float("-inf")))',
        "",
        T_TRI,
    ),
    M(
        "flash-ignores-the-temperature",
        A + "functional/_fused.py",
        "scale=1 / default_temperature(temperature, score, q.shape[-1]),\n    )",
        "scale=None,\n    )",
        T_TRI,
        where="flash",
    ),
    M(
        "refused-kernel-not-caught",
        A + "utils/kernels.py",
        "except REFUSALS as err:",
        "except ZeroDivisionError as err:",
        T_TRI,
        where="launch",
    ),
    M(
        "rows-dispatch-bypasses-the-kernels",
        A + "normalizers/maps.py",
        "if not low and triton_entmax.accepts(x):",
        "if False:",
        T_TRI,
        where="_Entmax.forward",
    ),
    M(
        "attention-dispatch-bypasses-flash",
        A + "functional/_fused.py",
        "and triton_flash.accepts(q, k, v)",
        "and False",
        T_TRI,
        where="flashable",
    ),
    M(
        "entmax-bisection-too-few-steps",
        A + "normalizers/_entmax.py",
        "n_iter = 64 if z.dtype == torch.float64 else 36",
        "n_iter = 16 if z.dtype == torch.float64 else 12",
        T_NORM,
        where="entmax_bisect",
    ),
    M(
        "entmax-compiled-slope",
        A + "normalizers/_entmax_loops.c",
        "    case 2:\n        return SQRT(p);",
        "    case 2:\n        return p;",
        T_NORM,
    ),
    M(
        "no-torch-fallback-without-a-compiler",
        A + "normalizers/maps.py",
        "ctx.compiled = newton and on_cpu and entmax_loops.available()",
        "ctx.compiled = newton and on_cpu",
        T_NORM + "::test_without_a_working_compiler_the_torch_engine_serves",
        where="_Entmax.forward",
    ),
    M(
        "exp-beta-not-clamped",
        A + "normalizers/tsallis.py",
        "return (1 + (1 - beta) * u).clamp_min(0).pow(1 / (1 - beta))",
        "return (1 + (1 - beta) * u).pow(1 / (1 - beta))",
        T_NORM,
        where="exp_beta",
    ),
    M(
        "log-beta-sign",
        A + "normalizers/tsallis.py",
        "return (u.pow(1 - beta) - 1) / (1 - beta)",
        "return (u.pow(1 - beta) - 1) / (beta - 1)",
        T_NORM,
        where="log_beta",
    ),
    # ----------------------------------------------------------------- continuous
    M(
        "moment-matched-variance-not-centred",
        A + "continuous/modules.py",
        "var = (weights @ positions**2 - mu**2).clamp_min(0)",
        "var = (weights @ positions**2).clamp_min(0)",
        T_CONT,
        T_CONT_X,
        where="ContinuousAttention1D.forward",
    ),
    M(
        "grid-cells-at-corners",
        A + "continuous/modules.py",
        "rows = (torch.arange(height, dtype=dtype, device=device) + 0.5) / height",
        "rows = torch.arange(height, dtype=dtype, device=device) / height",
        T_CONT,
        T_CONT_X,
        where="_grid_positions",
    ),
    M(
        "moment-matched-covariance-not-centred",
        A + "continuous/modules.py",
        'torch.einsum("bl,bli,blj->bij", weights, centred, centred)',
        'torch.einsum("bl,bli,blj->bij", weights, positions, positions)',
        T_CONT,
        T_CONT_X,
        where="ContinuousAttention2D.forward",
    ),
    M(
        "ridge-penalty-dropped",
        A + "continuous/basis.py",
        "torch.linalg.cholesky(F.T @ F + lam * eye)",
        "torch.linalg.cholesky(F.T @ F + eye)",
        T_CONT,
        where="_ridge_operator",
    ),
    M(
        "rbf-2d-normaliser-1d",
        A + "continuous/basis.py",
        "- 0.5 * d * torch.log(2 * math.pi * s2)",
        "- 0.5 * torch.log(2 * math.pi * s2)",
        T_CONT,
        where="GaussianRBF._values",
    ),
    M(
        "truncated-parabola-threshold-exponent",
        A + "continuous/densities.py",
        "0.5 * (1.5 / torch.sqrt(s)) ** (2 / 3)",
        "0.5 * (1.5 / torch.sqrt(s)) ** (1 / 3)",
        T_CONT,
        where="truncated_parabola_pdf",
    ),
    M(
        "truncated-parabola-radius",
        A + "continuous/integrals.py",
        "return (1.5 * sigma2) ** (1 / 3)",
        "return (3 * sigma2) ** (1 / 3)",
        T_CONT,
        where="_tp_radius",
    ),
    M(
        "continuous-1d-backward-variance-factor",
        A + "continuous/attention.py",
        "grad_s2 = (grad_r * cov_xx).sum(-1) / (2 * sigma2 * sigma2)",
        "grad_s2 = (grad_r * cov_xx).sum(-1) / (sigma2 * sigma2)",
        T_CONT,
        where="_ContinuousAttention1D.backward",
    ),
    M(
        "gaussian-2d-normaliser-det",
        A + "continuous/integrals.py",
        "/ (2 * math.pi * torch.sqrt(det))",
        "/ (2 * math.pi * det)",
        T_CONT,
        where="_gauss_cov_2d",
    ),
    # ------------------------------------------------------------------- symmetry
    M(
        "rbf-kernel-ignores-a",
        A + "symmetry/heads.py",
        "q = y @ a\n",
        "q = y\n",
        T_SYM,
        T_SYM_X,
        where="_heads",
    ),
    M(
        "linear-value-not-transposed",
        A + "symmetry/heads.py",
        "else (heads @ w.transpose(-2, -1)).sum(-3)",
        "else (heads @ w).sum(-3)",
        T_SYM,
        T_SYM_X,
        where="KnowledgeAttention.forward",
    ),
    M(
        "knowledge-attention-residual-dropped",
        A + "symmetry/heads.py",
        "h = h + mixed if self.residual else mixed",
        "h = mixed",
        T_SYM,
        T_SYM_X,
        where="KnowledgeAttention.forward",
    ),
    M(
        "higher-order-moment-wrong-count",
        A + "symmetry/heads.py",
        "second_moment = y.transpose(-2, -1) @ y / y.shape[-2]",
        "second_moment = y.transpose(-2, -1) @ y / y.shape[-1]",
        T_SYM,
        T_SYM_X,
        where="_heads",
    ),
    M(
        "householder-projection-not-reflection",
        A + "symmetry/groups.py",
        "- 2 * torch.outer(u, u) / norm2",
        "- torch.outer(u, u) / norm2",
        T_SYM,
        where="householder",
    ),
    M(
        "quadratic-kernel-default-temperature-one",
        A + "symmetry/heads.py",
        'score="scaled_dot",',
        'score="dot",',
        T_SYM,
        T_SYM_X,
        where="_heads",
    ),
    M(
        "random-orthogonal-without-sign-fix",
        A + "symmetry/groups.py",
        "return (q * torch.where(signs == 0, torch.ones_like(signs), signs)).to(dtype)",
        "return q.to(dtype)",
        T_SYM,
        where="random_orthogonal",
    ),
    # ------------------------------------------------------------------------ mux
    M(
        "conv-router-residual-dropped",
        A + "mux/models.py",
        "h = h + torch.relu(\n                conv(h)\n            )",
        "h = torch.relu(\n                conv(h)\n            )",
        T_MUX,
        where="ConvRouter.forward",
    ),
    M(
        "positions-added-to-queries-only",
        A + "mux/models.py",
        "q, k = q + self.pos[: x.shape[1]], k + self.pos[: x.shape[1]]",
        "q, k = q + self.pos[: x.shape[1]], k",
        T_MUX,
        where="AttentionRouter.attend",
    ),
    M(
        "conv-matrix-kernel-flipped",
        A + "mux/tasks.py",
        "kernel[(offsets + half).clamp(0, 2 * half)]",
        "kernel[(half - offsets).clamp(0, 2 * half)]",
        T_MUX,
        where="conv_matrix",
    ),
    M(
        "straight-through-gradient-sign",
        A + "normalizers/hard.py",
        "return hardmax(scores) + soft - soft.detach()",
        "return hardmax(scores) - soft + soft.detach()",
        T_MUX,
        where="straight_through_hardmax",
    ),
    M(
        "weekday-target-ignores-rota",
        A + "mux/tasks.py",
        "target = prefs.gather(1, rota[day][:, None]).squeeze(1)",
        "target = prefs.gather(1, day[:, None]).squeeze(1)",
        T_MUX,
        where="weekday_task",
    ),
    M(
        "conv-router-receptive-field-off-by-one",
        A + "mux/models.py",
        "self.receptive_field = 1 + depth * (kernel_size - 1)",
        "self.receptive_field = depth * (kernel_size - 1)",
        T_MUX,
        where="ConvRouter.__init__",
    ),
    # ----------------------------------------------------- utils, training, data
    M(
        "set-seed-ignores-seed-for-torch",
        A + "utils/runtime.py",
        "torch.manual_seed(seed)",
        "torch.manual_seed(0)",
        T_UTILS,
        where="set_seed",
    ),
    M(
        "to-device-skips-named-tuples",
        A + "training.py",
        "return type(batch)(*(to_device(x, device) for x in batch))",
        "return batch",
        T_TRAIN,
        where="to_device",
    ),
    M(
        "train-never-zeroes-gradients",
        A + "training.py",
        "opt.zero_grad(set_to_none=True)",
        "pass",
        T_TRAIN,
        where="_steps",
    ),
    M(
        "translation-targets-inverse-permutation",
        A + "data.py",
        "tgt_words = torch.empty_like(words).scatter_(1, perm, words)",
        "tgt_words = words.gather(1, perm)",
        T_DATA,
        where="shuffled_translation",
    ),
    M(
        "caption-target-is-word-slot",
        A + "data.py",
        "target[b, 2 * j : 2 * j + 2] = i",
        "target[b, 2 * j : 2 * j + 2] = j",
        T_DATA,
        where="captioned_images",
    ),
    # ---------------------------------------------------------------- experiments
    M(
        "green-function-scale",
        A + "mux/experiments/routing.py",
        "(n + 1 - np.maximum.outer(i, i)) / (n + 1)",
        "(n + 1 - np.maximum.outer(i, i)) / n",
        T_ROUTE,
        where="green_function",
    ),
    M(
        "span-weights-off-by-one",
        A + "continuous/experiments/documents.py",
        "(pos < start[:, None] + self.span)",
        "(pos <= start[:, None] + self.span)",
        T_CONT_X,
        where="DocumentClassifier._span_weights",
    ),
    M(
        "combined-model-drops-discrete-context",
        A + "continuous/experiments/documents.py",
        "context = context + cont.context",
        "context = cont.context",
        T_CONT_X,
        where="DocumentClassifier.forward",
    ),
    M(
        "monotone-alignment-scale",
        A + "continuous/experiments/alignment.py",
        "* (S - 1) / (T - 1)",
        "* S / T",
        T_CONT_X,
        where="monotone_alignment",
    ),
    M(
        "closed-groups-weak-components",
        A + "lle/experiments.py",
        'connected_components(mask, connection="strong")',
        'connected_components(mask, connection="weak")',
        T_MANI,
        where="closed_groups",
    ),
    M(
        "cnn-parameter-count-drops-a-bias",
        A + "denoise/experiments/cnn.py",
        "return k2 * w + w + k2 * w * w + w + k2 * w + 1",
        "return k2 * w + w + k2 * w * w + k2 * w + 1",
        T_DENX,
        where="cnn_matching.count",
    ),
    M(
        "heatmap-signed-colours-not-centred",
        A + "plotting/heatmaps.py",
        "lo = -lim if vmin is None else vmin",
        "lo = 0.0 if vmin is None else vmin",
        T_PLOT,
        where="_scale",
    ),
    M(
        "heatmap-zeros-not-drawn-apart",
        A + "plotting/heatmaps.py",
        "shown = np.ma.masked_equal(W, 0.0) if zero_color is not None else W",
        "shown = W",
        T_PLOT,
        where="attention_heatmap",
    ),
    M(
        "slider-shows-every-frame",
        A + "plotting/slider.py",
        "f\"{'' if i == self.default else ' hidden'}>\"",
        "f\"{''}>\"",
        T_PLOT,
        where="FrameSlider._repr_html_",
    ),
    M(
        "table-keeps-the-numeric-index",
        A + "plotting/tables.py",
        "    if not index:",
        "    if index:",
        T_PLOT,
        where="table",
    ),
    M(
        "self-expressive-net-keeps-diagonal",
        A + "subspace/experiments/held_out.py",
        "C = C * (1 - torch.eye(C.shape[0], dtype=C.dtype, device=C.device))",
        "C = C * torch.ones_like(C)",
        T_SEX,
        where="SelfExpressiveNet.forward",
    ),
    M(
        "learned-ista-step-range",
        A + "subspace/experiments/held_out.py",
        "base * 2 * torch.sigmoid(self.raw_step[t])",
        "base * torch.sigmoid(self.raw_step[t])",
        T_SEX,
        where="LearnedISTACodes.forward",
    ),
    M(
        "sequences-needed-interpolates-linearly",
        A + "symmetry/experiments/curves.py",
        "np.exp(np.interp(np.log(target), np.log(errors[::-1]), np.log(sizes[::-1])))",
        "np.interp(target, errors[::-1], sizes[::-1])",
        T_SYM_X,
        where="sequences_needed",
    ),
    M(
        "scaled-input-mean-not-sum",
        A + "symmetry/experiments/baselines.py",
        "self.scale.data = ((x * y).sum() / power).to(dtype)",
        "self.scale.data = ((x * y).mean() / power).to(dtype)",
        T_SYM_X,
        where="ScaledInput.fit",
    ),
    M(
        "tuning-validates-on-the-training-part",
        A + "symmetry/experiments/curves.py",
        "return (x[:-n_val], y[:-n_val]), (x[-n_val:], y[-n_val:])",
        "return (x[:-n_val], y[:-n_val]), (x[:-n_val], y[:-n_val])",
        T_SYM_X,
        where="_split",
    ),
    M(
        "accuracy-last-batch-dropped",
        A + "continuous/experiments/classify.py",
        "for i in range(0, n, batch):",
        "for i in range(0, n - batch + 1, batch):",
        T_CONT_X,
        where="accuracy",
    ),
    # --- issue 38: torch's and entmax's conventions, sample weights, train()
    M(
        "sdpa-scale-not-inverted",
        A + "functional/_arguments.py",
        'temperature = 1 / check_positive(scale, "scale")',
        'temperature = check_positive(scale, "scale")',
        "tests/test_sdpa_arguments.py",
        where="sdpa_arguments",
    ),
    M(
        "sdpa-subnormal-scale-accepted",
        A + "functional/_arguments.py",
        "if math.isinf(temperature):",
        "if math.isnan(temperature):",
        "tests/test_sdpa_arguments.py",
        where="sdpa_arguments",
    ),
    M(
        "sdpa-causal-mask-upper",
        A + "functional/_dense.py",
        "dtype=torch.bool, device=device).tril()",
        "dtype=torch.bool, device=device).triu()",
        "tests/test_sdpa_arguments.py",
        where="_triangle",
    ),
    M(
        "sdpa-additive-mask-ignored",
        A + "functional/_dense.py",
        "scores = scores + bias.to(dtype=scores.dtype)",
        "scores = scores",
        "tests/test_sdpa_arguments.py",
        where="weights_path",
    ),
    M(
        "sdpa-dropout-before-normalising",
        A + "functional/_dense.py",
        "weights = torch.nn.functional.dropout(weights, dropout_p)",
        "weights = weights * (1 - dropout_p)",
        "tests/test_sdpa_arguments.py",
        where="weights_path",
    ),
    # --- issue 49 (functional): the SDPA-shaped function, SDPA's refusals, numerics
    M(
        "gqa-heads-tiled-not-interleaved",
        A + "functional/_arguments.py",
        "return k.repeat_interleave(hq // hk, -3), v.repeat_interleave(hq // hk, -3)",
        "return torch.cat([k] * (hq // hk), -3), torch.cat([v] * (hq // hk), -3)",
        "tests/test_sdpa_function.py",
        where="repeat_heads",
    ),
    M(
        "float16-scaled-after-the-product",
        A + "functional/_dense.py",
        "scores, temperature = score_fn(q * root, k * root), 1.0",
        "scores = score_fn(q, k)",
        "tests/test_sdpa_function.py",
        where="weights_path",
    ),
    M(
        "masked-nan-value-reaches-the-output",
        A + "functional/_dense.py",
        "return weights @ v.masked_fill(bad_keys.unsqueeze(-1), 0.0)",
        "return weights @ v",
        "tests/test_sdpa_function.py",
        where="_checked_output",
    ),
    M(
        "mixed-dtypes-accepted",
        A + "functional/_arguments.py",
        "if ref is not None and x.dtype != ref.dtype:",
        "if False:",
        "tests/test_sdpa_function.py",
        where="_tensor",
    ),
    M(
        "mixed-devices-accepted",
        A + "functional/_arguments.py",
        "if ref is not None and x.device != ref.device:",
        "if False:",
        "tests/test_sdpa_function.py",
        where="_tensor",
    ),
    M(
        "mask-on-another-device-accepted",
        A + "functional/_arguments.py",
        "elif mask.device != device:",
        "elif False:",
        "tests/test_sdpa_function.py",
        where="check_mask",
    ),
    M(
        "sdpa-mask-with-causal-accepted",
        A + "functional/sdpa.py",
        "if is_causal and attn_mask is not None:",
        "if False:",
        "tests/test_sdpa_function.py",
        where="scaled_dot_product_attention",
    ),
    M(
        "host-finite-check-always-passes",
        A + "utils/validation.py",
        "return math.isfinite(total.item()) or",
        "return True or",
        "tests/test_sdpa_function.py",
        where="finite_on_host",
    ),
    M(
        "empty-rows-not-zeroed",
        A + "functional/_dense.py",
        "weights = weights.masked_fill(empty, 0.0)",
        "weights = weights",
        "tests/test_sdpa_arguments.py",
        where="weights_path",
    ),
    M(
        "score-callable-shape-unchecked",
        A + "functional/_dense.py",
        "if callable(score):\n        _check_scores_shape(",
        "if False:\n        _check_scores_shape(",
        "tests/test_sdpa_function.py",
        where="weights_path",
    ),
    M(
        "additive-mask-keeps-the-masked-keys",
        A + "functional/_dense.py",
        "return torch.where(mask, *ends)",
        "return torch.where(~mask, *ends)",
        "tests/test_sdpa_function.py",
        where="_zero_or_minus_inf",
    ),
    M(
        "traced-skips-nothing-under-vmap",
        A + "utils/validation.py",
        "if functorch.is_batchedtensor(t):\n            return True",
        "if functorch.is_batchedtensor(t):\n            return False",
        "tests/test_compile.py",
        where="traced",
    ),
    M(
        "entmax-loss-mean-over-all-rows",
        A + "normalizers/modules.py",
        'return total if self.reduction == "sum" else total / keep.sum()',
        'return total if self.reduction == "sum" else total / keep.numel()',
        "tests/test_entmax_modules.py",
        where="_FenchelYoungLoss.forward",
    ),
    M(
        "entmax-loss-ignored-rows-kept",
        A + "normalizers/modules.py",
        "losses = torch.where(keep, losses, 0.0)",
        "losses = losses",
        "tests/test_entmax_modules.py",
        where="_FenchelYoungLoss.forward",
    ),
    M(
        "learned-alpha-without-softplus-inverse",
        A + "normalizers/modules.py",
        "self.rho = nn.Parameter(_softplus_inverse(alpha))",
        "self.rho = nn.Parameter(torch.as_tensor(alpha, dtype=torch.float32) - 1)",
        "tests/test_entmax_modules.py",
        where="Entmax.__init__",
    ),
    M(
        "nw-weights-ignored-in-the-denominator",
        A + "kernel_regression/_bandwidth.py",
        "return sums[:, :-1] / total",
        "return sums[:, :-1]",
        "tests/test_estimators.py",
        where="_ratio",
    ),
    M(
        "nw-bandwidth-candidates-accept-zero",
        A + "kernel_regression/_bandwidth.py",
        "bad = ~(np.isfinite(grid) & (grid > 0))",
        "bad = ~(np.isfinite(grid) & (grid >= 0))",
        T_KR,
        where="_candidates",
    ),
    M(
        "nw-loo-errors-unweighted",
        A + "kernel_regression/_bandwidth.py",
        "np.average(errors, axis=0, weights=weights)",
        "np.average(errors, axis=0)",
        "tests/test_estimators.py",
        where="_loo_errors",
    ),
    M(
        "train-clips-after-the-step",
        A + "training.py",
        "nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)\n"
        "        opt.step()",
        "opt.step()\n"
        "        nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)",
        "tests/test_training.py",
        where="_steps",
    ),
    M(
        "train-divergence-step-off-by-the-batch",
        A + "training.py",
        "first = len(history) + int(bad[0, 0])",
        "first = len(history)",
        "tests/test_training.py",
        where="_steps",
    ),
    M(
        "train-seed-leaks-to-the-caller",
        A + "training.py",
        "with torch.random.fork_rng(devices=cuda):",
        "with contextlib.nullcontext():",
        T_TRAIN,
        where="_seeded",
    ),
    M(
        "train-seed-not-applied",
        A + "training.py",
        "torch.default_generator.manual_seed(seed)",
        "pass",
        T_TRAIN,
        where="_seeded",
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
        where="evaluating",
    ),
    M(
        "strings-parsed-as-numbers",
        A + "utils/validation.py",
        'if kind in ("U", "S"):',
        "if False:",
        T_UTILS,
        "tests/test_battery.py",
        where="check_numeric",
    ),
    # ------------------------------------------- issue 52: refusals and limits (lead)
    M(
        "density-gradient-nan-outside-support",
        A + "continuous/densities.py",
        "torch.where(inside, x, torch.zeros_like(x)), "
        "torch.where(inside, scale, torch.ones_like(scale)),",
        "x, scale,",
        T_CONT,
        where="_where_positive",
    ),
    M(
        "patch-tokens-h-squared-before-root",
        A + "denoise/filters.py",
        "scale = ((g2 / (c * g2.sum())).sqrt() / h).repeat_interleave(c)",
        "scale = (g2 / (c * h * h * g2.sum())).sqrt().repeat_interleave(c)",
        T_DEN,
        where="_patch_tokens",
    ),
    M(
        "patch-tokens-overflow-not-refused",
        A + "denoise/filters.py",
        "if not torch.isfinite(scale).all():",
        "if False:",
        T_DEN,
        where="_patch_tokens",
    ),
    M(
        "patch-kernel-integer-dtype-accepted",
        A + "denoise/filters.py",
        "if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):",
        "if False:",
        T_DEN,
        where="patch_kernel",
    ),
    M(
        "train-seed-unchecked",
        A + "training.py",
        'seed = check_int(seed, "seed", minimum=0, maximum=SEED_MAX)',
        "pass",
        T_TRAIN,
        where="train",
    ),
    M(
        "fit-and-score-nan-data-scored",
        A + "symmetry/experiments/curves.py",
        '_check_finite({"train_data": train_data, **tests})',
        "pass",
        T_SYM_X,
        where="fit_and_score",
    ),
    # plotting, issue 47: diagrams, coefficient maps, sharp figures (one block)
    M(
        "diagram-legibility-ignores-the-column",
        A + "plotting/diagrams/drawing.py",
        "shown = min(1.0, column_px / ((box.width + 0.1) * 96.0))",
        "shown = 1.0",
        T_PLOT,
        where="smallest_text_px",
    ),
    M(
        "simplex-diagram-draws-softmax-as-sparsemax",
        A + "plotting/diagrams/chapters_05_08.py",
        "p_sparse = sparsemax(th, dim=-1)[0].numpy()",
        "p_sparse = softmax(th, dim=-1)[0].numpy()",
        T_PLOT,
        where="simplex_projection",
    ),
    M(
        "lookup-diagram-scales-its-printed-scores",
        A + "plotting/diagrams/chapters_01_04.py",
        'score="dot").weights[0]',
        ").weights[0]",
        T_PLOT,
        where="qkv_lookup",
    ),
    M(
        "block-shares-sum-signed-coefficients",
        A + "plotting/blocks.py",
        "A = np.abs(C)\n    S = np.array(",
        "A = C\n    S = np.array(",
        T_PLOT,
        where="block_shares",
    ),
    M(
        "block-shares-normalise-by-columns",
        A + "plotting/blocks.py",
        "total = S.sum(1, keepdims=True)",
        "total = S.sum(0, keepdims=True)",
        T_PLOT,
        where="block_shares",
    ),
    M(
        "coefficient-maps-share-one-maximum",
        A + "plotting/blocks.py",
        "top = A.max(1, keepdims=True)",
        "top = A.max(keepdims=True)",
        T_PLOT,
        where="coefficient_maps",
    ),
    M(
        "slider-frames-at-one-x",
        A + "plotting/slider.py",
        'fig.savefig(buf, format="png", dpi=SHARPNESS * dpi, bbox_inches=box)',
        'fig.savefig(buf, format="png", dpi=dpi, bbox_inches=box)',
        T_PLOT,
        where="frame_slider",
    ),
    M(
        "sharp-png-declares-its-pixel-width",
        A + "plotting/style.py",
        "width = image.size[0] // SHARPNESS",
        "width = image.size[0]",
        T_PLOT,
        where="_sharp_png",
    ),
    # ----------------------------------- benchmarks/calls.py (issue 50, item 5)
    M(
        "calls-fit-cap-inverted",
        "benchmarks/calls.py",
        'if done[5000]["fit_cpu_s"] > FIT_SKIP_AFTER_S:',
        'if done[5000]["fit_cpu_s"] < FIT_SKIP_AFTER_S:',
        *T_CALLS,
        where="skip_reason",
    ),
    M(
        "calls-goal-verdict-inverted",
        "benchmarks/calls.py",
        "met = None if value is None else bool(value <= bound)",
        "met = None if value is None else bool(value >= bound)",
        *T_CALLS,
        where="_verdict",
    ),
    M(
        "calls-agreement-ignores-gradients",
        "benchmarks/calls.py",
        "d = max([d] + [(a - b).abs().max().item() for a, b in pairs])",
        "d = d",
        *T_CALLS,
        where="agreement",
    ),
    # -- notation (issue 47, item 6): the main source cited by its title, not anonymous
    M(
        "main-source-cited-as-anonymous",
        "book/references.bib",
        "author = {{Attention: Self-Expression Is All You Need}},",
        "author = {{Anonymous}},",
        "tests/test_notation.py::test_the_main_source_is_cited_by_its_title",
        "tests/test_claims.py::test_source_keys_are_the_bibliographys_author_year_labels",
    ),
    M(
        "ledger-key-of-main-source-stale",
        "book/_ext/claims_lib.py",
        '"Attention: Self-Expression Is All You Need (2022)",',
        '"Anonymous (2022)",',
        "tests/test_claims.py::test_sources_are_named_by_their_papers",
        "tests/test_claims.py::test_source_keys_are_the_bibliographys_author_year_labels",
    ),
    # ------------------------------------- issue 49/50 (sklearn helper): the streamed
    # leave-one-out choice, weights as copies, LLE's neighbours, the slim core
    M(
        "loo-sums-keep-the-point-itself",
        A + "kernel_regression/_loo_sums.py",
        "w[i - start] = 0.0",
        "w[i - start] = w[i - start]",
        T_KR_LOO,
        where="_loo_rows",
    ),
    M(
        "loo-sums-shift-by-the-point-itself",
        A + "kernel_regression/_loo_sums.py",
        "if start <= i < stop:\n                    dist[i - start] = np.inf",
        "if start <= i < stop:\n                    dist[i - start] = dist[i - start]",
        T_KR_LOO,
        where="_loo_rows",
    ),
    M(
        "loo-sums-twin-not-shifted-to-zero",
        A + "kernel_regression/_loo_sums.py",
        "low = 0.0 if twin[i] else np.inf",
        "low = np.inf",
        T_KR_LOO,
        where="_loo_rows",
    ),
    M(
        "loo-sums-gaussian-without-the-half",
        A + "kernel_regression/_loo_sums.py",
        "(0.5 if k == 0 else 1.0)",
        "(1.0 if k == 0 else 1.0)",
        T_KR_LOO,
        where="loo_sums",
    ),
    M(
        "loo-weights-leave-no-copy-in",
        A + "kernel_regression/_bandwidth.py",
        "twins = np.maximum(weights - 1, 0)",
        "twins = np.zeros_like(weights)",
        T_KR_LOO,
        "tests/test_estimators.py",
        where="_loo_errors",
    ),
    M(
        "loo-undefined-candidate-kept",
        A + "kernel_regression/_bandwidth.py",
        "defined = (total > 0).all(0)",
        "defined = (total >= 0).all(0)",
        T_KR_LOO,
        where="_loo_errors",
    ),
    M(
        "weighted-median-pairs-added",
        A + "kernel_regression/_bandwidth.py",
        "np.multiply.outer(w, w)",
        "np.add.outer(w, w)",
        T_KR_LOO,
        where="_default_bandwidths",
    ),
    M(
        "nw-predicts-from-zero-weight-points",
        A + "kernel_regression/estimators.py",
        "keep = slice(None) if weights is None or not soft else weights > 0",
        "keep = slice(None)",
        T_KR_LOO,
        where="NadarayaWatson.fit",
    ),
    M(
        "lle-neighbors-algorithm-dropped",
        A + "lle/embedding.py",
        "algorithm=self.neighbors_algorithm,",
        "",
        "tests/test_lle_embedding.py",
        where="LocallyLinearEmbedding.fit",
    ),
    M(
        "scipy-planted-in-the-core",
        A + "errors.py",
        "from __future__ import annotations",
        "from __future__ import annotations\n\nimport scipy  # noqa: F401",
        "tests/test_dependencies.py",
    ),
    # ------------- entmax's public face, all -inf rows, opt-in checked kernels (entmax)
    M(
        "all-minus-inf-row-not-zeroed",
        A + "normalizers/maps.py",
        "out = out.masked_fill(dead, 0)",
        "out = out",
        T_EMOD,
        where="_Entmax.forward",
    ),
    M(
        "softmax-all-minus-inf-row-not-zeroed",
        A + "normalizers/maps.py",
        "p = p.masked_fill_(dead, 0)",
        "p = p",
        T_EMOD,
        where="_Softmax.forward",
    ),
    M(
        "compiled-backward-nan-on-all-minus-inf-row",
        A + "normalizers/maps.py",
        "grad = grad.masked_fill_(ctx.dead, 0)",
        "grad = grad",
        T_EMOD,
        where="_Entmax.backward",
    ),
    M(
        "vjp-divides-by-an-empty-support",
        A + "normalizers/_entmax.py",
        "total = torch.where(total > 0, total, 1)",
        "total = total",
        T_EMOD,
        where="entmax_vjp",
    ),
    M(
        "alpha-below-one-sent-to-newton",
        A + "normalizers/maps.py",
        "else 1 < alpha <= 2",
        "else alpha <= 2",
        T_EMOD,
        where="_Entmax.forward",
    ),
    M(
        "normmax-threshold-exponent",
        A + "normalizers/_normmax.py",
        "r, e = 1 / (alpha - 1), alpha / (alpha - 1)",
        "r, e = 1 / (alpha - 1), 1 / (alpha - 1)",
        T_EMOD,
        where="_Normmax.forward",
    ),
    M(
        "normmax-backward-norm-power",
        A + "normalizers/_normmax.py",
        ".pow((alpha - 1) / alpha)",
        ".pow(1 / alpha)",
        T_EMOD,
        where="_Normmax.backward",
    ),
    M(
        "budget-backward-keeps-the-mean",
        A + "normalizers/_normmax.py",
        "g_in - g_in.sum(-1, keepdim=True) / size",
        "g_in",
        T_EMOD,
        where="_Budget.backward",
    ),
    M(
        "budget-bracket-from-a-masked-entry",
        A + "normalizers/_normmax.py",
        "torch.where(finite, x, torch.inf).amin(-1, keepdim=True)",
        "x.amin(-1, keepdim=True)",
        T_EMOD,
        where="_Budget.forward",
    ),
    M(
        "entmax15-threshold-sign",
        A + "normalizers/packaged.py",
        "torch.where(p > 0, X - p.sqrt(), 0)",
        "torch.where(p > 0, X + p.sqrt(), 0)",
        T_EMOD,
        where="_entmax_threshold_and_support",
    ),
    M(
        "entmax-bisect-alpha-buffer-saved",
        A + "normalizers/packaged.py",
        "self.register_buffer(name, value, persistent=False)",
        "self.register_buffer(name, value, persistent=True)",
        T_EMOD,
        where="_WithIndex.__init__",
    ),
    M(
        "normmax-loss-without-its-constant",
        A + "normalizers/losses.py",
        "+ 1 - p.pow(alpha).sum(-1).pow(1 / alpha)",
        "- p.pow(alpha).sum(-1).pow(1 / alpha)",
        T_EMOD,
        where="_normmax_loss",
    ),
    M(
        "unverified-kernels-on-by-default",
        A + "utils/kernels.py",
        'return flag != "0" and (flag == "1" or family in VERIFIED)',
        'return flag != "0"',
        T_TRI + "::test_cuda_rows_go_to_the_kernels_only_when_asked",
        where="enabled",
    ),
    M(
        "probe-verdict-ignored",
        A + "utils/kernels.py",
        "_probed[key] = verdict is None",
        "_probed[key] = True",
        T_TRI + "::test_the_probe_catches_a_wrong_rows_kernel_once",
        where="probed",
    ),
    M(
        "probe-without-long-rows",
        A + "normalizers/_triton_entmax.py",
        "PROBE_COLS = (7, 2500)",
        "PROBE_COLS = (7,)",
        T_TRI + "::test_the_probe_catches_a_wrong_rows_kernel_once",
    ),
    M(
        "probe-skips-the-backward",
        A + "normalizers/_triton_entmax.py",
        "if not ((gx64 - ref_g).abs() <= 4 * tol * gscale).all():",
        "if False:",
        T_TRI + "::test_the_probe_catches_a_wrong_rows_kernel_once",
        where="_probe",
    ),
    M(
        "flash-probe-ignored",
        A + "functional/_triton_flash.py",
        "if not kernels.flash_checked(flash_entmax_attention, kind, q, entmax,"
        " BLOCK_N + 6):",
        "if False:",
        T_TRI
        + "::test_the_flash_probe_passes_a_correct_kernel_and_catches_a_wrong_one",
        where="flash_entmax_attention",
    ),
    M(
        "flash-probe-output-not-compared",
        A + "utils/kernels.py",
        "if not err <= FLASH_TOL[dtype]:",
        "if False:",
        T_TRI
        + "::test_the_flash_probe_passes_a_correct_kernel_and_catches_a_wrong_one",
        where="probe_flash",
    ),
    # ---------------------------------------------- layers (issue 49, item 1): torch's
    # defaults, parameters and state dicts both ways; the masks in torch's shapes
    M(
        "mha-value-projection-from-kdim",
        A + "layers/multihead.py",
        "self.v_proj_weight = nn.Parameter(torch.empty(e, self.vdim, **made))",
        "self.v_proj_weight = nn.Parameter(torch.empty(e, self.kdim, **made))",
        T_L + "test_outputs_equal_torchs_with_every_mask_after_loading_either_way",
        where="MultiHeadAttention.__init__",
    ),
    M(
        "mha-packed-biases-q-and-k-swapped",
        A + "layers/multihead.py",
        "(None,) * 3 if self.in_proj_bias is None else self.in_proj_bias.chunk(3)",
        "(None,) * 3 if self.in_proj_bias is None else "
        "self.in_proj_bias.chunk(3)[1::-1] + self.in_proj_bias.chunk(3)[2:]",
        T_L + "test_outputs_equal_torchs_with_every_mask_after_loading_either_way",
        where="MultiHeadAttention._projections",
    ),
    M(
        "mha-torch-init-biases-drawn",
        A + "layers/multihead.py",
        "nn.init.zeros_(self.in_proj_bias)",
        "nn.init.uniform_(self.in_proj_bias)",
        T_L + "test_the_same_seed_gives_torchs_parameters_under_torchs_names",
        where="MultiHeadAttention._reset_parameters",
    ),
    M(
        "mha-torch-init-out-proj-drawn-last",
        A + "layers/multihead.py",
        """self.out_proj.reset_parameters()
                if self._qkv_same_embed_dim:""",
        """if self._qkv_same_embed_dim:""",
        T_L + "test_the_same_seed_gives_torchs_parameters_under_torchs_names",
        where="MultiHeadAttention._reset_parameters",
    ),
    M(
        "mha-linear-init-bound-from-out-features",
        A + "layers/multihead.py",
        "bound = 1 / math.sqrt(w.shape[1])",
        "bound = 1 / math.sqrt(w.shape[0])",
        T_L + "test_init_linear_draws_each_projection_as_an_nn_linear",
        where="MultiHeadAttention._reset_parameters",
    ),
    M(
        "mha-bias-k-appended-to-values",
        A + "layers/multihead.py",
        "v = torch.cat([v, self.bias_v.expand(*v.shape[:-2], 1, -1)], -2)",
        "v = torch.cat([v, self.bias_k.expand(*v.shape[:-2], 1, -1)], -2)",
        T_L + "test_outputs_equal_torchs_with_every_mask_after_loading_either_way",
        where="MultiHeadAttention.forward",
    ),
    M(
        "mha-zero-attn-key-missing",
        A + "layers/multihead.py",
        "k = torch.cat([k, k.new_zeros(*k.shape[:-2], 1, k.shape[-1])], -2)",
        "k = torch.cat([k, k[..., -1:, :]], -2)",
        T_L + "test_outputs_equal_torchs_with_every_mask_after_loading_either_way",
        where="MultiHeadAttention.forward",
    ),
    M(
        "mha-sequence-first-output-not-transposed-back",
        A + "layers/multihead.py",
        "if self.batch_first is False and out.ndim == 3:",
        "if False:",
        T_L + "test_default_constructors_agree_on_sequence_first_input",
        where="MultiHeadAttention.forward",
    ),
    M(
        "mha-weights-not-averaged",
        A + "layers/multihead.py",
        "weights = weights.mean(-3)",
        "weights = weights",
        T_L + "test_default_constructors_agree_on_sequence_first_input",
        where="MultiHeadAttention.forward",
    ),
    M(
        "mha-value-defaults-to-query",
        A + "layers/multihead.py",
        "v_in = k_in if value is None or value is key else None",
        "v_in = q_in if value is None or value is key else None",
        T_ATT + "::test_multihead_equals_torch",
        where="MultiHeadAttention.forward",
    ),
    M(
        "mha-dropout-at-evaluation",
        A + "layers/multihead.py",
        "dropout_p=self.dropout if self.training else 0.0",
        "dropout_p=self.dropout",
        T_L + "test_dropout_acts_in_training_only",
        where="MultiHeadAttention.forward",
    ),
    M(
        "mha-torchs-fused-path-not-refused",
        A + "layers/multihead.py",
        "self.register_forward_pre_hook(_called_as_a_module)",
        "pass",
        T_L + "test_ours_works_as_self_attn_inside_torchs_encoder_layer",
        where="MultiHeadAttention.__init__",
    ),
    M(
        "mha-every-input-taken-as-checked",
        A + "layers/multihead.py",
        "if checking() and not any(x is c for c in self._checked):",
        "if False:",
        "tests/test_battery.py::test_bad_input[layers.MultiHeadAttention(query=None)]",
        where="MultiHeadAttention._tokens",
    ),
    M(
        "masks-key-padding-polarity-flipped",
        A + "layers/_masks.py",
        "parts.append(_keep(kpm, True)[..., None, None, :])",
        "parts.append(_keep(kpm, False)[..., None, None, :])",
        T_L + "test_outputs_equal_torchs_with_every_mask_after_loading_either_way",
        where="merge",
    ),
    M(
        "masks-per-head-mask-heads-outermost",
        A + "layers/_masks.py",
        "am = am.reshape(*batch, heads, n_q, n_k)",
        "am = am.reshape(heads, *batch, n_q, n_k).transpose(0, -3)",
        T_L + "test_outputs_equal_torchs_with_every_mask_after_loading_either_way",
        where="merge",
    ),
    M(
        "masks-per-sequence-mask-read-per-head",
        A + "layers/_masks.py",
        "elif am.ndim != 2 or tuple(am.shape) != (n_q, n_k):",
        "elif am.ndim > 3 or tuple(am.shape[-2:]) != (n_q, n_k):",
        T_L + "test_a_mask_per_sequence_is_not_read_per_head",
        where="merge",
    ),
    M(
        "masks-appended-keys-blocked",
        A + "layers/_masks.py",
        "fill = True",
        "fill = False",
        T_L + "test_outputs_equal_torchs_with_every_mask_after_loading_either_way",
        where="merge",
    ),
    M(
        "masks-bool-mask-blocks-the-kept-pairs",
        A + "layers/_masks.py",
        """masked_fill(
                    ~p, float("-inf")
                )""",
        """masked_fill(
                    p, float("-inf")
                )""",
        T_L + "test_outputs_equal_torchs_with_every_mask_after_loading_either_way",
        where="merge",
    ),
    M(
        "encoder-first-residual-dropped",
        A + "layers/encoder.py",
        "x = self.norm1(x + h)",
        "x = self.norm1(h)",
        T_L + "test_encoder_layer_equals_torchs_after_loading_either_way",
        where="TransformerEncoderLayer.forward",
    ),
    M(
        "encoder-pre-norm-second-block-unnormalised",
        A + "layers/encoder.py",
        "x = x + self._feed_forward(self.norm2(x))",
        "x = x + self._feed_forward(x)",
        T_L + "test_encoder_layer_equals_torchs_after_loading_either_way",
        where="TransformerEncoderLayer.forward",
    ),
    M(
        "encoder-dropout-default-zero",
        A + "layers/encoder.py",
        "dropout: float = 0.1,",
        "dropout: float = 0.0,",
        T_L + "test_encoder_layer_takes_torchs_defaults_and_its_seed",
        where="TransformerEncoderLayer.__init__",
    ),
    M(
        "encoder-feedforward-default-four-d-model",
        A + "layers/encoder.py",
        "dim_feedforward: int = 2048,",
        "dim_feedforward: int = 32,",
        T_L + "test_default_constructors_agree_on_sequence_first_input",
        where="TransformerEncoderLayer.__init__",
    ),
    M(
        "encoder-self-attn-bypasses-its-hooks",
        A + "layers/encoder.py",
        "return attn(query, memory, memory, **masks)",
        "return attn.forward(query, memory, memory, **masks)",
        T_L + "test_hooks_on_self_attn_fire_and_capture_the_attention_maps",
        where="attend_checked",
    ),
    M(
        "encoder-weights-not-returned",
        A + "layers/encoder.py",
        "return AttentionResult(x, weights) if need_weights else x",
        "return AttentionResult(x, None) if need_weights else x",
        T_L + "test_need_weights_returns_the_layers_attention_maps",
        where="TransformerEncoderLayer.forward",
    ),
    M(
        "decoder-attends-to-itself-not-memory",
        A + "layers/decoder.py",
        "self.multihead_attn, x, memory, masks,",
        "self.multihead_attn, x, x, masks,",
        T_L + "test_decoder_layer_equals_torchs_after_loading_either_way",
        where="TransformerDecoderLayer._cross_block",
    ),
    M(
        "decoder-memory-masks-on-the-self-attention",
        A + "layers/decoder.py",
        "attn_mask=tgt_mask, key_padding_mask=tgt_key_padding_mask,",
        "attn_mask=tgt_mask, key_padding_mask=memory_key_padding_mask,",
        T_L + "test_decoder_layer_equals_torchs_after_loading_either_way",
        where="TransformerDecoderLayer.forward",
    ),
    M(
        "decoder-pre-norm-cross-block-unnormalised",
        A + "layers/decoder.py",
        "x = x + self._cross_block(self.norm2(x), memory, cross)",
        "x = x + self._cross_block(x, memory, cross)",
        T_L + "test_decoder_layer_equals_torchs_after_loading_either_way",
        where="TransformerDecoderLayer.forward",
    ),
    M(
        "decoder-overflow-unchecked",
        A + "layers/decoder.py",
        "~torch.isfinite(x).all(),",
        "torch.zeros((), dtype=torch.bool),",
        "tests/test_battery.py::test_bad_input[layers.TransformerDecoderLayer(memory=x1e30)]",
        where="TransformerDecoderLayer.forward",
    ),
    # -- compile, export, vmap of the normalizers (issue 49, item 3; lead)
    M(
        "traced-entmax-leaves-masked-rows-uniform",
        A + "normalizers/_traced.py",
        "return _EntmaxRows.apply(z, top, alpha).masked_fill(dead, 0)",
        "return _EntmaxRows.apply(z, top, alpha)",
        "tests/test_compile.py",
        where="entmax_rows",
    ),
    M(
        "traced-entmax-no-alpha-gradient",
        A + "normalizers/_traced.py",
        "grad_alpha = entmax_engine.entmax_alpha_vjp(p, g, alpha)",
        "grad_alpha = torch.zeros_like(alpha)",
        "tests/test_compile.py",
        where="_EntmaxRows.backward",
    ),
    M(
        "traced-softmax-leaves-masked-rows-nan",
        A + "normalizers/_traced.py",
        "return torch.softmax(z, -1).masked_fill(dead, 0)",
        "return torch.softmax(x, -1)",
        "tests/test_compile.py",
        where="softmax_rows",
    ),
    M(
        "attention-skips-the-ndim-check-of-tensors",
        A + "functional/_arguments.py",
        "if x.ndim < 2:",
        "if False:",
        "tests/test_battery.py",
        "tests/test_attention.py",
        where="_tensor",
    ),
    # --- badinput ---
    # issue 52's remaining classes: each new check removed or inverted, each limit
    # computed the old way; each killed by its test in tests/test_bad_input_52.py
    M(
        "layer-norm-eps-unchecked",
        A + "layers/encoder.py",
        "layer_norm_eps = check_layer_norm_eps(layer_norm_eps)",
        "pass",
        T_B52 + "test_layer_norm_eps_torch_returns_nan_we_refuse",
        where="TransformerEncoderLayer.__init__",
    ),
    M(
        "layer-norm-eps-negative-accepted",
        A + "layers/multihead.py",
        "or not 0 <= eps < math.inf",
        "or not -math.inf < eps < math.inf",
        T_B52 + "test_layer_norm_eps_torch_returns_nan_we_refuse",
        where="check_layer_norm_eps",
    ),
    M(
        "norm-first-by-truthiness",
        A + "layers/decoder.py",
        'self.norm_first = check_flag(norm_first, "norm_first")',
        "self.norm_first = bool(norm_first)",
        T_B52 + "test_norm_first_is_a_flag_not_a_truthy_value",
        where="TransformerDecoderLayer.__init__",
    ),
    M(
        "learn-alpha-by-truthiness",
        A + "normalizers/modules.py",
        "if not isinstance(learn_alpha, bool):",
        "if False:",
        T_B52 + "test_learn_alpha_is_a_flag_not_a_truthy_value",
        where="Entmax.__init__",
    ),
    M(
        "learned-alpha-softplus-inverse-overflows",
        A + "normalizers/modules.py",
        "rho = (r + torch.log(-torch.expm1(-r))).to(torch.get_default_dtype())",
        "rho = torch.log(torch.expm1(r.to(torch.get_default_dtype())))",
        T_B52 + "test_a_learned_alpha_starts_where_asked_and_maps_as_the_package",
        where="_softplus_inverse",
    ),
    M(
        "learned-alpha-rounded-to-one-accepted",
        A + "normalizers/modules.py",
        "if not bool((torch.isfinite(held) & (held > 1)).all()):",
        "if False:",
        T_B52 + "test_a_learned_alpha_the_dtype_rounds_to_one_is_refused_when_built",
        where="_softplus_inverse",
    ),
    M(
        "fenchel-young-finite-at-a-dead-target",
        A + "normalizers/tsallis.py",
        "+ unreachable_target(scores, target)",
        "",
        T_B52 + "test_fenchel_young_at_alpha_one_is_cross_entropy_at_a_dead_target",
        where="_fenchel_young",
    ),
    M(
        "normmax-loss-finite-at-a-dead-target",
        A + "normalizers/losses.py",
        "return loss + unreachable_target(X, y)",
        "return loss",
        T_B52 + "test_the_package_functions_are_inf_where_the_packages_are",
        where="_normmax_loss",
    ),
    M(
        "dead-target-read-off-the-target",
        A + "normalizers/tsallis.py",
        "bad = ((target > 0) & torch.isneginf(scores)).any(-1)",
        "bad = torch.isneginf(scores).any(-1)",
        T_B52 + "test_a_dead_class_off_the_target_is_the_loss_without_that_class",
        where="unreachable_target",
    ),
    M(
        "index-target-any-integer-dtype",
        A + "normalizers/tsallis.py",
        "if target.dtype not in (torch.int64, torch.uint8):",
        "if target.dtype in (torch.float16,):",
        T_B52 + "test_class_index_dtypes_are_cross_entropys",
        where="check_index_dtype",
    ),
    M(
        "loss-module-ignored-rows-by-product",
        A + "normalizers/modules.py",
        "losses = torch.where(keep, losses, 0.0)",
        "losses = losses * keep",
        T_B52 + "test_loss_modules_are_inf_where_the_packages_are",
        where="_FenchelYoungLoss.forward",
    ),
    M(
        "nadaraya-watson-features-unscaled",
        A + "kernel_regression/estimators.py",
        "self._shift = _exponent(X)",
        "self._shift = 0",
        T_B52 + "test_nadaraya_watson_float32_is_scale_free",
        where="NadarayaWatson.fit",
    ),
    M(
        "nadaraya-watson-weights-unscaled",
        A + "kernel_regression/estimators.py",
        "np.ldexp(weights, -_exponent(weights))",
        "weights",
        T_B52 + "test_equal_sample_weights_of_any_size_predict_the_unweighted_average",
        where="NadarayaWatson.fit",
    ),
    M(
        "nadaraya-watson-loo-overflows-float32",
        A + "kernel_regression/estimators.py",
        "if not np.isfinite(values).all():",
        "if False:",
        T_B52 + "test_equal_sample_weights_of_any_size_predict_the_unweighted_average",
        where="NadarayaWatson._choose_bandwidth",
    ),
    M(
        "default-bandwidths-pair-weights-float32",
        A + "kernel_regression/_bandwidth.py",
        "w = weights[pick].astype(np.float64)",
        "w = weights[pick]",
        T_B52 + "test_equal_weights_give_the_unweighted_default_bandwidths",
        where="_default_bandwidths",
    ),
    M(
        "as-tensor-truncates-to-integers",
        A + "utils/validation.py",
        "_check_integral(t, name, dtype)",
        "pass",
        T_B52 + "test_as_tensor_to_an_integer_dtype_keeps_values_or_refuses",
        where="as_tensor",
    ),
    M(
        "paraboloid-overflowed-offset-nan",
        A + "continuous/densities.py",
        "return torch.where(torch.isfinite(s), q * s * s, "
        "torch.full_like(q, math.inf))",
        "return q * s * s",
        T_B52 + "test_truncated_paraboloid_at_the_dtypes_edge_is_zero_not_nan",
        where="_quadratic_form",
    ),
    M(
        "paraboloid-quadratic-form-unscaled",
        A + "continuous/densities.py",
        "u = torch.where(torch.isfinite(s), x / unit, torch.zeros_like(x))",
        "u, s = x, torch.ones_like(s)",
        T_B52 + "test_truncated_paraboloid_near_and_far_matches_numpy",
        where="_quadratic_form",
    ),
    M(
        "seed-unbounded",
        A + "utils/validation.py",
        "SEED_MAX = 2**64 - 1",
        "SEED_MAX = None",
        T_B52 + "test_a_bad_seed_is_refused_naming_seed",
    ),
    # --- speed ---
    M(
        "softmax-path-not-redone-on-nan",
        A + "functional/_dense.py",
        "return (out, weights) if finite_on_host(",
        "return (out, weights) if True or finite_on_host(",
        "tests/test_sdpa_function.py",
        where="softmax_path",
    ),
    M(
        "sdpa-once-not-redone-on-nan",
        A + "functional/_fused.py",
        "return out if finite_on_host(out) else None",
        "return out",
        "tests/test_sdpa_function.py",
        where="sdpa_once",
    ),
    M(
        "tiny-temperature-with-dropout-drawn-twice",
        A + "functional/core.py",
        "or (eager_cpu and not dropout_p)",
        "or eager_cpu",
        "tests/test_attention.py",
        where="_attention",
    ),
    # --- session: masks that are not numbers ---
    M(
        "string-mask-reaches-torch",
        A + "functional/_arguments.py",
        "except (TypeError, ValueError, RuntimeError) as err:",
        "except RuntimeError as err:",
        "tests/test_sdpa_function.py",
        where="_mask_from",
    ),
]
