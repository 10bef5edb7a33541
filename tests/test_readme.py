"""What README.md shows, followed as a new reader would follow it.

Every fenced Python block executes and its claims hold (re-checked here against
independent restatements); every `make <target>` it names exists;
`make serve` answers on loopback with the index page; the layout table names only paths
that exist and every top-level tracked path appears in it; the README links nothing
outside the repository; the statements about the set-up (Python versions, caching,
workers, the pinned torch, the install spec) match the files that make them true.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
MAKEFILE = (ROOT / "Makefile").read_text()
sys.path.insert(0, str(ROOT / "book"))
import notebook_tools  # noqa: E402


def _fenced(lang):
    return re.findall(rf"^```{lang}\n(.*?)^```", README, flags=re.S | re.M)


def _section(title):
    return README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_python_blocks_execute_and_their_claims_hold():
    blocks = _fenced("python")
    assert blocks, "the README shows no Python"
    torch.manual_seed(0)
    namespace = {}
    for block in blocks:  # one after the other, as a reader pastes them
        exec(compile(block, "README.md", "exec"), namespace)
    q, k, v = namespace["q"], namespace["k"], namespace["v"]
    # "scaled dot-product attention": PyTorch's own, weights as
    # softmax(q k^T / sqrt(d)).
    torch.testing.assert_close(
        namespace["out"], torch.nn.functional.scaled_dot_product_attention(q, k, v)
    )
    torch.testing.assert_close(
        namespace["weights"], torch.softmax(q @ k.T / 8**0.5, -1)
    )
    # "Nadaraya-Watson with a Gaussian kernel, sigma^2 = 0.5", written out by hand.
    gauss = torch.exp(-((q[:, None] - k[None]) ** 2).sum(-1) / (2 * 0.5))
    nw = gauss / gauss.sum(1, keepdim=True)
    torch.testing.assert_close(namespace["nw_weights"], nw)
    torch.testing.assert_close(namespace["nw_out"], nw @ v)
    # "the same projections": torch's packed in_proj_weight, split into q, k, v.
    ours, theirs = namespace["ours"], namespace["theirs"]
    torch.testing.assert_close(ours.in_proj_weight, theirs.in_proj_weight)
    torch.testing.assert_close(ours.in_proj_bias, theirs.in_proj_bias)
    # sparsemax: the entmax package's implementation.
    from entmax import sparsemax

    torch.testing.assert_close(
        namespace["sp_weights"], sparsemax(q @ k.T / 8**0.5, dim=-1)
    )


def test_install_line_is_the_colab_install_spec():
    assert f'pip install "{notebook_tools.install_spec()}"' in README


def test_every_make_target_named_exists():
    named = set(re.findall(r"`make ([a-z][a-z-]*)", README)) | set(
        re.findall(r"^make ([a-z][a-z-]*)", "\n".join(_fenced("bash")), flags=re.M)
    )
    listed = set(
        re.search(r"^Makefile +make (.*)$", README, flags=re.M).group(1).split(" | ")
    )
    targets = set(re.findall(r"^([a-z][a-z-]*):", MAKEFILE, flags=re.M))
    assert {"book", "test", "serve", "pdf", "lab", "test-latest"} <= named
    assert named | listed <= targets, sorted((named | listed) - targets)
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_setup_statements_match_the_files():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    # "make book caches executed notebooks"
    assert config["execute"]["execute_notebooks"] == "cache"
    # "two workers"
    assert "PYTEST_WORKERS ?= 2" in MAKEFILE and "-n $(PYTEST_WORKERS)" in MAKEFILE
    assert (
        "-n -W --keep-going" in README
        and '"-n", "-W", "--keep-going"' in (ROOT / "tests" / "conftest.py").read_text()
    )
    assert (
        "torch==2.13.0" in README
        and "torch==2.13.0\n" in (ROOT / "requirements.txt").read_text()
    )
    assert (
        "Python 3.11 or 3.12" in README
        and 'requires-python = ">=3.11"' in (ROOT / "pyproject.toml").read_text()
    )
    # make test installs chromium
    assert "apt-get install" in MAKEFILE.split("browser:")[1].split("\n\n")[0]
    assert (
        "attention-before-attention.pdf" in README
        and "book/attention-before-attention.pdf" in MAKEFILE
    )


def test_links_stay_inside_the_repository():
    links = re.findall(r"\]\(([^)]+)\)", README) + re.findall(
        r"<(https?://[^>]+)>", README
    )
    assert links, "the README links nothing"
    for link in links:
        if link.startswith("http"):
            assert link.startswith("http://127.0.0.1:"), (
                f"the README links outside the repository: {link}"
            )
            continue
        target = (ROOT / link.split("#")[0]).resolve()
        assert target.is_relative_to(ROOT) and target.exists(), (
            f"{link} is not a file of the repository"
        )
    assert "CONTRIBUTING.md" in links
    assert "../" not in README


def test_layout_names_every_top_level_path_and_only_existing_ones():
    table = re.search(r"## Layout\n\n```\n(.*?)```", README, flags=re.S).group(1)
    named = set()
    for line in table.splitlines():
        if line.startswith(" "):
            continue  # a continued description
        *paths, _description = re.split(r"\s{2,}", line.strip())
        named |= set(paths)
    assert named, "no layout table"
    for path in named:
        assert (ROOT / path).exists(), f"the layout names {path}, which does not exist"
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    top = {name.split("/")[0] + ("/" if "/" in name else "") for name in tracked}
    named_top = {p.split("/")[0] + ("/" if "/" in p else "") for p in named}
    missing = top - named_top
    assert missing == set(), (
        f"top-level paths missing from the layout table: {sorted(missing)}"
    )


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_serve_answers_on_loopback_with_the_index_page(tmp_path):
    (tmp_path / "index.html").write_text(
        "<html><body>Attention Before Attention (served)</body></html>"
    )
    port = _free_port()
    serve = subprocess.Popen(
        ["make", "-s", "serve", f"PORT={port}", f"HTML={tmp_path}"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline, body = time.monotonic() + 60, None
        while body is None and time.monotonic() < deadline and serve.poll() is None:
            try:
                body = (
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
                    .read()
                    .decode()
                )
            except OSError:
                time.sleep(0.3)
        assert body is not None, f"make serve did not answer: {serve.poll()=}"
        assert "Attention Before Attention (served)" in body
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        out, _ = serve.communicate(timeout=30)
    assert f"http://127.0.0.1:{port}" in out


def test_make_serve_without_a_site_says_what_to_do(tmp_path):
    done = subprocess.run(
        ["make", "-s", "serve", f"HTML={tmp_path}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and "make book" in done.stdout


def test_cpu_only_install_line_comes_before_attnlib():
    """On a CPU machine, pip would pull PyTorch's CUDA build as attnlib's dependency
    (gigabytes); the README shows the CPU-only wheel index first (issue 38)."""
    cpu = "pip install torch --index-url https://download.pytorch.org/whl/cpu"
    blocks = "\n".join(_fenced("bash"))
    assert cpu in blocks
    attnlib_line = f'pip install "{notebook_tools.install_spec()}"'
    assert blocks.index(cpu) < blocks.index(attnlib_line)
