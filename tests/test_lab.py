"""`make lab` as the README tells a reader to use it: JupyterLab on `book/`.

It executes a chapter.

The server is started headless by `make lab` itself, on 127.0.0.1 with a random token
and private Jupyter directories (so that nothing of the user's own Jupyter set-up takes
part). The test asks it for JupyterLab's page and for a chapter through the contents
API, opens a session for that chapter as JupyterLab does, and executes every code cell
of the chapter through the kernel's websocket (the Jupyter messaging protocol, as the
browser speaks it). The kernel must be this environment's Python, with `attnlib`
importable. Then the server is shut down.
"""

import asyncio
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = "03_nonlocal_means.ipynb"  # the quickest chapter to execute (about 15 s)
CELL_TIMEOUT = 300


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    def __init__(self, port, token):
        self.base, self.token = f"http://127.0.0.1:{port}", token

    def request(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", f"token {self.token}")
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=60) as response:
            text = response.read().decode()
        return (
            json.loads(text) if text and text.lstrip().startswith(("{", "[")) else text
        )


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    home = tmp_path_factory.mktemp("jupyter")
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    for name in ("CONFIG", "DATA", "RUNTIME"):
        env[f"JUPYTER_{name}_DIR"] = str(home / name.lower())
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    args = (
        f"--no-browser --ServerApp.port={port} --ServerApp.port_retries=0 "
        f"--IdentityProvider.token={token}"
    )
    server = subprocess.Popen(
        ["make", "-s", "lab", f"LAB_ARGS={args}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    client = Lab(port, token)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, (
                "make lab exited:\n" + server.stdout.read()[-3000:]
            )
            assert time.monotonic() < deadline, "JupyterLab did not answer within 180 s"
            try:
                client.request("GET", "/api/status")
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        yield client
    finally:
        try:
            client.request("POST", "/api/shutdown")
            server.wait(timeout=60)
        except Exception:
            if server.poll() is None:
                os.killpg(server.pid, signal.SIGTERM)
                server.wait(timeout=60)


def test_lab_serves_jupyterlab_and_refuses_strangers(lab):
    assert "JupyterLab" in lab.request("GET", "/lab")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(lab.base + "/api/contents", timeout=30)
    assert refused.value.code == 403


def test_lab_root_is_the_book(lab):
    listing = lab.request("GET", "/api/contents")
    names = {item["name"] for item in listing["content"]}
    chapters = {p.name for p in (ROOT / "book").glob("*.ipynb")}
    assert chapters and chapters <= names, sorted(chapters - names)


async def _run_cells(lab, kernel_id, sources):
    """Run each source on the kernel via its websocket; return what cells printed."""
    url = f"ws://{lab.base.removeprefix('http://')}/api/kernels/{kernel_id}/channels"
    ws = await websocket_connect(
        HTTPRequest(url, headers={"Authorization": f"token {lab.token}"})
    )
    session, printed = uuid.uuid4().hex, []
    try:
        for index, code in enumerate(sources):
            msg_id = uuid.uuid4().hex
            header = {
                "msg_id": msg_id,
                "session": session,
                "username": "test",
                "msg_type": "execute_request",
                "version": "5.3",
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            content = {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            }
            ws.write_message(
                json.dumps(
                    {
                        "header": header,
                        "parent_header": {},
                        "metadata": {},
                        "content": content,
                        "channel": "shell",
                        "buffers": [],
                    }
                )
            )
            reply, idle = None, False
            while reply is None or not idle:
                raw = await asyncio.wait_for(ws.read_message(), CELL_TIMEOUT)
                assert raw is not None, "the kernel's websocket closed"
                if not isinstance(raw, str):
                    continue  # binary frames carry buffers (widgets): not ours
                msg = json.loads(raw)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind = msg["msg_type"]
                if kind == "execute_reply":
                    reply = msg["content"]
                elif kind == "status" and msg["content"]["execution_state"] == "idle":
                    idle = True
                elif kind == "stream":
                    printed.append(msg["content"]["text"])
                elif kind == "error":
                    printed.append("\n".join(msg["content"]["traceback"]))
            assert reply["status"] == "ok", (
                f"cell {index} failed:\n{printed[-1] if printed else reply}"
            )
    finally:
        ws.close()
    return "".join(printed)


def test_a_chapter_executes_through_the_servers_kernel(lab):
    notebook = lab.request("GET", f"/api/contents/{CHAPTER}?content=1&type=notebook")[
        "content"
    ]
    sources = [
        "".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"
    ]
    assert len(sources) > 5
    kernel_name = notebook["metadata"]["kernelspec"]["name"]
    session = lab.request(
        "POST",
        "/api/sessions",
        {
            "path": CHAPTER,
            "type": "notebook",
            "name": CHAPTER,
            "kernel": {"name": kernel_name},
        },
    )
    probe = "import sys, attnlib\nprint(sys.executable)\nprint(attnlib.__file__)"
    try:
        printed = asyncio.run(
            _run_cells(lab, session["kernel"]["id"], [probe, *sources])
        )
    finally:
        lab.request("DELETE", f"/api/sessions/{session['id']}")
    python, module = printed.splitlines()[:2]
    assert Path(python).parent == Path(sys.executable).parent, (
        f"the kernel runs {python}, not this environment"
    )
    assert Path(module).resolve().is_relative_to(ROOT / "attnlib"), module
    # the setup cell's banner: attnlib <version>, torch ...
    assert "attnlib" in printed.splitlines()[2]
