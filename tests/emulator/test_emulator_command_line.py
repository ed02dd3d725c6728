"""The emulator's command line: `python -m lingodoc.emulator` and `lingodoc emulator`."""

from __future__ import annotations

import os
import queue
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

import lingodoc
from lingodoc.cli import main as cli_main
from lingodoc.emulator import __main__ as emulator_command
from lingodoc.emulator.__main__ import main
from tests.cli.conftest import child_env, run_command
from tests.waiting import PATIENCE

SRC = str(Path(lingodoc.__file__).resolve().parents[1])
TRANSLATE = {"text": "Welcome", "source_language": "en", "target_language": "fr"}


def subprocess_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


def start_command_line(
    code: str | None = None,
) -> tuple[subprocess.Popen[str], str, int, list[str]]:
    """Run the emulator (``code``, or ``python -m lingodoc.emulator``).

    Returns the process, its URL and port, and the lines it prints on start, up to the one
    that exports the key.
    """
    args = ["-c", code] if code else ["-m", "lingodoc.emulator", "--port", "0", "--quiet"]
    process = subprocess.Popen(
        [sys.executable, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(),
    )
    banner: queue.Queue[list[str]] = queue.Queue()

    def read_banner() -> None:
        assert process.stdout is not None
        lines = [process.stdout.readline()]
        while "LINGODOC_API_KEY=" not in lines[-1] and lines[-1] and len(lines) < 20:
            lines.append(process.stdout.readline())
        banner.put(lines)

    threading.Thread(target=read_banner, daemon=True).start()
    try:
        lines = banner.get(timeout=PATIENCE)
    except queue.Empty:
        lines = [""]
    url = re.search(r"running at (http://127\.0\.0\.1:(\d+)/v1)", lines[0])
    if url is None:
        process.kill()
        pytest.fail(f"the emulator did not start: {process.communicate()[1]}")
    return process, url[1], int(url[2]), lines


def stop_command_line(
    process: subprocess.Popen[str], *signals: signal.Signals, within: float = PATIENCE
) -> str:
    """Send the signals; return stderr once the process has exited ``within`` seconds.

    PATIENCE is well under the 60 s after which the server drops an idle keep-alive
    connection: a stop that waited for one fails. (That stop() ends such connections, not
    waits 5 s for their threads, is test_emulator_server.py's: no thread is left after it.)
    """
    try:
        for stop in signals:
            process.send_signal(stop)
        _, stderr = process.communicate(timeout=within)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return stderr


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_command_line_prints_url_and_key_and_stops_cleanly(stop: signal.Signals) -> None:
    process, url, _, banner = start_command_line()
    try:
        key = re.search(r"API key \(Full Access\): (ld_[0-9a-f]{32})$", banner[1].strip())
        assert key is not None
        with httpx.Client(headers={"Authorization": f"Bearer {key[1]}"}) as client:
            response = client.post(f"{url}/translate", json=TRANSLATE)
    finally:
        stderr = stop_command_line(process, stop)
    assert response.json()["data"]["translated_text"] == "Bienvenue"
    assert banner[-2].strip() == f"export LINGODOC_BASE_URL={url}"
    assert banner[-1].strip() == f"export LINGODOC_API_KEY={key[1]}"
    assert process.returncode == 0
    assert "Traceback" not in stderr
    assert "stopped" in stderr


@pytest.mark.parametrize("signals", [[signal.SIGINT]] * 3 + [[signal.SIGINT, signal.SIGTERM]])
def test_command_line_stops_at_once_with_a_keep_alive_connection_open(
    signals: list[signal.Signals],
) -> None:
    process, _, port, _ = start_command_line()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.sendall(b"GET /v1/documents HTTP/1.1\r\nHost: x\r\n\r\n")
        assert connection.recv(65536).startswith(b"HTTP/1.1 401")
        stderr = stop_command_line(process, *signals)
    # A second signal while it stops is not another interruption: exit 0, no traceback.
    # One that comes after the stop is over (the sender descheduled between its two
    # kills, on a loaded machine) finds the default handlers back, as any program's, and
    # ends the process by that signal; the stop itself was as clean.
    late = -signals[-1] if len(signals) > 1 else 0
    assert process.returncode in {0, late}, stderr
    assert "Traceback" not in stderr
    assert stderr.strip() == "lingodoc emulator stopped"


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX threads only")
def test_command_line_stops_on_a_signal_caught_by_another_thread() -> None:
    # A Ctrl-C the kernel hands to some other thread: Python's handler still runs on the main
    # thread, but only once that thread wakes up.
    code = (
        "import signal, sys, threading\n"
        "from lingodoc.emulator.__main__ import main\n"
        "def relay():\n"
        "    sys.stdin.readline()\n"
        "    signal.pthread_kill(threading.get_ident(), signal.SIGINT)\n"
        "threading.Thread(target=relay, daemon=True).start()\n"
        "sys.exit(main(['--port', '0', '--quiet']))\n"
    )
    process, _, _, _ = start_command_line(code)
    assert process.stdin is not None
    process.stdin.write("go\n")
    process.stdin.flush()
    stderr = stop_command_line(process)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr


def test_command_line_passes_each_setting_to_the_emulator(monkeypatch: pytest.MonkeyPatch) -> None:
    made: dict[str, object] = {}

    class Made(Exception):
        pass

    def emulator(**settings: object) -> None:
        made.update(settings)
        raise Made  # not served: the settings are what this test is about

    monkeypatch.setattr(emulator_command, "_CommandLineEmulator", emulator)
    with pytest.raises(Made):
        main(
            [
                *("--port", "0", "--queue-time", "2.5", "--job-duration", "3"),
                *("--rate-limit", "7", "--plan", "team", "--seats", "2"),
                *("--reset-style", "unix", "--api-key", "ld_k_1"),
            ]
        )
    assert made == {
        "plan": "team",
        "seats": 2,
        "rate_limit": 7,
        "reset_style": "unix",
        "job_duration": 3.0,
        "queue_time": 2.5,
        "api_key": "ld_k_1",
    }


def test_emulator_command_serves_until_stopped() -> None:
    command = [sys.executable, "-m", "lingodoc", "emulator", "--port", "0", "--quiet"]
    command += ["--api-key", "ld_cli_test_key_0000000000000000"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env()
    ) as process:
        try:
            assert process.stdout is not None
            first = process.stdout.readline()
            match = re.search(r"running at (http://127\.0\.0\.1:\d+/v1)", first)
            assert match, first
            env = child_env(
                LINGODOC_BASE_URL=match.group(1),
                LINGODOC_API_KEY="ld_cli_test_key_0000000000000000",
            )
            command = [sys.executable, "-m", "lingodoc", "translate", "Hello", "--to", "de"]
            run = run_command(command, env=env)
            assert (run.code, run.out) == (0, "Hallo\n"), run.err
        finally:
            process.terminate()  # SIGTERM: a clean stop
            process.wait(timeout=10)
    if os.name == "posix":
        assert process.returncode == 0


# The two commands that run it, in process: `lingodoc emulator` is the same main() under
# its own name, which its messages carry.
COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "python -m lingodoc.emulator": main,
    "lingodoc emulator": lambda args: cli_main(["emulator", *args]),
}


def run_in_process(command: str, args: list[str]) -> object:
    """The exit code of ``command`` with ``args``; a failure, not a hang, if it serves."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(COMMANDS[command](args))
        except SystemExit as exit:
            outcome.append(exit.code)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(PATIENCE)
    assert outcome, f"{command} {' '.join(args)} did not stop: it serves"
    return outcome[0]


KEY = "ld_0123456789abcdef0123456789abcdef"
DEFAULT_LIMIT = [
    "Rate limit: 1,000 requests an hour per key (plan pro, the default)",
    "  for more: --plan ultra (10,000 an hour) or --rate-limit N",
]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("args", "middle"),
    [
        ([], DEFAULT_LIMIT),
        (["--plan", "ultra"], ["Rate limit: 10,000 requests an hour per key (plan ultra)"]),
        (
            ["--plan", "team"],
            ["Rate limit: 5,000 requests an hour per key (plan team, 1 seat)"],
        ),
        (
            ["--plan", "business", "--seats", "2", "--api-key", KEY],
            ["Rate limit: 40,000 requests an hour per key (plan business, 2 seats)"],
        ),
        (["--rate-limit", "1"], ["Rate limit: 1 request an hour per key (--rate-limit 1)"]),
        (
            ["--plan", "ultra", "--rate-limit", "2500"],
            ["Rate limit: 2,500 requests an hour per key (--rate-limit 2500)"],
        ),
        (["--latency", "250"], [*DEFAULT_LIMIT, "Latency: each response held 250 ms"]),
        (
            ["--fail", "server_error:0.1", "--fail", "disconnect:0.05", "--seed", "42"],
            [
                *DEFAULT_LIMIT,
                "Faults: server_error (503) with probability 0.1, disconnect with probability "
                "0.05; --seed 42 repeats the draws",
            ],
        ),
    ],
)
def test_start_up_lines_say_the_rate_limit_and_how_to_keep_the_key(
    command: str,
    args: list[str],
    middle: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(secrets, "token_hex", lambda size: KEY[3:])  # the random key

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt  # Ctrl-C as soon as it has started

    monkeypatch.setattr(emulator_command, "time", SimpleNamespace(sleep=interrupted))
    assert COMMANDS[command]([*args, "--port", "0", "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # A random key, which a restart would change; one given with --api-key is kept already.
    keep = [] if "--api-key" in args else [f"To keep this key after a restart: --api-key {KEY}"]
    url = re.fullmatch(r"lingodoc emulator running at (\S+) \(Ctrl-C to stop\)", lines[0])
    assert url is not None, lines
    assert lines == [
        lines[0],
        f"API key (Full Access): {KEY}",
        *keep,
        *middle,
        "",
        "To point the SDK and the CLI at it:",
        f"  export LINGODOC_BASE_URL={url[1]}",
        f"  export LINGODOC_API_KEY={KEY}",
    ]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "99999"], "argument --port: must be a number from 0 to 65535, not '99999'"),
        (["--port", "-1"], "argument --port: must be a number from 0 to 65535, not '-1'"),
        (["--port", "http"], "argument --port: must be a number from 0 to 65535, not 'http'"),
        (["--plan", "gold"], "argument --plan: invalid choice: 'gold'"),
        (["--job-duration", "nan"], "argument --job-duration: must be a finite number"),
        (["--job-duration", "-1"], "argument --job-duration: must be a finite number of"),
        (["--host", "0.0.0.0"], "'0.0.0.0' is not a loopback address"),
        (["--queue-time", "-1"], "argument --queue-time: must be a finite number"),
        (["--seats", "0"], "argument --seats: must be a finite number of at least 1, not 0"),
        (["--rate-limit", "-3"], "argument --rate-limit: must be a finite number of at least 0"),
        (["--api-key", ""], "argument --api-key: must be a non-empty str of printable ASCII"),
        (["--api-key", "ld key"], "argument --api-key: must be a non-empty str of printable"),
        (["--latency", "-1"], "argument --latency: must be milliseconds, 0 or more, not '-1'"),
        (["--latency", "nan"], "argument --latency: must be milliseconds, 0 or more, not 'nan'"),
        (
            ["--fail", "crash:0.5"],
            "argument --fail: must be KIND:P, KIND one of rate_limit, server_error, "
            "disconnect, slow, not 'crash:0.5'",
        ),
        (["--fail", "slow"], "argument --fail: must be KIND:P, KIND one of rate_limit,"),
        (["--fail", "slow:1.5"], "argument --fail: P must be from 0 to 1, not '1.5'"),
        (["--fail", "slow:-0.1"], "argument --fail: P must be from 0 to 1, not '-0.1'"),
        (["--fail", "slow:nan"], "argument --fail: P must be from 0 to 1, not 'nan'"),
        (["--fail", "slow:0.1", "--fail", "slow:0.2"], "argument --fail: give each KIND once"),
        (
            ["--fail", "slow:0.6", "--fail", "disconnect:0.6"],
            "argument --fail: the probabilities add up to more than 1",
        ),
        (["--seed", "x"], "argument --seed: invalid int value: 'x'"),
    ],
)
def test_bad_options_are_a_usage_error_carrying_the_command_typed(
    command: str, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if "--port" not in args:
        args = [*args, "--port", "0"]
    assert run_in_process(command, [*args, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: {command} ")
    assert err.splitlines()[-1].startswith(f"{command}: error: {message}")
    assert "Traceback" not in err
    if command == "lingodoc emulator":
        assert "python -m" not in err


def descriptions(help_text: str) -> dict[str, str]:
    """The options of a --help, each with its description (joined from its lines)."""
    described: dict[str, str] = {}
    option = None
    for line in help_text.split("options:\n", 1)[1].splitlines():
        if line.startswith("  -"):
            names, _, text = line.strip().partition("  ")
            option = re.findall(r"--?[\w-]+", names)[-1]  # "-h, --help", "--plan {pro,...}"
            described[option] = text.strip()
        elif option is not None and line.startswith("   "):
            described[option] = f"{described[option]} {line.strip()}".strip()
        else:
            option = None  # the end of the options
    return described


@pytest.mark.parametrize("command", COMMANDS)
def test_help_describes_every_option(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_in_process(command, ["--help"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: {command} ")
    described = descriptions(text)
    assert {"--plan", "--seats", "--reset-style", "--rate-limit", "--api-key"} <= set(described)
    assert {"--latency", "--fail", "--seed"} <= set(described)
    assert "rate_limit, server_error, disconnect, slow" in described["--fail"]
    assert all(described.values()), described
    assert "team 5,000" in described["--plan"]
    assert "multiply" in described["--seats"]
    assert "X-RateLimit-Reset" in described["--reset-style"]
    assert "LINGODOC_BASE_URL=http://127.0.0.1:7318/v1" in text  # what it prints to export


@pytest.mark.parametrize("command", COMMANDS)
def test_a_port_in_use_is_one_line_suggesting_port_0(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert run_in_process(command, ["--port", str(port), "--quiet"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"{command}: error: port {port} on 127.0.0.1 is in use; "
        "pass --port 0 to listen on any free port\n"
    )
