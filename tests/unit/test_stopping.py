"""SIGTERM stops a run as Ctrl-C does, once; the handlers before it are back after."""

from __future__ import annotations

import os
import signal

import pytest

from refenv.run.stopping import stop_on_term


def test_sigterm_interrupts_the_block_and_says_143() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with stop_on_term() as stopped:
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0)  # a point at which Python runs the handler
        # The runner's SIGTERM after its SIGINT must not cut the cleanup short.
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0)
    assert stopped.exit_code == 143
    assert signal.getsignal(signal.SIGTERM) is before


def test_ctrl_c_says_130_and_a_second_one_still_interrupts() -> None:
    # Python's own handler, whatever this process inherited (a background job starts with SIGINT ignored).
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with stop_on_term() as stopped:
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)
                signal.sigtimedwait([], 0)
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)
                signal.sigtimedwait([], 0)
        assert stopped.exit_code == 130
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_an_ignored_ctrl_c_stays_ignored() -> None:
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with stop_on_term():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
